// WorkerReportStore: the reports in which each broker replica tells the
// others which Claim streams it has open (Admin ListWorkers;
// core::WorkerRegistry writes and reads them). One hash for every replica,
// <p>:{workers}:reports, field = the replica's name, value = its report (a
// jobwire.v1.ListWorkersResponse with its streams and its one BrokerReport,
// protobuf bytes). Not queue state: plain commands, no script. A report
// says when it goes stale (BrokerReport.expires_at_ms); readers skip stale
// ones and remove them.
//
// Errors: UNAVAILABLE when Redis cannot be reached, INTERNAL for an
// unexpected reply. Callbacks run on the Redis event loop thread.
// Thread safety: methods may be called from any thread.
#ifndef JOBWIRE_BROKER_STORE_WORKER_REPORT_STORE_H_
#define JOBWIRE_BROKER_STORE_WORKER_REPORT_STORE_H_

#include <string>
#include <utility>
#include <vector>

#include "broker/store/job_store.h"
#include "broker/store/redis_commands.h"

namespace jobwire::store {

class WorkerReportStore {
 public:
  // `client` must outlive the store.
  WorkerReportStore(RedisCommands* client, std::string key_prefix);

  // Writes (replaces) replica `broker`'s report.
  void Put(const std::string& broker, std::string report,
           std::function<void(absl::Status)> done) const;
  // Every replica's report: (name, report bytes), in no particular order.
  void ReadAll(Callback<std::vector<std::pair<std::string, std::string>>> done) const;
  // Removes the reports of `brokers` (not empty).
  void Remove(std::vector<std::string> brokers, std::function<void(absl::Status)> done) const;

 private:
  RedisCommands* const client_;
  const std::string key_;
};

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_WORKER_REPORT_STORE_H_
