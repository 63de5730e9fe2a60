// Graphs of jobs stored by one EnqueueBatch (depends_on_batch_index),
// through the real broker and a real Redis: links by index become parent
// ids, the graph runs in order with its parents' results, refused parents
// refuse their children (invalid, or not stored), a partitioned queue keeps
// each linked set in one partition, and batches coalesced into one script
// call keep their own links. Every check reads what the test's own calls,
// claims and GetJob answer.
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/lifecycle_test_util.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

class BatchGraphTest : public BrokerTest {
 protected:
  // A job of `queue` whose parents are the batch's jobs `parents`.
  static v1::EnqueueRequest Linked(const std::string& queue, std::vector<int> parents) {
    v1::EnqueueRequest job = MakeJob(queue);
    for (int p : parents) job.add_depends_on_batch_index(p);
    return job;
  }

  v1::EnqueueBatchResponse Send(const std::vector<v1::EnqueueRequest>& jobs) {
    v1::EnqueueBatchRequest batch;
    for (const v1::EnqueueRequest& job : jobs) *batch.add_jobs() = job;
    v1::EnqueueBatchResponse response;
    grpc::Status status = EnqueueBatch(*stub_, batch, &response);
    EXPECT_TRUE(status.ok()) << StatusText(status);
    EXPECT_EQ(response.results_size(), batch.jobs_size());
    return response;
  }

  // Claims the next job, expecting one of `ids`, and acks it with result
  // "of <id>"; returns it.
  v1::ClaimedJob RunOneOf(ClaimReader& reader, std::vector<std::string> ids) {
    std::optional<v1::ClaimedJob> claimed = reader.Next(kPrompt);
    EXPECT_TRUE(claimed) << "expected one of " << ::testing::PrintToString(ids);
    if (!claimed) return {};
    EXPECT_THAT(ids, ::testing::Contains(claimed->job().id()));
    EXPECT_TRUE(Ack(*stub_, *claimed, absl::StrCat("of ", claimed->job().id())).ok());
    return *claimed;
  }
};

TEST_F(BatchGraphTest, ABatchStoresAGraphThatRunsInOrderWithResults) {
  const std::string queue = "graph";
  // 0 -> {1, 2} -> 3 (fan-out, fan-in), 3 -> 4 (chain).
  const v1::EnqueueBatchResponse r = Send({MakeJob(queue), Linked(queue, {0}), Linked(queue, {0}),
                                           Linked(queue, {1, 2}), Linked(queue, {3})});
  std::vector<std::string> id;
  for (const v1::EnqueueResult& result : r.results()) {
    EXPECT_EQ(result.code(), 0) << result.message();
    id.push_back(result.job_id());
  }
  const v1::Job join = MustGetJob(*stub_, queue, id[3]);
  EXPECT_THAT(join.depends_on(), ElementsAre(id[1], id[2])) << "links became the parents' ids";
  EXPECT_EQ(join.dependencies_left(), 2);
  EXPECT_EQ(MustGetJob(*stub_, queue, id[1]).dependencies_left(), 1);

  auto reader = OpenClaim(MakeClaim({queue}, 10));
  RunOneOf(*reader, {id[0]});
  const v1::ClaimedJob a = RunOneOf(*reader, {id[1], id[2]});
  const v1::ClaimedJob b = RunOneOf(*reader, {id[1], id[2]});
  EXPECT_NE(a.job().id(), b.job().id());
  EXPECT_THAT(a.job().dependency_results(), ElementsAre(Pair(id[0], "of " + id[0])));
  const v1::ClaimedJob joined = RunOneOf(*reader, {id[3]});
  EXPECT_THAT(joined.job().dependency_results(),
              UnorderedElementsAre(Pair(id[1], "of " + id[1]), Pair(id[2], "of " + id[2])));
  const v1::ClaimedJob last = RunOneOf(*reader, {id[4]});
  EXPECT_THAT(last.job().dependency_results(), ElementsAre(Pair(id[3], "of " + id[3])));
  EXPECT_FALSE(reader->Next(kQuiet));
}

