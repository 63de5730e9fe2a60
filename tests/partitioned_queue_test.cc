// Partitioned queues on the real broker (docs/semantics.md, "Partitioned
// queues"): CreateQueue / UpdateQueue and their refusals; jobs spread over
// every partition (and, on a Redis Cluster, over every master: INFO
// commandstats per node) and each is delivered once; the ordering promise
// (priority then FIFO within a partition, every partition visited in any P
// consecutive claims of a stream); the Admin API across partitions; a count
// raised through one replica reaching a stream open on another.
//
// Runs against one redis-server and, as partitioned_queue_test_on_cluster,
// against a local Redis Cluster of 3 masters.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/redis_cluster.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

// The partition a job id names (".p<i>" suffix; none: 0).
int PartitionOf(const std::string& id) {
  const size_t dot = id.rfind(".p");
  int p = 0;
  if (dot == std::string::npos || !absl::SimpleAtoi(id.substr(dot + 2), &p)) return 0;
  return p;
}

class PartitionedQueueTest : public BrokerTest {
 protected:
  void SetUp() override {
    BrokerTest::SetUp();
    admin_ = v1::AdminService::NewStub(broker_->channel());
  }

  static void Deadline(grpc::ClientContext& context) {
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  }

  grpc::Status Create(const std::string& queue, int partitions) {
    grpc::ClientContext context;
    Deadline(context);
    v1::CreateQueueRequest request;
    request.set_queue(queue);
    request.set_partitions(partitions);
    v1::CreateQueueResponse response;
    return admin_->CreateQueue(&context, request, &response);
  }

  grpc::Status Update(const std::string& queue, int partitions, int* previous = nullptr) {
    grpc::ClientContext context;
    Deadline(context);
    v1::UpdateQueueRequest request;
    request.set_queue(queue);
    request.set_partitions(partitions);
    v1::UpdateQueueResponse response;
    grpc::Status status = admin_->UpdateQueue(&context, request, &response);
    if (previous != nullptr) *previous = response.previous_partitions();
    return status;
  }

  v1::QueueStats Stats(const std::string& queue) { return MustGetQueueStats(*admin_, queue); }

  // Enqueues `count` jobs of priority `priority` to `queue`, one call each;
  // their ids in order.
  std::vector<std::string> EnqueueJobs(const std::string& queue, int count, int priority = 0,
                                       int max_attempts = 0) {
    std::vector<std::string> ids;
    for (int i = 0; i < count; ++i) {
      v1::EnqueueRequest job = MakeJob(queue, absl::StrCat("job-", i), priority);
      job.set_max_attempts(max_attempts);
      ids.push_back(MustEnqueue(*stub_, job));
    }
    return ids;
  }

  // Receives and acks `count` jobs from `claim`, in delivery order.
  std::vector<v1::ClaimedJob> ReceiveAndAck(ClaimReader& claim, int count) {
    std::vector<v1::ClaimedJob> got;
    for (int i = 0; i < count; ++i) {
      std::optional<v1::ClaimedJob> job = claim.Next(absl::Seconds(10));
      if (!job) {
        ADD_FAILURE() << "job " << i << " of " << count << " not delivered";
        break;
      }
      EXPECT_TRUE(Ack(*stub_, *job).ok()) << job->job().id();
      got.push_back(*job);
    }
    return got;
  }

  // Per master (cluster mode; empty otherwise): FCALL calls so far.
  std::map<int, int64_t> EvalCallsPerMaster() {
    std::map<int, int64_t> calls;
    if (cluster_ == nullptr) return calls;
    absl::StatusOr<std::vector<int>> masters = cluster_->MasterPorts();
    EXPECT_TRUE(masters.ok());
    if (!masters.ok()) return calls;
    for (int port : *masters) {
      auto info = cluster_->CommandAt(port, {"INFO", "commandstats"});
      EXPECT_TRUE(info.ok());
      calls[port] = 0;
      for (absl::string_view line : absl::StrSplit(info.ok() ? info->str : "", "\r\n")) {
        if (!absl::StartsWith(line, "cmdstat_fcall:calls=")) continue;
        absl::string_view n = line.substr(20, line.find(',') - 20);
        EXPECT_TRUE(absl::SimpleAtoi(n, &calls[port])) << line;
      }
    }
    return calls;
  }

