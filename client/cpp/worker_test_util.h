// Helpers shared by the Worker tests (worker_test.cc, worker_lease_test.cc,
// worker_restart_test.cc): OutcomeLog, RunningWorker, and the WorkerTest
// fixture.
#ifndef JOBWIRE_CLIENT_CPP_WORKER_TEST_UTIL_H_
#define JOBWIRE_CLIENT_CPP_WORKER_TEST_UTIL_H_

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cpp/client.h"
#include "client/cpp/worker.h"
#include "gtest/gtest.h"
#include "tests/job_record.h"
#include "tests/test_harness.h"

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
                const std::vector<std::pair<std::string, Handler>>& handlers,
                const std::vector<Middleware>& middlewares = {})
      : worker_(std::move(options)) {
    for (const auto& [type, handler] : handlers) worker_.Register(type, handler);
    for (const Middleware& middleware : middlewares) worker_.Use(middleware);
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

// A Worker test against a real redis-server and the real broker (one of
// each per test, from BrokerTest; `broker_flags` are the broker's extra
// flags), with a Client on that broker and the log of the outcomes the
// workers of Options() report. Jobs go to queue "q".
class WorkerTest : public ::jobwire::testing::BrokerTest {
 protected:
  explicit WorkerTest(std::vector<std::string> broker_flags = {})
      : ::jobwire::testing::BrokerTest(std::move(broker_flags)) {}

  void SetUp() override {
    ::jobwire::testing::BrokerTest::SetUp();
    client_ = std::make_unique<Client>(ClientOptions{broker_->address()});
  }

  WorkerOptions Options(int concurrency = 2, int64_t lease_ms = 30000) {
    WorkerOptions options;
    options.address = broker_->address();
    options.queues = {"q"};
    options.concurrency = concurrency;
    options.lease_ms = lease_ms;
    options.worker_id = "w1";
    options.on_outcome = [this](const Job& job, const Outcome& outcome) {
      outcomes_.Add(job, outcome);
    };
    return options;
  }

  std::string MustEnqueue(const std::string& type, const std::string& payload = "{}",
                          EnqueueOptions options = {}) {
    absl::StatusOr<Enqueued> enqueued = client_->Enqueue("q", type, payload, options);
    EXPECT_TRUE(enqueued.ok()) << enqueued.status();
    return enqueued.ok() ? enqueued->job_id : "";
  }

  // Polls GetJob until the job reaches `state` (up to `timeout`).
  v1::Job WaitForState(const std::string& id, v1::JobState state,
                       absl::Duration timeout = absl::Seconds(10)) {
    absl::Time deadline = absl::Now() + timeout;
    absl::StatusOr<v1::Job> job;
    do {
      job = client_->GetJob("q", id);
      if (job.ok() && job->state() == state) return *job;
      absl::SleepFor(absl::Milliseconds(20));
    } while (absl::Now() < deadline);
    ADD_FAILURE() << "job " << id << " never reached state " << state << ": "
                  << (job.ok() ? job->DebugString() : job.status().ToString());
    return job.ok() ? *job : v1::Job();
  }

  // Takes the current lease away from the worker holding job `id`, as if it
  // had expired: renewals and the Ack with the old token are refused, and the
  // broker's reaper retries the job within about a second.
  void RevokeLease(const std::string& id) {
    absl::StatusOr<::jobwire::testing::RedisReply> reply =
        redis_->CommandArgv(::jobwire::testing::WriteJobFieldArgv(
            ::jobwire::testing::JobsKey("jw", "q"), id, "lease_token", "revoked"));
    ASSERT_TRUE(reply.ok() && !reply->is_error() && reply->integer == 1) << id;
    reply = redis_->Command("ZADD", "jw:{q}:active", 0, id);
    ASSERT_TRUE(reply.ok() && !reply->is_error());
  }

  // Redis ZADD calls so far (commands run by scripts included). Every lease
  // renewal is one (extend_lease.lua); -1 when INFO fails.
  int64_t ZaddCalls() { return CommandCalls("zadd"); }

  // Calls of a Redis command so far, commands run by scripts included; -1
  // when INFO fails.
  int64_t CommandCalls(const std::string& command) {
    absl::StatusOr<::jobwire::testing::RedisReply> info =
        redis_->Command("INFO", "commandstats");
    if (!info.ok() || info->is_error()) return -1;
    const std::string kField = "cmdstat_" + command + ":calls=";
    size_t at = info->str.find(kField);
    if (at == std::string::npos) return 0;
    return std::strtoll(info->str.c_str() + at + kField.size(), nullptr, 10);
  }

  std::unique_ptr<Client> client_;
  OutcomeLog outcomes_;
};

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_WORKER_TEST_UTIL_H_