TEST_F(BatchGraphTest, ADuplicateParentStandsForTheJobItDuplicates) {
  const std::string queue = "graph.dedup";
  v1::EnqueueRequest keyed = MakeJob(queue);
  keyed.set_idempotency_key("root");
  const std::string root = MustEnqueue(*stub_, keyed);
  // jobs[0] duplicates the stored root; jobs[2] duplicates jobs[1], which
  // the call stores: children of both name the jobs they stand for.
  v1::EnqueueRequest again = MakeJob(queue);
  again.set_idempotency_key("fresh");
  const v1::EnqueueBatchResponse r =
      Send({keyed, again, again, Linked(queue, {0}), Linked(queue, {2})});
  EXPECT_TRUE(r.results(0).duplicate());
  EXPECT_EQ(r.results(0).job_id(), root);
  EXPECT_TRUE(r.results(2).duplicate());
  EXPECT_EQ(r.results(2).job_id(), r.results(1).job_id());
  EXPECT_THAT(MustGetJob(*stub_, queue, r.results(3).job_id()).depends_on(), ElementsAre(root));
  const v1::Job child = MustGetJob(*stub_, queue, r.results(4).job_id());
  EXPECT_THAT(child.depends_on(), ElementsAre(r.results(1).job_id()));
  EXPECT_EQ(child.dependencies_left(), 1);
}

TEST_F(BatchGraphTest, RefusedParentsRefuseTheirChildrenAndBadLinksNameTheField) {
  const std::string queue = "graph.refused";
  v1::EnqueueRequest invalid = MakeJob(queue);
  invalid.set_priority(5000);
  v1::EnqueueRequest orphan = MakeJob(queue);
  orphan.add_depends_on("000000999999");
  const v1::EnqueueBatchResponse r = Send({
      MakeJob(queue),             // 0: stored
      invalid,                    // 1: INVALID_ARGUMENT
      Linked(queue, {1}),         // 2: its parent was invalid
      orphan,                     // 3: NOT_FOUND
      Linked(queue, {0, 3}),      // 4: its parent was not stored
      Linked("other", {0}),       // 5: a parent of another queue
      Linked(queue, {6}),         // 6: not an earlier job
      Linked(queue, {0, 0}),      // 7: repeated
      Linked(queue, {0}),         // 8: stored
  });
  struct Want {
    int index;
    grpc::StatusCode code;
    std::string message;
  };
  for (const Want& w : std::vector<Want>{
           {1, grpc::StatusCode::INVALID_ARGUMENT, "jobs[1].priority"},
           {2, grpc::StatusCode::INVALID_ARGUMENT,
            "jobs[2].depends_on_batch_index[0]: names jobs[1], which was refused"},
           {3, grpc::StatusCode::NOT_FOUND, "depends_on: job 000000999999"},
           {4, grpc::StatusCode::NOT_FOUND,
            "jobs[4].depends_on_batch_index[1]: names jobs[3], which was not stored"},
           {5, grpc::StatusCode::INVALID_ARGUMENT,
            "jobs[5].depends_on_batch_index[0]: names jobs[0] of queue \"graph.refused\""},
           {6, grpc::StatusCode::INVALID_ARGUMENT,
            "jobs[6].depends_on_batch_index[0]: must name an earlier job of the batch (0..5), "
            "got 6"},
           {7, grpc::StatusCode::INVALID_ARGUMENT, "jobs[7].depends_on_batch_index[1]: repeats 0"},
       }) {
    const v1::EnqueueResult& result = r.results(w.index);
    EXPECT_EQ(result.code(), static_cast<int>(w.code)) << w.index << ": " << result.message();
    EXPECT_THAT(result.message(), HasSubstr(w.message)) << w.index;
    EXPECT_EQ(result.job_id(), "") << w.index;
  }
  EXPECT_EQ(r.results(4).reason(), "DEPENDENCY_NOT_FOUND");
  EXPECT_EQ(r.results(0).code(), 0);
  EXPECT_EQ(r.results(8).code(), 0);
  // Only jobs 0 and 8 took ids, one after the other.
  EXPECT_EQ(r.results(8).job_id(), absl::StrCat(std::string(11, '0'), "2"));
  EXPECT_THAT(MustGetJob(*stub_, queue, r.results(8).job_id()).depends_on(),
              ElementsAre(r.results(0).job_id()));

  // A single Enqueue cannot name batch parents.
  v1::EnqueueResponse response;
  grpc::Status status = Enqueue(*stub_, Linked(queue, {0}), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("depends_on_batch_index: is for EnqueueBatch"));
}

