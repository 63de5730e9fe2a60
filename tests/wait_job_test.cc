// WaitJob through the real broker and a real Redis: a waiter sees a job's
// states as they change and the final one, for a job that completes, one
// that dies, one finished before the call, one deleted on Ack; the wait's
// timeout, an unknown job, bad input; a job finished through another broker
// replica (the events channel, not the local broker, tells the waiter); the
// broker's drain ending a wait with UNAVAILABLE; and a queue nobody follows
// left without an events subscription. Every check reads what the test's
// own waiter received.
#include <signal.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cpp/client.h"
#include "client/cpp/error_details.h"
#include "gtest/gtest.h"
#include "tests/lifecycle_test_util.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

// One WaitJob call read on a background thread.
class Waiter {
 public:
  Waiter(std::unique_ptr<v1::BrokerService::Stub> stub, const std::string& queue,
         const std::string& job_id, int64_t timeout_ms = 0)
      : stub_(std::move(stub)) {
    v1::WaitJobRequest request;
    request.set_queue(queue);
    request.set_job_id(job_id);
    request.set_timeout_ms(timeout_ms);
    thread_ = std::thread([this, request] {
      auto reader = stub_->WaitJob(&context_, request);
      v1::WaitJobResponse response;
      while (reader->Read(&response)) {
        absl::MutexLock lock(&mu_);
        jobs_.push_back(response.job());
      }
      grpc::Status status = reader->Finish();
      absl::MutexLock lock(&mu_);
      end_ = status;
    });
  }
  ~Waiter() {
    context_.TryCancel();
    thread_.join();
  }

  // Waits until `n` messages arrived (true) or `timeout` passed.
  bool WaitForMessages(size_t n, absl::Duration timeout = kPrompt) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return jobs_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
  }
  // The final status, waiting up to `timeout`; nullopt while still open.
  std::optional<grpc::Status> End(absl::Duration timeout = kPrompt) {
    absl::MutexLock lock(&mu_);
    auto ended = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return end_.has_value(); };
    mu_.AwaitWithTimeout(absl::Condition(&ended), timeout);
    return end_;
  }
  std::vector<v1::Job> jobs() {
    absl::MutexLock lock(&mu_);
    return jobs_;
  }
  // "JOB_STATE_PENDING/0 JOB_STATE_ACTIVE/1 ...": each message's state and attempts.
  std::string States() {
    std::string out;
    for (const v1::Job& job : jobs()) {
      if (!out.empty()) out += " ";
      out += StateName(job.state()) + "/" + std::to_string(job.attempts());
    }
    return out;
  }

 private:
  std::unique_ptr<v1::BrokerService::Stub> stub_;
  grpc::ClientContext context_;
  absl::Mutex mu_;
  std::vector<v1::Job> jobs_ ABSL_GUARDED_BY(mu_);
  std::optional<grpc::Status> end_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

std::string Reason(const grpc::Status& status) {
  return client::ErrorReason(client::FromGrpc(status));
}

grpc::Status Fail(v1::BrokerService::StubInterface& stub, const v1::FailRequest& request) {
  v1::FailResponse response;
  return testing::Fail(stub, request, &response);
}

class WaitJobTest : public LifecycleTest {
 protected:
  // Subscribers of `queue`'s events channel on the Redis under test.
  int64_t EventSubscribers(const std::string& queue) {
    return ShardSubscribers("jw:{" + queue + "}:events");
  }
};

