// Concurrency per key (docs/semantics.md, "Concurrency per key"), through
// real brokers and a real Redis: a queue's max_active_per_key holds across
// streams and broker replicas (checked from the test's own log of runs per
// key); the jobs of a key at its limit wait without hiding other keys' jobs
// behind them; every way a run ends (Ack, Fail, an expired lease) lets the
// key's next job go at once; a parked job can be cancelled or deleted; a
// raised or removed limit releases the waiting jobs; refusals name their
// field and change nothing; and nothing is left counted once the runs end.
#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/lifecycle_test_util.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

class KeyConcurrencyTest : public QueueSettingsTest {
 protected:
  grpc::Status Create(const std::string& queue, int32_t per_key, int partitions = 0) {
    v1::CreateQueueRequest request;
    request.set_queue(queue);
    request.set_partitions(partitions);
    request.set_max_active_per_key(per_key);
    return CreateQueue(request);
  }
  grpc::Status Update(const std::string& queue, std::optional<int32_t> per_key,
                      int partitions = 0) {
    v1::UpdateQueueRequest request;
    request.set_queue(queue);
    request.set_partitions(partitions);
    if (per_key) request.set_max_active_per_key(*per_key);
    return UpdateQueue(request);
  }
  int PendingListed(const std::string& queue) {
    v1::ListJobsRequest request;
    request.set_queue(queue);
    request.set_state(v1::JOB_STATE_PENDING);
    request.set_page_size(1000);
    v1::ListJobsResponse response;
    EXPECT_TRUE(admin_->ListJobs(Context().get(), request, &response).ok());
    return response.jobs_size();
  }

  // What Redis holds for the queue's keys: the active counts' entries and
  // the parked jobs.
  int64_t CountedKeys(const std::string& queue) { return SizeOf(queue, "key_active", "HLEN"); }
  int64_t Parked(const std::string& queue) { return SizeOf(queue, "key_waiting"); }
};

TEST_F(KeyConcurrencyTest, RefusalsNameTheFieldAndChangeNothing) {
  ASSERT_TRUE(Create("keyed", 2).ok());
  ASSERT_TRUE(Create("wide", 0, 4).ok());
  struct Case {
    const char* what;
    grpc::Status status;
    grpc::StatusCode code;
    const char* field;
  };
  v1::EnqueueResponse enqueued;
  const std::vector<Case> cases = {
      {"enqueue: a key of 129 bytes",
       Enqueue(*stub_, Keyed("keyed", std::string(129, 'k')), &enqueued),
       grpc::INVALID_ARGUMENT, "concurrency_key"},
      {"create: negative", Create("k1", -1), grpc::INVALID_ARGUMENT, "max_active_per_key"},
      {"create: too large", Create("k2", 1000001), grpc::INVALID_ARGUMENT, "max_active_per_key"},
      {"create: with 4 partitions", Create("k3", 2, 4), grpc::INVALID_ARGUMENT,
       "max_active_per_key"},
      {"update: negative", Update("keyed", -1), grpc::INVALID_ARGUMENT, "max_active_per_key"},
      {"update: on a queue of 4 partitions", Update("wide", 2), grpc::FAILED_PRECONDITION,
       "max_active_per_key"},
      {"update: partitions of a keyed queue", Update("keyed", std::nullopt, 2),
       grpc::FAILED_PRECONDITION, "max_active_per_key"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.status.error_code(), c.code) << c.what << ": " << c.status.error_message();
    EXPECT_EQ(FieldOf(c.status), c.field) << c.what << ": " << c.status.error_message();
  }
  const v1::QueueStats keyed = Stats("keyed");
  EXPECT_EQ(keyed.max_active_per_key(), 2);
  EXPECT_EQ(keyed.partitions(), 1);
  EXPECT_EQ(keyed.pending_due(), 0) << "the refused enqueue stored a job";
  EXPECT_EQ(Stats("wide").max_active_per_key(), 0);
  EXPECT_EQ(Stats("wide").partitions(), 4);
  for (const char* queue : {"k1", "k2", "k3"}) {
    EXPECT_EQ(Stats(queue).max_active_per_key(), 0) << queue;
  }
  // A key of 128 bytes is taken, and shown.
  const std::string id = MustEnqueue(*stub_, Keyed("keyed", std::string(128, 'k')));
  v1::Job job;
  JW_ASSERT_OK(GetJob(*stub_, "keyed", id, &job));
  EXPECT_EQ(job.concurrency_key(), std::string(128, 'k'));
}

