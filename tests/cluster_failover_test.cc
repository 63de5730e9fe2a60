// --redis_mode=cluster under load, against real processes: a local Redis
// Cluster of 3 masters and 3 replicas (tests/redis_cluster.h), the broker
// binary, producers and workers on real gRPC calls and Claim streams. Every
// count comes from the test's own records (each Enqueue and Ack answer, each
// delivery), never from the broker. Jobs are told apart by payload (also
// their idempotency key): a failover may hand a lost job's id out again.
// Each worker acks one job in kHoldEvery after its lease ran out and the job
// was delivered again: a stale token the broker must refuse.
//
// SlotMigration: the queue's slot moves to a second master, then a third
// (RedisCluster::MoveSlot, as `redis-cli --cluster reshard` per slot). Every
// job answered OK is acked, under the id its Enqueue answered; the old
// owners answered ASK or MOVED. MasterKill: the slot's master is SIGKILLed
// (AfterReplicationCut: 300 ms after its replica was cut off) and its
// replica promoted; what replication lost was answered OK in the last
// kLossWindow before the kill (docs/guarantees.md). All: jobs enqueued after
// the fault are acked within kFollowBound; clients see OK, UNAVAILABLE
// (retried), and FAILED_PRECONDITION / NOT_FOUND only for a superseded token
// or one the dead master issued; no Ack succeeds under a superseded lease.
// PartitionedClusterFailoverTest: the same on a queue of 3 partitions, the
// fault on partition 1's slot.
#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

#include "broker/store/key_slot.h"
#include "broker/store/keys.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/cluster_load.h"
#include "tests/redis_cluster.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

using namespace cluster_load;  // NOLINT: the test's own helpers

class ClusterFailoverTest : public ::testing::Test {
 protected:
  static constexpr char kQueue[] = "load";

  void SetUp() override {
    JW_ASSERT_OK(cluster_.Start());
    broker_ = std::make_unique<BrokerProcess>(0, std::vector<std::string>{"--redis_mode=cluster"});
    broker_->set_redis_url(cluster_.url());
    JW_ASSERT_OK(broker_->Start());
    if (partitions() > 1) {
      grpc::ClientContext context;
      v1::CreateQueueRequest request;
      request.set_queue(kQueue);
      request.set_partitions(partitions());
      v1::CreateQueueResponse response;
      ASSERT_TRUE(v1::AdminService::NewStub(broker_->channel())->CreateQueue(&context, request, &response).ok());
    }
    // The slot moved, or whose master is killed: partition 1's when the
    // queue has several (the others keep their masters).
    slot_ = store::KeySlot(
        store::Keys("jw", store::PartitionQueue(kQueue, partitions() > 1 ? 1 : 0)).Jobs());
  }
  // The partitions of the queue under load.
  virtual int partitions() const { return 1; }
  void TearDown() override { if (broker_ != nullptr) broker_->Stop(); }

  void MigrateUnderLoad(bool back);
  void CheckMigration(const Records& r, absl::Time last_move);
  void KillUnderLoad(bool cut_first);
  void CheckFailover(const Records& r, absl::Time killed, absl::Time healed, bool cut_first);

  RedisCluster cluster_;
  std::unique_ptr<BrokerProcess> broker_;
  int slot_ = -1;
};

// Moves the queue's slot from its first master to the other two in turn,
// then with `back` to the first again, 2 s apart under load, and checks what
// the file comment says.
void ClusterFailoverTest::MigrateUnderLoad(bool back) {
  absl::StatusOr<int> first = cluster_.MasterOfSlot(slot_);
  absl::StatusOr<std::vector<int>> masters = cluster_.MasterPorts();
  JW_ASSERT_OK(first.status());
  JW_ASSERT_OK(masters.status());
  ASSERT_EQ(masters->size(), 3u);
  std::vector<int> route;  // the other two masters
  std::copy_if(masters->begin(), masters->end(), std::back_inserter(route),
               [&](int port) { return port != *first; });
  if (back) route.push_back(*first);
  Load load(*broker_, kQueue, /*lease_ms=*/3000);
  absl::Time last_move;
  for (int from = *first; int to : route) {
    absl::SleepFor(absl::Seconds(2));
    const int64_t before = cluster_.RedirectionsSent(from);
    JW_ASSERT_OK(cluster_.MoveSlot(slot_, to));
    last_move = absl::Now();
    EXPECT_EQ(cluster_.MasterOfSlot(slot_).value_or(-1), to) << "slot " << slot_ << " stayed";
    absl::SleepFor(absl::Seconds(1));
    // The broker, still sending to the old owner, was told where to go.
    EXPECT_GT(cluster_.RedirectionsSent(from), before) << from << " never redirected the broker";
    from = to;
  }
  absl::SleepFor(absl::Seconds(2));  // load on the last owner
  load.StopProducing();
  EXPECT_TRUE(load.WaitAcked(absl::Seconds(10), absl::Seconds(30)));
  load.StopWorking();
  CheckMigration(load.records(), last_move);
}

void ClusterFailoverTest::CheckMigration(const Records& r, absl::Time last_move) {
  const Tally t = Count(r.jobs, absl::InfinitePast(), last_move);
  std::printf("cluster slot migration: %s; after the last move %d enqueued, %d late\n",
              Text(t, r).c_str(), t.after, t.late);
  CheckCommon(r, t);
  EXPECT_GT(t.enqueued, 1000);
  EXPECT_EQ(t.acked, t.enqueued);
  EXPECT_EQ(ClassifyLost(*broker_->NewStub(), kQueue, r, absl::InfinitePast()).stuck, 0);
  EXPECT_EQ(t.other_id, 0);  // no id handed out twice, none changed by a move
  EXPECT_GT(t.refused, 0) << "no late ack was refused: the stale-ack check checked nothing";
  EXPECT_GT(t.after, 0);
  EXPECT_EQ(t.late, 0);
}

