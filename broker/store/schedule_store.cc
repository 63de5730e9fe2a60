#include "broker/store/schedule_store.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "broker/store/keys.h"

namespace jobwire::store {
namespace {

std::string MsOrEmpty(std::optional<int64_t> ms) { return ms ? absl::StrCat(*ms) : ""; }

absl::Status Malformed(const char* script) {
  return absl::InternalError(absl::StrCat(script, ".lua: malformed reply"));
}

}  // namespace

ScheduleStore::ScheduleStore(const ScriptRunner* scripts, std::string key_prefix)
    : scripts_(scripts),
      defs_(Keys::ScheduleDefs(key_prefix)),
      next_(Keys::ScheduleNext(key_prefix)),
      last_(Keys::ScheduleLast(key_prefix)),
      channel_(Keys::ScheduleChannel(key_prefix)) {}

void ScheduleStore::Put(const std::string& name, const std::string& definition,
                        std::optional<int64_t> next_ms, Callback<bool> done) const {
  scripts_->Eval(scripts_->Get("put_schedule"), {defs_, next_},
                 {name, definition, MsOrEmpty(next_ms), channel_},
                 [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                   if (!reply.ok()) return done(reply.status());
                   done(reply->AsInt() == 1);
                 });
}

void ScheduleStore::Delete(const std::string& name, Callback<bool> done) const {
  scripts_->Eval(scripts_->Get("delete_schedule"), {defs_, next_, last_}, {name},
                 [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                   if (!reply.ok()) return done(reply.status());
                   done(reply->AsInt() == 1);
                 });
}

void ScheduleStore::List(int limit, Callback<ScheduleRead> done) const {
  Read("all", limit, std::move(done));
}

void ScheduleStore::Due(int limit, Callback<ScheduleRead> done) const {
  Read("due", limit, std::move(done));
}

void ScheduleStore::Read(const char* mode, int limit, Callback<ScheduleRead> done) const {
  scripts_->Eval(
      scripts_->Get("read_schedules"), {defs_, next_, last_}, {mode, absl::StrCat(limit)},
      [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
        if (!reply.ok()) return done(reply.status());
        const std::vector<RedisReply>& e = reply->elements;
        if (reply->type != RedisReply::Type::kArray || e.size() < 2 || (e.size() - 2) % 4 != 0) {
          return done(Malformed("read_schedules"));
        }
        ScheduleRead out;
        out.now_ms = e[0].AsInt();
        int64_t earliest = 0;
        if (absl::SimpleAtoi(e[1].str, &earliest)) out.earliest_next_ms = earliest;
        for (size_t i = 2; i + 3 < e.size(); i += 4) {
          StoredSchedule s;
          s.name = e[i].str;
          s.definition = e[i + 1].str;
          int64_t next = 0;
          if (absl::SimpleAtoi(e[i + 2].str, &next)) s.next_ms = next;
          // "<instant ms> <job id>"
          const std::string& last = e[i + 3].str;
          const size_t space = last.find(' ');
          if (space != std::string::npos &&
              absl::SimpleAtoi(absl::string_view(last).substr(0, space), &s.last_run_ms)) {
            s.last_job_id = last.substr(space + 1);
          }
          out.schedules.push_back(std::move(s));
        }
        done(std::move(out));
      });
}

void ScheduleStore::Advance(const std::string& name, int64_t read_next_ms,
                            std::optional<int64_t> next_ms, std::optional<int64_t> run_ms,
                            const std::string& job_id, Callback<bool> done) const {
  scripts_->Eval(scripts_->Get("advance_schedule"), {next_, last_},
                 {name, absl::StrCat(read_next_ms), MsOrEmpty(next_ms), MsOrEmpty(run_ms),
                  run_ms ? job_id : ""},
                 [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                   if (!reply.ok()) return done(reply.status());
                   done(reply->AsInt() == 1);
                 });
}

}  // namespace jobwire::store
