// Rate limits per concurrency key (docs/semantics.md, "Rate limits per
// key"), through real brokers and a real Redis: each key's bucket holds
// across streams and broker replicas (checked from the test's own log of
// arrivals per key); a key without tokens hides no other key's jobs; its
// parked jobs go when its next token comes, with no settle or enqueue to
// wake them; a changed or removed limit releases them; refusals name their
// field and change nothing; and the buckets of idle keys leave Redis.
#include <algorithm>
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

class KeyRateLimitTest : public QueueSettingsTest {
 protected:
  grpc::Status Create(const std::string& queue, std::optional<v1::RateLimit> limit,
                      int partitions = 0) {
    v1::CreateQueueRequest request;
    request.set_queue(queue);
    request.set_partitions(partitions);
    if (limit) *request.mutable_key_rate_limit() = *limit;
    return CreateQueue(request);
  }
  grpc::Status Update(const std::string& queue, std::optional<v1::RateLimit> limit,
                      int partitions = 0) {
    v1::UpdateQueueRequest request;
    request.set_queue(queue);
    request.set_partitions(partitions);
    if (limit) *request.mutable_key_rate_limit() = *limit;
    return UpdateQueue(request);
  }
};

TEST_F(KeyRateLimitTest, RefusalsNameTheFieldAndChangeNothing) {
  ASSERT_TRUE(Create("limited", Limit(2, 1000)).ok());
  ASSERT_TRUE(Create("wide", std::nullopt, 4).ok());
  struct Case {
    const char* what;
    grpc::Status status;
    grpc::StatusCode code;
    const char* field;
  };
  const std::vector<Case> cases = {
      {"create: count 0", Create("r1", Limit(0, 1000)), grpc::INVALID_ARGUMENT,
       "key_rate_limit.count"},
      {"create: interval 0", Create("r2", Limit(5, 0)), grpc::INVALID_ARGUMENT,
       "key_rate_limit.interval_ms"},
      {"create: negative burst", Create("r3", Limit(5, 1000, -1)), grpc::INVALID_ARGUMENT,
       "key_rate_limit.burst"},
      {"create: with 4 partitions", Create("r4", Limit(5, 1000), 4), grpc::INVALID_ARGUMENT,
       "key_rate_limit"},
      {"update: interval above a day", Update("limited", Limit(5, 86400001)),
       grpc::INVALID_ARGUMENT, "key_rate_limit.interval_ms"},
      {"update: on a queue of 4 partitions", Update("wide", Limit(5, 1000)),
       grpc::FAILED_PRECONDITION, "key_rate_limit"},
      {"update: partitions of a limited queue", Update("limited", std::nullopt, 2),
       grpc::FAILED_PRECONDITION, "key_rate_limit"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.status.error_code(), c.code) << c.what << ": " << c.status.error_message();
    EXPECT_EQ(FieldOf(c.status), c.field) << c.what << ": " << c.status.error_message();
  }
  const v1::QueueStats limited = Stats("limited");
  ASSERT_TRUE(limited.has_key_rate_limit());
  EXPECT_EQ(limited.key_rate_limit().count(), 2);
  EXPECT_EQ(limited.key_rate_limit().burst(), 2) << "burst 0 means count";
  EXPECT_EQ(limited.partitions(), 1);
  EXPECT_FALSE(Stats("wide").has_key_rate_limit());
  EXPECT_EQ(Stats("wide").partitions(), 4);
}

