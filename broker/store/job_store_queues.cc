// JobStore: the queues themselves (the registry, each queue's settings) and
// the checks of the data's key layout (job_store.h). The jobs' lifecycle is
// in job_store.cc.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "broker/base/logging.h"
#include "broker/store/job_store.h"

namespace jobwire::store {

void JobStore::CheckRedisSettings() const {
  const std::string marker = Keys::Layout(options_.key_prefix);
  const std::string want = absl::StrCat(kLayoutVersion);
  client_->Command({"GET", marker}, [this, marker, want](absl::StatusOr<RedisReply> reply) {
    if (!reply.ok() || reply->is_error()) return;  // the connection's own errors are logged
    if (reply->type == RedisReply::Type::kString) {
      if (reply->str == want) return;
      if (reply->str == "3") return UpgradeFromLayout3();
      base::Log(base::LogLevel::kError,
                "redis holds jobwire data of another key layout; this broker does not read it "
                "(docs/redis-layout.md, \"Layout versions\")",
                {{"key", marker}, {"layout", reply->str}, {"expected", want}});
      return;
    }
    client_->Command({"SCARD", Keys::Registry(options_.key_prefix)},
                     [this, marker, want](absl::StatusOr<RedisReply> queues) {
                       if (!queues.ok() || queues->is_error()) return;
                       // No queue: a new Redis (RegisterQueue sets the marker).
                       if (queues->integer == 0) return;
                       // Queues but no marker: layout 1 or 2, unless a broker
                       // of layout 3 or later registered one since the GET (it sets
                       // the marker first): NX tells them apart, and leaves
                       // the finding for every later connect to report.
                       const int64_t count = queues->integer;
                       client_->Command(
                           {"SET", marker, "2", "NX"},
                           [marker, want, count](absl::StatusOr<RedisReply> set) {
                             if (!set.ok() || set->type != RedisReply::Type::kStatus) return;
                             base::Log(base::LogLevel::kError,
                                       "redis holds jobwire queues of key layout 1 or 2 (no "
                                       "layout marker; now marked 2); this broker (layout 4) "
                                       "does not read their jobs and drops their ids as missing "
                                       "records: stop it and drain them with a broker of the "
                                       "old version first (docs/redis-layout.md, \"Layout "
                                       "versions\")",
                                       {{"key", marker}, {"queues", count},
                                        {"expected", want}});
                           });
                     });
  });
}

void JobStore::UpgradeFromLayout3() const {
  base::Log(base::LogLevel::kInfo, "upgrading jobwire data from key layout 3 to 4 (indexing "
            "every queue's ready jobs by type)", {});
  client_->Command(
      {"SMEMBERS", Keys::Registry(options_.key_prefix)},
      [this](absl::StatusOr<RedisReply> reply) {
        if (!reply.ok() || reply->type != RedisReply::Type::kArray) return;  // next connect
        auto queues = std::make_shared<std::vector<std::string>>();
        for (const RedisReply& queue : reply->elements) queues->push_back(queue.str);
        IndexByType(std::move(queues), 0, 0);
      });
}

void JobStore::IndexByType(std::shared_ptr<std::vector<std::string>> queues, size_t index,
                           int64_t offset) const {
  constexpr int kBatch = 1000;
  if (index == queues->size()) {
    // Every queue is indexed: from now on the data is layout 4 (a repeated
    // upgrade by another broker meanwhile did the same, harmlessly).
    client_->Command({"SET", Keys::Layout(options_.key_prefix), absl::StrCat(kLayoutVersion)},
                     [count = queues->size()](absl::StatusOr<RedisReply> set) {
                       if (!set.ok()) return;
                       base::Log(base::LogLevel::kInfo, "upgraded jobwire data to key layout 4",
                                 {{"queues", count}});
                     });
    return;
  }
  Keys keys = KeysFor((*queues)[index]);
  scripts_->Eval(scripts_->Get("index_by_type"), {keys.Ready(), keys.ReadyByType(), keys.Jobs()},
                 {absl::StrCat(offset), absl::StrCat(kBatch)},
                 [this, queues, index](absl::StatusOr<RedisReply> reply) {
                   // Redis unreachable: the marker still says 3, and the next
                   // connect starts the upgrade again.
                   if (!reply.ok() || reply->type != RedisReply::Type::kInteger) return;
                   if (reply->integer < 0) return IndexByType(queues, index + 1, 0);
                   IndexByType(queues, index, reply->integer);
                 });
}

void JobStore::RegisterQueue(const std::string& queue, Callback<bool> done) const {
  // The marker only once the registry entry is written, so that a set marker
  // implies the entry. It lives in the queue's slot, where enqueue.lua reads
  // it. The layout marker goes first, on the same connection, so that a
  // registered queue implies it (CheckRedisSettings).
  client_->Command({"SET", Keys::Layout(options_.key_prefix), absl::StrCat(kLayoutVersion), "NX"},
                   [](absl::StatusOr<RedisReply>) {});
  scripts_->Eval(
      scripts_->Get("register_queue"), {Keys::Registry(options_.key_prefix)}, {queue},
      [this, queue, done = std::move(done)](absl::StatusOr<RedisReply> reply) {
        if (!reply.ok()) return done(reply.status());
        const bool added = reply->AsInt() == 1;
        // Once more after the marker: a DeleteQueue whose unregister_queue.lua
        // ran between the first SADD and the marker re-adds the entry only
        // if it sees the marker, which may be set just after it looked.
        // Whichever runs last, this SADD or its check, leaves the entry.
        client_->Command(
            {"SET", KeysFor(queue).Registered(), "1"},
            [this, queue, added, done = std::move(done)](absl::StatusOr<RedisReply> set) mutable {
              if (!set.ok()) return done(set.status());
              scripts_->Eval(scripts_->Get("register_queue"), {Keys::Registry(options_.key_prefix)},
                             {queue},
                             [added, done = std::move(done)](absl::StatusOr<RedisReply> again) {
                               if (!again.ok()) return done(again.status());
                               done(added);
                             });
            });
      });
}

void JobStore::GetQueueSettings(const std::string& queue, Callback<QueueSettings> done) const {
  const Keys keys = KeysFor(queue);
  client_->Command(
      {"MGET", keys.Partitions(), keys.JobTimeout(), keys.RateLimit(), keys.MaxActive(),
       keys.KeyLimit(), keys.KeyRateLimit()},
      [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
        if (!reply.ok()) return done(reply.status());
        if (reply->elements.size() != 6) return done(absl::InternalError("bad MGET reply"));
        QueueSettings settings;
        const RedisReply& count = reply->elements[0];
        if (!count.is_nil()) {
          const int64_t n = count.AsInt(-1);
          if (n < 1 || n > kMaxPartitions) {
            return done(absl::InternalError("bad partition count in redis"));
          }
          settings.partitions = static_cast<int>(n);
        }
        const RedisReply& timeout = reply->elements[1];
        if (!timeout.is_nil()) {
          const int64_t ms = timeout.AsInt(-1);
          if (ms < 0) return done(absl::InternalError("bad default job timeout in redis"));
          settings.default_job_timeout_ms = ms;
        }
        for (auto [i, limit] : {std::pair{2, &settings.rate_limit},
                                std::pair{5, &settings.key_rate_limit}}) {
          const RedisReply& value = reply->elements[i];
          if (value.is_nil()) continue;
          *limit = ParseRateLimit(value.str);
          if (!*limit) {
            return done(absl::InternalError(i == 2 ? "bad rate limit in redis"
                                                   : "bad key rate limit in redis"));
          }
        }
        for (auto [i, limit] : {std::pair{3, &settings.max_active},
                                std::pair{4, &settings.max_active_per_key}}) {
          const RedisReply& value = reply->elements[i];
          if (value.is_nil()) continue;
          const int64_t n = value.AsInt(-1);
          if (n < 1 || n > kMaxMaxActive) {
            return done(absl::InternalError(i == 3 ? "bad max_active in redis"
                                                   : "bad key_limit in redis"));
          }
          *limit = static_cast<int32_t>(n);
        }
        done(settings);
      });
}

std::string RateLimitValue(const v1::RateLimit& limit) {
  return absl::StrCat(limit.count(), " ", limit.interval_ms(), " ", limit.burst());
}

std::optional<v1::RateLimit> ParseRateLimit(absl::string_view value) {
  std::vector<absl::string_view> parts = absl::StrSplit(value, ' ');
  int32_t count = 0, burst = 0;
  int64_t interval_ms = 0;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &count) ||
      !absl::SimpleAtoi(parts[1], &interval_ms) || !absl::SimpleAtoi(parts[2], &burst) ||
      count < 1 || interval_ms < 1 || burst < 1) {
    return std::nullopt;
  }
  v1::RateLimit limit;
  limit.set_count(count);
  limit.set_interval_ms(interval_ms);
  limit.set_burst(burst);
  return limit;
}

void JobStore::ListQueues(Callback<std::vector<std::string>> done) const {
  client_->Command({"SMEMBERS", Keys::Registry(options_.key_prefix)},
                   [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                     if (!reply.ok()) return done(reply.status());
                     std::vector<std::string> queues;
                     for (const auto& e : reply->elements) queues.push_back(e.str);
                     done(std::move(queues));
                   });
}

}  // namespace jobwire::store
