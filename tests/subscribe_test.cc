// Subscribe through the real broker and a real Redis: a subscriber sees
// each job's events in order (enqueued, active, retry with its error,
// completed with its result, lease_expired, dead, cancelled, redriven,
// deleted); the kinds filter; several queues; every partition of a
// partitioned queue under the name the client used; events made through
// another broker replica; bad input; a gap (the broker's Redis subscription
// killed) reported as events_missed; a subscriber that does not read cut off
// with SUBSCRIBER_TOO_SLOW; the broker's drain; and no events subscription
// left once the stream ends. Every check reads what the test's own
// subscriber received.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cpp/client.h"
#include "client/cpp/error_details.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/lifecycle_test_util.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

std::string KindName(v1::EventKind kind) {
  std::string name = v1::EventKind_Name(kind).substr(sizeof("EVENT_KIND_") - 1);
  for (char& c : name) c = static_cast<char>(std::tolower(c));
  return name;
}

// One Subscribe call read on a background thread (or not read at all until
// Resume, with `paused`).
class Subscriber {
 public:
  Subscriber(std::unique_ptr<v1::BrokerService::Stub> stub, v1::SubscribeRequest request,
             bool paused = false)
      : stub_(std::move(stub)), paused_(paused) {
    thread_ = std::thread([this, request] {
      auto reader = stub_->Subscribe(&context_, request);
      v1::SubscribeResponse response;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](bool* paused) { return !*paused; }, &paused_));
      }
      while (reader->Read(&response)) {
        absl::MutexLock lock(&mu_);
        messages_.push_back(response);
        for (const v1::QueueEvent& e : response.events()) events_.push_back(e);
      }
      grpc::Status status = reader->Finish();
      absl::MutexLock lock(&mu_);
      end_ = status;
    });
  }
  ~Subscriber() {
    context_.TryCancel();
    Resume();
    thread_.join();
  }

  void Resume() {
    absl::MutexLock lock(&mu_);
    paused_ = false;
  }
  // Waits for the first message (subscribed); true when it came and is one.
  bool WaitSubscribed() {
    if (!WaitForMessages(1)) return false;
    absl::MutexLock lock(&mu_);
    return messages_[0].subscribed() && messages_[0].events_size() == 0;
  }
  bool WaitForMessages(size_t n, absl::Duration timeout = kPrompt) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return messages_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
  }
  bool WaitForEvents(size_t n, absl::Duration timeout = kPrompt) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return events_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
  }
  std::optional<grpc::Status> End(absl::Duration timeout = kPrompt) {
    absl::MutexLock lock(&mu_);
    auto ended = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return end_.has_value(); };
    mu_.AwaitWithTimeout(absl::Condition(&ended), timeout);
    return end_;
  }
  std::vector<v1::QueueEvent> events() {
    absl::MutexLock lock(&mu_);
    return events_;
  }
  std::vector<v1::SubscribeResponse> messages() {
    absl::MutexLock lock(&mu_);
    return messages_;
  }
  // "enqueued/0 active/1 ..." of job `id`'s events (in `queue` when given:
  // ids are unique per queue only).
  std::string Of(const std::string& id, const std::string& queue = "") {
    std::vector<std::string> out;
    for (const v1::QueueEvent& e : events()) {
      if (e.job_id() == id && (queue.empty() || e.queue() == queue)) out.push_back(absl::StrCat(KindName(e.kind()), "/", e.attempts()));
    }
    return absl::StrJoin(out, " ");
  }

 private:
  std::unique_ptr<v1::BrokerService::Stub> stub_;
  grpc::ClientContext context_;
  absl::Mutex mu_;
  bool paused_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::SubscribeResponse> messages_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::QueueEvent> events_ ABSL_GUARDED_BY(mu_);
  std::optional<grpc::Status> end_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

v1::SubscribeRequest MakeSubscribe(std::vector<std::string> queues,
                                   std::vector<v1::EventKind> kinds = {}, bool details = false) {
  v1::SubscribeRequest request;
  for (const std::string& q : queues) request.add_queues(q);
  for (v1::EventKind k : kinds) request.add_kinds(k);
  request.set_include_details(details);
  return request;
}

