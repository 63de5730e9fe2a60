// Weighted fair claiming (ClaimRequest.weights; docs/semantics.md, "Fair
// claiming"), through a real broker and a real Redis: while every queue of
// a stream has due jobs, the jobs the test's own reader received split in
// proportion to the weights (over 10,000 jobs, with a partitioned queue
// too); a lone busy queue gets every slot; a queue that was idle gets its
// share when its jobs come, not a burst; without weights the order stays
// strict; bad weights are refused with the field named, before any job is
// handed out.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/lifecycle_test_util.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

class FairClaimTest : public LifecycleTest {
 protected:
  void EnqueueMany(const std::string& queue, int count) {
    for (int done = 0; done < count;) {
      v1::EnqueueBatchRequest batch;
      for (int i = 0; i < 1000 && done < count; ++i, ++done) *batch.add_jobs() = MakeJob(queue);
      v1::EnqueueBatchResponse response;
      JW_ASSERT_OK(EnqueueBatch(*stub_, batch, &response));
    }
  }

  void CreatePartitioned(const std::string& queue, int partitions) {
    auto admin = v1::AdminService::NewStub(broker_->channel());
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::CreateQueueRequest request;
    request.set_queue(queue);
    request.set_partitions(partitions);
    v1::CreateQueueResponse response;
    JW_ASSERT_OK(admin->CreateQueue(&context, request, &response));
  }

  // Reads `count` jobs off `reader`, acking them five at a time as a
  // Worker's AckBatch would; the jobs received per queue, in the order
  // received (queue names).
  std::vector<std::string> Drain(ClaimReader& reader, int count) {
    std::vector<std::string> order;
    v1::AckBatchRequest acks;
    auto flush = [&] {
      if (acks.acks_size() == 0) return;
      v1::AckBatchResponse response;
      EXPECT_TRUE(AckBatch(*stub_, acks, &response).ok());
      acks.clear_acks();
    };
    while (static_cast<int>(order.size()) < count) {
      std::optional<v1::ClaimedJob> job = reader.Next(absl::Seconds(10));
      if (!job) {
        ADD_FAILURE() << "no job after " << order.size();
        break;
      }
      order.push_back(job->job().queue());
      v1::AckRequest* ack = acks.add_acks();
      ack->set_queue(job->job().queue());
      ack->set_job_id(job->job().id());
      ack->set_lease_token(job->lease_token());
      if (acks.acks_size() == 5) flush();
    }
    flush();
    return order;
  }

  static v1::ClaimRequest Weighted(std::vector<std::string> queues, std::vector<int> weights,
                                   int max_in_flight) {
    v1::ClaimRequest request = MakeClaim(std::move(queues), max_in_flight);
    for (int w : weights) request.add_weights(w);
    return request;
  }
};

std::map<std::string, int> Count(const std::vector<std::string>& queues) {
  std::map<std::string, int> out;
  for (const std::string& q : queues) ++out[q];
  return out;
}

TEST_F(FairClaimTest, JobsSplitByWeightWhileEveryQueueIsBusy) {
  struct Case {
    std::vector<std::string> queues;
    std::vector<int> weights;
    std::vector<int> partitions;  // per queue
    int jobs;                     // deliveries measured
  };
  const std::vector<Case> cases = {
      {{"heavy", "light"}, {3, 1}, {1, 1}, 10000},
      {{"a", "b", "c"}, {1, 1, 2}, {1, 1, 1}, 4000},
      // A partitioned queue's weight is the queue's, shared by its partitions.
      {{"wide", "narrow"}, {1, 3}, {4, 1}, 4000},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.queues[0], " weights[0]=", c.weights[0]));
    int total_weight = 0;
    for (int w : c.weights) total_weight += w;
    for (size_t q = 0; q < c.queues.size(); ++q) {
      if (c.partitions[q] > 1) CreatePartitioned(c.queues[q], c.partitions[q]);
      // Enough that no queue runs dry while the deliveries are measured.
      EnqueueMany(c.queues[q], c.jobs * c.weights[q] / total_weight + 500);
    }
    auto reader = OpenClaim(Weighted(c.queues, c.weights, 20));
    std::map<std::string, int> got = Count(Drain(*reader, c.jobs));
    for (size_t q = 0; q < c.queues.size(); ++q) {
      const double want = static_cast<double>(c.jobs) * c.weights[q] / total_weight;
      EXPECT_NEAR(got[c.queues[q]], want, want * 0.05 + 20)
          << c.queues[q] << " got " << got[c.queues[q]] << " of " << c.jobs;
    }
  }
}

TEST_F(FairClaimTest, ALoneBusyQueueGetsEverySlot) {
  EnqueueMany("light", 100);
  auto reader = OpenClaim(Weighted({"heavy", "light"}, {3, 1}, 10));
  for (int i = 0; i < 10; ++i) {
    std::optional<v1::ClaimedJob> job = reader->Next(absl::Seconds(10));
    ASSERT_TRUE(job.has_value()) << "only " << i << " of 10 slots filled";
    EXPECT_EQ(job->job().queue(), "light");
  }
  EXPECT_FALSE(reader->Next(absl::Milliseconds(300)).has_value());  // max_in_flight
}

TEST_F(FairClaimTest, AnIdleQueueGetsItsShareNotABurst) {
  EnqueueMany("busy", 3000);
  auto reader = OpenClaim(Weighted({"busy", "idle"}, {1, 1}, 10));
  EXPECT_EQ(Count(Drain(*reader, 1000))["busy"], 1000);
  EnqueueMany("idle", 1000);
  // The next 400 deliveries: about half each. (A queue saving up credit
  // while idle would take nearly all of them.)
  std::map<std::string, int> got = Count(Drain(*reader, 400));
  EXPECT_NEAR(got["idle"], 200, 40) << "busy " << got["busy"];
}

TEST_F(FairClaimTest, WithoutWeightsTheOrderStaysStrict) {
  EnqueueMany("first", 600);
  EnqueueMany("second", 600);
  auto reader = OpenClaim(MakeClaim({"first", "second"}, 20));
  std::map<std::string, int> got = Count(Drain(*reader, 500));
  EXPECT_EQ(got["first"], 500);
}

TEST_F(FairClaimTest, BadWeightsAreRefusedBeforeAnyJob) {
  MustEnqueue(*stub_, MakeJob("a"));
  struct Case {
    std::vector<std::string> queues;
    std::vector<int> weights;
    std::string field;
  };
  const std::vector<Case> cases = {
      {{"a", "b"}, {1}, "weights"},
      {{"a"}, {1, 2}, "weights"},
      {{"a", "b"}, {1, 0}, "weights[1]"},
      {{"a", "b"}, {-3, 1}, "weights[0]"},
      {{"a", "b"}, {1001, 1}, "weights[0]"},
  };
  for (const Case& c : cases) {
    auto reader = OpenClaim(Weighted(c.queues, c.weights, 1));
    std::optional<grpc::Status> end = reader->WaitForEnd(absl::Seconds(10));
    ASSERT_TRUE(end.has_value()) << c.field;
    EXPECT_EQ(end->error_code(), grpc::INVALID_ARGUMENT) << c.field;
    EXPECT_EQ(end->error_message().substr(0, end->error_message().find(':')), c.field)
        << end->error_message();
    EXPECT_EQ(reader->received(), 0);
  }
  // Nothing was handed out: the job is still pending.
  auto reader = OpenClaim(Weighted({"a", "b"}, {1000, 1}, 1));
  EXPECT_TRUE(reader->Next(absl::Seconds(10)).has_value());
}

}  // namespace
}  // namespace jobwire::testing
