// RunSignal: why a Worker's job run should stop, shared by the Worker (which
// raises it) and the handler's Job (which reads it). Raised when the lease is
// lost (ExtendLease answered FAILED_PRECONDITION or NOT_FOUND), when Cancel
// asked the run to stop (a StopRun on the Claim stream, or ExtendLease /
// ReportProgress refused with JOB_CANCEL_REQUESTED), and when the run
// reaches its deadline (the job's timeout_ms from receipt, or the broker's
// RUN_TIMED_OUT). Each cause is kept; the stop token is requested at the
// first.
//
// Thread safety: every method may be called from any thread.
#ifndef JOBWIRE_CLIENT_CPP_RUN_SIGNAL_H_
#define JOBWIRE_CLIENT_CPP_RUN_SIGNAL_H_

#include <atomic>
#include <stop_token>

namespace jobwire::client {

enum class StopReason {
  kNone = 0,
  kLeaseLost = 1,  // the lease moved on: this run's Ack / Fail are refused
  kCancelled = 2,  // Cancel asked the run to stop
  kTimedOut = 4,   // the run reached its deadline (timeout_ms)
};

class RunSignal {
 public:
  // Records `reason` and requests the stop token (which runs its stop
  // callbacks on this thread, the first time).
  void Raise(StopReason reason) {
    const int bit = static_cast<int>(reason);
    int none = 0;
    first_.compare_exchange_strong(none, bit);
    reasons_.fetch_or(bit);
    source_.request_stop();
  }
  bool Has(StopReason reason) const {
    return (reasons_.load() & static_cast<int>(reason)) != 0;
  }
  // The first reason raised; kNone while none was.
  StopReason first() const { return static_cast<StopReason>(first_.load()); }
  std::stop_token token() const { return source_.get_token(); }

 private:
  std::stop_source source_;
  std::atomic<int> reasons_{0};
  std::atomic<int> first_{0};
};

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_RUN_SIGNAL_H_