TEST_F(WaitJobTest, SeesEveryChangeOfARetriedJobThenItsResult) {
  const std::string queue = "wait";
  const std::string id = MustEnqueue(*stub_, MakeJob(queue, "p"));
  Waiter waiter(broker_->NewStub(), queue, id);
  ASSERT_TRUE(waiter.WaitForMessages(1)) << waiter.States();
  auto claims = OpenClaim(MakeClaim({queue}));
  std::optional<v1::ClaimedJob> first = claims->Next(kPrompt);
  ASSERT_TRUE(first);
  ASSERT_TRUE(waiter.WaitForMessages(2)) << waiter.States();
  v1::FailRequest fail = MakeFail(*first, "boom");
  fail.set_retry_after_ms(200);
  JW_ASSERT_OK(Fail(*stub_, fail));
  ASSERT_TRUE(waiter.WaitForMessages(3)) << waiter.States();
  std::optional<v1::ClaimedJob> second = claims->Next(kPrompt);
  ASSERT_TRUE(second);
  ASSERT_TRUE(waiter.WaitForMessages(4)) << waiter.States();
  EXPECT_FALSE(waiter.End(absl::ZeroDuration())) << "ended before the job finished";
  JW_ASSERT_OK(Ack(*stub_, *second, "the result"));
  std::optional<grpc::Status> end = waiter.End();
  ASSERT_TRUE(end);
  EXPECT_TRUE(end->ok()) << StatusText(*end);
  EXPECT_EQ(waiter.States(),
            "JOB_STATE_PENDING/0 JOB_STATE_ACTIVE/1 JOB_STATE_PENDING/1 JOB_STATE_ACTIVE/2 "
            "JOB_STATE_COMPLETED/2");
  std::vector<v1::Job> jobs = waiter.jobs();
  EXPECT_EQ(jobs[2].error(), "boom");
  EXPECT_EQ(jobs.back().result(), "the result");
  EXPECT_EQ(jobs.back().queue(), queue);
  EXPECT_GT(jobs.back().finished_at_ms(), 0);
}

TEST_F(WaitJobTest, ADeadJobEndsTheWaitWithItsError) {
  const std::string queue = "wait-dead";
  const std::string id = MustEnqueue(*stub_, MakeJob(queue));
  Waiter waiter(broker_->NewStub(), queue, id);
  ASSERT_TRUE(waiter.WaitForMessages(1));
  auto claims = OpenClaim(MakeClaim({queue}));
  std::optional<v1::ClaimedJob> claimed = claims->Next(kPrompt);
  ASSERT_TRUE(claimed);
  v1::FailRequest fail = MakeFail(*claimed, "bad input");
  fail.set_non_retryable(true);
  JW_ASSERT_OK(Fail(*stub_, fail));
  std::optional<grpc::Status> end = waiter.End();
  ASSERT_TRUE(end);
  EXPECT_TRUE(end->ok()) << StatusText(*end);
  ASSERT_FALSE(waiter.jobs().empty());
  EXPECT_EQ(waiter.jobs().back().state(), kDead);
  EXPECT_EQ(waiter.jobs().back().error(), "bad input");
}

TEST_F(WaitJobTest, AJobFinishedBeforeTheCallIsAnsweredAtOnce) {
  const std::string queue = "wait-done";
  const std::string id = MustEnqueue(*stub_, MakeJob(queue));
  auto claims = OpenClaim(MakeClaim({queue}));
  std::optional<v1::ClaimedJob> claimed = claims->Next(kPrompt);
  ASSERT_TRUE(claimed);
  JW_ASSERT_OK(Ack(*stub_, *claimed, "r"));
  Waiter waiter(broker_->NewStub(), queue, id);
  std::optional<grpc::Status> end = waiter.End();
  ASSERT_TRUE(end);
  EXPECT_TRUE(end->ok()) << StatusText(*end);
  EXPECT_EQ(waiter.States(), "JOB_STATE_COMPLETED/1");
  EXPECT_EQ(waiter.jobs().front().result(), "r");
}

