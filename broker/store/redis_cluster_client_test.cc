// RedisClusterClient against a real local Redis Cluster of 3 masters and 3
// replicas (tests/redis_cluster.h): commands reach their slot's master with
// no redirection, a moved slot and a slot being migrated (ASK) are
// followed, TRYAGAIN is retried a bounded number of times, and a killed
// master's slots are served again once its replica is promoted; and
// RedisClusterSubscriber follows a channel's slot to its new master.
#include "broker/store/redis_cluster_client.h"

#include <algorithm>
#include <future>
#include <mutex>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "broker/store/key_slot.h"
#include "broker/store/redis_cluster_subscriber.h"
#include "gtest/gtest.h"
#include "tests/redis_cluster.h"

namespace jobwire::store {
namespace {

using ::jobwire::testing::RedisCluster;
using Result = absl::StatusOr<RedisReply>;

// errorstat_<CODE>:count=N from INFO errorstats, summed over `ports`.
int64_t ErrorCount(RedisCluster& cluster, const std::vector<int>& ports, absl::string_view code) {
  int64_t total = 0;
  for (int port : ports) {
    absl::StatusOr<::jobwire::testing::RedisReply> info = cluster.CommandAt(port, {"INFO", "errorstats"});
    if (!info.ok()) continue;
    for (absl::string_view line : absl::StrSplit(info->str, "\r\n")) {
      const std::string prefix = absl::StrCat("errorstat_", code, ":count=");
      int64_t n = 0;
      if (absl::StartsWith(line, prefix) && absl::SimpleAtoi(line.substr(prefix.size()), &n)) total += n;
    }
  }
  return total;
}

class ClusterClientFixture {
 public:
  absl::Status Start(RedisCluster& cluster) {
    absl::StatusOr<RedisAddress> seeds = ParseRedisUrl(cluster.url());
    if (!seeds.ok()) return seeds.status();
    client_ = std::make_unique<RedisClusterClient>(&loop_, *seeds, "cluster");
    subscriber_ = std::make_unique<RedisClusterSubscriber>(&loop_, client_.get(), *seeds, "pubsub");
    std::promise<void> serving;
    auto once = std::make_shared<std::once_flag>();
    client_->SetOnConnected([&serving, once] { std::call_once(*once, [&] { serving.set_value(); }); });
    loop_.Start();
    client_->Start();
    if (serving.get_future().wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
      return absl::DeadlineExceededError("the cluster client never served");
    }
    return absl::OkStatus();
  }
  // The client's destructor requires a stopped loop.
  ~ClusterClientFixture() {
    loop_.Stop();
    subscriber_.reset();
    client_.reset();
  }

  Result Run(std::vector<std::string> args) {
    std::promise<Result> done;
    client_->Command(std::move(args), [&done](Result r) { done.set_value(std::move(r)); });
    return done.get_future().get();
  }
  // Runs `fn` on the loop thread and returns its value.
  template <typename T>
  T OnLoop(std::function<T()> fn) {
    std::promise<T> done;
    loop_.Post([&] { done.set_value(fn()); });
    return done.get_future().get();
  }
  RedisClusterClient& client() { return *client_; }
  RedisClusterSubscriber& subscriber() { return *subscriber_; }

 private:
  base::EventLoop loop_;
  std::unique_ptr<RedisClusterClient> client_;
  std::unique_ptr<RedisClusterSubscriber> subscriber_;
};

class RedisClusterClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new RedisCluster();
    absl::Status started = cluster_->Start();
    ASSERT_TRUE(started.ok()) << started;
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override { JW_ASSERT_OK(fixture_.Start(*cluster_)); }