  // The port of the master serving partition `p` of `queue` (cluster mode).
  int MasterOfPartition(const std::string& queue, int p) {
    const std::string tag = p == 0 ? queue : absl::StrCat(queue, "#", p);
    auto slot = cluster_->CommandAt(cluster_->ports().front(),
                                    {"CLUSTER", "KEYSLOT", absl::StrCat("jw:{", tag, "}:jobs")});
    EXPECT_TRUE(slot.ok());
    absl::StatusOr<int> master = cluster_->MasterOfSlot(slot.ok() ? static_cast<int>(slot->integer) : 0);
    EXPECT_TRUE(master.ok());
    return master.ok() ? *master : -1;
  }

  // `count` jobs of `queue`, claimed and failed with max_attempts 1: dead.
  std::vector<std::string> MakeDead(const std::string& queue, int count) {
    const std::vector<std::string> ids = EnqueueJobs(queue, count, 0, /*max_attempts=*/1);
    std::unique_ptr<ClaimReader> claim = OpenClaim(MakeClaim({queue}, count));
    for (int i = 0; i < count; ++i) {
      std::optional<v1::ClaimedJob> claimed = claim->Next(absl::Seconds(10));
      if (!claimed) {
        ADD_FAILURE() << "job " << i << " not delivered";
        break;
      }
      v1::FailResponse failed;
      EXPECT_TRUE(Fail(*stub_, MakeFail(*claimed, "boom"), &failed).ok());
    }
    return ids;
  }

  // The ids of every job of `queue` in `state`, paging `page_size` at a time.
  std::multiset<std::string> ListAll(const std::string& queue, v1::JobState state,
                                     int page_size) {
    std::multiset<std::string> listed;
    std::string token;
    for (int pages = 0; pages < 50; ++pages) {
      grpc::ClientContext context;
      Deadline(context);
      v1::ListJobsRequest request;
      request.set_queue(queue);
      request.set_state(state);
      request.set_page_size(page_size);
      request.set_page_token(token);
      v1::ListJobsResponse page;
      EXPECT_TRUE(admin_->ListJobs(&context, request, &page).ok());
      for (const v1::Job& j : page.jobs()) {
        EXPECT_EQ(j.queue(), queue);
        listed.insert(j.id());
      }
      token = page.next_page_token();
      if (token.empty()) break;
    }
    EXPECT_TRUE(token.empty()) << "paging did not end";
    return listed;
  }

  grpc::Status SetPaused(const std::string& queue, bool paused) {
    grpc::ClientContext context;
    Deadline(context);
    if (paused) {
      v1::PauseQueueRequest request;
      request.set_queue(queue);
      v1::PauseQueueResponse response;
      return admin_->PauseQueue(&context, request, &response);
    }
    v1::ResumeQueueRequest request;
    request.set_queue(queue);
    v1::ResumeQueueResponse response;
    return admin_->ResumeQueue(&context, request, &response);
  }

  grpc::Status DeleteQueue(const std::string& queue, bool force, int64_t* deleted) {
    grpc::ClientContext context;
    Deadline(context);
    v1::DeleteQueueRequest request;
    request.set_queue(queue);
    request.set_force(force);
    v1::DeleteQueueResponse response;
    grpc::Status status = admin_->DeleteQueue(&context, request, &response);
    *deleted = response.deleted();
    return status;
  }

  std::unique_ptr<v1::AdminService::Stub> admin_;
};

