// ClusterTopology against a real local Redis Cluster (tests/redis_cluster.h),
// and ParseRedirect against the error texts Redis sends.
#include "broker/store/cluster_topology.h"

#include <hiredis/hiredis.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/redis_cluster.h"

namespace jobwire::store {
namespace {

using ::jobwire::testing::RedisCluster;

// The harness's reply (hiredis types) as the store's RedisReply.
RedisReply FromHarness(const ::jobwire::testing::RedisReply& in) {
  RedisReply out;
  switch (in.type) {
    case REDIS_REPLY_STRING: out.type = RedisReply::Type::kString; break;
    case REDIS_REPLY_STATUS: out.type = RedisReply::Type::kStatus; break;
    case REDIS_REPLY_ERROR: out.type = RedisReply::Type::kError; break;
    case REDIS_REPLY_INTEGER: out.type = RedisReply::Type::kInteger; break;
    case REDIS_REPLY_ARRAY: out.type = RedisReply::Type::kArray; break;
    default: out.type = RedisReply::Type::kNil; break;
  }
  out.str = in.str;
  out.integer = in.integer;
  for (const auto& e : in.elements) out.elements.push_back(FromHarness(e));
  return out;
}

absl::StatusOr<ClusterTopology> TopologyFrom(RedisCluster& cluster, int port) {
  absl::StatusOr<::jobwire::testing::RedisReply> shards = cluster.CommandAt(port, {"CLUSTER", "SHARDS"});
  if (!shards.ok()) return shards.status();
  return ClusterTopology::FromShards(FromHarness(*shards));
}

TEST(ClusterTopologyTest, EverySlotMapsToTheMasterThatServesIt) {
  RedisCluster cluster;
  JW_ASSERT_OK(cluster.Start());
  absl::StatusOr<ClusterTopology> topology = TopologyFrom(cluster, cluster.ports()[3]);
  JW_ASSERT_OK(topology.status());
  EXPECT_EQ(topology->masters().size(), 3u);
  for (int slot : {0, 1, 5460, 5461, 8000, 10922, 10923, 16383}) {
    absl::StatusOr<int> master = cluster.MasterOfSlot(slot);
    JW_ASSERT_OK(master.status());
    EXPECT_EQ(topology->MasterFor(slot), (NodeAddress{"127.0.0.1", *master})) << "slot " << slot;
  }

  // After a failover a fresh reply names the promoted replica, and a key
  // of the failed master's slots routes there.
  const int slot = KeySlot("{emails}:pending");
  absl::StatusOr<int> old_master = cluster.MasterOfSlot(slot);
  JW_ASSERT_OK(old_master.status());
  cluster.Kill(*old_master);
  JW_ASSERT_OK(cluster.WaitHealthy(absl::Seconds(30)));
  int live = 0;
  for (int port : cluster.ports()) {
    if (port != *old_master) live = port;
  }
  topology = TopologyFrom(cluster, live);
  JW_ASSERT_OK(topology.status());
  absl::StatusOr<int> promoted = cluster.MasterOfSlot(slot);
  JW_ASSERT_OK(promoted.status());
  EXPECT_EQ(topology->MasterFor(slot).port, *promoted);
  EXPECT_NE(topology->MasterFor(slot).port, *old_master);
}

// A hand-built reply: one shard serving slots 0-100 only.
RedisReply PartialShards() {
  auto str = [](std::string s) {
    RedisReply r;
    r.type = RedisReply::Type::kString;
    r.str = std::move(s);
    return r;
  };
  auto integer = [](int64_t v) {
    RedisReply r;
    r.type = RedisReply::Type::kInteger;
    r.integer = v;
    return r;
  };
  auto array = [](std::vector<RedisReply> e) {
    RedisReply r;
    r.type = RedisReply::Type::kArray;
    r.elements = std::move(e);
    return r;
  };
  RedisReply node = array({str("id"), str("abc"), str("port"), integer(7000), str("ip"),
                           str("10.0.0.1"), str("endpoint"), str("redis-0.redis"), str("role"),
                           str("master"), str("health"), str("online")});
  RedisReply shard = array({str("slots"), array({integer(0), integer(100)}), str("nodes"),
                            array({node})});
  return array({shard});
}

TEST(ClusterTopologyTest, UncoveredSlotsAreAFailedPrecondition) {
  absl::StatusOr<ClusterTopology> topology = ClusterTopology::FromShards(PartialShards());
  EXPECT_EQ(topology.status().code(), absl::StatusCode::kFailedPrecondition) << topology.status();
  EXPECT_NE(topology.status().message().find("slot 101"), std::string::npos) << topology.status();
  RedisReply not_array;
  not_array.type = RedisReply::Type::kString;
  EXPECT_EQ(ClusterTopology::FromShards(not_array).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ParseRedirectTest, Table) {
  struct Case {
    std::string error;
    bool ok;
    Redirect::Kind kind;
    int slot;
    std::string host;
    int port;
  };
  const std::vector<Case> cases = {
      {"MOVED 3999 127.0.0.1:6381", true, Redirect::Kind::kMoved, 3999, "127.0.0.1", 6381},
      {"ASK 16383 redis-2.redis:6379", true, Redirect::Kind::kAsk, 16383, "redis-2.redis", 6379},
      {"MOVED 0 :6380", true, Redirect::Kind::kMoved, 0, "", 6380},
      {"MOVED 1 [::1]:7000", true, Redirect::Kind::kMoved, 1, "[::1]", 7000},
      {"MOVED 16384 127.0.0.1:6381", false, {}, 0, "", 0},
      {"MOVED -1 127.0.0.1:6381", false, {}, 0, "", 0},
      {"MOVED 12 127.0.0.1", false, {}, 0, "", 0},
      {"MOVED 12 127.0.0.1:0", false, {}, 0, "", 0},
      {"TRYAGAIN Multiple keys request during rehashing of slot", false, {}, 0, "", 0},
      {"ERR unknown command", false, {}, 0, "", 0},
      {"", false, {}, 0, "", 0},
  };
  for (const Case& c : cases) {
    std::optional<Redirect> r = ParseRedirect(c.error);
    ASSERT_EQ(r.has_value(), c.ok) << c.error;
    if (!r.has_value()) continue;
    EXPECT_EQ(r->kind, c.kind) << c.error;
    EXPECT_EQ(r->slot, c.slot) << c.error;
    EXPECT_EQ(r->to.host, c.host) << c.error;
    EXPECT_EQ(r->to.port, c.port) << c.error;
  }
}

}  // namespace
}  // namespace jobwire::store