TEST_F(ClusterFailoverTest, SlotMigrationUnderLoadLosesNothing) {
  MigrateUnderLoad(/*back=*/false);
}

// The slot goes back to the master it started on: the broker subscribes the
// queue's wake-up channel there again (it failed before: the node had ended
// the subscription itself and answered the broker's SUNSUBSCRIBE with MOVED,
// and RedisClient waited for a confirmation forever, so jobs enqueued after
// the slot came back stayed PENDING).
TEST_F(ClusterFailoverTest, SlotMovedBackToItsFormerOwnerLosesNothing) {
  MigrateUnderLoad(/*back=*/true);
}

// SIGKILLs the master of the queue's slot 3 s into the load (`cut_first`: its
// replica cut off first), 4 s more load after, and checks the file comment.
void ClusterFailoverTest::KillUnderLoad(bool cut_first) {
  absl::StatusOr<int> master = cluster_.MasterOfSlot(slot_);
  JW_ASSERT_OK(master.status());
  Load load(*broker_, kQueue, /*lease_ms=*/2000);  // leases held by the dead master end
  absl::SleepFor(absl::Seconds(3));
  if (cut_first) {  // then 300 ms, or up to 800 ms until 20 enqueues were answered OK
    JW_ASSERT_OK(cluster_.CutReplication(*master));
    const absl::Time cut = absl::Now();
    for (absl::Duration wait = absl::Milliseconds(800); absl::Now() - cut < wait;) {
      absl::SleepFor(absl::Milliseconds(20));
      int answered = 0;
      for (const auto& [payload, job] : load.records().jobs) answered += job.answered > cut;
      if (answered >= 20) wait = absl::Milliseconds(300);
    }
  }
  const absl::Time killed = absl::Now();
  cluster_.Kill(*master);
  JW_ASSERT_OK(cluster_.WaitHealthy(absl::Seconds(30)));
  const absl::Time healed = absl::Now();
  EXPECT_NE(cluster_.MasterOfSlot(slot_).value_or(*master), *master) << "no replica promoted";
  absl::SleepFor(absl::Seconds(4));
  load.StopProducing();
  load.WaitAcked(absl::Seconds(7), absl::Seconds(30));  // lost jobs never are: quiet past 2 leases
  load.StopWorking();
  CheckFailover(load.records(), killed, healed, cut_first);
}

void ClusterFailoverTest::CheckFailover(const Records& r, absl::Time killed, absl::Time healed,
                                        bool cut_first) {
  const Tally t = Count(r.jobs, healed, healed);
  auto stub = broker_->NewStub();
  const Lost lost = ClassifyLost(*stub, kQueue, r, killed);
  absl::Time first_ok = absl::InfiniteFuture();  // to an enqueue first sent after the kill
  for (const auto& [payload, job] : r.jobs) {
    if (job.first_sent >= killed && !job.id.empty()) first_ok = std::min(first_ok, job.answered);
  }
  std::printf(
      "cluster failover%s: %s; lost=%zu (NOT_FOUND %d, id reused %d); acked in the last 1 s "
      "but gone %d; healthy %lld ms after the kill, first OK %lld ms after that; %d enqueued "
      "after it, %d late\n",
      cut_first ? " (replication cut first)" : "", Text(t, r).c_str(), t.never_acked.size(),
      lost.gone, lost.reused, lost.acked_gone,
      static_cast<long long>(absl::ToInt64Milliseconds(healed - killed)),
      static_cast<long long>(absl::ToInt64Milliseconds(first_ok - healed)), t.after, t.late);
  CheckCommon(r, t);
  EXPECT_GT(t.enqueued, 500);
  EXPECT_GT(r.codes.count(Code::UNAVAILABLE), 0u) << "the kill never reached a client";
  EXPECT_GT(t.after, 0);  // recovered by itself: all enqueued after the promotion acked
  EXPECT_EQ(t.late, 0);
  // Only replication loses jobs, answered just before the kill; with the cut, some.
  EXPECT_EQ(lost.stuck, 0);
  EXPECT_EQ(lost.early, 0);
  if (cut_first) {
    EXPECT_GT(lost.gone + lost.reused + lost.acked_gone, 0) << "the cut lost nothing";
  }
}

TEST_F(ClusterFailoverTest, MasterKillUnderLoad) { KillUnderLoad(/*cut_first=*/false); }

TEST_F(ClusterFailoverTest, MasterKillAfterReplicationCutUnderLoad) {
  KillUnderLoad(/*cut_first=*/true);
}

// The same on a queue of 3 partitions (docs/semantics.md, "Partitioned
// queues"): one partition's slot moves, or loses its master, while the
// others keep serving; nothing of any partition is lost.
class PartitionedClusterFailoverTest : public ClusterFailoverTest {
 protected:
  int partitions() const override { return 3; }
};

TEST_F(PartitionedClusterFailoverTest, SlotMigrationOfOnePartitionLosesNothing) {
  MigrateUnderLoad(/*back=*/false);
}

TEST_F(PartitionedClusterFailoverTest, MasterKillOfOnePartitionUnderLoad) {
  KillUnderLoad(/*cut_first=*/false);
}

}  // namespace
}  // namespace jobwire::testing
