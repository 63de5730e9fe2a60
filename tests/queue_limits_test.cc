// Queue limits (docs/semantics.md, "Rate limits" and "Concurrency limit"),
// through real brokers and a real Redis: CreateQueue / UpdateQueue refuse
// what they cannot do and change nothing; a rate-limited queue hands out no
// more than its token bucket allows to several streams on two broker
// replicas (checked from the times the test's own readers received the
// jobs), and wakes its streams when tokens come back, without a poll per
// stream; a queue with max_active never has more runs at once than that
// (checked from the test's own log of runs) and hands out the next job as
// soon as a run is settled, through either replica; removing a limit
// releases the waiting jobs at once; GetQueueStats shows the limits.
#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/lifecycle_test_util.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

class QueueLimitsTest : public QueueSettingsTest {
 protected:
  grpc::Status Create(const v1::CreateQueueRequest& request) { return CreateQueue(request); }
  grpc::Status Create(const std::string& queue, std::optional<v1::RateLimit> limit,
                      int partitions = 0) {
    v1::CreateQueueRequest request;
    request.set_queue(queue);
    request.set_partitions(partitions);
    if (limit) *request.mutable_rate_limit() = *limit;
    return Create(request);
  }
  grpc::Status Update(const v1::UpdateQueueRequest& request) { return UpdateQueue(request); }
  grpc::Status UpdateLimit(const std::string& queue, const v1::RateLimit& limit) {
    v1::UpdateQueueRequest request;
    request.set_queue(queue);
    *request.mutable_rate_limit() = limit;
    return Update(request);
  }
};

TEST_F(QueueLimitsTest, RefusalsNameTheFieldAndChangeNothing) {
  ASSERT_TRUE(Create("limited", Limit(5, 1000)).ok());
  ASSERT_TRUE(Create("wide", std::nullopt, 4).ok());
  struct Case {
    const char* what;
    std::function<grpc::Status()> call;
    grpc::StatusCode code;
    const char* field;  // the message's first word
  };
  const std::vector<Case> cases = {
      {"create: count 0", [&] { return Create("c1", Limit(0, 1000)); },
       grpc::INVALID_ARGUMENT, "rate_limit.count"},
      {"create: count too large", [&] { return Create("c2", Limit(1000001, 1000)); },
       grpc::INVALID_ARGUMENT, "rate_limit.count"},
      {"create: interval 0", [&] { return Create("c3", Limit(5, 0)); },
       grpc::INVALID_ARGUMENT, "rate_limit.interval_ms"},
      {"create: interval over a day", [&] { return Create("c4", Limit(5, 86400001)); },
       grpc::INVALID_ARGUMENT, "rate_limit.interval_ms"},
      {"create: negative burst", [&] { return Create("c5", Limit(5, 1000, -1)); },
       grpc::INVALID_ARGUMENT, "rate_limit.burst"},
      {"create: with 4 partitions", [&] { return Create("c6", Limit(5, 1000), 4); },
       grpc::INVALID_ARGUMENT, "rate_limit"},
      {"update: count 0 with an interval",
       [&] { return UpdateLimit("limited", Limit(0, 1000)); }, grpc::INVALID_ARGUMENT,
       "rate_limit.count"},
      {"update: a limit on a queue of 4 partitions",
       [&] { return UpdateLimit("wide", Limit(5, 1000)); }, grpc::FAILED_PRECONDITION,
       "rate_limit"},
      {"update: partitions of a limited queue",
       [&] {
         v1::UpdateQueueRequest request;
         request.set_queue("limited");
         request.set_partitions(2);
         return Update(request);
       },
       grpc::FAILED_PRECONDITION, "rate_limit"},
  };
  for (const Case& c : cases) {
    const grpc::Status status = c.call();
    EXPECT_EQ(status.error_code(), c.code) << c.what << ": " << status.error_message();
    EXPECT_EQ(FieldOf(status), c.field) << c.what << ": " << status.error_message();
  }
  const v1::QueueStats limited = Stats("limited");
  EXPECT_EQ(limited.partitions(), 1);
  ASSERT_TRUE(limited.has_rate_limit());
  EXPECT_EQ(limited.rate_limit().count(), 5);
  EXPECT_EQ(limited.rate_limit().interval_ms(), 1000);
  EXPECT_EQ(limited.rate_limit().burst(), 5) << "burst 0 means count";
  const v1::QueueStats wide = Stats("wide");
  EXPECT_EQ(wide.partitions(), 4);
  EXPECT_FALSE(wide.has_rate_limit());
  for (const char* queue : {"c1", "c2", "c3", "c4", "c5", "c6"}) {
    EXPECT_EQ(Stats(queue).partitions(), 1) << queue << " was created";
  }
}