TEST_F(KeyConcurrencyTest, ASaturatedKeyHidesNoOtherKeysJobs) {
  const std::string queue = "tenants";
  ASSERT_TRUE(Create(queue, 2).ok());
  // A pile of one key's jobs ahead of the others'.
  v1::EnqueueBatchRequest batch;
  for (int i = 0; i < 20; ++i) *batch.add_jobs() = Keyed(queue, "big", absl::StrCat("big", i));
  for (int i = 0; i < 4; ++i) *batch.add_jobs() = Keyed(queue, "a", absl::StrCat("a", i));
  for (int i = 0; i < 4; ++i) *batch.add_jobs() = Keyed(queue, "b", absl::StrCat("b", i));
  for (int i = 0; i < 2; ++i) *batch.add_jobs() = MakeJob(queue, absl::StrCat("free", i));
  v1::EnqueueBatchResponse enqueued;
  JW_ASSERT_OK(EnqueueBatch(*stub_, batch, &enqueued));

  auto reader = OpenClaim(MakeClaim({queue}, 10));
  std::map<std::string, std::vector<v1::ClaimedJob>> held;  // by key ("" for none)
  for (int i = 0; i < 8; ++i) {
    std::optional<v1::ClaimedJob> job = reader->Next(kPrompt);
    ASSERT_TRUE(job) << "job " << i << " of the 8 the limit lets run";
    held[job->job().concurrency_key()].push_back(*job);
  }
  EXPECT_FALSE(reader->Next(kQuiet)) << "a third run of a key";
  ASSERT_EQ(held["big"].size(), 2u);
  EXPECT_EQ(held["a"].size(), 2u);
  EXPECT_EQ(held["b"].size(), 2u);
  EXPECT_EQ(held[""].size(), 2u);
  EXPECT_EQ(held["big"][0].job().payload(), "big0");
  EXPECT_EQ(held["big"][1].job().payload(), "big1");

  // The parked jobs are pending, counted and listed.
  const v1::QueueStats stats = Stats(queue);
  EXPECT_EQ(stats.pending_due(), 22);
  EXPECT_EQ(stats.active(), 8);
  EXPECT_EQ(stats.max_active_per_key(), 2);
  EXPECT_EQ(PendingListed(queue), 22);

  // Each Ack lets its key's next job go, in order.
  JW_ASSERT_OK(Ack(*stub_, held["big"][0]));
  std::optional<v1::ClaimedJob> next = reader->Next(kPrompt);
  ASSERT_TRUE(next) << "an Ack did not free its key's slot";
  EXPECT_EQ(next->job().payload(), "big2");
  JW_ASSERT_OK(Ack(*stub_, held["a"][0]));
  next = reader->Next(kPrompt);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->job().payload(), "a2");
  EXPECT_FALSE(reader->Next(kQuiet));
}

TEST_F(KeyConcurrencyTest, FailuresAndExpiredLeasesFreeTheKey) {
  const std::string queue = "one-per-key";
  ASSERT_TRUE(Create(queue, 1).ok());
  for (int i = 0; i < 3; ++i) {
    v1::EnqueueRequest job = Keyed(queue, "k", absl::StrCat("job", i));
    job.set_max_attempts(5);
    job.set_backoff_base_ms(60000);  // a retry stays out of the way
    job.set_backoff_max_ms(60000);
    MustEnqueue(*stub_, job);
  }
  auto reader = OpenClaim(MakeClaim({queue}, 5, /*lease_ms=*/1000));
  std::optional<v1::ClaimedJob> first = reader->Next(kPrompt);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->job().payload(), "job0");
  EXPECT_FALSE(reader->Next(kQuiet));
  // A failed run frees the key.
  v1::FailResponse failed;
  JW_ASSERT_OK(Fail(*stub_, MakeFail(*first, "boom"), &failed));
  std::optional<v1::ClaimedJob> second = reader->Next(kPrompt);
  ASSERT_TRUE(second) << "a Fail did not free its key's slot";
  EXPECT_EQ(second->job().payload(), "job1");
  // A run whose lease expires (never acked or renewed) frees it too.
  std::optional<v1::ClaimedJob> third = reader->Next(absl::Seconds(8));
  ASSERT_TRUE(third) << "an expired lease did not free its key's slot";
  EXPECT_EQ(third->job().payload(), "job2");
  JW_ASSERT_OK(Ack(*stub_, *third));
  EXPECT_FALSE(reader->Next(kQuiet));
  EXPECT_EQ(CountedKeys(queue), 0) << "a key still counts a run after every run ended";
  EXPECT_EQ(Parked(queue), 0);
}