  static RedisCluster* cluster_;
  ClusterClientFixture fixture_;
};

RedisCluster* RedisClusterClientTest::cluster_ = nullptr;

TEST(CommandSlotTest, RoutesByTheFirstKey) {
  EXPECT_EQ(CommandSlot({"GET", "{q}:x"}), KeySlot("q"));
  EXPECT_EQ(CommandSlot({"set", "a", "b"}), KeySlot("a"));
  EXPECT_EQ(CommandSlot({"EVALSHA", "abc", "2", "{q}:ready", "{q}:active", "arg"}), KeySlot("q"));
  EXPECT_EQ(CommandSlot({"eval", "return 1", "1", "k"}), KeySlot("k"));
  EXPECT_EQ(CommandSlot({"EVAL", "return 1", "0", "arg"}), -1);
  EXPECT_EQ(CommandSlot({"PING"}), -1);
  EXPECT_EQ(CommandSlot({"CONFIG", "GET", "maxmemory"}), -1);
  EXPECT_EQ(CommandSlot({"SCRIPT", "LOAD", "return 1"}), -1);
  EXPECT_EQ(CommandSlot({"CLUSTER", "SHARDS"}), -1);
}

TEST_F(RedisClusterClientTest, EveryKeyGoesToItsMasterWithoutARedirection) {
  absl::StatusOr<std::vector<int>> masters = cluster_->MasterPorts();
  JW_ASSERT_OK(masters.status());
  const int64_t moved_before = ErrorCount(*cluster_, *masters, "MOVED");
  for (int i = 0; i < 200; ++i) {
    Result set = fixture_.Run({"SET", absl::StrCat("{route", i, "}k"), absl::StrCat(i)});
    JW_ASSERT_OK(set.status());
    EXPECT_EQ(set->str, "OK");
  }
  EXPECT_EQ(ErrorCount(*cluster_, *masters, "MOVED"), moved_before);
  // Each key is on the master the cluster says serves its slot.
  for (int i = 0; i < 200; i += 37) {
    const std::string key = absl::StrCat("{route", i, "}k");
    absl::StatusOr<int> owner = cluster_->MasterOfSlot(KeySlot(key));
    JW_ASSERT_OK(owner.status());
    absl::StatusOr<::jobwire::testing::RedisReply> got = cluster_->CommandAt(*owner, {"GET", key});
    JW_ASSERT_OK(got.status());
    EXPECT_EQ(got->str, absl::StrCat(i));
  }
  // Scripts route by their first key.
  Result eval = fixture_.Run({"EVAL", "return redis.call('GET', KEYS[1])", "1", "{route0}k"});
  JW_ASSERT_OK(eval.status());
  EXPECT_EQ(eval->str, "0");
}

TEST_F(RedisClusterClientTest, AMovedSlotIsFollowedAndTheMapRefreshed) {
  const std::string key = "{moved}k";
  const int slot = KeySlot(key);
  JW_ASSERT_OK(fixture_.Run({"SET", key, "v"}).status());
  absl::StatusOr<int> from = cluster_->MasterOfSlot(slot);
  JW_ASSERT_OK(from.status());
  absl::StatusOr<std::vector<int>> masters = cluster_->MasterPorts();
  JW_ASSERT_OK(masters.status());
  const int to = (*masters)[0] != *from ? (*masters)[0] : (*masters)[1];
  JW_ASSERT_OK(cluster_->MoveSlot(slot, to));

  const int refreshes = fixture_.OnLoop<int>([&] { return fixture_.client().refreshes(); });
  Result got = fixture_.Run({"GET", key});
  JW_ASSERT_OK(got.status());
  EXPECT_EQ(got->str, "v");
  // The MOVED made the client read the map again; the next command goes
  // straight to the new owner.
  for (int i = 0; i < 100; ++i) {
    const bool updated = fixture_.OnLoop<bool>([&] {
      return fixture_.client().MasterForSlot(slot) == absl::StrCat("127.0.0.1:", to);
    });
    if (updated) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_GT(fixture_.OnLoop<int>([&] { return fixture_.client().refreshes(); }), refreshes);
  EXPECT_EQ(fixture_.OnLoop<std::string>([&] { return fixture_.client().MasterForSlot(slot); }),
            absl::StrCat("127.0.0.1:", to));
  const int64_t moved = ErrorCount(*cluster_, {*from}, "MOVED");
  JW_ASSERT_OK(fixture_.Run({"GET", key}).status());
  EXPECT_EQ(ErrorCount(*cluster_, {*from}, "MOVED"), moved);
}

// A slot half-way through a migration: keys already moved are answered
// with ASK by the old owner and served by the new one after ASKING; a
// multi-key command over a moved and a not-moved key gets TRYAGAIN, which
// is retried a bounded number of times and then reported as UNAVAILABLE.
TEST_F(RedisClusterClientTest, AskDuringAMigrationAndBoundedTryAgain) {
  const std::string moved_key = "{ask}moved";
  const std::string stays_key = "{ask}stays";
  const int slot = KeySlot(moved_key);
  JW_ASSERT_OK(fixture_.Run({"SET", moved_key, "m"}).status());
  JW_ASSERT_OK(fixture_.Run({"SET", stays_key, "s"}).status());
  absl::StatusOr<int> from = cluster_->MasterOfSlot(slot);
  JW_ASSERT_OK(from.status());
  absl::StatusOr<std::vector<int>> masters = cluster_->MasterPorts();
  JW_ASSERT_OK(masters.status());
  const int to = (*masters)[0] != *from ? (*masters)[0] : (*masters)[1];
  auto id = [&](int port) {
    absl::StatusOr<::jobwire::testing::RedisReply> r = cluster_->CommandAt(port, {"CLUSTER", "MYID"});
    return r.ok() ? r->str : std::string();
  };
  const std::string s = absl::StrCat(slot);
  ASSERT_EQ(cluster_->CommandAt(to, {"CLUSTER", "SETSLOT", s, "IMPORTING", id(*from)})->str, "OK");
  ASSERT_EQ(cluster_->CommandAt(*from, {"CLUSTER", "SETSLOT", s, "MIGRATING", id(to)})->str, "OK");
  ASSERT_EQ(cluster_->CommandAt(*from, {"MIGRATE", "127.0.0.1", absl::StrCat(to), moved_key, "0",
                                        "5000"})->str,
            "OK");

  const int64_t asks = ErrorCount(*cluster_, {*from}, "ASK");
  Result got = fixture_.Run({"GET", moved_key});
  JW_ASSERT_OK(got.status());
  EXPECT_EQ(got->str, "m");
  EXPECT_EQ(ErrorCount(*cluster_, {*from}, "ASK"), asks + 1);
  Result stays = fixture_.Run({"GET", stays_key});
  JW_ASSERT_OK(stays.status());
  EXPECT_EQ(stays->str, "s");

  const int64_t tryagains = ErrorCount(*cluster_, {*from, to}, "TRYAGAIN");
  Result both = fixture_.Run({"MGET", moved_key, stays_key});
  EXPECT_EQ(both.status().code(), absl::StatusCode::kUnavailable) << both.status();
  EXPECT_TRUE(absl::StrContains(both.status().message(), "TRYAGAIN")) << both.status();
  EXPECT_EQ(ErrorCount(*cluster_, {*from, to}, "TRYAGAIN"),
            tryagains + 1 + RedisClusterClient::kMaxRetries);

  // Finish the migration: both keys are served again, MGET included.
  ASSERT_EQ(cluster_->CommandAt(*from, {"MIGRATE", "127.0.0.1", absl::StrCat(to), stays_key, "0",
                                        "5000"})->str,
            "OK");
  JW_ASSERT_OK(cluster_->MoveSlot(slot, to));
  Result after = fixture_.Run({"MGET", moved_key, stays_key});
  JW_ASSERT_OK(after.status());
  ASSERT_EQ(after->elements.size(), 2u);
  EXPECT_EQ(after->elements[0].str, "m");
  EXPECT_EQ(after->elements[1].str, "s");
}

// A channel is subscribed on its slot's master; after the slot moves the
// subscription follows it (re-confirmed with an empty message) and the new
// owner's SPUBLISH arrives.
TEST_F(RedisClusterClientTest, ASubscriptionFollowsItsSlot) {
  const std::string channel = "{sub}:notify";
  const int slot = KeySlot(channel);
  struct Seen {
    absl::Mutex mu;
    std::vector<std::string> messages;
  };
  auto seen = std::make_shared<Seen>();
  fixture_.subscriber().Subscribe(channel, [seen](const std::string&, const std::string& m) {
    absl::MutexLock lock(&seen->mu);
    seen->messages.push_back(m);
  });
  auto count_of = [&](const std::string& m) {
    absl::MutexLock lock(&seen->mu);
    return std::count(seen->messages.begin(), seen->messages.end(), m);
  };
  auto wait_for = [&](const std::string& m, int n) {
    for (int i = 0; i < 500 && count_of(m) < n; ++i) absl::SleepFor(absl::Milliseconds(20));
    return count_of(m) >= n;
  };
  ASSERT_TRUE(wait_for("", 1));  // confirmed
  absl::StatusOr<int> from = cluster_->MasterOfSlot(slot);
  JW_ASSERT_OK(from.status());
  EXPECT_EQ(fixture_.OnLoop<std::string>([&] { return fixture_.subscriber().NodeOf(channel); }),
            absl::StrCat("127.0.0.1:", *from));
  Result published = fixture_.Run({"SPUBLISH", channel, "one"});
  JW_ASSERT_OK(published.status());
  EXPECT_EQ(published->integer, 1);
  EXPECT_TRUE(wait_for("one", 1));

  absl::StatusOr<std::vector<int>> masters = cluster_->MasterPorts();
  JW_ASSERT_OK(masters.status());
  const int to = (*masters)[0] != *from ? (*masters)[0] : (*masters)[1];
  JW_ASSERT_OK(cluster_->MoveSlot(slot, to));
  // No command of this test tells the client: its periodic refresh does.
  const std::string want = absl::StrCat("127.0.0.1:", to);
  const absl::Time deadline = absl::Now() + RedisClusterClient::kRefreshInterval + absl::Seconds(10);
  while (absl::Now() < deadline &&
         fixture_.OnLoop<std::string>([&] { return fixture_.subscriber().NodeOf(channel); }) != want) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_EQ(fixture_.OnLoop<std::string>([&] { return fixture_.subscriber().NodeOf(channel); }), want);
  ASSERT_TRUE(wait_for("", 2));  // confirmed on the new owner
  published = fixture_.Run({"SPUBLISH", channel, "two"});
  JW_ASSERT_OK(published.status());
  EXPECT_EQ(published->integer, 1);
  EXPECT_TRUE(wait_for("two", 1));
}

TEST(RedisClusterClientFailoverTest, AKilledMastersSlotsAreServedByItsPromotedReplica) {
  RedisCluster cluster;
  JW_ASSERT_OK(cluster.Start());
  ClusterClientFixture fixture;
  JW_ASSERT_OK(fixture.Start(cluster));
  const std::string key = "{failover}k";
  absl::StatusOr<int> master = cluster.MasterOfSlot(KeySlot(key));
  JW_ASSERT_OK(master.status());
  // Written and replicated (WAIT on the write's own connection).
  absl::StatusOr<std::vector<::jobwire::testing::RedisReply>> set =
      ::jobwire::testing::RedisCommandsAt(*master, "", {{"SET", key, "v"}, {"WAIT", "1", "5000"}});
  JW_ASSERT_OK(set.status());
  ASSERT_EQ((*set)[1].integer, 1);

  cluster.Kill(*master);
  // Until the replica is promoted the slot's commands fail UNAVAILABLE
  // (never another code); then they are served without any reconnect by
  // the caller.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  Result got = absl::UnavailableError("not tried");
  while (absl::Now() < deadline) {
    got = fixture.Run({"GET", key});
    if (got.ok()) break;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable) << got.status();
    absl::SleepFor(absl::Milliseconds(100));
  }
  JW_ASSERT_OK(got.status());
  EXPECT_EQ(got->str, "v");
  EXPECT_NE(fixture.OnLoop<std::string>([&] { return fixture.client().MasterForSlot(KeySlot(key)); }),
            absl::StrCat("127.0.0.1:", *master));
}

}  // namespace
}  // namespace jobwire::store