TEST_F(BatchGraphTest, APartitionedQueueKeepsEachLinkedSetInOnePartition) {
  const std::string queue = "graph.sharded";
  auto admin = v1::AdminService::NewStub(broker_->channel());
  v1::CreateQueueRequest create;
  create.set_queue(queue);
  create.set_partitions(4);
  v1::CreateQueueResponse created;
  JW_ASSERT_OK(admin->CreateQueue(RpcContext().get(), create, &created));
  auto suffix = [](const std::string& id) {
    const size_t dot = id.find('.');
    return dot == std::string::npos ? std::string() : id.substr(dot);
  };
  // A stored parent binds its linked set: job 2 names it, so its batch
  // parent, job 0 (and job 1, linked to 0), go to that partition too.
  std::string stored;
  for (int i = 0; i < 3 && suffix(stored).empty(); ++i) stored = MustEnqueue(*stub_, MakeJob(queue));
  ASSERT_FALSE(suffix(stored).empty()) << "no job landed outside partition 0";
  v1::EnqueueRequest bound = Linked(queue, {0});
  bound.add_depends_on(stored);
  for (int round = 0; round < 4; ++round) {
    const v1::EnqueueBatchResponse r =
        Send({MakeJob(queue), Linked(queue, {0}), bound, MakeJob(queue), Linked(queue, {3})});
    for (int i = 0; i < 5; ++i) ASSERT_EQ(r.results(i).code(), 0) << r.results(i).message();
    for (int i : {0, 1, 2}) {
      EXPECT_EQ(suffix(r.results(i).job_id()), suffix(stored)) << "round " << round << " job " << i;
    }
    EXPECT_EQ(suffix(r.results(4).job_id()), suffix(r.results(3).job_id())) << "round " << round;
  }
  // Two stored parents of different partitions in one linked set: refused.
  std::string other = stored;
  while (suffix(other) == suffix(stored)) other = MustEnqueue(*stub_, MakeJob(queue));
  v1::EnqueueRequest elsewhere = Linked(queue, {1});
  elsewhere.add_depends_on(other);
  const v1::EnqueueBatchResponse r = Send({MakeJob(queue), bound, elsewhere});
  EXPECT_EQ(r.results(2).code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(r.results(2).message(), HasSubstr("linked jobs must share one partition"));
}

TEST_F(BatchGraphTest, CoalescedBatchesKeepTheirOwnLinks) {
  // Concurrent batches of one queue share enqueue.lua calls (the
  // EnqueueCoalescer): each child must still name its own batch's root.
  const std::string queue = "graph.coalesced";
  constexpr int kThreads = 6;
  constexpr int kBatches = 30;
  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto stub = broker_->NewStub();
      for (int b = 0; b < kBatches; ++b) {
        v1::EnqueueBatchRequest batch;
        *batch.add_jobs() = MakeJob(queue, absl::StrCat("root ", t, "/", b));
        for (int c = 0; c < 3; ++c) *batch.add_jobs() = Linked(queue, {0});
        *batch.add_jobs() = Linked(queue, {1, 2, 3});
        v1::EnqueueBatchResponse response;
        if (!EnqueueBatch(*stub, batch, &response).ok() || response.results_size() != 5) {
          ++failed;
          continue;
        }
        const std::string root = response.results(0).job_id();
        for (int c = 1; c <= 3; ++c) {
          v1::Job job = MustGetJob(*stub, queue, response.results(c).job_id());
          if (job.depends_on_size() != 1 || job.depends_on(0) != root) ++wrong;
        }
        v1::Job join = MustGetJob(*stub, queue, response.results(4).job_id());
        if (join.depends_on_size() != 3 || join.depends_on(0) != response.results(1).job_id() ||
            join.depends_on(2) != response.results(3).job_id()) {
          ++wrong;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong.load(), 0) << "children named another batch's jobs";
}

}  // namespace
}  // namespace jobwire::testing
