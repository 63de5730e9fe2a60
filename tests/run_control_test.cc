// Run control through the real broker and a real Redis: Cancel of a running
// job (the stop request on the worker's Claim stream, ExtendLease and
// ReportProgress refused, the job DEAD "cancelled" when the run is failed or
// its lease ends), per-job timeouts (the lease capped at the run's deadline,
// late calls refused, the attempt failed with "timeout"), progress (stored,
// shown by GetJob, WaitJob and Subscribe), bad input, and the C++ Worker's
// handler signals. Every check reads what the test's own calls and streams
// received.
#include <algorithm>
#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cpp/client.h"
#include "client/cpp/error_details.h"
#include "client/cpp/worker.h"
#include "gtest/gtest.h"
#include "tests/job_record.h"
#include "tests/lifecycle_test_util.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

std::string Reason(const grpc::Status& status) {
  return client::ErrorReason(client::FromGrpc(status));
}

// A Claim stream read on a background thread, keeping whole messages (jobs
// and stops), unlike ClaimReader.
class RawClaim {
 public:
  RawClaim(std::unique_ptr<v1::BrokerService::Stub> stub, const v1::ClaimRequest& request)
      : stub_(std::move(stub)) {
    thread_ = std::thread([this, request] {
      auto reader = stub_->Claim(&context_, request);
      v1::ClaimResponse message;
      while (reader->Read(&message)) {
        absl::MutexLock lock(&mu_);
        for (const v1::ClaimedJob& job : message.jobs()) jobs_.push_back(job);
        for (const v1::StopRun& stop : message.stops()) stops_.push_back(stop);
      }
      reader->Finish();
    });
  }
  ~RawClaim() {
    context_.TryCancel();
    thread_.join();
  }
  std::optional<v1::ClaimedJob> Job(size_t n, absl::Duration timeout = kPrompt) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return jobs_.size() > n; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&enough), timeout)) return std::nullopt;
    return jobs_[n];
  }
  std::optional<v1::StopRun> Stop(size_t n, absl::Duration timeout = kPrompt) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stops_.size() > n; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&enough), timeout)) return std::nullopt;
    return stops_[n];
  }
  size_t stops() {
    absl::MutexLock lock(&mu_);
    return stops_.size();
  }

 private:
  std::unique_ptr<v1::BrokerService::Stub> stub_;
  grpc::ClientContext context_;
  absl::Mutex mu_;
  std::vector<v1::ClaimedJob> jobs_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::StopRun> stops_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

class RunControlTest : public LifecycleTest {
 protected:
  grpc::Status CancelJob(const std::string& queue, const std::string& id, bool* requested) {
    v1::CancelRequest request;
    request.set_queue(queue);
    request.set_job_id(id);
    v1::CancelResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->Cancel(&context, request, &response);
    if (requested != nullptr) *requested = response.cancel_requested();
    return status;
  }
  grpc::Status Progress(const v1::ClaimedJob& claimed, std::optional<int32_t> percent,
                        const std::string& data) {
    v1::ReportProgressRequest request;
    request.set_queue(claimed.job().queue());
    request.set_job_id(claimed.job().id());
    request.set_lease_token(claimed.lease_token());
    if (percent) request.set_percent(*percent);
    request.set_data(data);
    v1::ReportProgressResponse response;
    grpc::ClientContext context;
    return stub_->ReportProgress(&context, request, &response);
  }
  grpc::Status Extend(const v1::ClaimedJob& claimed, int64_t lease_ms, int64_t* expires) {
    v1::ExtendLeaseRequest request;
    request.set_queue(claimed.job().queue());
    request.set_job_id(claimed.job().id());
    request.set_lease_token(claimed.lease_token());
    request.set_lease_ms(lease_ms);
    v1::ExtendLeaseResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->ExtendLease(&context, request, &response);
    if (expires != nullptr) *expires = response.lease_expires_at_ms();
    return status;
  }
  v1::FailResponse FailJob(const v1::ClaimedJob& claimed, const std::string& error,
                           grpc::Status* status) {
    v1::FailResponse response;
    *status = Fail(*stub_, MakeFail(claimed, error), &response);
    return response;
  }
  v1::Job Read(const std::string& queue, const std::string& id) {
    v1::Job job;
    grpc::Status status = GetJob(*stub_, queue, id, &job);
    EXPECT_TRUE(status.ok()) << StatusText(status);
    return job;
  }
  // Polls GetJob until the job is in `state` or `timeout` passed.
  v1::Job AwaitState(const std::string& queue, const std::string& id, v1::JobState state,
                     absl::Duration timeout = absl::Seconds(10)) {
    const absl::Time end = absl::Now() + timeout;
    v1::Job job = Read(queue, id);
    while (job.state() != state && absl::Now() < end) {
      absl::SleepFor(absl::Milliseconds(50));
      job = Read(queue, id);
    }
    return job;
  }
  // Sets field `name` of job `id`'s record in Redis (a test's shortcut to a
  // state that would otherwise take a race to reach).
  void WriteField(const std::string& queue, const std::string& id, absl::string_view name,
                  const std::string& value) {
    const std::string key = JobsKey("jw", queue);
    auto reply = RedisCommandFor(key, WriteJobFieldArgv(key, id, name, value));
    ASSERT_TRUE(reply.ok()) << reply.status();
    ASSERT_EQ(reply->integer, 1);
  }
};

