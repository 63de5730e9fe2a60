// jobwire::client::Worker against a real redis-server and the real broker.
#include "client/cpp/worker.h"

#include <atomic>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "client/cpp/handler_errors.h"
#include "client/cpp/lease_rules.h"
#include "client/cpp/worker_test_util.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/fault_proxy.h"
#include "tests/job_record.h"
#include "tests/test_harness.h"

namespace jobwire::client {
namespace {

using ::jobwire::testing::BrokerTest;
using ::jobwire::testing::kActive;
using ::jobwire::testing::kCompleted;
using ::jobwire::testing::kDead;
using ::jobwire::testing::kPending;
using ::jobwire::testing::PickFreePort;
using ::jobwire::testing::RedisReply;

class WorkerTest : public BrokerTest {
 protected:
  explicit WorkerTest(std::vector<std::string> broker_flags = {})
      : BrokerTest(std::move(broker_flags)) {}

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

  // Takes the current lease away from the worker holding job `id`, as if it
  // had expired: renewals and the Ack with the old token are refused, and the
  // broker's reaper retries the job within about a second.
  void RevokeLease(const std::string& id) {
    absl::StatusOr<RedisReply> reply = redis_->CommandArgv(
        testing::WriteJobFieldArgv(testing::JobsKey("jw", "q"), id, "lease_token", "revoked"));
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
    absl::StatusOr<RedisReply> info = redis_->Command("INFO", "commandstats");
    if (!info.ok() || info->is_error()) return -1;
    const std::string kField = "cmdstat_" + command + ":calls=";
    size_t at = info->str.find(kField);
    if (at == std::string::npos) return 0;
    return std::strtoll(info->str.c_str() + at + kField.size(), nullptr, 10);
  }

