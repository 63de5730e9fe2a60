// jobwire::client::Worker against a real redis-server and the real broker:
// handlers and their outcomes, concurrency, Stop and the grace, the error
// text, RetryAfter (and keep_attempt), option checks, weights. Leases, their loss and the Ack / Fail
// retries they bound: worker_lease_test.cc.
#include "client/cpp/worker.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "client/cpp/handler_errors.h"
#include "client/cpp/worker_test_util.h"
#include "gtest/gtest.h"
#include "tests/job_record.h"
#include "tests/test_harness.h"

namespace jobwire::client {
namespace {

using ::jobwire::testing::kCompleted;
using ::jobwire::testing::kDead;
using ::jobwire::testing::kPending;
using ::jobwire::testing::PickFreePort;

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

TEST_F(WorkerTest, AJobOfAnotherTypeIsNeverDelivered) {
  // Ahead of the worker's own job in the queue: its Claim names only the
  // types it handles, so this one waits, using no attempt.
  std::string other = MustEnqueue("nobody-handles-this");
  std::string mine = MustEnqueue("echo");
  RunningWorker worker(Options(), {{"echo", [](const Job&) -> absl::StatusOr<std::string> {
                                      return std::string("ok");
                                    }}});
  WaitForState(mine, kCompleted);
  EXPECT_EQ(outcomes_.WaitFor(1), (std::vector<std::string>{mine + " 1 ack_ok"}));
  v1::Job job = WaitForState(other, kPending);
  EXPECT_EQ(job.attempts(), 0);
  EXPECT_EQ(job.error(), "");
}

TEST_F(WorkerTest, RunRefusesAWorkerWithoutHandlers) {
  Worker worker(Options());
  absl::Status status = worker.Run();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("no handler registered"), absl::string_view::npos) << status;
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

TEST(RetryAfterTest, KeepAttemptIsSentOnlyWithTheDelayAndNonRetryableWins) {
  const absl::Status turned_away = RetryAfter(absl::UnavailableError("rate limited"),
                                              absl::Milliseconds(1500), /*keep_attempt=*/true);
  EXPECT_TRUE(KeepsAttempt(turned_away));
  EXPECT_FALSE(KeepsAttempt(RetryAfter(absl::UnavailableError("busy"), absl::Seconds(1))));
  EXPECT_FALSE(KeepsAttempt(absl::UnavailableError("plain")));
  // A later RetryAfter without keep_attempt takes the mark off.
  EXPECT_FALSE(KeepsAttempt(RetryAfter(turned_away, absl::Seconds(2))));

  v1::FailRequest request;
  SetFailure(HandlerFailure(turned_away), &request);
  EXPECT_EQ(request.error(), "UNAVAILABLE: rate limited");
  EXPECT_FALSE(request.non_retryable());
  EXPECT_EQ(request.retry_after_ms(), 1500);
  EXPECT_TRUE(request.keep_attempt());

  v1::FailRequest counted;
  SetFailure(HandlerFailure(RetryAfter(absl::UnavailableError("busy"), absl::Seconds(1))),
             &counted);
  EXPECT_EQ(counted.retry_after_ms(), 1000);
  EXPECT_FALSE(counted.keep_attempt());

  // Non-retryable wins: neither retry_after_ms nor keep_attempt is sent.
  v1::FailRequest dead;
  SetFailure(HandlerFailure(NonRetryable(turned_away)), &dead);
  EXPECT_TRUE(dead.non_retryable());
  EXPECT_EQ(dead.retry_after_ms(), 0);
  EXPECT_FALSE(dead.keep_attempt());
}

// Runs turned away with keep_attempt use no attempt: a job of max_attempts 2
// turned away three times (DEAD after two without keep_attempt) runs a
// fourth time as attempt 1 and completes with attempts 1.
TEST_F(WorkerTest, KeepAttemptRunsTurnedAwayUseNoAttempt) {
  EnqueueOptions two;
  two.max_attempts = 2;
  std::string id = MustEnqueue("limited", "{}", two);
  absl::Mutex mu;
  std::vector<int> runs;
  RunningWorker worker(Options(1), {{"limited", [&](const Job& job) -> absl::StatusOr<std::string> {
                                       absl::MutexLock lock(&mu);
                                       runs.push_back(job.attempt);
                                       if (runs.size() <= 3) {
                                         return RetryAfter(
                                             absl::UnavailableError("rate limited downstream"),
                                             absl::Milliseconds(50), /*keep_attempt=*/true);
                                       }
                                       return std::string("done");
                                     }}});
  v1::Job job = WaitForState(id, kCompleted);
  EXPECT_EQ(job.attempts(), 1);
  EXPECT_EQ(job.max_attempts(), 2);
  EXPECT_EQ(job.result(), "done");
  EXPECT_EQ(job.error(), "UNAVAILABLE: rate limited downstream");
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(runs, (std::vector<int>{1, 1, 1, 1}));
  }
  const std::string turned_away = id + " 1 fail_ok RETRY_SCHEDULED";
  EXPECT_EQ(outcomes_.WaitFor(4), (std::vector<std::string>{turned_away, turned_away,
                                                            turned_away, id + " 1 ack_ok"}));
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
  worker.Register("t", [](const Job&) -> absl::StatusOr<std::string> { return std::string(); });
  absl::Status status = worker.Run();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("lease_ms"), absl::string_view::npos) << status;
}