TEST_F(RunControlTest, CancelOfARunningJobStopsItOnItsStreamAndEndsItDeadCancelled) {
  const std::string queue = "rc.cancel";
  v1::EnqueueRequest job = MakeJob(queue, "p");
  job.set_max_attempts(5);
  const std::string id = MustEnqueue(*stub_, job);
  RawClaim stream(broker_->NewStub(), MakeClaim({queue}, 1, 30000));
  std::optional<v1::ClaimedJob> claimed = stream.Job(0);
  ASSERT_TRUE(claimed);

  bool requested = false;
  grpc::Status cancel = CancelJob(queue, id, &requested);
  ASSERT_TRUE(cancel.ok()) << StatusText(cancel);
  EXPECT_TRUE(requested);
  std::optional<v1::StopRun> stop = stream.Stop(0);
  ASSERT_TRUE(stop) << "no stop request on the Claim stream";
  EXPECT_EQ(stop->queue(), queue);
  EXPECT_EQ(stop->job_id(), id);
  EXPECT_EQ(stop->lease_token(), claimed->lease_token());
  EXPECT_EQ(stop->reason(), v1::StopRun::REASON_CANCEL_REQUESTED);

  v1::Job read = Read(queue, id);
  EXPECT_EQ(read.state(), kActive);
  EXPECT_GT(read.cancel_requested_at_ms(), 0);
  const int64_t asked_at = read.cancel_requested_at_ms();

  grpc::Status extend = Extend(*claimed, 30000, nullptr);
  EXPECT_EQ(extend.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(Reason(extend), "JOB_CANCEL_REQUESTED");
  grpc::Status progress = Progress(*claimed, 10, "");
  EXPECT_EQ(Reason(progress), "JOB_CANCEL_REQUESTED");

  // Asked again: OK, nothing changes.
  ASSERT_TRUE(CancelJob(queue, id, &requested).ok());
  EXPECT_TRUE(requested);
  EXPECT_EQ(Read(queue, id).cancel_requested_at_ms(), asked_at);

  grpc::Status failed;
  v1::FailResponse outcome = FailJob(*claimed, "handler gave up", &failed);
  ASSERT_TRUE(failed.ok()) << StatusText(failed);
  EXPECT_EQ(outcome.outcome(), kOutcomeDead) << "4 attempts were left, but it was cancelled";
  read = Read(queue, id);
  EXPECT_EQ(read.state(), kDead);
  EXPECT_EQ(read.error(), "cancelled");
  EXPECT_EQ(read.attempts(), 1);

  bool pending_requested = true;
  const std::string pending = MustEnqueue(*stub_, MakeJob("rc.cancel.pending", "p"));
  ASSERT_TRUE(CancelJob("rc.cancel.pending", pending, &pending_requested).ok());
  EXPECT_FALSE(pending_requested) << "a pending job is cancelled at once";
  EXPECT_EQ(Read("rc.cancel.pending", pending).state(), kDead);
}

// A broker learns what happens to the runs it granted from messages on the
// queue's notify channel: cancel.lua's stop requests, and another replica's
// 'settled:' and 'extended:' announcements. One that was not subscribed when
// such a message was published (its subscription not yet confirmed, or its
// pub/sub connection down) asks Redis where the runs it holds stand once it
// subscribes again (held_runs.lua). Each test below changes the run's record
// as the missed message's cause would have, publishes nothing, and then cuts
// the broker's pub/sub connection so that it subscribes again.
class MissedMessagesTest : public RunControlTest {
 protected:
  // Waits until the broker subscribes to `queue`'s notify channel.
  void AwaitSubscribed(const std::string& queue) {
    const std::string channel = "jw:{" + queue + "}:notify";
    const absl::Time deadline = absl::Now() + kPrompt;
    while (ShardSubscribers(channel) < 1 && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    ASSERT_GE(ShardSubscribers(channel), 1);
  }
  // Cuts the broker's pub/sub connection to `queue`'s shard: it reconnects
  // and subscribes again.
  void Resubscribe(const std::string& queue) {
    auto killed = RedisCommandFor("jw:{" + queue + "}:notify", {"CLIENT", "KILL", "TYPE", "pubsub"});
    ASSERT_TRUE(killed.ok()) << killed.status();
    ASSERT_GE(killed->integer, 1);
  }
};

TEST_F(MissedMessagesTest, AMissedStopReachesTheStreamOnceTheBrokerResubscribes) {
  const std::string queue = "rc.missed.stop";
  const std::string id = MustEnqueue(*stub_, MakeJob(queue, "p"));
  RawClaim stream(broker_->NewStub(), MakeClaim({queue}, 1, 30000));
  std::optional<v1::ClaimedJob> claimed = stream.Job(0);
  ASSERT_TRUE(claimed);
  AwaitSubscribed(queue);

  WriteField(queue, id, "cancel_requested", "1");  // what cancel.lua stores
  EXPECT_FALSE(stream.Stop(0, absl::Milliseconds(200))) << "nothing was published yet";
  Resubscribe(queue);
  std::optional<v1::StopRun> stop = stream.Stop(0);
  ASSERT_TRUE(stop) << "no stop request once the broker subscribed again";
  EXPECT_EQ(stop->queue(), queue);
  EXPECT_EQ(stop->job_id(), id);
  EXPECT_EQ(stop->lease_token(), claimed->lease_token());
  EXPECT_EQ(stop->reason(), v1::StopRun::REASON_CANCEL_REQUESTED);
  EXPECT_EQ(stream.stops(), 1u);
}

TEST_F(MissedMessagesTest, AMissedSettleFreesTheSlotOnceTheBrokerResubscribes) {
  const std::string queue = "rc.missed.settled";
  const std::string first = MustEnqueue(*stub_, MakeJob(queue, "p"));
  RawClaim stream(broker_->NewStub(), MakeClaim({queue}, 1, 30000));
  ASSERT_TRUE(stream.Job(0));
  AwaitSubscribed(queue);
  const std::string second = MustEnqueue(*stub_, MakeJob(queue, "p"));

  // The run ended through another replica (acked there), whose 'settled:'
  // message this broker missed: the stream's one slot is still taken.
  WriteField(queue, first, "state", "completed");
  EXPECT_FALSE(stream.Job(1, absl::Milliseconds(200))) << "the slot was freed with no message";
  Resubscribe(queue);
  std::optional<v1::ClaimedJob> next = stream.Job(1);
  ASSERT_TRUE(next) << "the slot stayed taken after the broker subscribed again";
  EXPECT_EQ(next->job().id(), second);
}

TEST_F(MissedMessagesTest, AMissedRenewalKeepsTheSlotOnceTheBrokerResubscribes) {
  const std::string queue = "rc.missed.extended";
  const std::string first = MustEnqueue(*stub_, MakeJob(queue, "p"));
  RawClaim stream(broker_->NewStub(), MakeClaim({queue}, 1, 1000));
  ASSERT_TRUE(stream.Job(0));
  AwaitSubscribed(queue);
  MustEnqueue(*stub_, MakeJob(queue, "p"));

  // The lease was renewed through another replica, whose 'extended:'
  // message this broker missed: by its own clock the lease ends in 1 s, and
  // the slot with it.
  WriteField(queue, first, "lease_expires_at",
             absl::StrCat(absl::ToUnixMillis(absl::Now()) + 30000));
  Resubscribe(queue);
  EXPECT_FALSE(stream.Job(1, absl::Milliseconds(2500)))
      << "the slot was freed at the old lease's end: the renewal was not caught up";
}

TEST_F(RunControlTest, ACancelledRunWhoseLeaseEndsIsDeadCancelled) {
  const std::string queue = "rc.cancel.expire";
  v1::EnqueueRequest job = MakeJob(queue, "p");
  job.set_max_attempts(5);
  const std::string id = MustEnqueue(*stub_, job);
  RawClaim stream(broker_->NewStub(), MakeClaim({queue}, 1, 1000));
  std::optional<v1::ClaimedJob> claimed = stream.Job(0);
  ASSERT_TRUE(claimed);
  ASSERT_TRUE(CancelJob(queue, id, nullptr).ok());
  // The worker neither fails it nor renews it: the reaper settles it.
  v1::Job read = AwaitState(queue, id, kDead);
  EXPECT_EQ(read.state(), kDead) << StateName(read.state());
  EXPECT_EQ(read.error(), "cancelled");
  EXPECT_FALSE(stream.Job(1, kQuiet)) << "a cancelled job was delivered again";
}

TEST_F(RunControlTest, TimeoutCapsTheLeaseAndFailsTheAttemptWithTimeout) {
  const std::string queue = "rc.timeout";
  v1::EnqueueRequest job = MakeJob(queue, "p");
  job.set_timeout_ms(1500);
  job.set_max_attempts(1);
  const std::string id = MustEnqueue(*stub_, job);
  RawClaim stream(broker_->NewStub(), MakeClaim({queue}, 1, 30000));
  std::optional<v1::ClaimedJob> claimed = stream.Job(0);
  ASSERT_TRUE(claimed);
  EXPECT_EQ(claimed->lease_ms(), 1500);
  EXPECT_EQ(claimed->job().timeout_ms(), 1500);
  EXPECT_EQ(claimed->job().run_deadline_ms(), claimed->lease_expires_at_ms());
  int64_t expires = 0;
  grpc::Status extend = Extend(*claimed, 30000, &expires);
  ASSERT_TRUE(extend.ok()) << StatusText(extend);
  EXPECT_EQ(expires, claimed->job().run_deadline_ms()) << "renewed past the run's deadline";

  // Nobody settles the run: at its deadline the broker fails the attempt.
  v1::Job read = AwaitState(queue, id, kDead);
  EXPECT_EQ(read.state(), kDead) << StateName(read.state());
  EXPECT_EQ(read.error(), "timeout");
  grpc::Status late = Ack(*stub_, *claimed, "too late");
  EXPECT_EQ(late.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(Read(queue, id).state(), kDead);
}

// The broker frees a stream's slot when the capped lease ends, also after an
// ExtendLease that asked for more: the timed-out job's retry comes back on
// the same stream (max_in_flight 1) within moments, not after the lease asked.
TEST_F(RunControlTest, ARenewedRunAtItsDeadlineFreesItsStreamSlot) {
  const std::string queue = "rc.timeout.slot";
  v1::EnqueueRequest job = MakeJob(queue, "p");
  job.set_timeout_ms(1000);
  job.set_max_attempts(2);
  job.set_backoff_base_ms(100);
  job.set_backoff_max_ms(100);
  MustEnqueue(*stub_, job);
  RawClaim stream(broker_->NewStub(), MakeClaim({queue}, 1, 30000));
  std::optional<v1::ClaimedJob> first = stream.Job(0);
  ASSERT_TRUE(first);
  ASSERT_TRUE(Extend(*first, 30000, nullptr).ok());
  const absl::Time extended = absl::Now();
  std::optional<v1::ClaimedJob> retry = stream.Job(1, absl::Seconds(10));
  ASSERT_TRUE(retry) << "the retry waited for the 30 s lease the ExtendLease asked for";
  EXPECT_LT(absl::Now() - extended, absl::Seconds(5));
  EXPECT_EQ(retry->job().attempts(), 2);
  EXPECT_EQ(retry->job().error(), "timeout");
}

// Past the deadline but before the reaper came (the record's deadline moved
// into the past by hand, its lease still long): every call of the run is
// refused RUN_TIMED_OUT, and its Fail records "timeout".
TEST_F(RunControlTest, ARunPastItsDeadlineIsRefusedAndItsFailRecordsTimeout) {
  const std::string queue = "rc.timeout.refused";
  v1::EnqueueRequest job = MakeJob(queue, "p");
  job.set_timeout_ms(600000);
  job.set_max_attempts(2);
  const std::string id = MustEnqueue(*stub_, job);
  RawClaim stream(broker_->NewStub(), MakeClaim({queue}, 1, 30000));
  std::optional<v1::ClaimedJob> claimed = stream.Job(0);
  ASSERT_TRUE(claimed);
  EXPECT_EQ(claimed->lease_ms(), 30000) << "the lease is shorter than the timeout";
  WriteField(queue, id, "run_deadline", "1");

  grpc::Status ack = Ack(*stub_, *claimed, "result");
  EXPECT_EQ(ack.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << StatusText(ack);
  EXPECT_EQ(Reason(ack), "RUN_TIMED_OUT");
  EXPECT_EQ(Reason(Extend(*claimed, 30000, nullptr)), "RUN_TIMED_OUT");
  EXPECT_EQ(Reason(Progress(*claimed, 50, "")), "RUN_TIMED_OUT");
  EXPECT_EQ(Read(queue, id).state(), kActive) << "a refused call changed the job";

  grpc::Status failed;
  v1::FailResponse outcome = FailJob(*claimed, "worker's own error", &failed);
  ASSERT_TRUE(failed.ok()) << StatusText(failed);
  EXPECT_EQ(outcome.outcome(), kRetryScheduled);
  v1::Job read = Read(queue, id);
  EXPECT_EQ(read.state(), kPending);
  EXPECT_EQ(read.error(), "timeout");
  EXPECT_EQ(read.run_deadline_ms(), 0);
}

TEST_F(RunControlTest, ProgressIsStoredAndShownByGetJobWaitJobAndSubscribe) {
  const std::string queue = "rc.progress";
  client::Client events_client(client::ClientOptions{broker_->address()});
  absl::Mutex mu;
  std::vector<v1::QueueEvent> events;
  absl::Notification subscribed;
  std::atomic<bool> done{false};
  std::thread subscriber([&] {
    client::SubscribeOptions options;
    options.include_details = true;
    options.on_subscribed = [&] { subscribed.Notify(); };
    options.on_event = [&](const v1::QueueEvent& e) {
      absl::MutexLock lock(&mu);
      events.push_back(e);
      return !done.load();
    };
    events_client.Subscribe({queue}, options).IgnoreError();
  });
  ASSERT_TRUE(subscribed.WaitForNotificationWithTimeout(kPrompt));

  const std::string id = MustEnqueue(*stub_, MakeJob(queue, "p"));
  RawClaim stream(broker_->NewStub(), MakeClaim({queue}, 1, 30000));
  std::optional<v1::ClaimedJob> claimed = stream.Job(0);
  ASSERT_TRUE(claimed);
  v1::Job read = Read(queue, id);
  EXPECT_FALSE(read.has_progress_percent());

  grpc::Status progress = Progress(*claimed, 40, "step 2 of 5");
  ASSERT_TRUE(progress.ok()) << StatusText(progress);
  read = Read(queue, id);
  ASSERT_TRUE(read.has_progress_percent());
  EXPECT_EQ(read.progress_percent(), 40);
  EXPECT_EQ(read.progress_data(), "step 2 of 5");

  // A report replaces the whole progress: data alone clears the percent.
  ASSERT_TRUE(Progress(*claimed, std::nullopt, "uploading").ok());
  read = Read(queue, id);
  EXPECT_FALSE(read.has_progress_percent());
  EXPECT_EQ(read.progress_data(), "uploading");

  // A waiter sees the job as it is now, then each progress change.
  v1::WaitJobRequest wait;
  wait.set_queue(queue);
  wait.set_job_id(id);
  grpc::ClientContext wait_context;
  auto waiter = stub_->WaitJob(&wait_context, wait);
  v1::WaitJobResponse first;
  ASSERT_TRUE(waiter->Read(&first));
  EXPECT_EQ(first.job().progress_data(), "uploading");
  ASSERT_TRUE(Progress(*claimed, 90, "").ok());
  v1::WaitJobResponse second;
  ASSERT_TRUE(waiter->Read(&second));
  EXPECT_EQ(second.job().progress_percent(), 90);
  EXPECT_EQ(second.job().progress_data(), "");
  JW_ASSERT_OK(Ack(*stub_, *claimed, "done"));
  v1::WaitJobResponse last;
  ASSERT_TRUE(waiter->Read(&last));
  EXPECT_EQ(last.job().state(), kCompleted);

  {
    absl::MutexLock lock(&mu);
    auto completed = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu) {
      for (const v1::QueueEvent& e : events) {
        if (e.kind() == v1::EVENT_KIND_COMPLETED) return true;
      }
      return false;
    };
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&completed), kPrompt));
    std::vector<v1::QueueEvent> progress_events;
    for (const v1::QueueEvent& e : events) {
      if (e.kind() == v1::EVENT_KIND_PROGRESS) progress_events.push_back(e);
    }
    ASSERT_EQ(progress_events.size(), 3u);
    EXPECT_EQ(progress_events[0].progress_percent(), 40);
    EXPECT_EQ(progress_events[0].job_id(), id);
    EXPECT_FALSE(progress_events[1].has_progress_percent());
    EXPECT_EQ(progress_events[2].progress_percent(), 90);
  }
  done = true;
  MustEnqueue(*stub_, MakeJob(queue, "p"));  // one more event ends the subscriber
  subscriber.join();
}