std::string Reason(const grpc::Status& status) {
  return client::ErrorReason(client::FromGrpc(status));
}

grpc::Status Fail(v1::BrokerService::StubInterface& stub, const v1::FailRequest& request) {
  v1::FailResponse response;
  return testing::Fail(stub, request, &response);
}

class SubscribeTest : public BrokerTest {
 protected:
  explicit SubscribeTest(std::vector<std::string> flags = {}) : BrokerTest(std::move(flags)) {}

  void SetUp() override {
    BrokerTest::SetUp();
    admin_ = v1::AdminService::NewStub(broker_->channel());
  }

  // Subscribers of the events channel of `partition_queue` (a store name).
  int64_t EventSubscribers(const std::string& partition_queue) {
    return ShardSubscribers("jw:{" + partition_queue + "}:events");
  }

  grpc::Status AdminCall(const std::function<grpc::Status(grpc::ClientContext*)>& call) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return call(&context);
  }

  std::unique_ptr<v1::AdminService::Stub> admin_;
};

TEST_F(SubscribeTest, EachJobsEventsInOrderWithDetails) {
  const std::string queue = "events";
  Subscriber sub(broker_->NewStub(), MakeSubscribe({queue}, {}, /*details=*/true));
  ASSERT_TRUE(sub.WaitSubscribed());

  v1::EnqueueRequest retried = MakeJob(queue, "a");
  const std::string a = MustEnqueue(*stub_, retried);
  auto claims = OpenClaim(MakeClaim({queue}));
  std::optional<v1::ClaimedJob> first = claims->Next(kPrompt);
  ASSERT_TRUE(first);
  v1::FailRequest fail = MakeFail(*first, "boom");
  fail.set_retry_after_ms(100);
  JW_ASSERT_OK(Fail(*stub_, fail));
  std::optional<v1::ClaimedJob> second = claims->Next(kPrompt);
  ASSERT_TRUE(second);
  JW_ASSERT_OK(Ack(*stub_, *second, "the result"));

  v1::EnqueueRequest dies = MakeJob(queue, "b");
  dies.set_max_attempts(1);
  const std::string b = MustEnqueue(*stub_, dies);
  std::optional<v1::ClaimedJob> third = claims->Next(kPrompt);
  ASSERT_TRUE(third);
  JW_ASSERT_OK(Fail(*stub_, MakeFail(*third, "fatal")));

  ASSERT_TRUE(sub.WaitForEvents(8)) << sub.Of(a) << " | " << sub.Of(b);
  EXPECT_EQ(sub.Of(a), "enqueued/0 active/1 retry/1 active/2 completed/2");
  EXPECT_EQ(sub.Of(b), "enqueued/0 active/1 dead/1");
  for (const v1::QueueEvent& e : sub.events()) {
    EXPECT_EQ(e.queue(), queue);
    EXPECT_EQ(e.type(), "test");
    EXPECT_GT(e.at_ms(), 0);
    if (e.kind() == v1::EVENT_KIND_RETRY) {
      EXPECT_EQ(e.error(), "boom");
    }
    if (e.kind() == v1::EVENT_KIND_DEAD) {
      EXPECT_EQ(e.error(), "fatal");
    }
    if (e.kind() == v1::EVENT_KIND_COMPLETED) {
      EXPECT_EQ(e.result(), "the result");
    }
    if (e.kind() == v1::EVENT_KIND_ENQUEUED) {
      EXPECT_EQ(e.result(), "");
    }
  }
  for (const v1::SubscribeResponse& m : sub.messages()) EXPECT_FALSE(m.events_missed());
}

TEST_F(SubscribeTest, WithoutDetailsEventsCarryNoResultOrError) {
  const std::string queue = "plain";
  Subscriber sub(broker_->NewStub(), MakeSubscribe({queue}));
  ASSERT_TRUE(sub.WaitSubscribed());
  v1::EnqueueRequest job = MakeJob(queue);
  job.set_max_attempts(1);
  const std::string id = MustEnqueue(*stub_, job);
  auto claims = OpenClaim(MakeClaim({queue}));
  std::optional<v1::ClaimedJob> claimed = claims->Next(kPrompt);
  ASSERT_TRUE(claimed);
  JW_ASSERT_OK(Fail(*stub_, MakeFail(*claimed, "fatal")));
  ASSERT_TRUE(sub.WaitForEvents(3));
  EXPECT_EQ(sub.Of(id), "enqueued/0 active/1 dead/1");
  EXPECT_EQ(sub.events().back().error(), "");
}

