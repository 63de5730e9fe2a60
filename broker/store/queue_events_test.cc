// The scripts' queue events on a real redis-server: each state change is
// published as it happens, one message per script call, only while the
// queue's listen mark (listen_events.lua) is in the future; a queue nobody
// follows pays no command for them.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "broker/store/job_store_test_util.h"
#include "broker/store/queue_events.h"
#include "gtest/gtest.h"

namespace jobwire::store {
namespace {

// A subscriber of one queue's events channel, on its own connection. Its
// RedisClient may only be destroyed once the loop has stopped: the fixture
// owns every EventLog (Follow) and destroys them after TearDown stops it.
class EventLog {
 public:
  EventLog(base::EventLoop* loop, int port, const std::string& channel)
      : client_(std::make_unique<RedisClient>(loop, RedisAddress{"127.0.0.1", port, "", 0},
                                              "events")),
        seen_(std::make_shared<Seen>()) {
    client_->Start();
    client_->Subscribe(channel, [seen = seen_](const std::string&, const std::string& message) {
      absl::MutexLock lock(&seen->mu);
      if (message.empty()) {
        seen->confirmed = true;
        return;
      }
      ++seen->messages;
      auto events = DecodeQueueEvents(message);
      if (!events.ok()) {
        seen->entries.push_back("undecodable");
        return;
      }
      for (const QueueEvent& e : *events) {
        seen->entries.push_back(e.kind + ":" + e.job_id + ":" + e.type + ":" +
                                std::to_string(e.attempts) + (e.at_ms > 0 ? "" : ":no-time"));
      }
    });
  }

  bool WaitConfirmed() {
    absl::MutexLock lock(&seen_->mu);
    auto ok = [this] { return seen_->confirmed; };
    return seen_->mu.AwaitWithTimeout(absl::Condition(&ok), absl::Seconds(10));
  }
  // Waits for `n` events in all; returns them ("kind:id:type:attempts").
  std::vector<std::string> Events(size_t n) {
    absl::MutexLock lock(&seen_->mu);
    auto enough = [this, n] { return seen_->entries.size() >= n; };
    seen_->mu.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
    return seen_->entries;
  }
  int messages() {
    absl::MutexLock lock(&seen_->mu);
    return seen_->messages;
  }

 private:
  struct Seen {
    absl::Mutex mu;
    bool confirmed = false;
    int messages = 0;
    std::vector<std::string> entries;
  };
  std::unique_ptr<RedisClient> client_;
  std::shared_ptr<Seen> seen_;
};

class QueueEventsTest : public JobStoreTest {
 protected:
  void TearDown() override {
    JobStoreTest::TearDown();  // stops the loop
    logs_.clear();
  }

  // A new EventLog of queue `q`'s events channel, alive until TearDown,
  // subscribed; with `mark`, the queue's listen mark set too (as a broker
  // that follows the queue sets it).
  EventLog& Follow(const std::string& q, bool mark = true) {
    logs_.push_back(std::make_unique<EventLog>(&loop_, redis_.port(), KeysOf(q).EventsChannel()));
    EXPECT_TRUE(logs_.back()->WaitConfirmed());
    if (mark) {
      EXPECT_TRUE(Listen(q).ok());
    }
    return *logs_.back();
  }
  // listen_events.lua with a lease of a minute: whether the mark had lapsed.
  absl::StatusOr<bool> Listen(const std::string& q) {
    return Sync<bool>([&](auto cb) { store_->ListenEvents(q, 60000, cb); });
  }

  // Calls of command `name` (lower case; "": of every command) since the
  // server started (commandstats; the commands scripts run count, and so
  // does each INFO).
  int64_t CommandCalls(const std::string& name = "") {
    auto info = redis_.Command("INFO", "commandstats");
    if (!info.ok()) return -1;
    int64_t total = 0;
    for (absl::string_view line : absl::StrSplit(info->str, '\n')) {
      size_t at = line.find(":calls=");
      if (!absl::StartsWith(line, "cmdstat_" + name) || at == absl::string_view::npos) continue;
      if (!name.empty() && at != name.size() + 8) continue;
      int64_t calls = 0;
      absl::string_view rest = line.substr(at + 7);
      if (absl::SimpleAtoi(rest.substr(0, rest.find(',')), &calls)) total += calls;
    }
    return total;
  }