// What one stream received: the arrival time of each job.
struct Arrivals {
  absl::Mutex mu;
  std::vector<absl::Time> at;
};

TEST_F(QueueLimitsTest, MaxActiveRefusalsNameTheFieldAndChangeNothing) {
  auto create = [&](const std::string& queue, int32_t max_active, int partitions) {
    v1::CreateQueueRequest request;
    request.set_queue(queue);
    request.set_partitions(partitions);
    request.set_max_active(max_active);
    return Create(request);
  };
  auto update = [&](const std::string& queue, int32_t max_active, int partitions) {
    v1::UpdateQueueRequest request;
    request.set_queue(queue);
    request.set_partitions(partitions);
    request.set_max_active(max_active);
    return Update(request);
  };
  ASSERT_TRUE(create("capped", 3, 0).ok());
  ASSERT_TRUE(create("wide", 0, 4).ok());
  struct Case {
    const char* what;
    grpc::Status status;
    grpc::StatusCode code;
  };
  const std::vector<Case> cases = {
      {"create: negative", create("m1", -1, 0), grpc::INVALID_ARGUMENT},
      {"create: too large", create("m2", 1000001, 0), grpc::INVALID_ARGUMENT},
      {"create: with 4 partitions", create("m3", 2, 4), grpc::INVALID_ARGUMENT},
      {"update: negative", update("capped", -1, 0), grpc::INVALID_ARGUMENT},
      {"update: on a queue of 4 partitions", update("wide", 2, 0), grpc::FAILED_PRECONDITION},
      {"update: partitions of a capped queue", update("capped", 3, 2), grpc::FAILED_PRECONDITION},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.status.error_code(), c.code) << c.what << ": " << c.status.error_message();
    EXPECT_EQ(FieldOf(c.status), "max_active") << c.what << ": " << c.status.error_message();
  }
  EXPECT_EQ(Stats("capped").max_active(), 3);
  EXPECT_EQ(Stats("capped").partitions(), 1);
  EXPECT_EQ(Stats("wide").max_active(), 0);
  EXPECT_EQ(Stats("wide").partitions(), 4);
}

// One run as the test's takers logged it.
struct RunLog {
  absl::Time start;  // received
  absl::Time end;    // the handler's work done, before its Ack
};

