// jobwire::client::Worker's leases against a real redis-server and the real
// broker: the lease length, renewal, a lost lease (told to the handler, the
// Ack / Fail then sent once more at most), deliveries whose lease ended before their
// handler started, and the Ack / Fail retries the lease bounds. The rest of
// the Worker: worker_test.cc.
#include "client/cpp/worker.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
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

using ::jobwire::testing::kActive;
using ::jobwire::testing::kCompleted;

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

// A broker that stops at once when told to (its open streams are not
// waited for).
class WorkerBrokerStopTest : public WorkerTest {
 protected:
  WorkerBrokerStopTest() : WorkerTest({"--shutdown_grace_ms=200"}) {}
};

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
// may have given up. The acks written meanwhile reach the broker as the
// connection comes back, and a renewal written meanwhile may be answered
// after the first of them completed the job: the lease is then lost to the
// ack itself, and the ack sent once more is answered OK (a repeat).
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

// The granted lease wins over every guess: here the Redis clock runs a
// minute ahead of the worker's, so lease_expires_at_ms minus the local clock
// would read 61.5 s.
TEST(LeaseRulesTest, TheLeaseLengthIsTheGrantedOne) {
  const absl::Time now = absl::FromUnixMillis(1'800'000'000'000);
  v1::ClaimedJob skewed;
  skewed.set_lease_expires_at_ms(absl::ToUnixMillis(now) + 60000 + 1500);
  skewed.set_lease_ms(1500);
  EXPECT_EQ(LeaseLength(skewed, /*requested_lease_ms=*/0), absl::Milliseconds(1500));
  EXPECT_EQ(LeaseLength(skewed, /*requested_lease_ms=*/2000), absl::Milliseconds(1500));
  EXPECT_EQ(RenewLeaseMs(skewed, 0), 1500);
  EXPECT_EQ(RenewLeaseMs(skewed, 2000), 1500);
}

// From a broker older than ClaimedJob.lease_ms (0) the lease is the one the
// Worker asked for, or the broker's default (30 s) when it asked for none,
// whatever lease_expires_at_ms says (none, behind or ahead of the local
// clock): no clock arithmetic.
TEST(LeaseRulesTest, AnOlderBrokersLeaseIsTheOneAskedForOrTheDefault) {
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  v1::ClaimedJob old_broker;
  for (int64_t expires_at_ms : {int64_t{0}, now_ms - 10, now_ms + 3000, now_ms + 61500}) {
    old_broker.set_lease_expires_at_ms(expires_at_ms);
    EXPECT_EQ(LeaseLength(old_broker, /*requested_lease_ms=*/2000), absl::Milliseconds(2000));
    EXPECT_EQ(LeaseLength(old_broker, /*requested_lease_ms=*/0), absl::Milliseconds(30000));
    EXPECT_EQ(kBrokerDefaultLeaseMs, 30000);
    // Renewals ask for the same: the lease asked for, 0 for the default.
    EXPECT_EQ(RenewLeaseMs(old_broker, 2000), 2000);
    EXPECT_EQ(RenewLeaseMs(old_broker, 0), 0);
  }
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

// Once the lease is known lost (here: both jobs are deleted through the
// Admin API, so the next renewal answers NOT_FOUND), the final Ack / Fail is
// sent once: answered UNAVAILABLE (the broker is down by then) it is reported
// ack_unknown / fail_unknown at once, not sent again until the lease ends
// (the broker would refuse it: the job moved on).
TEST_F(WorkerBrokerStopTest, AfterALostLeaseTheAckOrFailIsSentOnce) {
  const std::string acked = MustEnqueue("ack");
  const std::string failed = MustEnqueue("fail");
  absl::Mutex mu;
  int started = 0;
  int lost = 0;
  absl::Notification broker_down;
  int64_t lease_end_ms = INT64_MAX;  // the earlier lease end, as of the claims
  WorkerOptions options = Options(2, /*lease_ms=*/6000);  // renewed every 2 s
  options.log = [](const std::string&) {};
  auto handler = [&](const Job& job) -> absl::StatusOr<std::string> {
    absl::Notification lost_signal;
    std::stop_callback on_lost(job.stop_token(), [&] { lost_signal.Notify(); });
    {
      absl::MutexLock lock(&mu);
      ++started;
      lease_end_ms = std::min(lease_end_ms, job.lease_expires_at_ms);
    }
    if (lost_signal.WaitForNotificationWithTimeout(absl::Seconds(10))) {
      absl::MutexLock lock(&mu);
      ++lost;
    }
    broker_down.WaitForNotificationWithTimeout(absl::Seconds(20));
    if (job.type == "fail") return absl::InternalError("too late");
    return std::string("too late");
  };
  RunningWorker worker(options, {{"ack", handler}, {"fail", handler}});
  {
    absl::MutexLock lock(&mu);
    auto both_started = [&] { return started == 2; };
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&both_started), absl::Seconds(10)));
  }
  {
    std::unique_ptr<v1::AdminService::Stub> admin =
        v1::AdminService::NewStub(broker_->channel());
    for (const std::string& id : {acked, failed}) {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      v1::DeleteJobRequest request;
      request.set_queue("q");
      request.set_job_id(id);
      v1::DeleteJobResponse response;
      ASSERT_TRUE(admin->DeleteJob(&context, request, &response).ok()) << id;
    }
  }  // the stub's channel is not kept: the broker stops at once
  {
    absl::MutexLock lock(&mu);
    auto both_lost = [&] { return lost == 2; };
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&both_lost), absl::Seconds(10)));
  }
  broker_->Stop();
  const absl::Time down = absl::Now();
  broker_down.Notify();

  std::vector<std::string> outcomes = outcomes_.WaitFor(2);
  const absl::Time reported = absl::Now();
  std::sort(outcomes.begin(), outcomes.end());
  std::vector<std::string> want = {acked + " 1 ack_unknown UNAVAILABLE",
                                   failed + " 1 fail_unknown UNAVAILABLE"};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(outcomes, want);
  // At once. Sent again, they would have been until the lease end: about 4 s
  // after the handlers returned, no renewal having succeeded since the claim.
  EXPECT_LT(reported - down, absl::Milliseconds(1500));
  absl::MutexLock lock(&mu);
  EXPECT_LT(absl::ToUnixMillis(reported), lease_end_ms - 1000);
}

}  // namespace
}  // namespace jobwire::client
