// Job dependencies (docs/semantics.md, "Dependencies") through the C++
// client against a real broker: a child enqueued with
// EnqueueOptions::depends_on waits, PENDING, until its parent completed; then
// a Worker's handler gets it with the parent's result in
// Job::dependency_results. An id that names no job of the queue is refused
// NOT_FOUND, ErrorReason DEPENDENCY_NOT_FOUND, by Enqueue and per job of
// EnqueueBatch. One EnqueueBatch stores a graph linked by
// EnqueueOptions::depends_on_batch_index.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "client/cpp/error_details.h"
#include "client/cpp/worker.h"
#include "client/cpp/worker_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jobwire::client {
namespace {

using ::jobwire::testing::kCompleted;
using ::jobwire::testing::kPending;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr char kUnknownJobId[] = "999999999999";

// The runs the handlers saw, in the order they started: each job's id and
// its dependency_results. Thread-safe.
class Runs {
 public:
  void Add(const Job& job) {
    absl::MutexLock lock(&mu_);
    runs_.emplace_back(job.id, job.dependency_results);
  }
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> runs() {
    absl::MutexLock lock(&mu_);
    return runs_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> runs_
      ABSL_GUARDED_BY(mu_);
};

EnqueueOptions After(const std::string& parent, bool run_after_failed = false) {
  EnqueueOptions options;
  options.depends_on = {parent};
  options.run_after_failed_dependency = run_after_failed;
  return options;
}

TEST_F(WorkerTest, TheChildRunsAfterItsParentWithTheParentsResult) {
  const std::string parent = MustEnqueue("parent");
  const std::string child = MustEnqueue("child", "{}", After(parent));
  const std::string anyway = MustEnqueue("child", "{}", After(parent, /*run_after_failed=*/true));
  absl::StatusOr<v1::Job> waiting = client_->GetJob("q", child);
  ASSERT_TRUE(waiting.ok()) << waiting.status();
  EXPECT_EQ(waiting->state(), kPending);
  EXPECT_THAT(waiting->depends_on(), ElementsAre(parent));
  EXPECT_EQ(waiting->dependencies_left(), 1);
  EXPECT_THAT(waiting->dependency_results(), IsEmpty());
  EXPECT_FALSE(waiting->run_after_failed_dependency());
  absl::StatusOr<v1::Job> flagged = client_->GetJob("q", anyway);
  ASSERT_TRUE(flagged.ok()) << flagged.status();
  EXPECT_TRUE(flagged->run_after_failed_dependency());

  Runs runs;
  RunningWorker worker(Options(/*concurrency=*/4),
                       {{"parent",
                         [&](const Job& job) -> absl::StatusOr<std::string> {
                           runs.Add(job);
                           // Free slots meanwhile: a child delivered early would start.
                           absl::SleepFor(absl::Milliseconds(200));
                           return std::string("parent result");
                         }},
                        {"child", [&](const Job& job) -> absl::StatusOr<std::string> {
                           runs.Add(job);
                           return std::string();
                         }}});
  for (const std::string& id : {parent, child, anyway}) WaitForState(id, kCompleted);

  const std::map<std::string, std::string> results = {{parent, "parent result"}};
  const auto seen = runs.runs();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0], std::make_pair(parent, std::map<std::string, std::string>{}))
      << "the parent runs first, without results";
  EXPECT_THAT(std::vector(seen.begin() + 1, seen.end()),
              UnorderedElementsAre(Pair(child, results), Pair(anyway, results)));
  const v1::Job done = WaitForState(child, kCompleted);
  EXPECT_EQ(done.dependencies_left(), 0);
  EXPECT_THAT(done.dependency_results(), UnorderedElementsAre(Pair(parent, "parent result")));
}

TEST_F(WorkerTest, AnUnknownParentIsRefusedNotFound) {
  const std::string parent = MustEnqueue("t");
  EnqueueOptions options;
  options.depends_on = {parent, kUnknownJobId};
  absl::StatusOr<Enqueued> refused = client_->Enqueue("q", "t", "{}", options);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kNotFound) << refused.status();
  EXPECT_EQ(ErrorReason(refused.status()), reason::kDependencyNotFound);
  EXPECT_EQ(ErrorMetadata(refused.status())["job_id"], kUnknownJobId);

  absl::StatusOr<std::vector<absl::StatusOr<Enqueued>>> batch = client_->EnqueueBatch(
      "q", {BatchJob{"t", "{}", After(kUnknownJobId)}, BatchJob{"t", "{}", After(parent)}});
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->size(), 2u);
  EXPECT_EQ((*batch)[0].status().code(), absl::StatusCode::kNotFound) << (*batch)[0].status();
  EXPECT_EQ(ErrorReason((*batch)[0].status()), reason::kDependencyNotFound);
  ASSERT_TRUE((*batch)[1].ok()) << (*batch)[1].status();
  absl::StatusOr<v1::Job> stored = client_->GetJob("q", (*batch)[1]->job_id);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_THAT(stored->depends_on(), ElementsAre(parent));
}

EnqueueOptions AfterBatch(std::vector<int> parents) {
  EnqueueOptions options;
  options.depends_on_batch_index = std::move(parents);
  return options;
}

TEST_F(WorkerTest, OneBatchStoresAGraphWhoseJoinGetsBothResults) {
  EnqueueOptions invalid;
  invalid.priority = 5000;
  absl::StatusOr<std::vector<absl::StatusOr<Enqueued>>> batch = client_->EnqueueBatch(
      "q", {BatchJob{"node", "{}", {}}, BatchJob{"node", "{}", AfterBatch({0})},
            BatchJob{"node", "{}", AfterBatch({0})}, BatchJob{"node", "{}", AfterBatch({1, 2})},
            BatchJob{"node", "{}", invalid}, BatchJob{"node", "{}", AfterBatch({4})}});
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->size(), 6u);
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE((*batch)[i].ok()) << i << ": " << (*batch)[i].status();
    ids.push_back((*batch)[i]->job_id);
  }
  EXPECT_EQ((*batch)[5].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string((*batch)[5].status().message()),
              ::testing::HasSubstr("jobs[5].depends_on_batch_index[0]: names jobs[4]"));
  absl::StatusOr<v1::Job> join = client_->GetJob("q", ids[3]);
  ASSERT_TRUE(join.ok()) << join.status();
  EXPECT_THAT(join->depends_on(), ElementsAre(ids[1], ids[2]));

  Runs runs;
  RunningWorker worker(Options(/*concurrency=*/4),
                       {{"node", [&](const Job& job) -> absl::StatusOr<std::string> {
                           runs.Add(job);
                           return "of " + job.id;
                         }}});
  WaitForState(ids[3], kCompleted);
  const auto seen = runs.runs();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen.back(), std::make_pair(ids[3], std::map<std::string, std::string>{
                                                    {ids[1], "of " + ids[1]},
                                                    {ids[2], "of " + ids[2]}}));

  // A single Enqueue cannot name batch parents.
  absl::StatusOr<Enqueued> alone = client_->Enqueue("q", "node", "{}", AfterBatch({0}));
  EXPECT_EQ(alone.status().code(), absl::StatusCode::kInvalidArgument) << alone.status();
}

}  // namespace
}  // namespace jobwire::client
