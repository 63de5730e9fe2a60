// Job dependencies (EnqueueRequest.depends_on) through the real broker and a
// real Redis: a child is not delivered until every parent completed, then
// runs with their results; a parent that dies fails its children and their
// children, unless a child runs anyway; parents that already ended count at
// once; an unknown parent refuses the job (nothing stored); cancel and
// delete settle dependents; a partitioned queue keeps a child with its
// parents. Every check reads what the test's own claims, GetJob and the
// Admin API answer.
#include <algorithm>
#include <map>
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

class DependenciesTest : public DependencyTest {
 protected:
  // The ids of `queue`'s pending jobs (one page of up to 100).
  std::vector<std::string> Pending(const std::string& queue) {
    v1::ListJobsRequest request;
    request.set_queue(queue);
    request.set_state(v1::JOB_STATE_PENDING);
    request.set_page_size(100);
    request.set_oldest_first(true);
    v1::ListJobsResponse response;
    grpc::Status status = admin_->ListJobs(RpcContext().get(), request, &response);
    EXPECT_TRUE(status.ok()) << StatusText(status);
    std::vector<std::string> ids;
    for (const v1::Job& job : response.jobs()) ids.push_back(job.id());
    return ids;
  }
};

TEST_F(DependenciesTest, AFanInWaitsForEveryParentAndRunsWithTheirResults) {
  const std::string queue = "flow";
  const std::string a = MustEnqueue(*stub_, MakeJob(queue));
  const std::string b = MustEnqueue(*stub_, MakeJob(queue));
  const std::string child = MustEnqueue(*stub_, Child(queue, {a, b}));
  auto reader = OpenClaim(MakeClaim({queue}, 10));
  const v1::ClaimedJob run_a = Next(*reader, a);
  const v1::ClaimedJob run_b = Next(*reader, b);
  EXPECT_FALSE(reader->Next(kQuiet)) << "the child was delivered before its parents ended";

  v1::Job waiting = Get(queue, child);
  EXPECT_EQ(waiting.state(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(waiting.dependencies_left(), 2);
  EXPECT_THAT(waiting.depends_on(), ElementsAre(a, b));
  const v1::QueueStats stats = Stats(queue);
  EXPECT_EQ(stats.pending_due(), 0);
  EXPECT_EQ(stats.pending_scheduled(), 1) << "a waiting job is pending, not due";
  EXPECT_THAT(Pending(queue), ElementsAre(child));

  JW_ASSERT_OK(Ack(*stub_, run_a, "result of a"));
  EXPECT_FALSE(reader->Next(kQuiet)) << "the child ran with a parent still active";
  waiting = Get(queue, child);
  EXPECT_EQ(waiting.dependencies_left(), 1);
  EXPECT_THAT(waiting.dependency_results(), UnorderedElementsAre(Pair(a, "result of a")));

  JW_ASSERT_OK(Ack(*stub_, run_b, "result of b"));
  const v1::ClaimedJob run = Next(*reader, child);
  EXPECT_EQ(run.job().dependencies_left(), 0);
  EXPECT_THAT(run.job().dependency_results(),
              UnorderedElementsAre(Pair(a, "result of a"), Pair(b, "result of b")))
      << "the handler gets every parent's result";
  JW_ASSERT_OK(Ack(*stub_, run));
  EXPECT_EQ(Get(queue, child).state(), v1::JOB_STATE_COMPLETED);
}

TEST_F(DependenciesTest, ADeadParentFailsItsChainUnlessAChildRunsAnyway) {
  const std::string queue = "chain";
  v1::EnqueueRequest once = MakeJob(queue);
  once.set_max_attempts(1);
  const std::string parent = MustEnqueue(*stub_, once);
  const std::string child = MustEnqueue(*stub_, Child(queue, {parent}));
  const std::string grandchild = MustEnqueue(*stub_, Child(queue, {child}));
  const std::string anyway = MustEnqueue(*stub_, Child(queue, {parent}, /*run_after_failed=*/true));
  auto reader = OpenClaim(MakeClaim({queue}, 10));
  const v1::ClaimedJob run = Next(*reader, parent);
  v1::FailResponse failed;
  JW_ASSERT_OK(Fail(*stub_, MakeFail(run, "boom"), &failed));

  const v1::ClaimedJob ran = Next(*reader, anyway);
  EXPECT_THAT(ran.job().dependency_results(), IsEmpty());
  EXPECT_FALSE(reader->Next(kQuiet)) << "a failed dependency's child was delivered";
  for (const auto& [id, parent_id] : std::map<std::string, std::string>{
           {child, parent}, {grandchild, child}}) {
    const v1::Job job = Get(queue, id);
    EXPECT_EQ(job.state(), v1::JOB_STATE_DEAD) << id;
    EXPECT_EQ(job.error(), absl::StrCat("dependency failed: ", parent_id)) << id;
    EXPECT_EQ(job.attempts(), 0) << id;
    EXPECT_EQ(job.dependencies_left(), 0) << id;
  }
  EXPECT_EQ(Stats(queue).dead(), 3);
}

// Broker replicas share the graph: a child enqueued through one replica
// names a parent stored through another, and a parent settled through the
// replica that did not lease it wakes the stream of the one that holds the
// child's queue (its pub/sub channel: nothing polls).
TEST_F(DependenciesTest, ReplicasShareTheGraphAndWakeEachOther) {
  const std::string queue = "replicated.flow";
  std::unique_ptr<BrokerProcess> other = AnotherBroker();
  JW_ASSERT_OK(other->Start());
  std::unique_ptr<v1::BrokerService::Stub> elsewhere = other->NewStub();
  v1::EnqueueRequest once = MakeJob(queue);
  once.set_max_attempts(1);
  const std::string parent = MustEnqueue(*stub_, MakeJob(queue));
  const std::string doomed = MustEnqueue(*stub_, once);
  const std::string child = MustEnqueue(*elsewhere, Child(queue, {parent}));
  const std::string orphan = MustEnqueue(*elsewhere, Child(queue, {doomed}));
  auto reader = OpenClaim(MakeClaim({queue}, 10));
  const v1::ClaimedJob run_parent = Next(*reader, parent);
  const v1::ClaimedJob run_doomed = Next(*reader, doomed);
  EXPECT_FALSE(reader->Next(kQuiet)) << "a child was delivered before its parent ended";

  JW_ASSERT_OK(Ack(*elsewhere, run_parent, "acked elsewhere"));
  const v1::ClaimedJob ran = Next(*reader, child);
  EXPECT_THAT(ran.job().dependency_results(), ElementsAre(Pair(parent, "acked elsewhere")));

  v1::FailResponse failed;
  JW_ASSERT_OK(Fail(*elsewhere, MakeFail(run_doomed, "boom"), &failed));
  EXPECT_EQ(failed.outcome(), v1::FailResponse::OUTCOME_DEAD);
  const v1::Job dead = MustGetJob(*elsewhere, queue, orphan);
  EXPECT_EQ(dead.state(), v1::JOB_STATE_DEAD);
  EXPECT_EQ(dead.error(), absl::StrCat("dependency failed: ", doomed));
  EXPECT_FALSE(reader->Next(kQuiet)) << "the dead parent's child was delivered";
}

TEST_F(DependenciesTest, ParentsThatAlreadyEndedCountAtOnce) {
  const std::string queue = "late";
  v1::EnqueueRequest kept = MakeJob(queue);
  v1::EnqueueRequest dropped = MakeJob(queue);
  dropped.set_completed_retention_ms(0);  // deleted on ack, a tombstone left
  v1::EnqueueRequest doomed = MakeJob(queue);
  doomed.set_max_attempts(1);
  const std::string done = MustEnqueue(*stub_, kept);
  const std::string gone = MustEnqueue(*stub_, dropped);
  const std::string dead = MustEnqueue(*stub_, doomed);
  {
    auto reader = OpenClaim(MakeClaim({queue}, 3));
    JW_ASSERT_OK(Ack(*stub_, Next(*reader, done), "kept result"));
    JW_ASSERT_OK(Ack(*stub_, Next(*reader, gone), "dropped result"));
    v1::FailResponse failed;
    JW_ASSERT_OK(Fail(*stub_, MakeFail(Next(*reader, dead), "boom"), &failed));
  }

  const std::string due = MustEnqueue(*stub_, Child(queue, {done, gone}));
  const std::string dies = MustEnqueue(*stub_, Child(queue, {done, dead}));
  const std::string runs = MustEnqueue(*stub_, Child(queue, {dead}, /*run_after_failed=*/true));
  const v1::Job dead_child = Get(queue, dies);
  EXPECT_EQ(dead_child.state(), v1::JOB_STATE_DEAD);
  EXPECT_EQ(dead_child.error(), absl::StrCat("dependency failed: ", dead));

  auto reader = OpenClaim(MakeClaim({queue}, 10));
  const v1::ClaimedJob first = Next(*reader, due);
  EXPECT_THAT(first.job().dependency_results(), UnorderedElementsAre(Pair(done, "kept result")))
      << "a job deleted on ack counts as completed, without a result";
  Next(*reader, runs);
  EXPECT_FALSE(reader->Next(kQuiet));
}

TEST_F(DependenciesTest, AnUnknownParentRefusesTheJobAndStoresNothing) {
  const std::string queue = "strict";
  const std::string parent = MustEnqueue(*stub_, MakeJob(queue));
  const int64_t keys_before = RedisDbSize();

  v1::EnqueueResponse response;
  grpc::Status status = Enqueue(*stub_, Child(queue, {parent, "000000999999"}), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND) << StatusText(status);
  EXPECT_THAT(status.error_message(), HasSubstr("depends_on: job 000000999999 in queue strict"));
  EXPECT_EQ(client::ErrorReason(client::FromGrpc(status)), "DEPENDENCY_NOT_FOUND");
  EXPECT_EQ(RedisDbSize(), keys_before);
  EXPECT_THAT(Pending(queue), ElementsAre(parent));

  // In a batch the refusal is that job's alone; the id it did not use goes
  // to the next job.
  v1::EnqueueBatchRequest batch;
  *batch.add_jobs() = Child(queue, {"000000999999"});
  *batch.add_jobs() = Child(queue, {parent});
  v1::EnqueueBatchResponse results;
  JW_ASSERT_OK(EnqueueBatch(*stub_, batch, &results));
  ASSERT_EQ(results.results_size(), 2);
  EXPECT_EQ(results.results(0).code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(results.results(0).reason(), "DEPENDENCY_NOT_FOUND");
  EXPECT_EQ(results.results(0).job_id(), "");
  const std::string child = results.results(1).job_id();
  EXPECT_EQ(child, "000000000002");
  EXPECT_EQ(Get(queue, child).dependencies_left(), 1);
}

TEST_F(DependenciesTest, BadDependsOnIsRefusedNamingTheField) {
  struct Case {
    std::vector<std::string> parents;
    std::string field;
    std::string message;
  };
  std::vector<std::string> too_many;
  for (int i = 1; i <= 21; ++i) too_many.push_back(absl::StrCat(i));
  const std::vector<Case> cases = {
      {too_many, "depends_on", "must name at most 20 jobs, got 21"},
      {{"000000000001", "000000000001"}, "depends_on[1]", "repeats"},
      {{"000000000001", "bad id"}, "depends_on[1]", "must be 1..64 characters"},
      {{"000000000001", "000000000002.p1"}, "depends_on[1]", "must share one partition"},
  };
  const int64_t keys_before = RedisDbSize();
  for (const Case& c : cases) {
    v1::EnqueueResponse response;
    grpc::Status status = Enqueue(*stub_, Child("refused", c.parents), &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.field;
    EXPECT_THAT(status.error_message(), HasSubstr(c.field));
    EXPECT_THAT(status.error_message(), HasSubstr(c.message));
  }
  EXPECT_EQ(RedisDbSize(), keys_before) << "a refused job stored something";
}

TEST_F(DependenciesTest, CancelAndDeleteSettleDependents) {
  const std::string queue = "tidy";
  const std::string parent = MustEnqueue(*stub_, MakeJob(queue));
  const std::string cancelled_child = MustEnqueue(*stub_, Child(queue, {parent}));
  const std::string deleted_child = MustEnqueue(*stub_, Child(queue, {parent}));

  // A deleted waiting child leaves the pending count and the listing.
  v1::DeleteJobRequest del;
  del.set_queue(queue);
  del.set_job_id(deleted_child);
  v1::DeleteJobResponse deleted;
  JW_ASSERT_OK(admin_->DeleteJob(RpcContext().get(), del, &deleted));
  EXPECT_EQ(Stats(queue).pending_scheduled(), 1);
  EXPECT_THAT(Pending(queue), ElementsAre(parent, cancelled_child));

  // A waiting child cancelled is dead "cancelled" and stays so.
  JW_ASSERT_OK(Cancel(*stub_, queue, cancelled_child));
  EXPECT_EQ(Get(queue, cancelled_child).error(), "cancelled");
  EXPECT_EQ(Stats(queue).pending_scheduled(), 0);

  // A parent cancelled before it ran fails a new child of it.
  const std::string child = MustEnqueue(*stub_, Child(queue, {parent}));
  JW_ASSERT_OK(Cancel(*stub_, queue, parent));
  EXPECT_EQ(Get(queue, child).error(), absl::StrCat("dependency failed: ", parent));
  EXPECT_EQ(Get(queue, cancelled_child).error(), "cancelled");

  // A parent deleted before it ended fails its child too.
  const std::string second = MustEnqueue(*stub_, MakeJob(queue));
  const std::string orphan = MustEnqueue(*stub_, Child(queue, {second}));
  del.set_job_id(second);
  JW_ASSERT_OK(admin_->DeleteJob(RpcContext().get(), del, &deleted));
  const v1::Job job = Get(queue, orphan);
  EXPECT_EQ(job.state(), v1::JOB_STATE_DEAD);
  EXPECT_EQ(job.error(), absl::StrCat("dependency failed: ", second));
}

TEST_F(DependenciesTest, APartitionedQueueKeepsAChildWithItsParents) {
  const std::string queue = "sharded";
  v1::CreateQueueRequest create;
  create.set_queue(queue);
  create.set_partitions(4);
  v1::CreateQueueResponse created;
  JW_ASSERT_OK(admin_->CreateQueue(RpcContext().get(), create, &created));
  std::vector<std::string> parents;
  for (int i = 0; i < 4; ++i) parents.push_back(MustEnqueue(*stub_, MakeJob(queue)));
  for (const std::string& parent : parents) {
    const std::string child = MustEnqueue(*stub_, Child(queue, {parent}));
    const size_t dot = parent.find('.');
    const std::string suffix = dot == std::string::npos ? "" : parent.substr(dot);
    EXPECT_EQ(child.substr(child.size() - suffix.size()), suffix) << parent << " -> " << child;
    EXPECT_EQ(Get(queue, child).dependencies_left(), 1);
  }
  auto reader = OpenClaim(MakeClaim({queue}, 10));
  std::vector<std::string> seen;
  for (int i = 0; i < 8; ++i) {
    std::optional<v1::ClaimedJob> claimed = reader->Next(kPrompt);
    ASSERT_TRUE(claimed) << "after " << seen.size() << " jobs";
    seen.push_back(claimed->job().id());
    JW_ASSERT_OK(Ack(*stub_, *claimed, absl::StrCat("from ", claimed->job().id())));
    if (claimed->job().depends_on_size() == 1) {
      const std::string parent = claimed->job().depends_on(0);
      EXPECT_NE(std::find(seen.begin(), seen.end(), parent), seen.end())
          << "a child ran before its parent";
      EXPECT_THAT(claimed->job().dependency_results(),
                  UnorderedElementsAre(Pair(parent, absl::StrCat("from ", parent))));
    }
  }
}

}  // namespace
}  // namespace jobwire::testing
