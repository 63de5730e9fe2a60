// Parents in other queues or partitions (EnqueueRequest.depends_on refs
// "<queue>/<id>"; docs/semantics.md, "Parents in other queues") through the
// real broker and a real Redis (also a Redis Cluster: the parent and the
// child are in different slots there). A child waits for a parent of
// another queue and runs with its result; a dead parent fails the child
// and its own children; parents that already ended count at once; an
// unknown ref refuses the job with nothing stored; a cancelled, deleted or
// reaped parent tells its children even when no broker follows its queue;
// a link that a broker left unmade is made by the recovery pass. Every
// check reads what the test's own claims, GetJob and Admin calls answer.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cpp/client.h"
#include "client/cpp/error_details.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/dependency_test_util.h"
#include "tests/lifecycle_test_util.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

class RemoteDependenciesTest : public DependencyTest {
 protected:
  static std::string Ref(const std::string& queue, const std::string& id) {
    return absl::StrCat(queue, "/", id);
  }

  // Waits up to `limit` for job `id` of `queue` to be in `state`; its last
  // read.
  v1::Job AwaitState(const std::string& queue, const std::string& id, v1::JobState state,
                     absl::Duration limit) {
    const absl::Time deadline = absl::Now() + limit;
    v1::Job job = Get(queue, id);
    while (job.state() != state && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(50));
      job = Get(queue, id);
    }
    return job;
  }
};