TEST_F(KeyRateLimitTest, AKeyWithoutTokensHidesNoOtherKeysJobs) {
  const std::string queue = "tenants";
  ASSERT_TRUE(Create(queue, Limit(2, 60000)).ok());  // 2 at once, then 1 per 30 s
  // A pile of one key's jobs ahead of the others'.
  v1::EnqueueBatchRequest batch;
  for (int i = 0; i < 20; ++i) *batch.add_jobs() = Keyed(queue, "big", absl::StrCat("big", i));
  for (int i = 0; i < 3; ++i) *batch.add_jobs() = Keyed(queue, "a", absl::StrCat("a", i));
  for (int i = 0; i < 2; ++i) *batch.add_jobs() = MakeJob(queue, absl::StrCat("free", i));
  v1::EnqueueBatchResponse enqueued;
  JW_ASSERT_OK(EnqueueBatch(*stub_, batch, &enqueued));

  auto reader = OpenClaim(MakeClaim({queue}, 30));
  std::map<std::string, std::vector<std::string>> got;  // key -> payloads
  std::vector<v1::ClaimedJob> leased;
  for (int i = 0; i < 6; ++i) {
    std::optional<v1::ClaimedJob> job = reader->Next(kPrompt);
    ASSERT_TRUE(job) << "job " << i << " of the 6 the buckets let go";
    got[job->job().concurrency_key()].push_back(job->job().payload());
    leased.push_back(*job);
  }
  EXPECT_FALSE(reader->Next(kQuiet)) << "a third job of a key within its burst of 2";
  EXPECT_EQ(got["big"], (std::vector<std::string>{"big0", "big1"}));
  EXPECT_EQ(got["a"], (std::vector<std::string>{"a0", "a1"}));
  EXPECT_EQ(got[""], (std::vector<std::string>{"free0", "free1"}));
  // Settles free no token, so they leave the parked jobs parked: with the
  // queue paused (no claim to park them again), nothing is back in ready.
  JW_ASSERT_OK(Pause(queue, true));
  for (const v1::ClaimedJob& job : leased) JW_ASSERT_OK(Ack(*stub_, job));
  EXPECT_EQ(SizeOf(queue, "ready"), 0) << "a settle moved a job parked for a token back";
  EXPECT_EQ(SizeOf(queue, "key_waiting"), 19);
  JW_ASSERT_OK(Pause(queue, false));
  EXPECT_FALSE(reader->Next(kQuiet)) << "a job went without a token";

  // The parked jobs are pending, counted due.
  const v1::QueueStats stats = Stats(queue);
  EXPECT_EQ(stats.pending_due(), 19);
  EXPECT_EQ(SizeOf(queue, "key_waiting"), 19);
  EXPECT_EQ(SizeOf(queue, "key_rate_wake"), 2) << "each key waiting for a token has its wake";
  // Another key still goes at once.
  MustEnqueue(*stub_, Keyed(queue, "c", "c0"));
  std::optional<v1::ClaimedJob> c = reader->Next(kPrompt);
  ASSERT_TRUE(c) << "a fresh key waited behind the others";
  EXPECT_EQ(c->job().payload(), "c0");
}

TEST_F(KeyRateLimitTest, TheNextTokenReleasesParkedJobsWithoutAnyOtherEvent) {
  const std::string queue = "paced";
  constexpr int64_t kIntervalMs = 400;
  ASSERT_TRUE(Create(queue, Limit(1, kIntervalMs)).ok());  // one at a time, every 400 ms
  auto reader = OpenClaim(MakeClaim({queue}, 10));  // nothing is acked
  const absl::Time begin = absl::Now();
  v1::EnqueueBatchRequest batch;
  for (int i = 0; i < 4; ++i) *batch.add_jobs() = Keyed(queue, "k", absl::StrCat("job", i));
  v1::EnqueueBatchResponse enqueued;
  JW_ASSERT_OK(EnqueueBatch(*stub_, batch, &enqueued));
  for (int i = 0; i < 4; ++i) {
    std::optional<v1::ClaimedJob> job = reader->Next(kPrompt);
    ASSERT_TRUE(job) << "job " << i << " never left its key's wait";
    const absl::Time at = absl::Now();
    EXPECT_EQ(job->job().payload(), absl::StrCat("job", i)) << "out of order";
    // Token i comes i intervals after the first claim, which is after begin.
    EXPECT_GE(at - begin, absl::Milliseconds(i * kIntervalMs - 2)) << "job " << i << " early";
    EXPECT_LT(at - begin, absl::Milliseconds(i * kIntervalMs + 1500))
        << "job " << i << " waited past its token";
  }
  EXPECT_EQ(SizeOf(queue, "key_waiting"), 0);
  EXPECT_EQ(SizeOf(queue, "key_rate_wake"), 0);
  // Once the key has been idle for its bucket to fill, its entry goes.
  absl::SleepFor(absl::Milliseconds(kIntervalMs + 100));
  MustEnqueue(*stub_, MakeJob(queue, "keyless"));  // a claim runs, which drops full buckets
  ASSERT_TRUE(reader->Next(kPrompt));
  EXPECT_EQ(SizeOf(queue, "key_tat"), 0) << "a full bucket stays in Redis";
}

TEST_F(KeyRateLimitTest, ChangingOrRemovingTheLimitReleasesParkedJobs) {
  const std::string queue = "relaxed";
  ASSERT_TRUE(Create(queue, Limit(1, 60000)).ok());
  for (int i = 0; i < 4; ++i) MustEnqueue(*stub_, Keyed(queue, "k"));
  auto reader = OpenClaim(MakeClaim({queue}, 10));
  ASSERT_TRUE(reader->Next(kPrompt));
  EXPECT_FALSE(reader->Next(kQuiet)) << "a second job before the next token (60 s)";
  // A new limit starts the key's bucket full: 2 at once.
  ASSERT_TRUE(Update(queue, Limit(2, 60000)).ok());
  EXPECT_EQ(Stats(queue).key_rate_limit().count(), 2);
  EXPECT_TRUE(reader->Next(kPrompt)) << "a changed limit left the parked jobs waiting";
  EXPECT_TRUE(reader->Next(kPrompt));
  EXPECT_FALSE(reader->Next(kQuiet)) << "more than the new bucket holds";
  ASSERT_TRUE(Update(queue, v1::RateLimit()).ok());  // count 0: removed
  EXPECT_FALSE(Stats(queue).has_key_rate_limit());
  EXPECT_TRUE(reader->Next(kPrompt)) << "removing the limit left a job waiting";
  EXPECT_EQ(SizeOf(queue, "key_waiting"), 0);
  EXPECT_EQ(SizeOf(queue, "key_tat"), 0);
  EXPECT_EQ(SizeOf(queue, "key_rate_wake"), 0);
}

