// Redis work per job through the real broker and a real Redis, counted with
// INFO commandstats: concurrent Enqueues share enqueue.lua calls
// (EnqueueCoalescer), and a Claim stream waiting on an empty queue does not
// claim again when an ack frees a slot, nor does a full stream whose queue
// (or partitions) it found drained, with nothing announced since, and an
// AckBatch refills its stream with one claim (Dispatcher);
// a job enqueued while a stream of the same broker waits is claimed by the
// enqueue.lua call itself (the hand-off), with no wake-up published unless
// due jobs are left for others.

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/lifecycle_test_util.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

// Calls of `command` so far, from INFO commandstats (0 if never called).
int64_t CommandCalls(RedisServer& redis, const std::string& command) {
  absl::StatusOr<RedisReply> info = redis.Command("INFO", "commandstats");
  if (!info.ok()) return -1;
  const std::string prefix = absl::StrCat("cmdstat_", command, ":calls=");
  const size_t at = info->str.find(prefix);
  if (at == std::string::npos) return 0;
  return std::stoll(info->str.substr(at + prefix.size()));
}

TEST_F(LifecycleTest, ConcurrentEnqueuesShareScriptCallsAndKeepTheirOwnOutcomes) {
  const std::string queue = "coalesced";
  constexpr int kThreads = 32;
  constexpr int kPerThread = 25;
  const int64_t publishes_before = CommandCalls(*redis_, "spublish");
  // Threads 0 and 1 send the same idempotency keys, so some pairs race
  // inside one script call and some across calls.
  struct Sent {
    std::string key;
    v1::EnqueueResponse response;
    grpc::Status status;
  };
  std::vector<std::vector<Sent>> sent(kThreads, std::vector<Sent>(kPerThread));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        v1::EnqueueRequest request = MakeJob(queue, absl::StrCat("t", t, "-", i));
        if (t < 2) request.set_idempotency_key(absl::StrCat("key-", i));
        sent[t][i].key = request.idempotency_key();
        sent[t][i].status = Enqueue(*stub_, request, &sent[t][i].response);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  std::set<std::string> stored;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) {
      SCOPED_TRACE(absl::StrCat("thread ", t, " job ", i));
      const Sent& s = sent[t][i];
      ASSERT_TRUE(s.status.ok()) << StatusText(s.status);
      if (t < 2) continue;
      EXPECT_FALSE(s.response.duplicate());
      EXPECT_TRUE(stored.insert(s.response.job_id()).second) << "id given twice";
      v1::Job job;
      JW_ASSERT_OK(GetJob(*stub_, queue, s.response.job_id(), &job));
      EXPECT_EQ(job.payload(), absl::StrCat("t", t, "-", i)) << "another caller's job";
    }
  }
  for (int i = 0; i < kPerThread; ++i) {
    SCOPED_TRACE(absl::StrCat("key-", i));
    const v1::EnqueueResponse& a = sent[0][i].response;
    const v1::EnqueueResponse& b = sent[1][i].response;
    EXPECT_EQ(a.job_id(), b.job_id());
    EXPECT_NE(a.duplicate(), b.duplicate()) << "exactly one of the pair stores the job";
    EXPECT_TRUE(stored.insert(a.job_id()).second);
  }
  const int64_t jobs = (kThreads - 2) * kPerThread + kPerThread;
  EXPECT_EQ(static_cast<int64_t>(stored.size()), jobs);
  absl::StatusOr<RedisReply> ready =
      redis_->Command("ZCARD", absl::StrCat("jw:{", queue, "}:ready"));
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_EQ(ready->integer, jobs);
  // enqueue.lua publishes once per call that stores a job due now: one
  // publish per job would mean one script call per Enqueue.
  const int64_t publishes = CommandCalls(*redis_, "spublish") - publishes_before;
  EXPECT_GT(publishes, 0);
  EXPECT_LT(publishes, jobs) << "concurrent Enqueues were not coalesced";
}

