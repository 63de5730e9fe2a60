// Dispatcher against a real redis-server: what it keeps per stream and per
// queue must not grow with the streams and wake-ups it has seen. Timers are
// counted on the event loop (EventLoop::pending_timers).
#include "broker/core/dispatcher.h"

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "broker/base/event_loop.h"
#include "broker/core/metrics.h"
#include "broker/store/job_store.h"
#include "broker/store/redis_client.h"
#include "broker/store/script_runner.h"
#include "gtest/gtest.h"
#include "tests/test_harness.h"

namespace jobwire::core {
namespace {

template <typename T, typename F>
absl::StatusOr<T> Sync(F call) {
  std::promise<absl::StatusOr<T>> promise;
  call([&promise](absl::StatusOr<T> result) { promise.set_value(std::move(result)); });
  return promise.get_future().get();
}

// Keeps every job delivered to it.
class RecordingSink : public JobSink {
 public:
  bool Deliver(std::vector<v1::ClaimedJob> jobs) override {
    absl::MutexLock lock(&mu_);
    for (auto& job : jobs) jobs_.push_back(std::move(job));
    return true;
  }
  void Stop(v1::StopRun) override {}
  void Close(const absl::Status&) override {}
  size_t delivered() {
    absl::MutexLock lock(&mu_);
    return jobs_.size();
  }