TEST_F(KeyConcurrencyTest, ParkedJobsCanBeCancelledOrDeleted) {
  const std::string queue = "cancel-parked";
  ASSERT_TRUE(Create(queue, 1).ok());
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(MustEnqueue(*stub_, Keyed(queue, "k")));
  auto reader = OpenClaim(MakeClaim({queue}, 5));
  std::optional<v1::ClaimedJob> running = reader->Next(kPrompt);
  ASSERT_TRUE(running);
  ASSERT_EQ(running->job().id(), ids[0]);
  EXPECT_FALSE(reader->Next(kQuiet));
  ASSERT_EQ(Parked(queue), 2) << "the claim did not park the key's other jobs";

  JW_ASSERT_OK(Cancel(*stub_, queue, ids[1]));
  v1::Job job;
  JW_ASSERT_OK(GetJob(*stub_, queue, ids[1], &job));
  EXPECT_EQ(job.state(), v1::JOB_STATE_DEAD);
  v1::DeleteJobRequest del;
  del.set_queue(queue);
  del.set_job_id(ids[2]);
  v1::DeleteJobResponse deleted;
  JW_ASSERT_OK(admin_->DeleteJob(Context().get(), del, &deleted));
  EXPECT_EQ(Parked(queue), 0);
  EXPECT_EQ(Stats(queue).pending_due(), 0);

  JW_ASSERT_OK(Ack(*stub_, *running));
  EXPECT_FALSE(reader->Next(kQuiet)) << "a cancelled or deleted job ran";
  EXPECT_EQ(CountedKeys(queue), 0);
}

TEST_F(KeyConcurrencyTest, RaisingOrRemovingTheLimitReleasesParkedJobs) {
  const std::string queue = "relaxed";
  ASSERT_TRUE(Create(queue, 1).ok());
  for (int i = 0; i < 4; ++i) MustEnqueue(*stub_, Keyed(queue, "k"));
  auto reader = OpenClaim(MakeClaim({queue}, 10));
  ASSERT_TRUE(reader->Next(kPrompt));
  EXPECT_FALSE(reader->Next(kQuiet));
  ASSERT_TRUE(Update(queue, 2).ok());
  EXPECT_EQ(Stats(queue).max_active_per_key(), 2);
  EXPECT_TRUE(reader->Next(kPrompt)) << "a raised limit left its room unused";
  EXPECT_FALSE(reader->Next(kQuiet)) << "more runs than the raised limit";
  ASSERT_TRUE(Update(queue, 0).ok());
  EXPECT_EQ(Stats(queue).max_active_per_key(), 0);
  EXPECT_TRUE(reader->Next(kPrompt)) << "removing the limit left jobs waiting";
  EXPECT_TRUE(reader->Next(kPrompt));
  EXPECT_EQ(Parked(queue), 0);
}

TEST_F(KeyConcurrencyTest, KeysCountWithoutALimit) {
  const std::string queue = "unlimited";
  for (int i = 0; i < 3; ++i) MustEnqueue(*stub_, Keyed(queue, "k"));
  auto reader = OpenClaim(MakeClaim({queue}, 10));
  std::vector<v1::ClaimedJob> held;
  for (int i = 0; i < 3; ++i) {
    std::optional<v1::ClaimedJob> job = reader->Next(kPrompt);
    ASSERT_TRUE(job) << "no limit, yet job " << i << " waited";
    held.push_back(*job);
  }
  const std::string counts = absl::StrCat("jw:{", queue, "}:key_active");
  absl::StatusOr<RedisReply> counted = RedisCommandFor(counts, {"HGET", counts, "k"});
  ASSERT_TRUE(counted.ok());
  EXPECT_EQ(counted->str, "3") << "runs of a key must count before any limit is set";
  // A limit set now sees the 3 runs: a fourth job of the key waits.
  ASSERT_TRUE(Update(queue, 3).ok());
  MustEnqueue(*stub_, Keyed(queue, "k"));
  EXPECT_FALSE(reader->Next(kQuiet)) << "a fourth run under a limit of 3";
  JW_ASSERT_OK(Ack(*stub_, held[0]));
  EXPECT_TRUE(reader->Next(kPrompt));
}