TEST_F(WaitJobTest, AJobDeletedOnAckIsReportedCompletedWithoutItsResult) {
  const std::string queue = "wait-gone";
  v1::EnqueueRequest job = MakeJob(queue);
  job.set_completed_retention_ms(0);
  const std::string id = MustEnqueue(*stub_, job);
  Waiter waiter(broker_->NewStub(), queue, id);
  ASSERT_TRUE(waiter.WaitForMessages(1));
  auto claims = OpenClaim(MakeClaim({queue}));
  std::optional<v1::ClaimedJob> claimed = claims->Next(kPrompt);
  ASSERT_TRUE(claimed);
  ASSERT_TRUE(waiter.WaitForMessages(2)) << waiter.States();
  JW_ASSERT_OK(Ack(*stub_, *claimed, "dropped"));
  std::optional<grpc::Status> end = waiter.End();
  ASSERT_TRUE(end);
  EXPECT_TRUE(end->ok()) << StatusText(*end);
  EXPECT_EQ(waiter.States(), "JOB_STATE_PENDING/0 JOB_STATE_ACTIVE/1 JOB_STATE_COMPLETED/1");
  EXPECT_EQ(waiter.jobs().back().result(), "");
  v1::Job read;
  EXPECT_EQ(GetJob(*stub_, queue, id, &read).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(WaitJobTest, TimesOutWithTheLastStateSent) {
  const std::string queue = "wait-timeout";
  const std::string id = MustEnqueue(*stub_, MakeJob(queue));
  const absl::Time start = absl::Now();
  Waiter waiter(broker_->NewStub(), queue, id, /*timeout_ms=*/300);
  std::optional<grpc::Status> end = waiter.End();
  const absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(end);
  EXPECT_EQ(end->error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << StatusText(*end);
  EXPECT_EQ(Reason(*end), "WAIT_TIMEOUT");
  EXPECT_NE(end->error_message().find("timeout_ms=300"), std::string::npos) << end->error_message();
  // The broker's timer (libevent, its own clock) may fire a few ms before
  // this process's clock says 300 ms passed.
  EXPECT_GE(took, absl::Milliseconds(280));
  EXPECT_EQ(waiter.States(), "JOB_STATE_PENDING/0");
}

TEST_F(WaitJobTest, BadInputAndUnknownJobsAreRefused) {
  {
    Waiter waiter(broker_->NewStub(), "wait-bad", "1", /*timeout_ms=*/-1);
    std::optional<grpc::Status> end = waiter.End();
    ASSERT_TRUE(end);
    EXPECT_EQ(end->error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(end->error_message().find("timeout_ms"), std::string::npos) << end->error_message();
    EXPECT_NE(end->error_message().find("86400000"), std::string::npos) << end->error_message();
  }
  {
    Waiter waiter(broker_->NewStub(), "bad queue!", "1");
    std::optional<grpc::Status> end = waiter.End();
    ASSERT_TRUE(end);
    EXPECT_EQ(end->error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(end->error_message().find("queue"), std::string::npos) << end->error_message();
  }
  Waiter unknown(broker_->NewStub(), "wait-bad", "424242");
  std::optional<grpc::Status> end = unknown.End();
  ASSERT_TRUE(end);
  EXPECT_EQ(end->error_code(), grpc::StatusCode::NOT_FOUND) << StatusText(*end);
  EXPECT_EQ(Reason(*end), "JOB_NOT_FOUND");
  EXPECT_TRUE(unknown.jobs().empty());
}

TEST_F(WaitJobTest, AJobFinishedThroughAnotherReplicaEndsTheWait) {
  const std::string queue = "wait-replica";
  std::unique_ptr<BrokerProcess> other = AnotherBroker();
  JW_ASSERT_OK(other->Start());
  auto other_stub = other->NewStub();
  const std::string id = MustEnqueue(*other_stub, MakeJob(queue));
  Waiter waiter(broker_->NewStub(), queue, id);
  ASSERT_TRUE(waiter.WaitForMessages(1));
  ClaimReader claims(other->NewStub(), MakeClaim({queue}));
  std::optional<v1::ClaimedJob> claimed = claims.Next(kPrompt);
  ASSERT_TRUE(claimed);
  JW_ASSERT_OK(Ack(*other_stub, *claimed, "elsewhere"));
  std::optional<grpc::Status> end = waiter.End();
  ASSERT_TRUE(end);
  EXPECT_TRUE(end->ok()) << StatusText(*end);
  EXPECT_EQ(waiter.jobs().back().state(), kCompleted);
  EXPECT_EQ(waiter.jobs().back().result(), "elsewhere");
}

TEST_F(WaitJobTest, TheEventsSubscriptionLastsOnlyWhileAJobIsFollowed) {
  const std::string queue = "wait-sub";
  const std::string id = MustEnqueue(*stub_, MakeJob(queue));
  EXPECT_EQ(EventSubscribers(queue), 0);
  {
    Waiter waiter(broker_->NewStub(), queue, id);
    ASSERT_TRUE(waiter.WaitForMessages(1));
    EXPECT_EQ(EventSubscribers(queue), 1);
  }  // cancelled
  const absl::Time deadline = absl::Now() + kPrompt;
  while (EventSubscribers(queue) != 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ(EventSubscribers(queue), 0);
}

TEST_F(WaitJobTest, TheBrokersDrainEndsAWaitWithUnavailable) {
  const std::string queue = "wait-drain";
  const std::string id = MustEnqueue(*stub_, MakeJob(queue));
  Waiter waiter(broker_->NewStub(), queue, id);
  ASSERT_TRUE(waiter.WaitForMessages(1));
  broker_->Signal(SIGTERM);
  std::optional<grpc::Status> end = waiter.End();
  ASSERT_TRUE(end);
  EXPECT_EQ(end->error_code(), grpc::StatusCode::UNAVAILABLE) << StatusText(*end);
}

TEST_F(WaitJobTest, TheCppClientReturnsTheFinishedJob) {
  const std::string queue = "wait-client";
  client::Client client({.address = broker_->address()});
  absl::StatusOr<client::Enqueued> done = client.Enqueue(queue, "t", "x");
  absl::StatusOr<client::Enqueued> dies = client.Enqueue(queue, "t", "y");
  ASSERT_TRUE(done.ok() && dies.ok());
  std::thread worker([&] {
    ClaimReader claims(broker_->NewStub(), MakeClaim({queue}));
    for (int i = 0; i < 2; ++i) {
      std::optional<v1::ClaimedJob> claimed = claims.Next(kPrompt);
      if (!claimed) return;
      if (claimed->job().id() == done->job_id) {
        EXPECT_TRUE(Ack(*stub_, *claimed, "ok").ok());
      } else {
        v1::FailRequest fail = MakeFail(*claimed, "no");
        fail.set_non_retryable(true);
        EXPECT_TRUE(Fail(*stub_, fail).ok());
      }
    }
  });
  std::vector<v1::JobState> seen;
  client::WaitOptions options;
  options.on_update = [&seen](const v1::Job& job) { seen.push_back(job.state()); };
  absl::StatusOr<v1::Job> completed = client.WaitJob(queue, done->job_id, options);
  absl::StatusOr<v1::Job> dead = client.WaitJob(queue, dies->job_id);
  worker.join();
  ASSERT_TRUE(completed.ok()) << completed.status();
  EXPECT_EQ(completed->state(), kCompleted);
  EXPECT_EQ(completed->result(), "ok");
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), kCompleted);
  ASSERT_TRUE(dead.ok()) << dead.status();
  EXPECT_EQ(dead->state(), kDead);
  EXPECT_EQ(dead->error(), "no");

  client::WaitOptions short_wait;
  short_wait.timeout = absl::Milliseconds(200);
  absl::StatusOr<client::Enqueued> idle = client.Enqueue(queue + "-idle", "t", "");
  ASSERT_TRUE(idle.ok());
  absl::StatusOr<v1::Job> timed_out = client.WaitJob(queue + "-idle", idle->job_id, short_wait);
  EXPECT_EQ(timed_out.status().code(), absl::StatusCode::kDeadlineExceeded) << timed_out.status();
  EXPECT_EQ(client::ErrorReason(timed_out.status()), "WAIT_TIMEOUT");
}

}  // namespace
}  // namespace jobwire::testing