  std::unique_ptr<Client> client_;
  OutcomeLog outcomes_;
};

// A broker whose default lease is 3 s.
class WorkerShortDefaultLeaseTest : public WorkerTest {
 protected:
  WorkerShortDefaultLeaseTest() : WorkerTest({"--default_lease_ms=3000"}) {}
};

// A broker whose default lease is 1.5 s.
class WorkerBrokerLeaseTest : public WorkerTest {
 protected:
  static constexpr int64_t kDefaultLeaseMs = 1500;
  WorkerBrokerLeaseTest() : WorkerTest({absl::StrCat("--default_lease_ms=", kDefaultLeaseMs)}) {}
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

TEST_F(WorkerTest, AcksFinishingTogetherShareAckBatchCalls) {
  constexpr int kJobs = 64;
  std::vector<std::string> ids;
  for (int i = 0; i < kJobs; ++i) ids.push_back(MustEnqueue("together"));
  // Every handler waits until all of them run, so that the acks finish at once.
  absl::Mutex mu;
  int started = 0;
  RunningWorker worker(Options(kJobs),
                       {{"together", [&](const Job& job) -> absl::StatusOr<std::string> {
                          absl::MutexLock lock(&mu);
                          ++started;
                          auto all = [&] { return started >= kJobs; };
                          mu.AwaitWithTimeout(absl::Condition(&all), absl::Seconds(10));
                          return "done " + job.id;
                        }}});
  for (const std::string& id : ids) {
    EXPECT_EQ(WaitForState(id, kCompleted).result(), "done " + id);
  }
  EXPECT_EQ(outcomes_.WaitFor(kJobs).size(), static_cast<size_t>(kJobs));
  // ack.lua runs ZREMRANGEBYSCORE once per call (trimming the completed
  // index), and no other script but reap.lua (once per pass): with every ack
  // sent on its own there would be 64 calls.
  const int64_t ack_script_calls = CommandCalls("zremrangebyscore");
  EXPECT_GE(ack_script_calls, 1);
  EXPECT_LE(ack_script_calls, kJobs / 2);
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
  absl::Notification release;
  std::atomic<int> runs{0};
  auto worker = std::make_unique<RunningWorker>(
      Options(2), std::vector<std::pair<std::string, Handler>>{
                      {"slow", [&](const Job&) -> absl::StatusOr<std::string> {
                         if (++runs == 1) started.Notify();
                         release.WaitForNotificationWithTimeout(absl::Seconds(10));
                         return std::string("finished");
                       }}});
  ASSERT_TRUE(started.WaitForNotificationWithTimeout(absl::Seconds(10)));
  worker->RequestStop();
  // Stop cancels the Claim stream, and the cancel reaches the broker a
  // moment later: a job claimed for the stream before that is delivered, and
  // the C++ Worker runs every job its stream delivers. So the second job is
  // enqueued once the broker has surely closed the stream
  // (the hand-off would otherwise give it to the still-open stream; a CI
  // run saw that once).
  absl::SleepFor(absl::Milliseconds(300));
  // Enqueued during the drain, with a handler slot free: it must stay put.
  std::string second = MustEnqueue("slow");
  absl::SleepFor(absl::Milliseconds(500));
  absl::StatusOr<v1::Job> waiting = client_->GetJob("q", second);
  JW_ASSERT_OK(waiting.status());
  EXPECT_EQ(waiting->state(), kPending);
  release.Notify();
  JW_EXPECT_OK(worker->Stop());
  // Run has returned: the running job was acked before it did.
  absl::StatusOr<v1::Job> job = client_->GetJob("q", first);
  JW_ASSERT_OK(job.status());
  EXPECT_EQ(job->state(), kCompleted);
  EXPECT_EQ(job->result(), "finished");
  absl::StatusOr<v1::Job> untouched = client_->GetJob("q", second);
  JW_ASSERT_OK(untouched.status());
  EXPECT_EQ(untouched->state(), kPending);
  EXPECT_EQ(untouched->attempts(), 0);
  EXPECT_EQ(runs.load(), 1);
}

TEST_F(WorkerTest, HandlersStillRunningAfterTheGraceAreAbandoned) {
  EnqueueOptions fast;
  fast.backoff_base_ms = 50;
  std::string id = MustEnqueue("stuck", "{}", fast);
  absl::Notification started;
  // The abandoned handler outlives its Worker: what it uses afterwards is
  // shared with it.
  auto returned = std::make_shared<absl::Notification>();
  WorkerOptions options = Options(1, /*lease_ms=*/1000);
  options.grace = absl::Milliseconds(300);
  auto worker = std::make_unique<RunningWorker>(
      options, std::vector<std::pair<std::string, Handler>>{
                   {"stuck", [&started, returned](const Job&) -> absl::StatusOr<std::string> {
                      started.Notify();
                      absl::SleepFor(absl::Seconds(3));
                      returned->Notify();
                      return std::string("abandoned run");
                    }}});
  ASSERT_TRUE(started.WaitForNotificationWithTimeout(absl::Seconds(10)));
  absl::Time stop = absl::Now();
  JW_EXPECT_OK(worker->Stop());
  EXPECT_LT(absl::Now() - stop, absl::Seconds(1));
  absl::Time destroy = absl::Now();
  worker.reset();  // does not wait for the stuck handler
  EXPECT_LT(absl::Now() - destroy, absl::Milliseconds(500));
  EXPECT_FALSE(returned->HasBeenNotified());

  // No renewal any more: the 1 s lease expires and the job is retried.
  v1::Job reaped = WaitForState(id, kPending);
  EXPECT_EQ(reaped.attempts(), 1);
  EXPECT_EQ(reaped.error(), "lease expired");
  ASSERT_TRUE(returned->WaitForNotificationWithTimeout(absl::Seconds(5)));
  absl::SleepFor(absl::Milliseconds(300));  // an Ack of the abandoned run would land now

  RunningWorker second(Options(1, 1000),
                       {{"stuck", [](const Job&) -> absl::StatusOr<std::string> {
                          return std::string("second run");
                        }}});
  v1::Job job = WaitForState(id, kCompleted);
  EXPECT_EQ(job.attempts(), 2);
  EXPECT_EQ(job.result(), "second run");
  // Nothing was reported for the abandoned run.
  EXPECT_EQ(outcomes_.WaitFor(1), (std::vector<std::string>{id + " 2 ack_ok"}));
}

// The same worker gets a job back (its lease was lost) while the old run is
// still going: each run keeps its own lease, and the old run's end does not
// stop the renewal of the new one.
TEST_F(WorkerTest, ALostLeaseReclaimedByTheSameWorkerKeepsBothRunsApart) {
  EnqueueOptions fast;
  fast.backoff_base_ms = 50;
  std::string id = MustEnqueue("twice", "{}", fast);
  absl::Notification first_started;
  absl::Notification second_started;
  WorkerOptions options = Options(2, /*lease_ms=*/1000);
  options.log = [](const std::string&) {};
  RunningWorker worker(options, {{"twice", [&](const Job& job) -> absl::StatusOr<std::string> {
                                    if (job.attempt == 1) {
                                      first_started.Notify();
                                      second_started.WaitForNotificationWithTimeout(
                                          absl::Seconds(10));
                                      return std::string("first");
                                    }
                                    if (job.attempt == 2) second_started.Notify();
                                    // Longer than the lease: it must be renewed.
                                    absl::SleepFor(absl::Milliseconds(2500));
                                    return std::string("second");
                                  }}});
  ASSERT_TRUE(first_started.WaitForNotificationWithTimeout(absl::Seconds(10)));
  RevokeLease(id);
  v1::Job job = WaitForState(id, kCompleted);
  EXPECT_EQ(job.attempts(), 2);
  EXPECT_EQ(job.result(), "second");
  EXPECT_EQ(outcomes_.WaitFor(2),
            (std::vector<std::string>{id + " 1 ack_error FAILED_PRECONDITION", id + " 2 ack_ok"}));
}

// A job delivered while every handler thread is busy (here: the slot of a
// lost lease was given back by the broker) is renewed while it waits.
TEST_F(WorkerTest, AJobWaitingForAHandlerThreadKeepsItsLease) {
  EnqueueOptions fast;
  fast.backoff_base_ms = 50;
  std::string id = MustEnqueue("twice", "{}", fast);
  absl::Notification first_started;
  absl::Notification redelivered;
  WorkerOptions options = Options(1, /*lease_ms=*/1000);
  options.log = [](const std::string&) {};
  RunningWorker worker(options, {{"twice", [&](const Job& job) -> absl::StatusOr<std::string> {
                                    if (job.attempt == 1) {
                                      first_started.Notify();
                                      redelivered.WaitForNotificationWithTimeout(
                                          absl::Seconds(10));
                                      // Attempt 2 waits this long for the only thread.
                                      absl::SleepFor(absl::Milliseconds(2500));
                                      return std::string("first");
                                    }
                                    return std::string("second");
                                  }}});
  ASSERT_TRUE(first_started.WaitForNotificationWithTimeout(absl::Seconds(10)));
  RevokeLease(id);
  v1::Job active = WaitForState(id, kActive);
  for (int i = 0; i < 500 && active.attempts() < 2; ++i) {
    absl::SleepFor(absl::Milliseconds(20));
    active = WaitForState(id, kActive);
  }
  ASSERT_EQ(active.attempts(), 2);
  redelivered.Notify();
  v1::Job job = WaitForState(id, kCompleted);
  EXPECT_EQ(job.attempts(), 2);
  EXPECT_EQ(job.result(), "second");
  EXPECT_EQ(outcomes_.WaitFor(2),
            (std::vector<std::string>{id + " 1 ack_error FAILED_PRECONDITION", id + " 2 ack_ok"}));
}

// A delivery that reaches the worker after its lease ended (here: the
// connection hung until 300 ms past it, as for a worker resuming from
// SIGSTOP) is dropped: no handler, no Ack / Fail. The broker delivers the
// job again.
TEST_F(WorkerTest, ADeliveryWhoseLeaseEndedBeforeItsHandlerStartsIsDropped) {
  const std::string& broker = broker_->address();
  testing::FaultProxy proxy(std::stoi(broker.substr(broker.rfind(':') + 1)));
  JW_ASSERT_OK(proxy.Start());
  absl::Mutex mu;
  std::vector<int> runs;
  std::vector<std::string> logs;
  WorkerOptions options = Options(1, /*lease_ms=*/2000);
  options.address = absl::StrCat("127.0.0.1:", proxy.port());
  options.log = [&](const std::string& line) {
    absl::MutexLock lock(&mu);
    logs.push_back(line);
  };
  RunningWorker worker(options, {{"late", [&](const Job& job) -> absl::StatusOr<std::string> {
                                    absl::MutexLock lock(&mu);
                                    runs.push_back(job.attempt);
                                    return absl::StrCat("attempt ", job.attempt);
                                  }}});
  std::string warmup = MustEnqueue("late");  // the Claim stream is open
  EXPECT_EQ(WaitForState(warmup, kCompleted).attempts(), 1);
  ASSERT_EQ(outcomes_.WaitFor(1).size(), 1u);

  proxy.Pause();
  EnqueueOptions retries;
  retries.max_attempts = 5;
  std::string id = MustEnqueue("late", "{}", retries);
  v1::Job claimed = WaitForState(id, kActive);  // for the hung stream
  ASSERT_EQ(claimed.attempts(), 1);
  absl::SleepFor(absl::FromUnixMillis(claimed.lease_expires_at_ms()) + absl::Milliseconds(300) -
                 absl::Now());
  proxy.Resume();

  v1::Job job = WaitForState(id, kCompleted, absl::Seconds(20));
  EXPECT_EQ(job.attempts(), 2);
  EXPECT_EQ(job.result(), "attempt 2");
  EXPECT_EQ(outcomes_.WaitFor(3), (std::vector<std::string>{warmup + " 1 ack_ok",
                                                            id + " 1 expired_dropped",
                                                            id + " 2 ack_ok"}));
  absl::MutexLock lock(&mu);
  EXPECT_EQ(runs, (std::vector<int>{1, 2}));  // the warm-up, then attempt 2 only
  EXPECT_EQ(worker.worker().stats().expired_deliveries_dropped, 1);
  int dropped = 0;
  for (const std::string& line : logs) {
    if (line.find("dropped") == std::string::npos) continue;
    ++dropped;
    EXPECT_NE(line.find(absl::StrCat("q/", id)), std::string::npos) << line;
    EXPECT_NE(line.find(" ms ago"), std::string::npos) << line;
  }
  EXPECT_EQ(dropped, 1);
}

// An Ack whose calls time out (the connection hangs) is sent again until the
// lease ends: here the connection comes back 0.4 s before the end, later
// than the old rule ("stop when the next backoff would pass the lease end")
// may have given up.
TEST_F(WorkerTest, AnAckTimingOutIsSentAgainUntilTheLeaseEnds) {
  const std::string& broker = broker_->address();
  testing::FaultProxy proxy(std::stoi(broker.substr(broker.rfind(':') + 1)));
  JW_ASSERT_OK(proxy.Start());
  absl::Notification started;
  absl::Notification hung;
  std::atomic<int64_t> lease_end_ms{0};
  WorkerOptions options = Options(1, /*lease_ms=*/4000);
  options.address = absl::StrCat("127.0.0.1:", proxy.port());
  options.timeout = absl::Milliseconds(300);
  options.log = [](const std::string&) {};
  RunningWorker worker(options, {{"t", [&](const Job& job) -> absl::StatusOr<std::string> {
                                    if (job.attempt == 1) {
                                      started.Notify();
                                      hung.WaitForNotification();
                                      // No renewal since the claim: the lease ends here.
                                      lease_end_ms = job.lease_expires_at_ms;
                                    }
                                    return absl::StrCat("attempt ", job.attempt);
                                  }}});
  std::string id = MustEnqueue("t");
  ASSERT_TRUE(started.WaitForNotificationWithTimeout(absl::Seconds(10)));
  proxy.Pause();
  hung.Notify();
  for (int i = 0; i < 500 && lease_end_ms == 0; ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_NE(lease_end_ms.load(), 0);
  absl::SleepFor(absl::FromUnixMillis(lease_end_ms) - absl::Milliseconds(400) - absl::Now());
  proxy.Resume();

  v1::Job job = WaitForState(id, kCompleted);
  EXPECT_EQ(job.attempts(), 1);
  EXPECT_EQ(outcomes_.WaitFor(1), std::vector<std::string>{id + " 1 ack_ok"});
}

// lease_ms 0: the broker's default lease (3 s here), renewed about once a
// second, not in a tight loop.
TEST_F(WorkerShortDefaultLeaseTest, RenewsTheBrokersDefaultLease) {
  std::string id = MustEnqueue("long");
  const int64_t zadds_before = ZaddCalls();
  ASSERT_GE(zadds_before, 0);
  RunningWorker worker(Options(1, /*lease_ms=*/0),
                       {{"long", [](const Job&) -> absl::StatusOr<std::string> {
                          absl::SleepFor(absl::Seconds(5));
                          return std::string("done");
                        }}});
  v1::Job job = WaitForState(id, kCompleted, absl::Seconds(15));
  EXPECT_EQ(job.attempts(), 1);
  EXPECT_EQ(outcomes_.WaitFor(1), (std::vector<std::string>{id + " 1 ack_ok"}));
  // One ZADD for the claim, about five renewals, a few for the Ack.
  const int64_t zadds = ZaddCalls() - zadds_before;
  EXPECT_GE(zadds, 4);
  EXPECT_LE(zadds, 15);
}

// The lease the broker granted (here its default: the worker asks for none)
// reaches the handler as job.lease_ms, and it is the length renewed: a
// handler running 2.5 leases keeps its lease and is acked on its first run.
TEST_F(WorkerBrokerLeaseTest, UsesTheLeaseTheBrokerGranted) {
  EnqueueOptions once;
  once.max_attempts = 1;  // a lost lease would kill the job
  std::string id = MustEnqueue("long", "{}", once);
  std::atomic<int64_t> seen_lease_ms{-1};
  RunningWorker worker(Options(1, /*lease_ms=*/0),
                       {{"long", [&](const Job& job) -> absl::StatusOr<std::string> {
                          seen_lease_ms = job.lease_ms;
                          absl::SleepFor(absl::Milliseconds(kDefaultLeaseMs * 5 / 2));
                          return std::string("done");
                        }}});
  v1::Job job = WaitForState(id, kCompleted);
  EXPECT_EQ(job.attempts(), 1);
  EXPECT_EQ(job.result(), "done");
  EXPECT_EQ(outcomes_.WaitFor(1), (std::vector<std::string>{id + " 1 ack_ok"}));
  EXPECT_EQ(seen_lease_ms.load(), kDefaultLeaseMs);
}

// The Worker's own lease_ms is what the broker grants, and what job.lease_ms
// shows.
TEST_F(WorkerBrokerLeaseTest, JobLeaseMsIsTheWorkersLease) {
  std::string id = MustEnqueue("t");
  std::atomic<int64_t> seen_lease_ms{-1};
  RunningWorker worker(Options(1, /*lease_ms=*/2000),
                       {{"t", [&](const Job& job) -> absl::StatusOr<std::string> {
                          seen_lease_ms = job.lease_ms;
                          return std::string();
                        }}});
  WaitForState(id, kCompleted);
  EXPECT_EQ(seen_lease_ms.load(), 2000);
}

// A 100 KiB error text of 4-byte characters is cut to the longest
// whole-character prefix of at most 64 KiB: "INTERNAL: " is 10 bytes, so
// 65534 bytes (65536 would split a character).
TEST_F(WorkerTest, TheErrorTextIsCutAtACharacterBoundaryWithin64KiB) {
  std::string message;
  while (message.size() < 100 * 1024) message += "\xF0\x9F\x98\x80";  // U+1F600
  const std::string text = "INTERNAL: " + message;
  std::string id = MustEnqueue("long-error");
  RunningWorker worker(Options(), {{"long-error", [&](const Job&) -> absl::StatusOr<std::string> {
                                      return NonRetryable(absl::InternalError(message));
                                    }}});
  v1::Job dead = WaitForState(id, kDead);
  EXPECT_EQ(outcomes_.WaitFor(1), (std::vector<std::string>{id + " 1 fail_ok DEAD"}));
  ASSERT_EQ(dead.error().size(), 65534u);
  EXPECT_EQ(dead.error(), text.substr(0, 65534));
}

// The granted lease wins over every guess: here the Redis clock runs a
// minute ahead of the worker's, so lease_expires_at_ms minus the local clock
// reads 61.5 s. Only a broker older than ClaimedJob.lease_ms leaves a guess.
TEST(LeaseRulesTest, TheLeaseLengthIsTheGrantedOne) {
  const absl::Time now = absl::FromUnixMillis(1'800'000'000'000);
  v1::ClaimedJob skewed;
  skewed.set_lease_expires_at_ms(absl::ToUnixMillis(now) + 60000 + 1500);
  skewed.set_lease_ms(1500);
  EXPECT_EQ(LeaseLength(skewed, /*worker_lease_ms=*/0, now), absl::Milliseconds(1500));
  EXPECT_EQ(LeaseLength(skewed, /*worker_lease_ms=*/2000, now), absl::Milliseconds(1500));
  EXPECT_EQ(RenewLeaseMs(skewed, 0), 1500);
  EXPECT_EQ(RenewLeaseMs(skewed, 2000), 1500);

  v1::ClaimedJob old_broker = skewed;
  old_broker.set_lease_ms(0);
  EXPECT_EQ(LeaseLength(old_broker, 2000, now), absl::Milliseconds(2000));
  EXPECT_EQ(LeaseLength(old_broker, 0, now), absl::Milliseconds(61500));
  EXPECT_EQ(RenewLeaseMs(old_broker, 2000), 2000);
  EXPECT_EQ(RenewLeaseMs(old_broker, 0), 0);
  old_broker.set_lease_expires_at_ms(absl::ToUnixMillis(now) - 10);  // behind: the default
  EXPECT_EQ(LeaseLength(old_broker, 0, now), kFallbackLease);
}

// What is not UTF-8 (a what() or a status message may hold any bytes)
// becomes U+FFFD, so that the Fail can be sent; valid text passes unchanged.
TEST(ErrorTextTest, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(TruncateErrorText("plain \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "plain \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(TruncateErrorText("a\xFF" "b"), "a" + fffd + "b");
  EXPECT_EQ(TruncateErrorText("\xC3"), fffd);                     // cut sequence
  EXPECT_EQ(TruncateErrorText("\xC0\xAF"), fffd + fffd);         // overlong
  EXPECT_EQ(TruncateErrorText("\xED\xA0\x80"), fffd + fffd + fffd);  // surrogate
  EXPECT_EQ(TruncateErrorText("\xF4\x90\x80\x80").size(), 4 * fffd.size());  // > U+10FFFF
}

TEST(RetryAfterTest, MarksTheDelayInWholeMilliseconds) {
  EXPECT_EQ(RetryAfterMs(absl::InternalError("plain")), 0);
  absl::Status marked = RetryAfter(absl::UnavailableError("busy"), absl::Microseconds(1500));
  EXPECT_EQ(marked.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(marked.message(), "busy");
  EXPECT_EQ(RetryAfterMs(marked), 2);  // rounded up
  EXPECT_EQ(std::string(*marked.GetPayload("type.jobwire.dev/retry_after_ms")), "2");
  EXPECT_EQ(RetryAfterMs(RetryAfter(absl::InternalError(""), absl::Seconds(3))), 3000);
  EXPECT_EQ(RetryAfterMs(RetryAfter(absl::InternalError(""), absl::ZeroDuration())), 1);
  EXPECT_EQ(RetryAfterMs(RetryAfter(absl::InternalError(""), absl::Seconds(-5))), 1);
  EXPECT_EQ(RetryAfterMs(RetryAfter(absl::InternalError(""), absl::Hours(24 * 30))),
            kMaxRetryAfterMs);
  EXPECT_EQ(RetryAfterMs(RetryAfter(absl::InternalError(""), absl::InfiniteDuration())),
            604800000);
  absl::Status both = NonRetryable(RetryAfter(absl::InternalError("x"), absl::Seconds(1)));
  EXPECT_TRUE(IsNonRetryable(both));
  EXPECT_EQ(RetryAfterMs(both), 1000);
}

// A RetryAfter failure is retried after exactly that delay, not the backoff
// (10 minutes here), and counts one attempt; non_retryable wins over it.
TEST_F(WorkerTest, RetryAfterSchedulesTheRetryAfterTheDelay) {
  constexpr int64_t kDelayMs = 1500;
  EnqueueOptions slow_backoff;
  slow_backoff.max_attempts = 3;
  slow_backoff.backoff_base_ms = 600000;
  slow_backoff.backoff_max_ms = 600000;
  std::string id = MustEnqueue("later", "{}", slow_backoff);
  std::string dead_id = MustEnqueue("never", "{}", slow_backoff);
  std::atomic<int64_t> failed_at_ms{0};
  std::atomic<int64_t> second_run_at_ms{0};
  RunningWorker worker(
      Options(1),
      {{"later",
        [&](const Job& job) -> absl::StatusOr<std::string> {
          if (job.attempt == 1) {
            failed_at_ms = absl::ToUnixMillis(absl::Now());
            return RetryAfter(absl::UnavailableError("busy"), absl::Milliseconds(kDelayMs));
          }
          second_run_at_ms = absl::ToUnixMillis(absl::Now());
          return std::string("second");
        }},
       {"never", [](const Job&) -> absl::StatusOr<std::string> {
          return NonRetryable(
              RetryAfter(absl::InvalidArgumentError("bad"), absl::Milliseconds(kDelayMs)));
        }}});
  v1::Job dead = WaitForState(dead_id, kDead);
  EXPECT_EQ(dead.attempts(), 1);
  EXPECT_EQ(dead.error(), "INVALID_ARGUMENT: bad");

  // The retry, scheduled: due kDelayMs after the failure.
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  absl::StatusOr<v1::Job> pending;
  do {
    pending = client_->GetJob("q", id);
    if (pending.ok() && pending->state() == kPending && pending->attempts() == 1) break;
    absl::SleepFor(absl::Milliseconds(10));
  } while (absl::Now() < deadline);
  const int64_t seen_at_ms = absl::ToUnixMillis(absl::Now());
  JW_ASSERT_OK(pending.status());
  ASSERT_EQ(pending->state(), kPending) << pending->DebugString();
  EXPECT_EQ(pending->attempts(), 1);
  EXPECT_EQ(pending->error(), "UNAVAILABLE: busy");
  EXPECT_GE(pending->available_at_ms(), failed_at_ms + kDelayMs);
  EXPECT_LE(pending->available_at_ms(), seen_at_ms + kDelayMs);

  v1::Job job = WaitForState(id, kCompleted);
  EXPECT_EQ(job.attempts(), 2);
  EXPECT_EQ(job.result(), "second");
  EXPECT_GE(second_run_at_ms - failed_at_ms, kDelayMs);
  EXPECT_LT(second_run_at_ms - failed_at_ms, kDelayMs + 2000);
}

// A lease lost while the handler runs (here: the job is deleted through the
// Admin API, so the next ExtendLease answers NOT_FOUND) is signalled to the
// handler at once: job.lease_lost() and job.stop_token(). The final Ack is
// still sent, and its refusal reported.
TEST_F(WorkerTest, ALostLeaseIsSignalledToTheRunningHandler) {
  std::string id = MustEnqueue("waits");
  absl::Notification started;
  std::atomic<bool> lost_at_start{true};
  std::atomic<bool> signalled{false};
  std::atomic<bool> lost_at_end{false};
  std::atomic<int64_t> signalled_at_ms{0};
  WorkerOptions options = Options(1, /*lease_ms=*/1500);  // renewed every 500 ms
  options.log = [](const std::string&) {};
  RunningWorker worker(options, {{"waits", [&](const Job& job) -> absl::StatusOr<std::string> {
                                    lost_at_start = job.lease_lost();
                                    absl::Notification lost;
                                    std::stop_callback on_lost(job.stop_token(),
                                                               [&] { lost.Notify(); });
                                    started.Notify();
                                    signalled = lost.WaitForNotificationWithTimeout(
                                        absl::Seconds(10));
                                    signalled_at_ms = absl::ToUnixMillis(absl::Now());
                                    lost_at_end = job.lease_lost();
                                    return std::string("too late");
                                  }}});
  ASSERT_TRUE(started.WaitForNotificationWithTimeout(absl::Seconds(10)));
  std::unique_ptr<v1::AdminService::Stub> admin = v1::AdminService::NewStub(broker_->channel());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::DeleteJobRequest request;
  request.set_queue("q");
  request.set_job_id(id);
  v1::DeleteJobResponse response;
  const int64_t deleted_at_ms = absl::ToUnixMillis(absl::Now());
  ASSERT_TRUE(admin->DeleteJob(&context, request, &response).ok());

  EXPECT_EQ(outcomes_.WaitFor(1), (std::vector<std::string>{id + " 1 ack_error NOT_FOUND"}));
  EXPECT_FALSE(lost_at_start.load());
  EXPECT_TRUE(signalled.load());
  EXPECT_TRUE(lost_at_end.load());
  // Before the 1.5 s lease would have ended (renewals run every 0.5 s; the
  // margin is for a loaded machine).
  EXPECT_LT(signalled_at_ms - deleted_at_ms, 2000);
}

// Rejected by the worker itself, before it contacts any broker.
TEST_F(WorkerTest, NegativeLeaseIsInvalid) {
  absl::StatusOr<int> port = PickFreePort();
  JW_ASSERT_OK(port.status());
  WorkerOptions options = Options(1, /*lease_ms=*/-1);
  options.address = absl::StrCat("127.0.0.1:", *port);  // nothing listens
  options.log = [](const std::string&) {};
  Worker worker(options);
  absl::Status status;
  absl::Notification returned;
  std::thread run([&] {
    status = worker.Run();
    returned.Notify();
  });
  EXPECT_TRUE(returned.WaitForNotificationWithTimeout(absl::Seconds(2)));
  worker.Stop();
  run.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("lease_ms"), absl::string_view::npos) << status;
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
}  // namespace
}  // namespace jobwire::client