TEST_F(PartitionedQueueTest, CreateAndUpdateRefuseWhatTheyCannotDoAndChangeNothing) {
  ASSERT_TRUE(Create("orders", 4).ok());
  struct Case {
    std::string what;
    grpc::Status status;
    grpc::StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"create, too many", Create("other", 257), grpc::StatusCode::INVALID_ARGUMENT,
       "partitions: must be 0 (one) or 1..256, got 257"},
      {"create, negative", Create("other", -1), grpc::StatusCode::INVALID_ARGUMENT,
       "partitions: must be 0 (one) or 1..256, got -1"},
      {"create, bad name", Create("a#1", 2), grpc::StatusCode::INVALID_ARGUMENT, "queue: "},
      {"create again", Create("orders", 8), grpc::StatusCode::ALREADY_EXISTS,
       "queue orders exists (4 partitions)"},
      {"update, nothing", Update("orders", 0), grpc::StatusCode::INVALID_ARGUMENT,
       "partitions, default_job_timeout_ms, rate_limit, max_active, max_active_per_key or "
       "key_rate_limit must be given"},
      {"update, too many", Update("orders", 257), grpc::StatusCode::INVALID_ARGUMENT,
       "partitions: must be 0 (unchanged) or 1..256, got 257"},
      {"update, shrink", Update("orders", 2), grpc::StatusCode::FAILED_PRECONDITION,
       "partitions: queue orders has 4 partitions and cannot shrink to 2"},
      {"update, unknown", Update("nothing-here", 2), grpc::StatusCode::NOT_FOUND,
       "queue nothing-here not found"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.status.error_code(), c.code) << c.what << ": " << StatusText(c.status);
    EXPECT_TRUE(absl::StrContains(c.status.error_message(), c.message))
        << c.what << ": " << c.status.error_message();
  }
  EXPECT_EQ(Stats("orders").partitions(), 4);
  EXPECT_EQ(Stats("other").partitions(), 1);

  // A created queue is listed while empty; a count grows.
  grpc::ClientContext context;
  v1::ListQueuesResponse listed;
  ASSERT_TRUE(admin_->ListQueues(&context, v1::ListQueuesRequest(), &listed).ok());
  ASSERT_EQ(listed.queues_size(), 1);
  EXPECT_EQ(listed.queues(0).queue(), "orders");
  int previous = 0;
  ASSERT_TRUE(Update("orders", 6, &previous).ok());
  EXPECT_EQ(previous, 4);
  EXPECT_EQ(Stats("orders").partitions(), 6);
  // A queue that exists from an enqueue can be partitioned afterwards.
  MustEnqueue(*stub_, MakeJob("plain"));
  ASSERT_TRUE(Update("plain", 3, &previous).ok());
  EXPECT_EQ(previous, 1);
}