// A stream waiting with free slots found its queue empty: an ack that frees
// one more slot must not send it claiming again (only a job becoming due
// does), so each job costs one claim.lua call.
TEST_F(LifecycleTest, AckOnAWaitingStreamCostsNoClaim) {
  const std::string queue = "quiet";
  auto reader = OpenClaim(MakeClaim({queue}, 8));
  MustEnqueue(*stub_, MakeJob(queue, "warm-up"));
  std::optional<v1::ClaimedJob> warm = reader->Next(kPrompt);
  ASSERT_TRUE(warm.has_value());
  JW_ASSERT_OK(Ack(*stub_, *warm));
  absl::SleepFor(absl::Milliseconds(200));

  constexpr int kJobs = 10;
  const int64_t claims_before = CommandCalls(*redis_, "zpopmin");  // once per claim.lua
  for (int i = 0; i < kJobs; ++i) {
    MustEnqueue(*stub_, MakeJob(queue, absl::StrCat("job-", i)));
    std::optional<v1::ClaimedJob> job = reader->Next(kPrompt);
    ASSERT_TRUE(job.has_value());
    JW_ASSERT_OK(Ack(*stub_, *job));
  }
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(CommandCalls(*redis_, "zpopmin") - claims_before, kJobs);
}

TEST_F(LifecycleTest, AFullStreamOnADrainedQueueClaimsNothingWhenSlotsFree) {
  std::unique_ptr<v1::AdminService::Stub> admin = v1::AdminService::NewStub(broker_->channel());
  for (int partitions : {1, 4}) {
    SCOPED_TRACE(partitions);
    const std::string queue = absl::StrCat("drained-", partitions);
    grpc::ClientContext context;
    v1::CreateQueueRequest create;
    create.set_queue(queue);
    create.set_partitions(partitions);
    v1::CreateQueueResponse created;
    ASSERT_TRUE(admin->CreateQueue(&context, create, &created).ok());
    // A stream with one free slot, waiting, having found every partition
    // drained: one job per partition claimed, one of them acked.
    for (int i = 0; i < partitions; ++i) MustEnqueue(*stub_, MakeJob(queue, absl::StrCat(i)));
    auto reader = OpenClaim(MakeClaim({queue}, partitions));
    std::vector<v1::ClaimedJob> jobs;
    for (int i = 0; i < partitions; ++i) {
      std::optional<v1::ClaimedJob> job = reader->Next(kPrompt);
      ASSERT_TRUE(job.has_value());
      jobs.push_back(*job);
    }
    absl::SleepFor(absl::Milliseconds(300));
    JW_ASSERT_OK(Ack(*stub_, jobs[0]));
    absl::SleepFor(absl::Milliseconds(200));

    // A new job wakes the stream: it claims from the one partition that
    // announced it (the others are still drained) and is full again.
    const int64_t before = CommandCalls(*redis_, "zpopmin");  // once per claim.lua
    MustEnqueue(*stub_, MakeJob(queue, "later"));
    std::optional<v1::ClaimedJob> later = reader->Next(kPrompt);
    ASSERT_TRUE(later.has_value());
    EXPECT_EQ(later->job().payload(), "later");
    absl::SleepFor(absl::Milliseconds(200));
    EXPECT_EQ(CommandCalls(*redis_, "zpopmin") - before, 1);
    // Its ack frees a slot of a full stream: nothing was announced since, so
    // no claim.
    JW_ASSERT_OK(Ack(*stub_, *later));
    absl::SleepFor(absl::Milliseconds(200));
    EXPECT_EQ(CommandCalls(*redis_, "zpopmin") - before, 1);
  }
}

