// WorkerRegistry: which workers are connected, across every broker replica
// (Admin ListWorkers). A background loop writes this replica's report of
// its open Claim streams (Dispatcher::Streams) to Redis every `interval`
// (store::WorkerReportStore), or nothing while it has none (removing the
// report its last streams left); List reads every replica's report, puts
// this replica's streams as they are now in place of its own report, leaves out
// reports past their expiry (three intervals after they were written: the
// replica was killed or lost Redis) and removes those from Redis. A report
// holds at most `max_streams` streams (BrokerReport.truncated beyond).
// Stop removes this replica's report, so a drained replica disappears at
// once.
#ifndef JOBWIRE_BROKER_CORE_WORKER_REGISTRY_H_
#define JOBWIRE_BROKER_CORE_WORKER_REGISTRY_H_

#include <atomic>
#include <functional>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "broker/base/event_loop.h"
#include "broker/core/dispatcher.h"
#include "broker/store/worker_report_store.h"
#include "jobwire/v1/admin.pb.h"

namespace jobwire::core {

struct WorkerRegistryParams {
  base::EventLoop* loop = nullptr;
  Dispatcher* dispatcher = nullptr;
  const store::WorkerReportStore* store = nullptr;
  absl::Duration interval = absl::Seconds(10);
  int max_streams = 1000;
};

// Thread safety: Start and Stop from one thread; List from any thread; the
// loop runs on `loop`.
class WorkerRegistry {
 public:
  // Every pointer in `params` must outlive the registry.
  explicit WorkerRegistry(WorkerRegistryParams params);

  // Reports as replica `broker` ("<host name>:<listen port>"). REQUIRES:
  // called once, before List.
  void Start(std::string broker);
  // No report after this; removes this replica's report, waiting up to 1 s
  // for Redis to answer (else it goes stale). REQUIRES: the loop is
  // stopped before this object is destroyed.
  void Stop();

  // Every replica's streams (ListWorkersResponse's order: by replica name,
  // each replica's oldest first). UNAVAILABLE when the reports cannot be
  // read.
  void List(store::Callback<v1::ListWorkersResponse> done) const;

 private:
  // This replica's report, now (`done` on the loop thread).
  void Report(std::function<void(v1::ListWorkersResponse)> done) const;
  void Exec();
  void Schedule(absl::Duration delay);

  // This replica's name; empty before Start (List may come first: the
  // server listens before the port, and so the name, is known).
  std::string broker() const;

  const WorkerRegistryParams params_;
  mutable absl::Mutex mu_;
  std::string broker_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> stopped_{false};
  // Loop thread: Redis holds a report of this replica (as far as it knows).
  bool reported_ = false;
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_WORKER_REGISTRY_H_