TEST_F(SubscribeTest, LeaseExpiryCancelRedriveAndDelete) {
  const std::string queue = "control";
  // The second job goes to a queue the first one's ending Claim stream does
  // not read.
  const std::string other = "control-b";
  Subscriber sub(broker_->NewStub(), MakeSubscribe({queue, other}));
  ASSERT_TRUE(sub.WaitSubscribed());
  v1::EnqueueRequest job = MakeJob(queue);
  job.set_max_attempts(1);
  const std::string expires = MustEnqueue(*stub_, job);
  {
    auto claims = OpenClaim(MakeClaim({queue}, 1, /*lease_ms=*/1000));
    ASSERT_TRUE(claims->Next(kPrompt));
    // Never acked: the reaper fails it once the lease is out.
    ASSERT_TRUE(sub.WaitForEvents(4, absl::Seconds(15))) << sub.Of(expires);
  }
  EXPECT_EQ(sub.Of(expires, queue), "enqueued/0 active/1 lease_expired/1 dead/1");

  const std::string cancelled = MustEnqueue(*stub_, MakeJob(other));
  JW_ASSERT_OK(Cancel(*stub_, other, cancelled));
  JW_ASSERT_OK(AdminCall([&](grpc::ClientContext* c) {
    v1::RetryDeadRequest request;
    request.set_queue(other);
    request.add_job_ids(cancelled);
    v1::RetryDeadResponse response;
    return admin_->RetryDead(c, request, &response);
  }));
  JW_ASSERT_OK(AdminCall([&](grpc::ClientContext* c) {
    v1::DeleteJobRequest request;
    request.set_queue(other);
    request.set_job_id(cancelled);
    v1::DeleteJobResponse response;
    return admin_->DeleteJob(c, request, &response);
  }));
  ASSERT_TRUE(sub.WaitForEvents(8)) << sub.Of(cancelled);
  EXPECT_EQ(sub.Of(cancelled, other), "enqueued/0 cancelled/0 redriven/0 deleted/0");
}

TEST_F(SubscribeTest, KindsFilterAcrossQueues) {
  Subscriber sub(broker_->NewStub(),
                 MakeSubscribe({"left", "right"}, {v1::EVENT_KIND_COMPLETED}));
  ASSERT_TRUE(sub.WaitSubscribed());
  const std::string l = MustEnqueue(*stub_, MakeJob("left"));
  const std::string r = MustEnqueue(*stub_, MakeJob("right"));
  MustEnqueue(*stub_, MakeJob("elsewhere"));
  auto claims = OpenClaim(MakeClaim({"left", "right"}, 2));
  for (int i = 0; i < 2; ++i) {
    std::optional<v1::ClaimedJob> claimed = claims->Next(kPrompt);
    ASSERT_TRUE(claimed);
    JW_ASSERT_OK(Ack(*stub_, *claimed));
  }
  ASSERT_TRUE(sub.WaitForEvents(2));
  absl::SleepFor(absl::Milliseconds(200));  // nothing else comes
  std::vector<v1::QueueEvent> events = sub.events();
  ASSERT_EQ(events.size(), 2u);
  std::vector<std::string> seen;
  for (const v1::QueueEvent& e : events) {
    EXPECT_EQ(e.kind(), v1::EVENT_KIND_COMPLETED);
    seen.push_back(e.queue() + "/" + e.job_id());
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"left/" + l, "right/" + r}));
}