TEST_F(QueueLimitsTest, MaxActiveHoldsAcrossStreamsAndReplicas) {
  const std::string queue = "capped";
  constexpr int32_t kMaxActive = 2;
  constexpr int kJobs = 12;
  constexpr absl::Duration kWork = absl::Milliseconds(150);
  v1::CreateQueueRequest create;
  create.set_queue(queue);
  create.set_max_active(kMaxActive);
  ASSERT_TRUE(Create(create).ok());
  absl::StatusOr<TwoReplicaStreams> streams = StreamsOnTwoReplicas(queue, 5);
  JW_ASSERT_OK(streams.status());
  std::vector<std::unique_ptr<ClaimReader>>& readers = streams->readers;
  v1::BrokerService::Stub& other_stub = *streams->other_stub;
  v1::EnqueueBatchRequest batch;
  for (int i = 0; i < kJobs; ++i) *batch.add_jobs() = MakeJob(queue);
  v1::EnqueueBatchResponse enqueued;
  const absl::Time begin = absl::Now();
  JW_ASSERT_OK(EnqueueBatch(*stub_, batch, &enqueued));

  absl::Mutex mu;
  std::vector<RunLog> runs;
  std::vector<std::thread> takers;
  for (size_t t = 0; t < readers.size(); ++t) {
    takers.emplace_back([&, t, r = readers[t].get()] {
      const absl::Time until = begin + absl::Seconds(15);
      for (int n = 0; absl::Now() < until; ++n) {
        {
          absl::MutexLock lock(&mu);
          if (static_cast<int>(runs.size()) >= kJobs) return;
        }
        std::optional<v1::ClaimedJob> job = r->Next(absl::Milliseconds(200));
        if (!job) continue;
        RunLog run{absl::Now(), absl::InfinitePast()};
        absl::SleepFor(kWork);
        run.end = absl::Now();
        {
          absl::MutexLock lock(&mu);
          runs.push_back(run);
        }
        // Settled through either replica, whichever granted the lease.
        JW_EXPECT_OK(Ack((t + n) % 2 == 0 ? *stub_ : other_stub, *job));
      }
    });
  }
  for (std::thread& t : takers) t.join();
  ASSERT_EQ(static_cast<int>(runs.size()), kJobs) << "the capped queue stalled";
  // The most runs at once, from the log: at each start, the runs begun
  // before it and not yet ended.
  int most = 0;
  for (const RunLog& a : runs) {
    int at_once = 0;
    for (const RunLog& b : runs) at_once += b.start <= a.start && b.end > a.start;
    most = std::max(most, at_once);
  }
  EXPECT_LE(most, kMaxActive) << "more runs at once than max_active";
  EXPECT_EQ(most, kMaxActive) << "the limit was never reached: the test shows nothing";
  absl::Time last = begin;
  for (const RunLog& r : runs) last = std::max(last, r.end);
  // 12 runs of 150 ms, 2 at once: about 0.9 s when each settle frees its
  // slot at once; the 1 s recheck alone would take about 6 s.
  EXPECT_LT(last - begin, absl::Seconds(3)) << "a freed slot waited for the recheck";
}

TEST_F(QueueLimitsTest, RemovingMaxActiveReleasesTheWaitingJobsAtOnce) {
  const std::string queue = "one-at-a-time";
  v1::CreateQueueRequest create;
  create.set_queue(queue);
  create.set_max_active(1);
  ASSERT_TRUE(Create(create).ok());
  auto reader = OpenClaim(MakeClaim({queue}, 5));
  for (int i = 0; i < 3; ++i) MustEnqueue(*stub_, MakeJob(queue));
  ASSERT_TRUE(reader->Next(kPrompt));
  EXPECT_FALSE(reader->Next(kQuiet)) << "a second run while one is active";
  v1::UpdateQueueRequest update;
  update.set_queue(queue);
  update.set_max_active(0);
  ASSERT_TRUE(Update(update).ok());
  EXPECT_EQ(Stats(queue).max_active(), 0);
  EXPECT_TRUE(reader->Next(kPrompt));
  EXPECT_TRUE(reader->Next(kPrompt));
}