  std::vector<std::unique_ptr<EventLog>> logs_;
};

TEST_F(QueueEventsTest, EachChangeIsPublishedWhileTheQueueIsFollowed) {
  const std::string q = "ev";
  EventLog& log = Follow(q);
  ASSERT_TRUE(log.WaitConfirmed());
  const std::string a = Enqueue(q, "mail", 0, 0, /*max_attempts=*/2);
  auto claimed = Claim(q, 1);
  ASSERT_TRUE(claimed.ok() && claimed->jobs.size() == 1);
  ASSERT_TRUE(Fail(claimed->jobs[0]).ok());  // retry (attempt 1 of 2)
  ASSERT_TRUE(Sync<bool>([&](auto cb) { store_->Cancel(q, a, cb); }).ok());
  const std::string b = Enqueue(q, "sms", 0, 0);
  auto again = Claim(q, 1);
  ASSERT_TRUE(again.ok() && again->jobs.size() == 1);
  ASSERT_TRUE(Ack(again->jobs[0]).ok());
  EXPECT_EQ(log.Events(7), (std::vector<std::string>{
                               "enqueued:" + a + ":mail:0",
                               "active:" + a + ":mail:1",
                               "retry:" + a + ":mail:1",
                               "cancelled:" + a + ":mail:1",
                               "enqueued:" + b + ":sms:0",
                               "active:" + b + ":sms:1",
                               "completed:" + b + ":sms:1",
                           }));
}

TEST_F(QueueEventsTest, OneMessagePerScriptCall) {
  const std::string q = "ev-batch";
  EventLog& log = Follow(q);
  ASSERT_TRUE(log.WaitConfirmed());
  for (int i = 0; i < 3; ++i) Enqueue(q, "t", 0, 0);
  auto claimed = Claim(q, 3);
  ASSERT_TRUE(claimed.ok() && claimed->jobs.size() == 3);
  const int before = (log.Events(6), log.messages());  // 3 enqueues, 1 claim
  EXPECT_EQ(before, 4);
  std::vector<v1::AckRequest> acks(3);
  std::vector<const v1::AckRequest*> ptrs;
  for (int i = 0; i < 3; ++i) {
    acks[i].set_queue(q);
    acks[i].set_job_id(claimed->jobs[i].job().id());
    acks[i].set_lease_token(claimed->jobs[i].lease_token());
    ptrs.push_back(&acks[i]);
  }
  ASSERT_TRUE(Sync<std::vector<AckOutcome>>([&](auto cb) { store_->Ack(q, ptrs, cb); }).ok());
  EXPECT_EQ(log.Events(9).size(), 9u);
  EXPECT_EQ(log.messages(), 5);
}

TEST_F(QueueEventsTest, AQueueNobodyFollowsPublishesNoEvents) {
  const std::string q = "ev-quiet";
  Enqueue(q, "t", 0, 0);
  auto claimed = Claim(q, 1);
  ASSERT_TRUE(claimed.ok() && claimed->jobs.size() == 1);
  const int64_t before = CommandCalls("spublish");
  ASSERT_TRUE(Ack(claimed->jobs[0]).ok());  // ack.lua publishes nothing else
  EXPECT_EQ(CommandCalls("spublish"), before);
  // Followed, the same ack would publish once.
  EventLog& log = Follow(q);
  ASSERT_TRUE(log.WaitConfirmed());
  Enqueue(q, "t", 0, 0);
  auto next = Claim(q, 1);
  ASSERT_TRUE(next.ok() && next->jobs.size() == 1);
  const int64_t followed = CommandCalls("spublish");
  ASSERT_TRUE(Ack(next->jobs[0]).ok());
  EXPECT_EQ(CommandCalls("spublish"), followed + 1);
}

// The mark decides: a subscriber without it gets nothing; a mark set, or
// renewed after it passed, answers whether it had lapsed.
TEST_F(QueueEventsTest, EventsArePublishedOnlyWhileTheListenMarkLasts) {
  const std::string q = "ev-mark";
  EventLog& log = Follow(q, /*mark=*/false);
  Enqueue(q, "a", 0, 0);  // subscribed, no mark: not published
  auto first = Listen(q);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(*first);  // there was none
  const std::string b = Enqueue(q, "b", 0, 0);
  auto renewed = Listen(q);
  ASSERT_TRUE(renewed.ok());
  EXPECT_FALSE(*renewed);  // still in the future
  // The mark passes (set in the past by hand).
  const std::string jobs = KeysOf(q).Jobs();
  ASSERT_TRUE(redis_.Command("HSET", jobs, "#listened", "1").ok());
  Enqueue(q, "c", 0, 0);  // not published
  auto lapsed = Listen(q);
  ASSERT_TRUE(lapsed.ok());
  EXPECT_TRUE(*lapsed);
  const std::string d = Enqueue(q, "d", 0, 0);
  // Messages arrive in order: had a or c been published, they would be here.
  EXPECT_EQ(log.Events(2), (std::vector<std::string>{"enqueued:" + b + ":b:0",
                                                     "enqueued:" + d + ":d:0"}));
}

// A claim and an ack of a followed queue run the same commands as of a
// queue nobody follows, plus their SPUBLISH: the mark rides on the records'
// read (no HGET of it, no PUBSUB), so the events cost nothing while nobody
// listens.
TEST_F(QueueEventsTest, FollowingCostsOnlyThePublishes) {
  auto cycle = [&](const std::string& q) -> int64_t {
    for (int i = 0; i < 3; ++i) Enqueue(q, "t", 0, 0);
    const int64_t before = CommandCalls();
    const int64_t hget = CommandCalls("hget"), pubsub = CommandCalls("pubsub");
    auto claimed = Claim(q, 3);
    EXPECT_TRUE(claimed.ok() && claimed->jobs.size() == 3);
    if (!claimed.ok()) return -1;
    std::vector<v1::AckRequest> acks(claimed->jobs.size());
    std::vector<const v1::AckRequest*> ptrs;
    for (size_t i = 0; i < acks.size(); ++i) {
      acks[i].set_queue(q);
      acks[i].set_job_id(claimed->jobs[i].job().id());
      acks[i].set_lease_token(claimed->jobs[i].lease_token());
      ptrs.push_back(&acks[i]);
    }
    EXPECT_TRUE(Sync<std::vector<AckOutcome>>([&](auto cb) { store_->Ack(q, ptrs, cb); }).ok());
    EXPECT_EQ(CommandCalls("hget"), hget) << q;
    EXPECT_EQ(CommandCalls("pubsub"), pubsub) << q;
    return CommandCalls() - before - 3;  // less the INFO calls of the counts
  };
  cycle("ev-cost-warm");  // loads the function library first
  const int64_t quiet = cycle("ev-cost-quiet");
  EventLog& log = Follow("ev-cost-followed");
  const int64_t followed = cycle("ev-cost-followed");
  EXPECT_EQ(log.Events(9).size(), 9u);  // 3 enqueued, 3 active, 3 completed
  EXPECT_GT(quiet, 0);
  EXPECT_EQ(followed, quiet + 2);  // one SPUBLISH for the claim, one for the ack
}

TEST(DecodeQueueEventsTest, RefusesWhatTheScriptsNeverPublish) {
  EXPECT_FALSE(DecodeQueueEvents("").ok());
  EXPECT_FALSE(DecodeQueueEvents("not msgpack").ok());
  EXPECT_FALSE(DecodeQueueEvents("\x91\x01").ok());  // [1]: an event that is not an array
  auto empty = DecodeQueueEvents("\x90");            // []
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

}  // namespace
}  // namespace jobwire::store