TEST_F(PartitionedQueueTest, JobsSpreadOverEveryPartitionAndEachIsDeliveredOnce) {
  constexpr int kPartitions = 8;
  constexpr int kJobs = 400;
  ASSERT_TRUE(Create("spread", kPartitions).ok());
  const std::map<int, int64_t> before = EvalCallsPerMaster();

  // Batches round robin: each batch's jobs go to one partition together.
  std::set<std::string> ids;
  std::map<int, int> per_partition;
  for (int b = 0; b < kPartitions; ++b) {
    v1::EnqueueBatchRequest batch;
    for (int i = 0; i < kJobs / kPartitions; ++i) {
      *batch.add_jobs() = MakeJob("spread", absl::StrCat(b, "-", i));
    }
    v1::EnqueueBatchResponse enqueued;
    ASSERT_TRUE(EnqueueBatch(*stub_, batch, &enqueued).ok());
    std::set<int> partitions;
    for (const v1::EnqueueResult& r : enqueued.results()) {
      ASSERT_EQ(r.code(), 0) << r.message();
      ids.insert(r.job_id());
      ++per_partition[PartitionOf(r.job_id())];
      partitions.insert(PartitionOf(r.job_id()));
    }
    EXPECT_EQ(partitions.size(), 1u) << "batch " << b << " was split";
  }
  ASSERT_EQ(ids.size(), static_cast<size_t>(kJobs));
  ASSERT_EQ(per_partition.size(), static_cast<size_t>(kPartitions));
  for (const auto& [partition, n] : per_partition) {
    EXPECT_EQ(n, kJobs / kPartitions) << "partition " << partition << " (round robin)";
  }

  std::unique_ptr<ClaimReader> claim = OpenClaim(MakeClaim({"spread"}, 50));
  std::multiset<std::string> delivered;
  for (const v1::ClaimedJob& job : ReceiveAndAck(*claim, kJobs)) {
    EXPECT_EQ(job.job().queue(), "spread");
    delivered.insert(job.job().id());
  }
  EXPECT_FALSE(claim->Next(absl::Milliseconds(300))) << "a job was delivered twice";
  EXPECT_EQ(std::set<std::string>(delivered.begin(), delivered.end()), ids);
  EXPECT_EQ(delivered.size(), ids.size());
  const v1::QueueStats stats = Stats("spread");
  EXPECT_EQ(stats.completed(), kJobs);
  EXPECT_EQ(stats.pending_due() + stats.active(), 0);
  if (cluster_ == nullptr) return;

  // Every master that serves a partition ran its share of the scripts.
  std::map<int, int> partitions_on;  // master port -> partitions
  for (int p = 0; p < kPartitions; ++p) ++partitions_on[MasterOfPartition("spread", p)];
  for (const auto& [port, calls] : EvalCallsPerMaster()) {
    const int64_t ran = calls - before.at(port);
    std::cout << "master " << port << ": " << partitions_on[port] << " partition(s), " << ran
              << " script calls\n";
    // Each partition took kJobs / kPartitions enqueues, claims and acks.
    if (partitions_on[port] > 0) {
      EXPECT_GE(ran, partitions_on[port] * 2) << "master " << port;
    }
  }
  EXPECT_GE(partitions_on.size(), 2u) << "8 partitions all landed on one master";
}

TEST_F(PartitionedQueueTest, AStreamVisitsEveryPartitionInTurnAndEachKeepsItsOrder) {
  constexpr int kPartitions = 4;
  ASSERT_TRUE(Create("ordered", kPartitions).ok());
  // Round robin: 3 low-priority jobs per partition, then one urgent job in
  // each partition.
  const std::vector<std::string> low = EnqueueJobs("ordered", 3 * kPartitions, 0);
  const std::vector<std::string> urgent = EnqueueJobs("ordered", kPartitions, 10);
  std::set<int> urgent_partitions;
  for (const std::string& id : urgent) urgent_partitions.insert(PartitionOf(id));
  ASSERT_EQ(urgent_partitions.size(), static_cast<size_t>(kPartitions));

  // One job at a time: each claim takes the best job of the next partition.
  std::unique_ptr<ClaimReader> claim = OpenClaim(MakeClaim({"ordered"}, 1));
  const std::vector<v1::ClaimedJob> got = ReceiveAndAck(*claim, 4 * kPartitions);
  ASSERT_EQ(got.size(), static_cast<size_t>(4 * kPartitions));
  // The urgent job of every partition comes within the first P claims,
  // although partition 0 alone holds three earlier jobs.
  std::set<std::string> first(urgent.begin(), urgent.end());
  for (int i = 0; i < kPartitions; ++i) {
    EXPECT_TRUE(first.contains(got[i].job().id()))
        << "delivery " << i << " was " << got[i].job().id() << " (priority "
        << got[i].job().priority() << ")";
  }
  // Within a partition, FIFO among equal priorities.
  std::map<int, std::vector<std::string>> order;  // partition -> low ids delivered
  for (const v1::ClaimedJob& job : got) {
    if (job.job().priority() == 0) order[PartitionOf(job.job().id())].push_back(job.job().id());
  }
  for (const auto& [partition, ids] : order) {
    EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end())) << "partition " << partition;
    EXPECT_EQ(ids.size(), 3u) << "partition " << partition;
  }
}