TEST_F(SubscribeTest, EveryPartitionUnderTheQueuesName) {
  const std::string queue = "parted";
  JW_ASSERT_OK(AdminCall([&](grpc::ClientContext* c) {
    v1::CreateQueueRequest request;
    request.set_queue(queue);
    request.set_partitions(3);
    v1::CreateQueueResponse response;
    return admin_->CreateQueue(c, request, &response);
  }));
  Subscriber sub(broker_->NewStub(), MakeSubscribe({queue}, {v1::EVENT_KIND_ENQUEUED}));
  ASSERT_TRUE(sub.WaitSubscribed());
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(EventSubscribers(p == 0 ? queue : queue + "#" + std::to_string(p)), 1) << p;
  }
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(MustEnqueue(*stub_, MakeJob(queue)));
  ASSERT_TRUE(sub.WaitForEvents(6));
  for (const std::string& id : ids) EXPECT_EQ(sub.Of(id), "enqueued/0") << id;
  for (const v1::QueueEvent& e : sub.events()) EXPECT_EQ(e.queue(), queue);
}

TEST_F(SubscribeTest, EventsMadeThroughAnotherReplica) {
  const std::string queue = "replicas";
  Subscriber sub(broker_->NewStub(), MakeSubscribe({queue}));
  ASSERT_TRUE(sub.WaitSubscribed());
  std::unique_ptr<BrokerProcess> other = AnotherBroker();
  JW_ASSERT_OK(other->Start());
  const std::string id = MustEnqueue(*other->NewStub(), MakeJob(queue));
  ASSERT_TRUE(sub.WaitForEvents(1));
  EXPECT_EQ(sub.Of(id), "enqueued/0");
}