TEST_F(QueueLimitsTest, TheBucketHoldsAcrossStreamsAndReplicas) {
  const std::string queue = "metered";
  constexpr int32_t kCount = 5;
  constexpr int64_t kIntervalMs = 1000;
  constexpr int32_t kBurst = 3;
  constexpr int kJobs = 23;  // 3 at once, then 20 at 5 a second: about 4 s
  ASSERT_TRUE(Create(queue, Limit(kCount, kIntervalMs, kBurst)).ok());
  absl::StatusOr<TwoReplicaStreams> streams = StreamsOnTwoReplicas(queue, 10);
  JW_ASSERT_OK(streams.status());
  std::vector<std::unique_ptr<ClaimReader>>& readers = streams->readers;
  v1::EnqueueBatchRequest batch;
  for (int i = 0; i < kJobs; ++i) *batch.add_jobs() = MakeJob(queue);
  v1::EnqueueBatchResponse enqueued;
  JW_ASSERT_OK(EnqueueBatch(*stub_, batch, &enqueued));
  const absl::Time start = absl::Now();

  Arrivals arrivals;
  std::vector<std::thread> takers;
  for (auto& reader : readers) {
    takers.emplace_back([&, r = reader.get()] {
      const absl::Time until = start + absl::Seconds(15);
      while (absl::Now() < until) {
        {
          absl::MutexLock lock(&arrivals.mu);
          if (static_cast<int>(arrivals.at.size()) >= kJobs) return;
        }
        std::optional<v1::ClaimedJob> job = r->Next(absl::Milliseconds(200));
        if (!job) continue;
        {
          absl::MutexLock lock(&arrivals.mu);
          arrivals.at.push_back(absl::Now());
        }
        JW_EXPECT_OK(Ack(*stub_, *job));
      }
    });
  }
  for (std::thread& t : takers) t.join();
  std::vector<absl::Time> at = arrivals.at;
  ASSERT_EQ(static_cast<int>(at.size()), kJobs) << "the limited queue stalled";
  std::sort(at.begin(), at.end());
  // Over any span [at[i], at[j]] the bucket allows burst + count * span /
  // interval; one token more is allowed for the delivery's own jitter.
  for (size_t i = 0; i < at.size(); ++i) {
    for (size_t j = i; j < at.size(); ++j) {
      const double span_ms = absl::ToDoubleMilliseconds(at[j] - at[i]);
      const double allowed = kBurst + kCount * span_ms / kIntervalMs + 1;
      ASSERT_LE(static_cast<double>(j - i + 1), allowed)
          << (j - i + 1) << " jobs within " << span_ms << " ms";
    }
  }
  const double total_ms = absl::ToDoubleMilliseconds(at.back() - start);
  EXPECT_GE(total_ms, (kJobs - kBurst - 1) * kIntervalMs / kCount)
      << "faster than the limit";
  EXPECT_LE(total_ms, (kJobs - kBurst + 5) * kIntervalMs / kCount)
      << "the streams were not woken when tokens came back";
}

TEST_F(QueueLimitsTest, RemovingTheLimitReleasesTheWaitingJobsAtOnce) {
  const std::string queue = "slow";
  ASSERT_TRUE(Create(queue, Limit(1, 60000)).ok());
  auto reader = OpenClaim(MakeClaim({queue}, 20));  // jobs are never acked here
  for (int i = 0; i < 4; ++i) MustEnqueue(*stub_, MakeJob(queue));
  ASSERT_TRUE(reader->Next(kPrompt)) << "the bucket starts full: one token";
  EXPECT_FALSE(reader->Next(kQuiet)) << "a second job before the next token (60 s)";
  // A faster limit applies to the next claim: its bucket keeps the tokens
  // (none) and gains 1 every 100 ms.
  ASSERT_TRUE(UpdateLimit(queue, Limit(10, 1000, 1)).ok());
  EXPECT_TRUE(reader->Next(kPrompt)) << "no job under the faster limit";
  v1::RateLimit remove;
  ASSERT_TRUE(UpdateLimit(queue, remove).ok());
  EXPECT_FALSE(Stats(queue).has_rate_limit());
  EXPECT_TRUE(reader->Next(kPrompt));
  EXPECT_TRUE(reader->Next(kPrompt));
  // An unlimited queue again: jobs go out at once.
  const absl::Time before = absl::Now();
  for (int i = 0; i < 10; ++i) MustEnqueue(*stub_, MakeJob(queue));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(reader->Next(kPrompt)) << "job " << i;
  EXPECT_LT(absl::Now() - before, absl::Seconds(3));
}

}  // namespace
}  // namespace jobwire::testing