 private:
  absl::Mutex mu_;
  std::vector<v1::ClaimedJob> jobs_;
};

class DispatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(redis_.Start().ok());
    store::RedisAddress address{"127.0.0.1", redis_.port(), "", 0};
    commands_ = std::make_unique<store::RedisClient>(&loop_, address, "commands");
    subscriber_ = std::make_unique<store::RedisClient>(&loop_, address, "pubsub");
    scripts_ = std::make_unique<store::ScriptRunner>(commands_.get());
    store_ = std::make_unique<store::JobStore>(commands_.get(), scripts_.get(),
                                               store::StoreOptions{});
    partitions_ = std::make_unique<QueuePartitions>(store_.get());
    dispatcher_ = std::make_unique<Dispatcher>(&loop_, store_.get(), subscriber_.get(),
                                               partitions_.get(), &metrics_);
    loop_.Start();
    commands_->Start();
    subscriber_->Start();
    for (int i = 0; i < 100; ++i) {
      if (Sync<store::RedisReply>([&](auto cb) { commands_->Command({"PING"}, cb); }).ok()) {
        return;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    FAIL() << "no redis connection";
  }

  void TearDown() override {
    loop_.Stop();
    // Redis clients first: freeing one fails its pending replies, whose
    // callbacks reach the dispatcher.
    commands_.reset();
    subscriber_.reset();
  }

  // Returns once everything posted to the loop before the call has run.
  void Settle() {
    for (int i = 0; i < 3; ++i) {
      std::promise<void> done;
      loop_.Post([&done] { done.set_value(); });
      done.get_future().wait();
    }
  }

  void EnqueueDelayed(const std::string& queue, int64_t delay_ms) {
    v1::EnqueueRequest r;
    r.set_queue(queue);
    r.set_type("t");
    r.set_delay_ms(delay_ms);
    r.set_max_attempts(1);
    r.set_backoff_base_ms(1000);
    r.set_backoff_max_ms(1000);
    auto out = Sync<std::vector<store::EnqueueOutcome>>(
        [&](auto cb) { store_->Enqueue(queue, {r}, cb); });
    ASSERT_TRUE(out.ok()) << out.status();
  }

  testing::RedisServer redis_;
  base::EventLoop loop_;
  Metrics metrics_;
  std::unique_ptr<store::RedisClient> commands_;
  std::unique_ptr<store::RedisClient> subscriber_;
  std::unique_ptr<store::ScriptRunner> scripts_;
  std::unique_ptr<store::JobStore> store_;
  std::unique_ptr<QueuePartitions> partitions_;
  std::unique_ptr<Dispatcher> dispatcher_;
};

// Each stream arms a timer for its maximum age; a stream that closes first
// must take its timer with it.
TEST_F(DispatcherTest, ClosedStreamsLeaveNoTimers) {
  Settle();
  const int64_t before = loop_.pending_timers();
  for (int i = 0; i < 200; ++i) {
    ClaimSpec spec;
    spec.queues = {"idle"};
    spec.max_age = absl::Hours(1);
    auto id = dispatcher_->Open(spec, std::make_shared<RecordingSink>());
    ASSERT_TRUE(id.ok()) << id.status();
    Settle();
    dispatcher_->Close(*id);
  }
  Settle();
  EXPECT_LE(loop_.pending_timers(), before + 1);
}

// A waiting stream's queue keeps one timer for its earliest scheduled job:
// each earlier job replaces the timer, it does not add one.
TEST_F(DispatcherTest, AnEarlierScheduledJobReplacesTheQueueTimer) {
  ClaimSpec spec;
  spec.queues = {"later"};
  auto sink = std::make_shared<RecordingSink>();
  auto id = dispatcher_->Open(spec, sink);
  ASSERT_TRUE(id.ok());
  Settle();
  absl::SleepFor(absl::Milliseconds(200));  // subscribed
  Settle();
  const int64_t before = loop_.pending_timers();
  for (int i = 0; i < 100; ++i) {
    // Each due earlier than the last: 100 h, 99 h, ... from now.
    EnqueueDelayed("later", (100 - i) * 3600 * 1000LL);
  }
  absl::SleepFor(absl::Milliseconds(200));  // the notifications arrive
  Settle();
  EXPECT_LE(loop_.pending_timers(), before + 1);
  EXPECT_EQ(sink->delivered(), 0u);
  dispatcher_->Close(*id);
  Settle();
}

// A queue's subscription and state live while some stream reads it, so they
// do not grow with every queue ever read.
TEST_F(DispatcherTest, QueuesNoStreamReadsAreForgotten) {
  for (int i = 0; i < 100; ++i) {
    ClaimSpec spec;
    spec.queues = {absl::StrCat("q", i), "shared"};
    auto id = dispatcher_->Open(spec, std::make_shared<RecordingSink>());
    ASSERT_TRUE(id.ok());
    Settle();
    dispatcher_->Close(*id);
  }
  absl::SleepFor(absl::Milliseconds(200));  // the unsubscribes are confirmed
  Settle();
  std::promise<std::pair<size_t, size_t>> counts;
  loop_.Post([&] {
    counts.set_value({dispatcher_->queues_tracked(), subscriber_->subscription_count()});
  });
  EXPECT_EQ(counts.get_future().get(), std::make_pair(size_t{0}, size_t{0}));
}

// A queue read again right after its last stream closed (its unsubscribe
// still in flight) is subscribed again: a new job wakes the new stream.
TEST_F(DispatcherTest, AQueueReadAgainAtOnceIsStillNotified) {
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE(round);
    const std::string queue = absl::StrCat("again", round % 2);
    ClaimSpec spec;
    spec.queues = {queue};
    auto first = dispatcher_->Open(spec, std::make_shared<RecordingSink>());
    ASSERT_TRUE(first.ok());
    Settle();
    if (round % 3 == 0) absl::SleepFor(absl::Milliseconds(50));  // subscribed by now
    dispatcher_->Close(*first);
    auto sink = std::make_shared<RecordingSink>();
    auto second = dispatcher_->Open(spec, sink);
    ASSERT_TRUE(second.ok());
    Settle();
    absl::SleepFor(absl::Milliseconds(100));  // the new stream waits on the queue
    EnqueueDelayed(queue, 0);
    for (int i = 0; i < 100 && sink->delivered() == 0; ++i) absl::SleepFor(absl::Milliseconds(20));
    EXPECT_EQ(sink->delivered(), 1u);
    dispatcher_->Close(*second);
    Settle();
  }
}

}  // namespace
}  // namespace jobwire::core
