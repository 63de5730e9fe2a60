// WaitReactor: the server side of one WaitJob stream (on cq_reactors.h).
// It follows the job through core::JobWatcher and writes each update the
// watcher hands it, one message at a time: when updates arrive faster than
// the client reads, only the newest waits behind the message being written
// (WaitJob may merge intermediate states). The stream ends with OK after
// the message of a COMPLETED or DEAD job, with the watcher's error
// otherwise (NOT_FOUND, DEADLINE_EXCEEDED / WAIT_TIMEOUT, UNAVAILABLE,
// RESOURCE_EXHAUSTED when the broker follows too many jobs), or CANCELLED
// when the client goes away.
//
// Lifetime: gRPC owns the reactor until OnDone, which stops the follow and
// deletes it. The Stream shared with the watcher's callback outlives it and
// drops updates once the reactor is gone.
#ifndef JOBWIRE_BROKER_SERVICE_WAIT_REACTOR_H_
#define JOBWIRE_BROKER_SERVICE_WAIT_REACTOR_H_

#include <memory>
#include <optional>

#include <grpcpp/grpcpp.h>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "broker/core/job_watcher.h"
#include "broker/service/cq_reactors.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::service {

class WaitReactor : public WriteReactor<v1::WaitJobResponse> {
 public:
  // `watcher` must outlive the stream.
  explicit WaitReactor(core::JobWatcher* watcher);

  // Follows `request`'s job for at most `timeout` (InfiniteDuration: no
  // limit), or ends the stream with `refused` when it is an error (the
  // request was invalid or not permitted). Call once, right after
  // construction.
  void Start(const v1::WaitJobRequest& request, absl::Duration timeout,
             const absl::Status& refused);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  class Stream {
   public:
    explicit Stream(WaitReactor* reactor) : reactor_(reactor) {}
    // The watcher's update: a job to write (the last one when finished), or
    // the error that ends the stream.
    void Update(absl::StatusOr<v1::Job> job);
    void WriteDone(bool ok);
    // Ends the stream with `status` once (no-op afterwards).
    void Finish(const grpc::Status& status);
    // After OnDone: updates are dropped.
    void Detach();

   private:
    void StartWrite(v1::Job job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
    void FinishLocked(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

    absl::Mutex mu_;
    WaitReactor* reactor_ ABSL_GUARDED_BY(mu_);
    v1::WaitJobResponse message_ ABSL_GUARDED_BY(mu_);  // being written
    bool writing_ ABSL_GUARDED_BY(mu_) = false;
    bool finished_ ABSL_GUARDED_BY(mu_) = false;
    // Behind the message being written: the newest job, and the status to
    // end with once it is written.
    std::optional<v1::Job> next_ ABSL_GUARDED_BY(mu_);
    std::optional<grpc::Status> end_ ABSL_GUARDED_BY(mu_);
  };

  core::JobWatcher* const watcher_;
  std::shared_ptr<Stream> stream_;
  std::optional<core::JobWatcher::FollowId> follow_;
};

}  // namespace jobwire::service

#endif  // JOBWIRE_BROKER_SERVICE_WAIT_REACTOR_H_