// Weighted fair claiming: the jobs this test's handler saw split 3:1
// between two busy queues.
TEST_F(WorkerTest, WeightsSplitTheJobsOfBusyQueues) {
  for (const auto& [queue, count] : {std::pair{"heavy", 1300}, std::pair{"light", 600}}) {
    for (int done = 0; done < count; done += 100) {
      std::vector<BatchJob> jobs(100, BatchJob{"w", "{}", {}});
      JW_ASSERT_OK(client_->EnqueueBatch(queue, jobs).status());
    }
  }
  constexpr int kMeasured = 1200;
  absl::Mutex mu;
  std::vector<std::string> seen;  // queue of each job handled
  absl::Notification enough;
  WorkerOptions options = Options(10);
  options.queues = {"heavy", "light"};
  options.weights = {{"heavy", 3}, {"light", 1}};
  RunningWorker worker(options, {{"w", [&](const Job& job) -> absl::StatusOr<std::string> {
                                   absl::MutexLock lock(&mu);
                                   seen.push_back(job.queue);
                                   if (seen.size() == kMeasured) enough.Notify();
                                   return std::string();
                                 }}});
  ASSERT_TRUE(enough.WaitForNotificationWithTimeout(absl::Seconds(60)));
  absl::MutexLock lock(&mu);
  const int heavy = std::count(seen.begin(), seen.begin() + kMeasured, "heavy");
  EXPECT_NEAR(heavy, 900, 60) << "light " << kMeasured - heavy;
}

TEST_F(WorkerTest, RunRefusesWeightsThatDoNotMatchTheQueues) {
  struct Case {
    std::map<std::string, int> weights;
    const char* says;
  };
  const std::vector<Case> cases = {
      {{{"a", 1}}, "no weight for queue \"b\""},
      {{{"a", 1}, {"b", 1}, {"c", 1}}, "\"c\", which is not in queues"},
      {{{"a", 0}, {"b", 1}}, "must be 1..1000"},
      {{{"a", 1}, {"b", 1001}}, "must be 1..1000"},
  };
  for (const Case& c : cases) {
    WorkerOptions options = Options();
    options.queues = {"a", "b"};
    options.weights = c.weights;
    Worker worker(options);
    worker.Register("t", [](const Job&) -> absl::StatusOr<std::string> { return std::string(); });
    absl::Status status = worker.Run();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_TRUE(absl::StartsWith(status.message(), "weights: ")) << status;
    EXPECT_NE(status.message().find(c.says), absl::string_view::npos) << status;
  }
}

}  // namespace
}  // namespace jobwire::client