TEST_F(RunControlTest, BadProgressAndTimeoutAreRefusedAndChangeNothing) {
  const std::string queue = "rc.bad";
  const std::string id = MustEnqueue(*stub_, MakeJob(queue, "p"));
  RawClaim stream(broker_->NewStub(), MakeClaim({queue}, 1, 30000));
  std::optional<v1::ClaimedJob> claimed = stream.Job(0);
  ASSERT_TRUE(claimed);
  struct Case {
    std::optional<int32_t> percent;
    std::string data;
    std::string field;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {101, "", "percent", "0..100, got 101"},
           {-1, "", "percent", "0..100, got -1"},
           {std::nullopt, std::string(4097, 'x'), "data", "at most 4096 bytes, got 4097"},
           {std::nullopt, "", "percent", "needs percent (0..100) or data"}}) {
    grpc::Status status = Progress(*claimed, c.percent, c.data);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.field;
    EXPECT_EQ(client::ErrorField(client::FromGrpc(status)).value_or(""), c.field);
    EXPECT_NE(status.error_message().find(c.message), std::string::npos) << status.error_message();
  }
  v1::Job read = Read(queue, id);
  EXPECT_FALSE(read.has_progress_percent());
  EXPECT_EQ(read.progress_data(), "");

  v1::EnqueueRequest bad = MakeJob(queue, "p");
  bad.set_timeout_ms(7LL * 24 * 3600 * 1000 + 1);
  v1::EnqueueResponse response;
  grpc::Status status = Enqueue(*stub_, bad, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(client::ErrorField(client::FromGrpc(status)).value_or(""), "timeout_ms");
  EXPECT_NE(status.error_message().find("0..604800000"), std::string::npos);
}

