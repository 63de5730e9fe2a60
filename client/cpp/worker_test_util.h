// Helpers shared by the Worker tests (worker_test.cc, worker_restart_test.cc).
#ifndef JOBWIRE_CLIENT_CPP_WORKER_TEST_UTIL_H_
#define JOBWIRE_CLIENT_CPP_WORKER_TEST_UTIL_H_

#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/cpp/worker.h"

namespace jobwire::client {

// Records every outcome the worker reports. Thread-safe.
class OutcomeLog {
 public:
  void Add(const Job& job, const Outcome& outcome) {
    absl::MutexLock lock(&mu_);
    lines_.push_back(absl::StrCat(job.id, " ", job.attempt, " ", outcome.kind,
                                  outcome.detail.empty() ? "" : " ", outcome.detail));
  }
  // Waits up to 10 s for `n` outcomes; returns them all.
  std::vector<std::string> WaitFor(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return lines_.size() >= n; };
    mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
    return lines_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
};

// A Worker running on its own thread for the length of a test.
class RunningWorker {
 public:
  RunningWorker(WorkerOptions options,
                const std::vector<std::pair<std::string, Handler>>& handlers)
      : worker_(std::move(options)) {
    for (const auto& [type, handler] : handlers) worker_.Register(type, handler);
    thread_ = std::thread([this] { status_ = worker_.Run(); });
  }
  ~RunningWorker() { Stop().IgnoreError(); }
  const Worker& worker() const { return worker_; }
  // Worker::Stop only: Run drains on its own thread.
  void RequestStop() { worker_.Stop(); }
  absl::Status Stop() {
    worker_.Stop();
    if (thread_.joinable()) thread_.join();
    return status_;
  }

 private:
  Worker worker_;
  absl::Status status_;
  std::thread thread_;
};

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_WORKER_TEST_UTIL_H_