// A stream waits on an empty queue: each job enqueued through its broker is
// claimed by the enqueue.lua call that stores it (one claim per job, no
// claim.lua call), and nothing is published, since no due job is left for
// any other stream or replica.
TEST_F(LifecycleTest, AJobForAWaitingStreamIsHandedOffWithoutAWakeUp) {
  const std::string queue = "handoff";
  auto reader = OpenClaim(MakeClaim({queue}, 8));
  MustEnqueue(*stub_, MakeJob(queue, "warm-up"));
  std::optional<v1::ClaimedJob> warm = reader->Next(kPrompt);
  ASSERT_TRUE(warm.has_value());
  JW_ASSERT_OK(Ack(*stub_, *warm));
  absl::SleepFor(absl::Milliseconds(200));

  constexpr int kJobs = 10;
  const int64_t claims_before = CommandCalls(*redis_, "zpopmin");  // once per claim
  const int64_t publishes_before = CommandCalls(*redis_, "spublish");
  for (int i = 0; i < kJobs; ++i) {
    const std::string id = MustEnqueue(*stub_, MakeJob(queue, absl::StrCat("job-", i)));
    std::optional<v1::ClaimedJob> job = reader->Next(kPrompt);
    ASSERT_TRUE(job.has_value());
    EXPECT_EQ(job->job().id(), id);
    EXPECT_EQ(job->job().attempts(), 1);
    JW_ASSERT_OK(Ack(*stub_, *job));
  }
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(CommandCalls(*redis_, "zpopmin") - claims_before, kJobs);
  EXPECT_EQ(CommandCalls(*redis_, "spublish") - publishes_before, 0);
}

// The hand-off claims for one stream up to its free slots; the jobs left are
// announced as usual and another waiting stream claims them.
TEST_F(LifecycleTest, JobsTheHandOffLeavesWakeTheNextStream) {
  const std::string queue = "handoff-more";
  auto first = OpenClaim(MakeClaim({queue}, 2));
  auto second = OpenClaim(MakeClaim({queue}, 2));
  absl::SleepFor(absl::Milliseconds(300));  // both streams waiting
  v1::EnqueueBatchRequest batch;
  for (int i = 0; i < 4; ++i) *batch.add_jobs() = MakeJob(queue, absl::StrCat("job-", i));
  v1::EnqueueBatchResponse response;
  JW_ASSERT_OK(EnqueueBatch(*stub_, batch, &response));
  std::set<std::string> delivered;
  for (auto* reader : {first.get(), second.get()}) {
    for (int i = 0; i < 2; ++i) {
      std::optional<v1::ClaimedJob> job = reader->Next(kPrompt);
      ASSERT_TRUE(job.has_value()) << "a stream got " << i << " of its 2 jobs";
      EXPECT_TRUE(delivered.insert(job->job().id()).second) << "delivered twice";
    }
  }
  EXPECT_EQ(delivered.size(), 4u);
}

// A full stream whose slots an AckBatch frees claims once for all of them:
// the acks of one call free their slots together, not one claim for the
// first slot and another for the rest.
TEST_F(LifecycleTest, AnAckBatchRefillsItsStreamWithOneClaim) {
  const std::string queue = "batched";
  constexpr int kSlots = 8;
  v1::EnqueueBatchRequest batch;
  for (int i = 0; i < 2 * kSlots; ++i) *batch.add_jobs() = MakeJob(queue, absl::StrCat(i));
  v1::EnqueueBatchResponse enqueued;
  JW_ASSERT_OK(EnqueueBatch(*stub_, batch, &enqueued));
  auto reader = OpenClaim(MakeClaim({queue}, kSlots));
  v1::AckBatchRequest acks;
  for (int i = 0; i < kSlots; ++i) {
    std::optional<v1::ClaimedJob> job = reader->Next(kPrompt);
    ASSERT_TRUE(job.has_value()) << "got " << i << " of " << kSlots;
    v1::AckRequest* ack = acks.add_acks();
    ack->set_queue(queue);
    ack->set_job_id(job->job().id());
    ack->set_lease_token(job->lease_token());
  }
  absl::SleepFor(absl::Milliseconds(200));  // full: nothing more is claimed

  const int64_t claims_before = CommandCalls(*redis_, "zpopmin");  // once per claim.lua
  v1::AckBatchResponse acked;
  JW_ASSERT_OK(AckBatch(*stub_, acks, &acked));
  for (const v1::AckResult& result : acked.results()) EXPECT_EQ(result.code(), 0);
  for (int i = 0; i < kSlots; ++i) {
    std::optional<v1::ClaimedJob> job = reader->Next(kPrompt);
    ASSERT_TRUE(job.has_value()) << "refilled " << i << " of " << kSlots;
  }
  EXPECT_EQ(CommandCalls(*redis_, "zpopmin") - claims_before, 1);
}

}  // namespace
}  // namespace jobwire::testing
