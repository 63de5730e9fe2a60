#include "broker/store/worker_report_store.h"

#include "broker/store/keys.h"

namespace jobwire::store {

WorkerReportStore::WorkerReportStore(RedisCommands* client, std::string key_prefix)
    : client_(client), key_(Keys::WorkerReports(key_prefix)) {}

void WorkerReportStore::Put(const std::string& broker, std::string report,
                            std::function<void(absl::Status)> done) const {
  client_->Command({"HSET", key_, broker, std::move(report)},
                   [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                     done(reply.status());
                   });
}

void WorkerReportStore::ReadAll(
    Callback<std::vector<std::pair<std::string, std::string>>> done) const {
  client_->Command({"HGETALL", key_}, [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
    if (!reply.ok()) return done(reply.status());
    if (reply->type != RedisReply::Type::kArray || reply->elements.size() % 2 != 0) {
      return done(absl::InternalError("bad HGETALL reply for the worker reports"));
    }
    std::vector<std::pair<std::string, std::string>> out;
    for (size_t i = 0; i + 1 < reply->elements.size(); i += 2) {
      out.emplace_back(std::move(reply->elements[i].str), std::move(reply->elements[i + 1].str));
    }
    done(std::move(out));
  });
}

void WorkerReportStore::Remove(std::vector<std::string> brokers,
                               std::function<void(absl::Status)> done) const {
  std::vector<std::string> args = {"HDEL", key_};
  for (std::string& broker : brokers) args.push_back(std::move(broker));
  client_->Command(std::move(args), [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
    done(reply.status());
  });
}

}  // namespace jobwire::store