TEST_F(PartitionedQueueTest, ListingAndRetryDeadSeeEveryPartition) {
  constexpr int kJobs = 8;
  ASSERT_TRUE(Create("ops", 4).ok());
  const std::vector<std::string> ids = MakeDead("ops", kJobs);
  EXPECT_EQ(Stats("ops").dead(), kJobs);
  v1::Job job;
  ASSERT_TRUE(GetJob(*stub_, "ops", ids[3], &job).ok());
  EXPECT_EQ(job.queue(), "ops");
  EXPECT_EQ(PartitionOf(job.id()), 3);
  // Paging goes partition by partition and sees every dead job once.
  EXPECT_EQ(ListAll("ops", kDead, 3), std::multiset<std::string>(ids.begin(), ids.end()));

  grpc::ClientContext some_context;
  v1::RetryDeadRequest some;
  some.set_queue("ops");
  some.add_job_ids(ids[1]);
  some.add_job_ids(ids[2]);
  v1::RetryDeadResponse moved;
  ASSERT_TRUE(admin_->RetryDead(&some_context, some, &moved).ok());
  EXPECT_EQ(moved.moved(), 2);
  grpc::ClientContext all_context;
  v1::RetryDeadRequest all;
  all.set_queue("ops");
  all.set_all(true);
  ASSERT_TRUE(admin_->RetryDead(&all_context, all, &moved).ok());
  EXPECT_EQ(moved.moved(), kJobs - 2);
  EXPECT_EQ(Stats("ops").pending_due(), kJobs);
  EXPECT_EQ(ListAll("ops", kPending, 5), std::multiset<std::string>(ids.begin(), ids.end()));
}

TEST_F(PartitionedQueueTest, PauseAndResumeCoverEveryPartition) {
  constexpr int kJobs = 8;
  ASSERT_TRUE(Create("paused", 4).ok());
  const std::vector<std::string> ids = EnqueueJobs("paused", kJobs);
  ASSERT_TRUE(SetPaused("paused", true).ok());
  EXPECT_TRUE(Stats("paused").paused());
  std::unique_ptr<ClaimReader> claim = OpenClaim(MakeClaim({"paused"}, kJobs));
  EXPECT_FALSE(claim->Next(absl::Milliseconds(500))) << "a paused queue handed out a job";
  ASSERT_TRUE(SetPaused("paused", false).ok());
  std::set<std::string> resumed;
  for (int i = 0; i < kJobs; ++i) {
    std::optional<v1::ClaimedJob> claimed = claim->Next(absl::Seconds(10));
    ASSERT_TRUE(claimed) << "only " << i << " jobs after resume";
    resumed.insert(claimed->job().id());
  }
  EXPECT_EQ(resumed, std::set<std::string>(ids.begin(), ids.end()));
  // Partitions added to a paused queue are paused too.
  ASSERT_TRUE(SetPaused("paused", true).ok());
  ASSERT_TRUE(Update("paused", 8).ok());
  EnqueueJobs("paused", 8);
  EXPECT_FALSE(claim->Next(absl::Milliseconds(500))) << "a new partition was not paused";
}

