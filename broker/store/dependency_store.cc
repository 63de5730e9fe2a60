#include "broker/store/dependency_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace jobwire::store {
namespace {

// The strings of array reply `reply`, or INTERNAL naming `script`.
absl::StatusOr<std::vector<std::string>> Strings(absl::StatusOr<RedisReply> reply,
                                                 absl::string_view script) {
  if (!reply.ok()) return reply.status();
  if (reply->type != RedisReply::Type::kArray) {
    return absl::InternalError(absl::StrCat("bad ", script, " reply"));
  }
  std::vector<std::string> out;
  out.reserve(reply->elements.size());
  for (RedisReply& element : reply->elements) out.push_back(std::move(element.str));
  return out;
}

absl::StatusOr<int64_t> Integer(absl::StatusOr<RedisReply> reply, absl::string_view script) {
  if (!reply.ok()) return reply.status();
  if (reply->type != RedisReply::Type::kInteger) {
    return absl::InternalError(absl::StrCat("bad ", script, " reply"));
  }
  return reply->integer;
}

}  // namespace

std::pair<std::string, std::string> ParentOfRef(absl::string_view ref) {
  const size_t slash = ref.find('/');
  const absl::string_view queue = ref.substr(0, slash);
  const absl::string_view id = ref.substr(slash + 1);
  return {PartitionQueue(queue, PartitionOfJobId(id)), std::string(id)};
}

DependencyStore::DependencyStore(RedisCommands* client, const ScriptRunner* scripts,
                                 std::string key_prefix)
    : client_(client), scripts_(scripts), key_prefix_(std::move(key_prefix)) {}

void DependencyStore::Peek(const std::string& queue, const std::vector<std::string>& ids,
                           Callback<std::vector<std::string>> done) const {
  Keys k = KeysFor(queue);
  scripts_->Eval(scripts_->Get("deps_peek"), {k.Jobs(), k.Acked(), k.AckedExpiry()}, ids,
                 [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                   done(Strings(std::move(reply), "deps_peek"));
                 });
}

void DependencyStore::Link(const std::string& queue, const std::vector<DependencyLink>& links,
                           Callback<std::vector<std::string>> done) const {
  Keys k = KeysFor(queue);
  std::vector<std::string> args;
  args.reserve(links.size());
  for (const DependencyLink& link : links) {
    args.push_back(absl::StrCat(link.child_queue, " ", link.child_id, " ", link.ref));
  }
  scripts_->Eval(scripts_->Get("deps_link"),
                 {k.Jobs(), k.Results(), k.Acked(), k.AckedExpiry(), k.RemoteDependents()},
                 std::move(args),
                 [count = links.size(), done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                   absl::StatusOr<std::vector<std::string>> news =
                       Strings(std::move(reply), "deps_link");
                   if (news.ok() && news->size() != count) {
                     return done(absl::InternalError("bad deps_link reply"));
                   }
                   done(std::move(news));
                 });
}

void DependencyStore::Resolve(const std::string& queue, const std::vector<std::string>& news,
                              Callback<int64_t> done) const {
  Keys k = KeysFor(queue);
  std::vector<std::string> args;
  args.reserve(news.size() + 1);
  args.push_back(k.NotifyChannel());
  args.insert(args.end(), news.begin(), news.end());
  scripts_->Eval(scripts_->Get("deps_resolve"),
                 {k.Jobs(), k.Ready(), k.ReadyByType(), k.Scheduled(), k.Dead(), k.DepsWaiting(),
                  k.Dependents(), k.RemoteDependents(), k.DepsOutbox(), k.DepsUnlinked()},
                 std::move(args), [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                   done(Integer(std::move(reply), "deps_resolve"));
                 });
}

void DependencyStore::ReadOutbox(const std::string& queue, int max,
                                 Callback<std::vector<std::string>> done) const {
  client_->Command({"LRANGE", KeysFor(queue).DepsOutbox(), "0", absl::StrCat(max - 1)},
                   [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                     done(Strings(std::move(reply), "LRANGE"));
                   });
}

void DependencyStore::RemoveOutbox(const std::string& queue, const std::vector<std::string>& news,
                                   Callback<int64_t> done) const {
  scripts_->Eval(scripts_->Get("deps_outbox"), {KeysFor(queue).DepsOutbox()}, news,
                 [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                   done(Integer(std::move(reply), "deps_outbox"));
                 });
}

void DependencyStore::StaleUnlinked(const std::string& queue, int64_t grace_ms, int max,
                                    Callback<std::vector<DependencyLink>> done) const {
  Keys k = KeysFor(queue);
  scripts_->Eval(
      scripts_->Get("deps_unlinked"), {k.DepsUnlinked(), k.Jobs(), k.DepsWaiting()},
      {absl::StrCat(grace_ms), absl::StrCat(max)},
      [queue, done = std::move(done)](absl::StatusOr<RedisReply> reply) {
        absl::StatusOr<std::vector<std::string>> pairs = Strings(std::move(reply), "deps_unlinked");
        if (!pairs.ok()) return done(pairs.status());
        std::vector<DependencyLink> links;
        for (size_t i = 0; i + 1 < pairs->size(); i += 2) {
          for (absl::string_view ref : absl::StrSplit((*pairs)[i + 1], ' ', absl::SkipEmpty())) {
            links.push_back(DependencyLink{queue, (*pairs)[i], std::string(ref)});
          }
        }
        done(std::move(links));
      });
}

}  // namespace jobwire::store