TEST_F(RemoteDependenciesTest, AChildWaitsForAParentInAnotherQueueAndGetsItsResult) {
  const std::string orders = "orders";
  const std::string emails = "emails";
  const std::string order = MustEnqueue(*stub_, MakeJob(orders));
  const std::string draft = MustEnqueue(*stub_, MakeJob(emails));
  const std::string child = MustEnqueue(*stub_, Child(emails, {Ref(orders, order), draft}));

  v1::Job waiting = Get(emails, child);
  EXPECT_EQ(waiting.state(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(waiting.dependencies_left(), 2);
  EXPECT_THAT(waiting.depends_on(), ElementsAre(Ref(orders, order), draft)) << "as given";
  EXPECT_EQ(Stats(emails).pending_scheduled(), 1) << "a waiting job is pending, not due";

  auto email_reader = OpenClaim(MakeClaim({emails}, 10));
  JW_ASSERT_OK(Ack(*stub_, Next(*email_reader, draft), "draft done"));
  EXPECT_FALSE(email_reader->Next(kQuiet)) << "the child ran before its parent elsewhere ended";
  EXPECT_EQ(Get(emails, child).dependencies_left(), 1);

  auto order_reader = OpenClaim(MakeClaim({orders}, 10));
  JW_ASSERT_OK(Ack(*stub_, Next(*order_reader, order), "order 42 paid"));
  const v1::ClaimedJob run = Next(*email_reader, child);
  EXPECT_EQ(run.job().dependencies_left(), 0);
  EXPECT_THAT(run.job().dependency_results(),
              UnorderedElementsAre(Pair(Ref(orders, order), "order 42 paid"),
                                   Pair(draft, "draft done")))
      << "a parent elsewhere's result is keyed by the ref the child named it by";
  JW_ASSERT_OK(Ack(*stub_, run));
  EXPECT_EQ(Get(emails, child).state(), v1::JOB_STATE_COMPLETED);
}

TEST_F(RemoteDependenciesTest, ADeadParentElsewhereFailsTheChildAndItsChain) {
  v1::EnqueueRequest once = MakeJob("charges");
  once.set_max_attempts(1);
  const std::string parent = MustEnqueue(*stub_, once);
  const std::string ref = Ref("charges", parent);
  const std::string child = MustEnqueue(*stub_, Child("receipts", {ref}));
  const std::string grandchild = MustEnqueue(*stub_, Child("receipts", {child}));
  const std::string anyway = MustEnqueue(*stub_, Child("audit", {ref}, /*run_after_failed=*/true));

  auto reader = OpenClaim(MakeClaim({"charges"}, 10));
  v1::FailResponse failed;
  JW_ASSERT_OK(Fail(*stub_, MakeFail(Next(*reader, parent), "card declined"), &failed));
  EXPECT_EQ(failed.outcome(), v1::FailResponse::OUTCOME_DEAD);

  const v1::Job dead = AwaitState("receipts", child, v1::JOB_STATE_DEAD, absl::Seconds(5));
  EXPECT_EQ(dead.state(), v1::JOB_STATE_DEAD);
  EXPECT_EQ(dead.error(), absl::StrCat("dependency failed: ", ref));
  EXPECT_EQ(dead.attempts(), 0);
  const v1::Job chained = Get("receipts", grandchild);
  EXPECT_EQ(chained.state(), v1::JOB_STATE_DEAD);
  EXPECT_EQ(chained.error(), absl::StrCat("dependency failed: ", child));

  auto audit = OpenClaim(MakeClaim({"audit"}, 10));
  const v1::ClaimedJob ran = Next(*audit, anyway);
  EXPECT_THAT(ran.job().dependency_results(), IsEmpty());
  EXPECT_EQ(Stats("receipts").dead(), 2);
}

TEST_F(RemoteDependenciesTest, ParentsElsewhereThatAlreadyEndedCountAtOnce) {
  const std::string up = "upstream";
  v1::EnqueueRequest kept = MakeJob(up);
  v1::EnqueueRequest dropped = MakeJob(up);
  dropped.set_completed_retention_ms(0);  // deleted on ack, a tombstone left
  v1::EnqueueRequest doomed = MakeJob(up);
  doomed.set_max_attempts(1);
  const std::string done = MustEnqueue(*stub_, kept);
  const std::string gone = MustEnqueue(*stub_, dropped);
  const std::string dead = MustEnqueue(*stub_, doomed);
  {
    auto reader = OpenClaim(MakeClaim({up}, 3));
    JW_ASSERT_OK(Ack(*stub_, Next(*reader, done), "kept result"));
    JW_ASSERT_OK(Ack(*stub_, Next(*reader, gone), "dropped result"));
    v1::FailResponse failed;
    JW_ASSERT_OK(Fail(*stub_, MakeFail(Next(*reader, dead), "boom"), &failed));
  }

  // The Enqueue answers once the links are made: the state is read at once.
  const std::string down = "downstream";
  const std::string due = MustEnqueue(*stub_, Child(down, {Ref(up, done), Ref(up, gone)}));
  const std::string dies = MustEnqueue(*stub_, Child(down, {Ref(up, done), Ref(up, dead)}));
  const std::string runs = MustEnqueue(*stub_, Child(down, {Ref(up, dead)}, true));
  const v1::Job dead_child = Get(down, dies);
  EXPECT_EQ(dead_child.state(), v1::JOB_STATE_DEAD);
  EXPECT_EQ(dead_child.error(), absl::StrCat("dependency failed: ", Ref(up, dead)));
  EXPECT_EQ(Get(down, due).dependencies_left(), 0);

  auto reader = OpenClaim(MakeClaim({down}, 10));
  const v1::ClaimedJob first = Next(*reader, due);
  EXPECT_THAT(first.job().dependency_results(),
              UnorderedElementsAre(Pair(Ref(up, done), "kept result")))
      << "a job deleted on ack counts as completed, without a result";
  Next(*reader, runs);
  EXPECT_FALSE(reader->Next(kQuiet));
}

TEST_F(RemoteDependenciesTest, AnUnknownParentElsewhereRefusesTheJobAndStoresNothing) {
  const std::string parent = MustEnqueue(*stub_, MakeJob("known"));
  MustEnqueue(*stub_, MakeJob("strict"));  // the queue exists: its keys are counted
  const int64_t keys_before = RedisDbSize();
  for (const std::string& ref : {Ref("known", "000000999999"), Ref("never.used", "000000000001"),
                                 Ref("known", "000000000001.p3")}) {
    v1::EnqueueResponse response;
    grpc::Status status = Enqueue(*stub_, Child("strict", {Ref("known", parent), ref}), &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND) << ref << ": " << StatusText(status);
    const size_t slash = ref.find('/');
    EXPECT_THAT(status.error_message(), HasSubstr(absl::StrCat("job ", ref.substr(slash + 1),
                                                              " in queue ", ref.substr(0, slash))));
    EXPECT_EQ(client::ErrorReason(client::FromGrpc(status)), "DEPENDENCY_NOT_FOUND") << ref;
  }
  EXPECT_EQ(RedisDbSize(), keys_before) << "a refused job stored something";

  // Malformed refs: INVALID_ARGUMENT naming the entry.
  for (const std::string& bad : {std::string("a b/000000000001"), std::string("known/"),
                                 std::string("/000000000001"), std::string("q#1/000000000001")}) {
    v1::EnqueueResponse response;
    grpc::Status status = Enqueue(*stub_, Child("strict", {bad}), &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad;
    EXPECT_EQ(FieldOf(status), "depends_on[0]") << bad << ": " << status.error_message();
  }

  // In a batch the refusal is that job's, and its batch children's.
  v1::EnqueueBatchRequest batch;
  *batch.add_jobs() = Child("strict", {Ref("known", "000000999999")});
  v1::EnqueueRequest linked = MakeJob("strict");
  linked.add_depends_on_batch_index(0);
  *batch.add_jobs() = linked;
  *batch.add_jobs() = Child("strict", {Ref("known", parent)});
  v1::EnqueueBatchResponse results;
  JW_ASSERT_OK(EnqueueBatch(*stub_, batch, &results));
  ASSERT_EQ(results.results_size(), 3);
  EXPECT_EQ(results.results(0).code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(results.results(0).reason(), "DEPENDENCY_NOT_FOUND");
  EXPECT_EQ(results.results(1).code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(results.results(2).code(), grpc::StatusCode::OK);
  EXPECT_EQ(Get("strict", results.results(2).job_id()).dependencies_left(), 1);
  EXPECT_EQ(Get("strict", results.results(2).job_id()).state(), v1::JOB_STATE_PENDING);
}

// Cancel, DeleteJob and DeleteQueue tell the children elsewhere at once,
// though no broker follows the parents' queue (no Claim stream on it).
TEST_F(RemoteDependenciesTest, RemovedParentsTellTheirChildrenWhenNoBrokerFollowsTheirQueue) {
  const std::string cancelled = MustEnqueue(*stub_, MakeJob("quiet"));
  const std::string deleted = MustEnqueue(*stub_, MakeJob("quiet"));
  const std::string doomed = MustEnqueue(*stub_, MakeJob("doomed"));
  const std::string a = MustEnqueue(*stub_, Child("loud", {Ref("quiet", cancelled)}));
  const std::string b = MustEnqueue(*stub_, Child("loud", {Ref("quiet", deleted)}));
  const std::string c = MustEnqueue(*stub_, Child("loud", {Ref("doomed", doomed)}));

  JW_ASSERT_OK(Cancel(*stub_, "quiet", cancelled));
  EXPECT_EQ(Get("loud", a).error(), absl::StrCat("dependency failed: ", Ref("quiet", cancelled)));

  v1::DeleteJobRequest del;
  del.set_queue("quiet");
  del.set_job_id(deleted);
  v1::DeleteJobResponse gone;
  JW_ASSERT_OK(admin_->DeleteJob(Context().get(), del, &gone));
  EXPECT_EQ(Get("loud", b).error(), absl::StrCat("dependency failed: ", Ref("quiet", deleted)));

  v1::DeleteQueueRequest drop;
  drop.set_queue("doomed");
  v1::DeleteQueueResponse dropped;
  JW_ASSERT_OK(admin_->DeleteQueue(Context().get(), drop, &dropped));
  const v1::Job orphan = AwaitState("loud", c, v1::JOB_STATE_DEAD, absl::Seconds(5));
  EXPECT_EQ(orphan.error(), absl::StrCat("dependency failed: ", Ref("doomed", doomed)));
  EXPECT_EQ(Stats("loud").dead(), 3);
  EXPECT_EQ(SizeOf("doomed", "deps_outbox", "LLEN"), 0) << "the deleted queue's news was left";
}

// A partitioned queue: a child may name a parent of another partition by
// ref, next to parents of its own partition by id.
TEST_F(RemoteDependenciesTest, AChildMayNameAParentOfAnotherPartition) {
  const std::string queue = "sharded";
  v1::CreateQueueRequest create;
  create.set_queue(queue);
  create.set_partitions(2);
  JW_ASSERT_OK(CreateQueue(create));
  std::string p0, p1;  // a parent in each partition
  while (p0.empty() || p1.empty()) {
    const std::string id = MustEnqueue(*stub_, MakeJob(queue));
    ASSERT_FALSE(id.empty());
    (id.find(".p1") == std::string::npos ? p0 : p1) = id;
  }
  const std::string child = MustEnqueue(*stub_, Child(queue, {p0, Ref(queue, p1)}));
  EXPECT_EQ(child.find(".p1"), std::string::npos) << "the child goes to its id parent's partition";
  EXPECT_EQ(Get(queue, child).dependencies_left(), 2);

  auto reader = OpenClaim(MakeClaim({queue}, 10));
  for (int i = 0; i < 3; ++i) {
    std::optional<v1::ClaimedJob> claimed = reader->Next(kPrompt);
    ASSERT_TRUE(claimed) << "job " << i;
    if (claimed->job().id() == child) {
      EXPECT_EQ(i, 2) << "the child ran before both parents";
      EXPECT_THAT(claimed->job().dependency_results(),
                  UnorderedElementsAre(Pair(p0, "zero"), Pair(Ref(queue, p1), "one")));
    }
    JW_ASSERT_OK(Ack(*stub_, *claimed, claimed->job().id() == p0 ? "zero" : "one"));
  }
}

// A broker that stores children but stops before linking them, and news no
// broker drained: the idle check's recovery pass (every tenth of
// --idle_queue_ttl_ms here) makes up for both.
class RemoteDependenciesRecoveryTest : public RemoteDependenciesTest {
 protected:
  RemoteDependenciesRecoveryTest() { broker_flags_ = {"--idle_queue_ttl_ms=10000"}; }
};

TEST_F(RemoteDependenciesRecoveryTest, AReapedParentsNewsIsDeliveredByTheRecoveryPass) {
  v1::EnqueueRequest once = MakeJob("lost");
  once.set_max_attempts(1);
  const std::string parent = MustEnqueue(*stub_, once);
  const std::string child = MustEnqueue(*stub_, Child("waits", {Ref("lost", parent)}));
  {
    // Leased with a short lease, and the stream gone: the reaper ends the
    // run with no broker following the queue.
    auto reader = OpenClaim(MakeClaim({"lost"}, 1, /*lease_ms=*/1000));
    Next(*reader, parent);
  }
  const v1::Job dead = AwaitState("waits", child, v1::JOB_STATE_DEAD, absl::Seconds(10));
  EXPECT_EQ(dead.state(), v1::JOB_STATE_DEAD);
  EXPECT_EQ(dead.error(), absl::StrCat("dependency failed: ", Ref("lost", parent)));
  EXPECT_EQ(Get("lost", parent).state(), v1::JOB_STATE_DEAD);
}

TEST_F(RemoteDependenciesRecoveryTest, ALinkLeftUnmadeIsMadeByTheRecoveryPass) {
  const std::string parent = MustEnqueue(*stub_, MakeJob("first"));
  const std::string child = MustEnqueue(*stub_, Child("second", {Ref("first", parent)}));
  // As if the broker stopped between storing the child and linking it: the
  // link gone and the child unconfirmed since long ago.
  const std::string links = "jw:{first}:remote_dependents";
  const std::string unlinked = "jw:{second}:deps_unlinked";
  absl::StatusOr<RedisReply> removed = RedisCommandFor(links, {"HDEL", links, parent});
  ASSERT_TRUE(removed.ok() && removed->integer == 1) << "the link was not where the layout says";
  ASSERT_TRUE(RedisCommandFor(unlinked, {"ZADD", unlinked, "0", child}).ok());

  auto reader = OpenClaim(MakeClaim({"first", "second"}, 10));
  JW_ASSERT_OK(Ack(*stub_, Next(*reader, parent), "made up for"));
  std::optional<v1::ClaimedJob> ran = reader->Next(absl::Seconds(10));
  ASSERT_TRUE(ran) << "the recovery pass did not link the child";
  EXPECT_EQ(ran->job().id(), child);
  EXPECT_THAT(ran->job().dependency_results(),
              ElementsAre(Pair(Ref("first", parent), "made up for")));
  EXPECT_EQ(SizeOf("second", "deps_unlinked"), 0);
}

}  // namespace
}  // namespace jobwire::testing