TEST_F(KeyRateLimitTest, EachKeysBucketHoldsAcrossStreamsAndReplicas) {
  const std::string queue = "shared";
  constexpr int32_t kCount = 5;
  constexpr int64_t kIntervalMs = 1000;
  constexpr int32_t kBurst = 2;
  constexpr int kKeys = 3;
  constexpr int kJobsPerKey = 10;  // 2 at once, then 8 at 5 a second: about 1.6 s
  constexpr int kFree = 10;
  constexpr int kJobs = kKeys * kJobsPerKey + kFree;
  ASSERT_TRUE(Create(queue, Limit(kCount, kIntervalMs, kBurst)).ok());
  absl::StatusOr<TwoReplicaStreams> streams = StreamsOnTwoReplicas(queue, 10);
  JW_ASSERT_OK(streams.status());
  std::vector<std::unique_ptr<ClaimReader>>& readers = streams->readers;
  v1::EnqueueBatchRequest batch;
  for (int i = 0; i < kJobsPerKey; ++i) {
    for (int k = 0; k < kKeys; ++k) *batch.add_jobs() = Keyed(queue, absl::StrCat("key", k));
  }
  for (int i = 0; i < kFree; ++i) *batch.add_jobs() = MakeJob(queue);
  v1::EnqueueBatchResponse enqueued;
  const absl::Time start = absl::Now();
  JW_ASSERT_OK(EnqueueBatch(*stub_, batch, &enqueued));

  absl::Mutex mu;
  std::map<std::string, std::vector<absl::Time>> arrivals;  // by key ("" for none)
  int received = 0;
  std::vector<std::thread> takers;
  for (auto& reader : readers) {
    takers.emplace_back([&, r = reader.get()] {
      const absl::Time until = start + absl::Seconds(15);
      while (absl::Now() < until) {
        {
          absl::MutexLock lock(&mu);
          if (received >= kJobs) return;
        }
        std::optional<v1::ClaimedJob> job = r->Next(absl::Milliseconds(200));
        if (!job) continue;
        {
          absl::MutexLock lock(&mu);
          arrivals[job->job().concurrency_key()].push_back(absl::Now());
          ++received;
        }
        JW_EXPECT_OK(Ack(*stub_, *job));
      }
    });
  }
  for (std::thread& t : takers) t.join();
  ASSERT_EQ(received, kJobs) << "a key stalled";
  ASSERT_EQ(arrivals[""].size(), static_cast<size_t>(kFree));
  EXPECT_LT(arrivals[""].back() - start, absl::Seconds(1)) << "keyless jobs waited for keys";
  for (int k = 0; k < kKeys; ++k) {
    std::vector<absl::Time> at = arrivals[absl::StrCat("key", k)];
    ASSERT_EQ(at.size(), static_cast<size_t>(kJobsPerKey)) << "key" << k;
    std::sort(at.begin(), at.end());
    // Over any span [at[i], at[j]] a key's bucket allows burst + count *
    // span / interval; one token more is allowed for the delivery's jitter.
    for (size_t i = 0; i < at.size(); ++i) {
      for (size_t j = i; j < at.size(); ++j) {
        const double span_ms = absl::ToDoubleMilliseconds(at[j] - at[i]);
        const double allowed = kBurst + kCount * span_ms / kIntervalMs + 1;
        ASSERT_LE(static_cast<double>(j - i + 1), allowed)
            << "key" << k << ": " << (j - i + 1) << " jobs within " << span_ms << " ms";
      }
    }
    const double total_ms = absl::ToDoubleMilliseconds(at.back() - start);
    EXPECT_GE(total_ms, (kJobsPerKey - kBurst - 1) * kIntervalMs / kCount)
        << "key" << k << " went faster than its limit";
    EXPECT_LE(total_ms, (kJobsPerKey - kBurst + 5) * kIntervalMs / kCount)
        << "key" << k << "'s parked jobs were not woken when its tokens came";
  }
}

}  // namespace
}  // namespace jobwire::testing
