// QueueEventHub on a real redis-server: a listener is confirmed once the
// subscription is live and the queue's listen mark is set, then hears the
// queue's events; when the mark lapses (it passed while nobody renewed it),
// the next renewal confirms the listeners again, so that they catch up;
// once nobody listens the mark is no longer renewed.
#include "broker/core/queue_event_hub.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "broker/store/job_store_test_util.h"
#include "gtest/gtest.h"

namespace jobwire::core {
namespace {

constexpr absl::Duration kRenewal = absl::Milliseconds(300);

// What one listener heard.
struct Heard {
  absl::Mutex mu;
  int confirmations = 0;
  std::vector<std::string> events;  // "kind:id"

  bool Await(std::function<bool()> done) {
    absl::MutexLock lock(&mu);
    return mu.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(10));
  }
};

class QueueEventHubTest : public store::JobStoreTest {
 protected:
  void SetUp() override {
    store::JobStoreTest::SetUp();
    // Subscriptions on a connection of their own, as the broker's.
    subscriber_ = std::make_unique<store::RedisClient>(
        &loop_, store::RedisAddress{"127.0.0.1", redis_.port(), "", 0}, "events");
    subscriber_->Start();
    hub_ = std::make_unique<QueueEventHub>(&loop_, store_.get(), subscriber_.get(), kRenewal);
  }
  void TearDown() override {
    store::JobStoreTest::TearDown();  // stops the loop
    hub_.reset();
    subscriber_.reset();
  }

  QueueEventHub::ListenerId Listen(const std::string& q, std::shared_ptr<Heard> heard) {
    return hub_->Listen(q, [heard](const std::vector<store::QueueEvent>& events, bool confirmed) {
      absl::MutexLock lock(&heard->mu);
      if (confirmed) ++heard->confirmations;
      for (const store::QueueEvent& e : events) heard->events.push_back(e.kind + ":" + e.job_id);
    });
  }
  std::string Mark(const std::string& q) {
    auto r = redis_.Command("HGET", KeysOf(q).Jobs(), "#listened");
    return r.ok() ? r->str : "error";
  }

  std::unique_ptr<store::RedisClient> subscriber_;
  std::unique_ptr<QueueEventHub> hub_;
};

TEST_F(QueueEventHubTest, ConfirmsOnceMarkedAndAgainAfterTheMarkLapsed) {
  const std::string q = "hub";
  auto heard = std::make_shared<Heard>();
  Listen(q, heard);
  ASSERT_TRUE(heard->Await([&] { return heard->confirmations == 1; }));
  EXPECT_NE(Mark(q), "");
  const std::string a = Enqueue(q, "t", 0, 0);
  ASSERT_TRUE(heard->Await([&] { return heard->events.size() == 1; }));

  // A second listener of the live subscription is confirmed alone.
  auto late = std::make_shared<Heard>();
  Listen(q, late);
  ASSERT_TRUE(late->Await([&] { return late->confirmations == 1; }));

  // The mark passes (set in the past by hand): the next renewal finds it
  // lapsed and confirms every listener again.
  ASSERT_TRUE(redis_.Command("HSET", KeysOf(q).Jobs(), "#listened", "1").ok());
  ASSERT_TRUE(heard->Await([&] { return heard->confirmations == 2; }));
  ASSERT_TRUE(late->Await([&] { return late->confirmations == 2; }));
  const std::string c = Enqueue(q, "t", 0, 0);
  ASSERT_TRUE(heard->Await([&] { return heard->events.size() == 2; }));
  // Renewals that find the mark in place confirm nothing.
  absl::SleepFor(3 * kRenewal);
  absl::MutexLock lock(&heard->mu);
  EXPECT_EQ(heard->confirmations, 2);
  EXPECT_EQ(heard->events, (std::vector<std::string>{"enqueued:" + a, "enqueued:" + c}));
}

TEST_F(QueueEventHubTest, TheMarkIsNoLongerRenewedOnceNobodyListens) {
  const std::string q = "hub-left";
  auto heard = std::make_shared<Heard>();
  const QueueEventHub::ListenerId id = Listen(q, heard);
  ASSERT_TRUE(heard->Await([&] { return heard->confirmations == 1; }));
  // Renewed while listened to.
  const std::string first = Mark(q);
  absl::SleepFor(2 * kRenewal);
  const std::string renewed = Mark(q);
  EXPECT_GT(renewed, first);  // same number of digits: Redis ms
  hub_->Unlisten(id);
  EXPECT_EQ(hub_->partitions_subscribed(), 0u);
  absl::SleepFor(kRenewal / 2);  // a renewal in flight lands
  const std::string last = Mark(q);
  absl::SleepFor(3 * kRenewal);
  EXPECT_EQ(Mark(q), last);
}

}  // namespace
}  // namespace jobwire::core