// Headers travel with the job unchanged: to the handler, GetJob and the
// Claim stream; bad ones are refused naming the field and the limit.
TEST_F(RunControlTest, HeadersTravelWithTheJobAndBadOnesAreRefused) {
  const std::string queue = "rc.headers";
  const std::map<std::string, std::string> headers = {
      {"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
      {"tenant", "acme"},
      {"empty", ""}};
  client::Client producer(client::ClientOptions{broker_->address()});
  client::EnqueueOptions options;
  options.headers = headers;
  absl::StatusOr<client::Enqueued> enqueued = producer.Enqueue(queue, "traced", "", options);
  ASSERT_TRUE(enqueued.ok()) << enqueued.status();
  v1::Job read = Read(queue, enqueued->job_id);
  const std::map<std::string, std::string> stored(read.headers().begin(), read.headers().end());
  EXPECT_EQ(stored, headers);

  client::WorkerOptions worker_options;
  worker_options.address = broker_->address();
  worker_options.queues = {queue};
  client::Worker worker(worker_options);
  absl::Mutex mu;
  std::optional<std::map<std::string, std::string>> seen;
  worker.Register("traced", [&](const client::Job& job) -> absl::StatusOr<std::string> {
    absl::MutexLock lock(&mu);
    seen = job.headers;
    return std::string();
  });
  std::thread runner([&] { worker.Run().IgnoreError(); });
  {
    absl::MutexLock lock(&mu);
    auto ran = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu) { return seen.has_value(); };
    EXPECT_TRUE(mu.AwaitWithTimeout(absl::Condition(&ran), kPrompt));
  }
  worker.Stop();
  runner.join();
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(*seen, headers);

  struct Case {
    std::map<std::string, std::string> headers;
    std::string message;
  };
  std::map<std::string, std::string> too_many, too_big;
  for (int i = 0; i < 65; ++i) too_many["h" + std::to_string(i)] = "v";
  for (int i = 0; i < 5; ++i) too_big["h" + std::to_string(i)] = std::string(4000, 'x');
  for (const Case& c : std::vector<Case>{
           {{{"Bad Key", "v"}}, "keys must be 1..128 bytes of [a-z0-9._-], got \"Bad Key\""},
           {{{"", "v"}}, "keys must be 1..128 bytes"},
           {{{std::string(129, 'k'), "v"}}, "keys must be 1..128 bytes"},
           {{{"big", std::string(4097, 'x')}}, "value of \"big\" must be at most 4096 bytes"},
           {too_many, "at most 64 entries, got 65"},
           {too_big, "at most 16384 bytes in all, got 20010"}}) {
    v1::EnqueueRequest bad = MakeJob("rc.headers.bad", "p");
    bad.mutable_headers()->insert(c.headers.begin(), c.headers.end());
    v1::EnqueueResponse response;
    grpc::Status status = Enqueue(*stub_, bad, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.message;
    EXPECT_EQ(client::ErrorField(client::FromGrpc(status)).value_or(""), "headers");
    EXPECT_NE(status.error_message().find(c.message), std::string::npos)
        << status.error_message();
  }
  v1::Job none;
  EXPECT_EQ(GetJob(*stub_, "rc.headers.bad", "000000000001", &none).error_code(),
            grpc::StatusCode::NOT_FOUND)
      << "a refused enqueue stored a job";
}

// The C++ Worker: a handler waiting on its stop token is told of a Cancel
// within moments (not at its 30 s lease), and a handler that ignores its
// deadline has its late Ack refused: the job ends DEAD "timeout".
TEST_F(RunControlTest, WorkerHandlersSeeCancelAndTimeout) {
  const std::string queue = "rc.worker";
  client::Client producer(client::ClientOptions{broker_->address()});
  absl::Mutex mu;
  std::vector<std::string> outcomes;
  client::WorkerOptions options;
  options.address = broker_->address();
  options.queues = {queue};
  options.concurrency = 2;
  options.lease_ms = 30000;
  options.on_outcome = [&](const client::Job& job, const client::Outcome& outcome) {
    absl::MutexLock lock(&mu);
    outcomes.push_back(job.type + ":" + outcome.kind);
  };
  client::Worker worker(options);
  absl::Notification started;
  std::atomic<int> cancel_seen_reason{-1};
  std::atomic<int64_t> cancel_seen_after_ms{-1};
  worker.Register("wait_for_cancel", [&](const client::Job& job) -> absl::StatusOr<std::string> {
    started.Notify();
    const absl::Time from = absl::Now();
    absl::Notification stopped;
    std::stop_callback on_stop(job.stop_token(), [&] { stopped.Notify(); });
    if (!stopped.WaitForNotificationWithTimeout(absl::Seconds(20))) return std::string("ran out");
    cancel_seen_after_ms = absl::ToInt64Milliseconds(absl::Now() - from);
    cancel_seen_reason = static_cast<int>(job.stop_reason());
    return absl::CancelledError("stopped as asked");
  });
  std::atomic<bool> deadline_set{false};
  std::atomic<bool> timed_out_seen{false};
  worker.Register("ignore_deadline", [&](const client::Job& job) -> absl::StatusOr<std::string> {
    deadline_set = job.deadline != absl::InfiniteFuture() &&
                   job.deadline - absl::Now() <= absl::Milliseconds(1000);
    absl::SleepFor(absl::Milliseconds(2500));
    timed_out_seen = job.timed_out();
    return std::string("late result");
  });
  std::thread runner([&] { worker.Run().IgnoreError(); });
  // The broker subscribes to the queue's notify channel before the job is
  // enqueued, so the stop comes by cancel.lua's message (a stop published
  // before the subscription comes once it is confirmed: the test above).
  const absl::Time subscribe_deadline = absl::Now() + kPrompt;
  while (ShardSubscribers("jw:{" + queue + "}:notify") < 1 && absl::Now() < subscribe_deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_GE(ShardSubscribers("jw:{" + queue + "}:notify"), 1);

  absl::StatusOr<client::Enqueued> running = producer.Enqueue(queue, "wait_for_cancel", "");
  ASSERT_TRUE(running.ok()) << running.status();
  ASSERT_TRUE(started.WaitForNotificationWithTimeout(kPrompt));
  absl::StatusOr<bool> cancelled = producer.Cancel(queue, running->job_id);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_TRUE(*cancelled);
  client::EnqueueOptions timeout;
  timeout.timeout_ms = 1000;
  timeout.max_attempts = 1;
  absl::StatusOr<client::Enqueued> slow =
      producer.Enqueue(queue, "ignore_deadline", "", timeout);
  ASSERT_TRUE(slow.ok()) << slow.status();

  v1::Job cancelled_job = AwaitState(queue, running->job_id, kDead);
  EXPECT_EQ(cancelled_job.error(), "cancelled");
  EXPECT_EQ(cancel_seen_reason.load(), static_cast<int>(client::StopReason::kCancelled));
  EXPECT_GE(cancel_seen_after_ms.load(), 0);
  EXPECT_LT(cancel_seen_after_ms.load(), 3000) << "the stop came by lease renewal, not the stream";

  v1::Job slow_job = AwaitState(queue, slow->job_id, kDead);
  EXPECT_EQ(slow_job.state(), kDead) << StateName(slow_job.state());
  EXPECT_EQ(slow_job.error(), "timeout");
  // The handler's result came after the deadline: its Ack was refused.
  absl::SleepFor(absl::Seconds(2));
  worker.Stop();
  runner.join();
  EXPECT_TRUE(deadline_set.load());
  EXPECT_TRUE(timed_out_seen.load());
  absl::MutexLock lock(&mu);
  EXPECT_EQ(std::count(outcomes.begin(), outcomes.end(), "ignore_deadline:ack_ok"), 0);
  EXPECT_EQ(std::count(outcomes.begin(), outcomes.end(), "wait_for_cancel:fail_ok"), 1)
      << "outcomes: " << outcomes.size();
}

}  // namespace
}  // namespace jobwire::testing