TEST_F(SubscribeTest, BadInputIsRefusedAndSubscribesNothing) {
  struct Case {
    v1::SubscribeRequest request;
    std::string field;
  };
  std::vector<std::string> many;
  for (int i = 0; i < 101; ++i) many.push_back("q" + std::to_string(i));
  v1::SubscribeRequest unknown_kind = MakeSubscribe({"ok"});
  unknown_kind.add_kinds(static_cast<v1::EventKind>(99));
  const std::vector<Case> cases = {
      {MakeSubscribe({}), "queues"},
      {MakeSubscribe(many), "queues"},
      {MakeSubscribe({"ok", "bad name"}), "queues[1]"},
      {MakeSubscribe({"ok", "ok"}), "queues[1]"},
      {MakeSubscribe({"ok"}, {v1::EVENT_KIND_UNSPECIFIED}), "kinds[0]"},
      {unknown_kind, "kinds[0]"},
      {MakeSubscribe({"ok"}, {v1::EVENT_KIND_DEAD, v1::EVENT_KIND_DEAD}), "kinds[1]"},
  };
  for (const Case& c : cases) {
    Subscriber sub(broker_->NewStub(), c.request);
    std::optional<grpc::Status> end = sub.End();
    ASSERT_TRUE(end) << c.field;
    EXPECT_EQ(end->error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.field;
    EXPECT_EQ(Reason(*end), "INVALID_FIELD") << c.field;
    EXPECT_EQ(client::ErrorMetadata(client::FromGrpc(*end))["field"], c.field)
        << StatusText(*end);
    EXPECT_TRUE(sub.messages().empty());
  }
  EXPECT_EQ(EventSubscribers("ok"), 0);
}

TEST_F(SubscribeTest, ALostRedisSubscriptionIsReportedAsEventsMissed) {
  const std::string queue = "gap";
  Subscriber sub(broker_->NewStub(), MakeSubscribe({queue}));
  ASSERT_TRUE(sub.WaitSubscribed());
  // The broker's pub/sub connection is cut; it reconnects and re-subscribes.
  JW_ASSERT_OK(
      RedisCommandFor("jw:{" + queue + "}:events", {"CLIENT", "KILL", "TYPE", "pubsub"}).status());
  ASSERT_TRUE(sub.WaitForMessages(2, absl::Seconds(30)));
  EXPECT_TRUE(sub.messages()[1].events_missed());
  const std::string id = MustEnqueue(*stub_, MakeJob(queue));
  ASSERT_TRUE(sub.WaitForEvents(1));
  EXPECT_EQ(sub.Of(id), "enqueued/0");
}

TEST_F(SubscribeTest, TheStreamsEndLeavesNoSubscription) {
  const std::string queue = "lifetime";
  {
    Subscriber sub(broker_->NewStub(), MakeSubscribe({queue}));
    ASSERT_TRUE(sub.WaitSubscribed());
    EXPECT_EQ(EventSubscribers(queue), 1);
  }
  absl::Time deadline = absl::Now() + kPrompt;
  while (EventSubscribers(queue) != 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ(EventSubscribers(queue), 0);
}

TEST_F(SubscribeTest, TheBrokersDrainEndsTheStreamWithUnavailable) {
  Subscriber sub(broker_->NewStub(), MakeSubscribe({"drain"}));
  ASSERT_TRUE(sub.WaitSubscribed());
  broker_->Signal(SIGTERM);
  std::optional<grpc::Status> end = sub.End();
  ASSERT_TRUE(end);
  EXPECT_EQ(end->error_code(), grpc::StatusCode::UNAVAILABLE) << StatusText(*end);
}

class SlowSubscriberTest : public SubscribeTest {
 protected:
  SlowSubscriberTest() : SubscribeTest({"--subscribe_buffer_events=100"}) {}
};

TEST_F(SlowSubscriberTest, ASubscriberThatDoesNotReadIsCutOff) {
  const std::string queue = "slow";
  Subscriber sub(broker_->NewStub(), MakeSubscribe({queue}), /*paused=*/true);
  // Not read: the subscription is live once the channel has its subscriber.
  absl::Time deadline = absl::Now() + kPrompt;
  while (EventSubscribers(queue) != 1 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_EQ(EventSubscribers(queue), 1);
  absl::SleepFor(absl::Milliseconds(200));  // confirmed meanwhile
  // Far more than gRPC's flow-control windows hold: ~100 bytes per event.
  for (int round = 0; round < 40; ++round) {
    v1::EnqueueBatchRequest batch;
    for (int i = 0; i < 1000; ++i) *batch.add_jobs() = MakeJob(queue);
    v1::EnqueueBatchResponse response;
    JW_ASSERT_OK(EnqueueBatch(*stub_, batch, &response));
  }
  sub.Resume();
  std::optional<grpc::Status> end = sub.End(absl::Seconds(30));
  ASSERT_TRUE(end);
  EXPECT_EQ(end->error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << StatusText(*end);
  EXPECT_EQ(Reason(*end), "SUBSCRIBER_TOO_SLOW");
  EXPECT_LT(sub.events().size(), 40000u);
}

TEST_F(SlowSubscriberTest, TheCppClientSubscribesAgainAndReportsTheGap) {
  const std::string queue = "slow-client";
  client::Client client({.address = broker_->address()});
  absl::Notification subscribed, flooded, missed;
  std::atomic<bool> marker_seen{false};
  client::SubscribeOptions options;
  options.kinds = {v1::EVENT_KIND_ENQUEUED};
  options.on_subscribed = [&] { subscribed.Notify(); };
  options.on_event = [&](const v1::QueueEvent& event) {
    // Not reading while the flood comes: the broker cuts the stream off.
    flooded.WaitForNotificationWithTimeout(absl::Seconds(30));
    if (event.type() != "marker") return true;
    marker_seen = true;
    return false;
  };
  options.on_missed = [&] {
    if (!missed.HasBeenNotified()) missed.Notify();
    return true;
  };
  absl::Status result;
  std::thread subscriber([&] { result = client.Subscribe({queue}, options); });
  ASSERT_TRUE(subscribed.WaitForNotificationWithTimeout(kPrompt));
  for (int round = 0; round < 40; ++round) {
    v1::EnqueueBatchRequest batch;
    for (int i = 0; i < 1000; ++i) *batch.add_jobs() = MakeJob(queue);
    v1::EnqueueBatchResponse response;
    JW_ASSERT_OK(EnqueueBatch(*stub_, batch, &response));
  }
  flooded.Notify();
  EXPECT_TRUE(missed.WaitForNotificationWithTimeout(absl::Seconds(30)));
  // Markers until the subscriber sees one (one enqueued while it catches up
  // on a stream the broker is about to cut off may be lost with it).
  v1::EnqueueRequest marker = MakeJob(queue);
  marker.set_type("marker");
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!marker_seen.load() && absl::Now() < deadline) {
    MustEnqueue(*stub_, marker);
    absl::SleepFor(absl::Milliseconds(200));
  }
  subscriber.join();
  JW_EXPECT_OK(result);
  EXPECT_TRUE(marker_seen.load());
}

}  // namespace
}  // namespace jobwire::testing