// One run as the test's takers logged it.
struct RunLog {
  std::string key;
  absl::Time start;  // received
  absl::Time end;    // the handler's work done, before its Ack
};

TEST_F(KeyConcurrencyTest, TheLimitHoldsAcrossStreamsAndReplicas) {
  const std::string queue = "shared";
  constexpr int kPerKey = 2;
  constexpr int kKeys = 3;
  constexpr int kJobsPerKey = 8;
  constexpr int kJobs = kKeys * kJobsPerKey;
  constexpr absl::Duration kWork = absl::Milliseconds(100);
  ASSERT_TRUE(Create(queue, kPerKey).ok());
  absl::StatusOr<TwoReplicaStreams> streams = StreamsOnTwoReplicas(queue, 5);
  JW_ASSERT_OK(streams.status());
  std::vector<std::unique_ptr<ClaimReader>>& readers = streams->readers;
  v1::BrokerService::Stub& other_stub = *streams->other_stub;
  v1::EnqueueBatchRequest batch;
  for (int i = 0; i < kJobsPerKey; ++i) {
    for (int k = 0; k < kKeys; ++k) *batch.add_jobs() = Keyed(queue, absl::StrCat("key", k));
  }
  v1::EnqueueBatchResponse enqueued;
  const absl::Time begin = absl::Now();
  JW_ASSERT_OK(EnqueueBatch(*stub_, batch, &enqueued));

  absl::Mutex mu;
  std::vector<RunLog> runs;
  std::atomic<int> received{0};
  std::vector<std::thread> takers;
  for (size_t t = 0; t < readers.size(); ++t) {
    takers.emplace_back([&, t, r = readers[t].get()] {
      // Each job runs on a thread of its own from the moment it arrives, as
      // a Worker with concurrency runs it: a run's start is its delivery.
      std::vector<std::thread> running;
      const absl::Time until = begin + absl::Seconds(20);
      for (int n = 0; absl::Now() < until && received.load() < kJobs; ++n) {
        std::optional<v1::ClaimedJob> job = r->Next(absl::Milliseconds(200));
        if (!job) continue;
        ++received;
        running.emplace_back([&, t, n, job = *std::move(job), start = absl::Now()] {
          absl::SleepFor(kWork);
          RunLog run{job.job().concurrency_key(), start, absl::Now()};
          {
            absl::MutexLock lock(&mu);
            runs.push_back(run);
          }
          // Settled through either replica, whichever granted the lease.
          JW_EXPECT_OK(Ack((t + n) % 2 == 0 ? *stub_ : other_stub, job));
        });
      }
      for (std::thread& run : running) run.join();
    });
  }
  for (std::thread& t : takers) t.join();
  ASSERT_EQ(static_cast<int>(runs.size()), kJobs) << "a key stalled";
  // The most runs of one key at once, from the log.
  std::map<std::string, int> most;
  for (const RunLog& a : runs) {
    int at_once = 0;
    for (const RunLog& b : runs) {
      at_once += b.key == a.key && b.start <= a.start && b.end > a.start;
    }
    most[a.key] = std::max(most[a.key], at_once);
  }
  ASSERT_EQ(most.size(), static_cast<size_t>(kKeys));
  for (const auto& [key, n] : most) {
    EXPECT_LE(n, kPerKey) << key << ": more runs at once than max_active_per_key";
    EXPECT_EQ(n, kPerKey) << key << ": the limit was never reached: the test shows nothing";
  }
  absl::Time last = begin;
  for (const RunLog& r : runs) last = std::max(last, r.end);
  // 8 runs of 100 ms per key, 2 at once, keys in parallel: about 0.4 s
  // when each settle frees its key's slot at once.
  EXPECT_LT(last - begin, absl::Seconds(4)) << "a freed slot waited";
  EXPECT_EQ(CountedKeys(queue), 0);
  EXPECT_EQ(Parked(queue), 0);
}

}  // namespace
}  // namespace jobwire::testing