TEST_F(PartitionedQueueTest, DeleteQueueRemovesEveryPartition) {
  constexpr int kPartitions = 4;
  constexpr int kJobs = 8;
  ASSERT_TRUE(Create("gone", kPartitions).ok());
  const std::vector<std::string> ids = EnqueueJobs("gone", kJobs);
  std::unique_ptr<ClaimReader> claim = OpenClaim(MakeClaim({"gone"}, 1));
  ASSERT_TRUE(claim->Next(absl::Seconds(10)));  // one job active
  int64_t deleted = 0;
  EXPECT_EQ(DeleteQueue("gone", false, &deleted).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(Stats("gone").pending_due() + Stats("gone").active(), kJobs) << "something removed";
  ASSERT_TRUE(DeleteQueue("gone", true, &deleted).ok());
  EXPECT_EQ(deleted, kJobs);
  EXPECT_EQ(Stats("gone").partitions(), 1) << "the count goes with the queue";
  v1::Job job;
  grpc::Status missing = GetJob(*stub_, "gone", ids[3], &job);
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(missing.error_message(), "job " + ids[3] + " in queue gone (partition 3) not found");
  for (int p = 0; p < kPartitions; ++p) {
    const std::string tag = p == 0 ? "gone" : absl::StrCat("gone#", p);
    const std::string jobs = absl::StrCat("jw:{", tag, "}:jobs");
    auto exists =
        RedisCommandFor(jobs, {"EXISTS", jobs, absl::StrCat("jw:{", tag, "}:registered")});
    ASSERT_TRUE(exists.ok());
    EXPECT_EQ(exists->integer, 0) << "partition " << p;
  }
}

TEST_F(PartitionedQueueTest, ACountRaisedThroughOneReplicaReachesAStreamOnAnother) {
  ASSERT_TRUE(Create("grow", 1).ok());
  std::unique_ptr<BrokerProcess> other = AnotherBroker();
  ASSERT_TRUE(other->Start().ok());
  // The stream reads one partition when the count goes to 4.
  ClaimReader claim(other->NewStub(), MakeClaim({"grow"}, 100));
  MustEnqueue(*stub_, MakeJob("grow", "before"));
  ASSERT_TRUE(claim.Next(absl::Seconds(10))) << "the stream does not work at all";
  ASSERT_TRUE(Update("grow", 4).ok());
  const std::vector<std::string> ids = EnqueueJobs("grow", 20);
  std::set<int> partitions;
  for (const std::string& id : ids) partitions.insert(PartitionOf(id));
  EXPECT_EQ(partitions.size(), 4u);
  std::set<std::string> got;
  for (size_t i = 0; i < ids.size(); ++i) {
    std::optional<v1::ClaimedJob> job = claim.Next(absl::Seconds(10));
    ASSERT_TRUE(job) << "only " << i << " of " << ids.size()
                     << " jobs reached the stream opened before the change";
    got.insert(job->job().id());
  }
  EXPECT_EQ(got, std::set<std::string>(ids.begin(), ids.end()));
}

TEST_F(PartitionedQueueTest, AnIdempotencyKeyAlwaysLandsInOnePartition) {
  ASSERT_TRUE(Create("dedup", 8).ok());
  std::set<int> partitions;
  for (int i = 0; i < 16; ++i) {
    v1::EnqueueRequest job = MakeJob("dedup");
    job.set_idempotency_key(absl::StrCat("key-", i));
    const std::string first = MustEnqueue(*stub_, job);
    v1::EnqueueResponse again;
    ASSERT_TRUE(Enqueue(*stub_, job, &again).ok());
    EXPECT_EQ(again.job_id(), first) << "key-" << i;
    EXPECT_TRUE(again.duplicate()) << "key-" << i;
    v1::Job found;
    ASSERT_TRUE(GetJobByIdempotencyKey(*stub_, "dedup", absl::StrCat("key-", i), &found).ok());
    EXPECT_EQ(found.id(), first) << "GetJob by key-" << i << " looks in its partition";
    EXPECT_EQ(found.queue(), "dedup");
    partitions.insert(PartitionOf(first));
  }
  EXPECT_GE(partitions.size(), 4u) << "keys do not spread over the partitions";
  EXPECT_EQ(Stats("dedup").pending_due(), 16);
}

}  // namespace
}  // namespace jobwire::testing
