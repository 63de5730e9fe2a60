// jobwire::client::Worker against a real redis-server and the real broker.
#include "client/cpp/worker.h"

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/test_harness.h"

namespace jobwire::client {
namespace {

using ::jobwire::testing::BrokerTest;
using ::jobwire::testing::kCompleted;
using ::jobwire::testing::kDead;
using ::jobwire::testing::kPending;
using ::jobwire::testing::PickFreePort;
using ::jobwire::testing::RedisServer;
using ::jobwire::testing::Subprocess;

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

class WorkerTest : public BrokerTest {
 protected:
  void SetUp() override {
    BrokerTest::SetUp();
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

  std::unique_ptr<Client> client_;
  OutcomeLog outcomes_;
};

TEST_F(WorkerTest, AcksWithTheHandlersResult) {
  std::string id = MustEnqueue("echo", R"({"to":"a@example.com"})");
  RunningWorker worker(Options(), {{"echo", [](const Job& job) -> absl::StatusOr<std::string> {
                                      return std::string(job.Json()["to"]);
                                    }}});
  v1::Job job = WaitForState(id, kCompleted);
  EXPECT_EQ(job.result(), "a@example.com");
  EXPECT_EQ(job.worker_id(), "w1");
  EXPECT_EQ(outcomes_.WaitFor(1), (std::vector<std::string>{id + " 1 ack_ok"}));
}

TEST_F(WorkerTest, FailureIsReportedAndTheRetryRunsAgain) {
  EnqueueOptions fast;
  fast.backoff_base_ms = 50;
  std::string id = MustEnqueue("flaky", "{}", fast);
  RunningWorker worker(Options(), {{"flaky", [](const Job& job) -> absl::StatusOr<std::string> {
                                      if (job.attempt == 1) {
                                        return absl::InternalError("first try fails");
                                      }
                                      return std::string("ok");
                                    }}});
  v1::Job job = WaitForState(id, kCompleted);
  EXPECT_EQ(job.attempts(), 2);
  EXPECT_EQ(job.error(), "INTERNAL: first try fails");
  EXPECT_EQ(outcomes_.WaitFor(2), (std::vector<std::string>{id + " 1 fail_ok RETRY_SCHEDULED",
                                                            id + " 2 ack_ok"}));
}

TEST_F(WorkerTest, ExceptionsAndNonRetryableErrorsFailTheJob) {
  std::string thrown = MustEnqueue("throws");
  std::string permanent = MustEnqueue("permanent");
  RunningWorker worker(
      Options(),
      {{"throws",
        [](const Job&) -> absl::StatusOr<std::string> { throw std::runtime_error("boom"); }},
       {"permanent", [](const Job&) -> absl::StatusOr<std::string> {
          return NonRetryable(absl::InvalidArgumentError("bad input"));
        }}});
  v1::Job dead = WaitForState(permanent, kDead);
  EXPECT_EQ(dead.attempts(), 1);
  EXPECT_EQ(dead.error(), "INVALID_ARGUMENT: bad input");
  // Default backoff is 1 s: after the first failure the job is pending again.
  outcomes_.WaitFor(2);
  v1::Job retried = WaitForState(thrown, kPending);
  EXPECT_EQ(retried.error(), "std::runtime_error: boom");
}

TEST_F(WorkerTest, UnknownTypeIsFailedWithAClearError) {
  std::string id = MustEnqueue("nobody-handles-this");
  std::vector<std::string> logged;
  absl::Mutex log_mu;
  WorkerOptions options = Options();
  options.log = [&](const std::string& line) {
    absl::MutexLock lock(&log_mu);
    logged.push_back(line);
  };
  RunningWorker worker(options, {});
  EXPECT_EQ(outcomes_.WaitFor(1),
            (std::vector<std::string>{id + " 1 fail_ok RETRY_SCHEDULED"}));
  v1::Job job = WaitForState(id, kPending);
  EXPECT_EQ(job.error(), "no handler for job type \"nobody-handles-this\" in worker w1");
  EXPECT_EQ(job.attempts(), 1);
  absl::MutexLock lock(&log_mu);
  ASSERT_FALSE(logged.empty());
  EXPECT_NE(logged[0].find("nobody-handles-this"), std::string::npos);
}

TEST_F(WorkerTest, RunsUpToConcurrencyHandlersAtOnce) {
  constexpr int kConcurrency = 3;
  std::vector<std::string> ids;
  for (int i = 0; i < 7; ++i) ids.push_back(MustEnqueue("slow"));
  std::atomic<int> running{0};
  std::atomic<int> peak{0};
  RunningWorker worker(Options(kConcurrency),
                       {{"slow", [&](const Job&) -> absl::StatusOr<std::string> {
                          int now = ++running;
                          int seen = peak.load();
                          while (now > seen && !peak.compare_exchange_weak(seen, now)) {
                          }
                          absl::SleepFor(absl::Milliseconds(300));
                          --running;
                          return std::string();
                        }}});
  for (const std::string& id : ids) WaitForState(id, kCompleted);
  EXPECT_EQ(peak.load(), kConcurrency);
}

TEST_F(WorkerTest, RenewsTheLeaseOfALongHandler) {
  std::string id = MustEnqueue("long");
  RunningWorker worker(Options(1, /*lease_ms=*/1000),
                       {{"long", [](const Job&) -> absl::StatusOr<std::string> {
                          absl::SleepFor(absl::Milliseconds(2500));
                          return std::string("done");
                        }}});
  v1::Job job = WaitForState(id, kCompleted);
  EXPECT_EQ(job.attempts(), 1);
  EXPECT_EQ(outcomes_.WaitFor(1), (std::vector<std::string>{id + " 1 ack_ok"}));
}

TEST_F(WorkerTest, StopFinishesRunningHandlersAndTakesNoNewJobs) {
  std::string first = MustEnqueue("slow");
  absl::Notification started;
  auto worker = std::make_unique<RunningWorker>(
      Options(1), std::vector<std::pair<std::string, Handler>>{
                      {"slow", [&](const Job&) -> absl::StatusOr<std::string> {
                         started.Notify();
                         absl::SleepFor(absl::Milliseconds(500));
                         return std::string("finished");
                       }}});
  ASSERT_TRUE(started.WaitForNotificationWithTimeout(absl::Seconds(10)));
  JW_EXPECT_OK(worker->Stop());
  // Run has returned: the running job was acked before it did.
  absl::StatusOr<v1::Job> job = client_->GetJob("q", first);
  JW_ASSERT_OK(job.status());
  EXPECT_EQ(job->state(), kCompleted);
  EXPECT_EQ(job->result(), "finished");
  std::string second = MustEnqueue("slow");
  absl::SleepFor(absl::Milliseconds(300));
  absl::StatusOr<v1::Job> untouched = client_->GetJob("q", second);
  JW_ASSERT_OK(untouched.status());
  EXPECT_EQ(untouched->state(), kPending);
}

TEST_F(WorkerTest, InvalidClaimIsFatal) {
  WorkerOptions options = Options();
  options.lease_ms = 10;  // below the 1 s minimum
  Worker worker(options);
  absl::Status status = worker.Run();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("lease_ms"), absl::string_view::npos) << status;
}

// A broker restarted on the same address: the worker reconnects and keeps
// consuming.
TEST(WorkerReconnectTest, SurvivesABrokerRestart) {
  RedisServer redis;
  JW_ASSERT_OK(redis.Start());
  absl::StatusOr<int> port = PickFreePort();
  JW_ASSERT_OK(port.status());
  const std::string address = absl::StrCat("127.0.0.1:", *port);
  const std::vector<std::string> argv = {JOBWIRE_BROKER_PATH, "--listen=" + address,
                                         "--redis_url=" + redis.url(), "--log_level=error",
                                         "--shutdown_grace_ms=200"};
  Subprocess broker;
  JW_ASSERT_OK(broker.Spawn(argv));
  Client client({address});
  auto enqueue = [&] {
    absl::StatusOr<Enqueued> enqueued;
    for (int i = 0; i < 200; ++i) {  // until the broker listens
      enqueued = client.Enqueue("q", "t", "");
      if (enqueued.ok()) break;
      absl::SleepFor(absl::Milliseconds(50));
    }
    EXPECT_TRUE(enqueued.ok()) << enqueued.status();
    return enqueued.ok() ? enqueued->job_id : "";
  };
  auto completed = [&](const std::string& id) {
    for (int i = 0; i < 300; ++i) {
      absl::StatusOr<v1::Job> job = client.GetJob("q", id);
      if (job.ok() && job->state() == kCompleted) return true;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return false;
  };

  std::string before = enqueue();
  WorkerOptions options;
  options.address = address;
  options.queues = {"q"};
  options.concurrency = 2;
  options.log = [](const std::string&) {};
  RunningWorker worker(options, {{"t", [](const Job&) -> absl::StatusOr<std::string> {
                                    return std::string("ok");
                                  }}});
  EXPECT_TRUE(completed(before));

  broker.Terminate(absl::Seconds(5));
  JW_ASSERT_OK(broker.Spawn(argv));
  std::string after = enqueue();
  EXPECT_TRUE(completed(after)) << "job enqueued after the restart was not processed";
  JW_EXPECT_OK(worker.Stop());
}

}  // namespace
}  // namespace jobwire::client
