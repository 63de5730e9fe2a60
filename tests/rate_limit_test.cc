// Queue rate limits (docs/semantics.md, "Rate limits"), through real brokers
// and a real Redis: CreateQueue / UpdateQueue refuse what they cannot do and
// change nothing; a limited queue hands out no more than its token bucket
// allows to several streams on two broker replicas (checked from the times
// the test's own readers received the jobs), and wakes its streams when
// tokens come back, without a poll per stream; removing the limit releases
// the waiting jobs at once; GetQueueStats shows the limit.
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

v1::RateLimit Limit(int32_t count, int64_t interval_ms, int32_t burst = 0) {
  v1::RateLimit limit;
  limit.set_count(count);
  limit.set_interval_ms(interval_ms);
  limit.set_burst(burst);
  return limit;
}

class RateLimitTest : public LifecycleTest {
 protected:
  void SetUp() override {
    LifecycleTest::SetUp();
    admin_ = v1::AdminService::NewStub(broker_->channel());
  }

  static void Deadline(grpc::ClientContext& context) {
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  }

  grpc::Status Create(const v1::CreateQueueRequest& request) {
    grpc::ClientContext context;
    Deadline(context);
    v1::CreateQueueResponse response;
    return admin_->CreateQueue(&context, request, &response);
  }
  grpc::Status Create(const std::string& queue, std::optional<v1::RateLimit> limit,
                      int partitions = 0) {
    v1::CreateQueueRequest request;
    request.set_queue(queue);
    request.set_partitions(partitions);
    if (limit) *request.mutable_rate_limit() = *limit;
    return Create(request);
  }
  grpc::Status Update(const v1::UpdateQueueRequest& request) {
    grpc::ClientContext context;
    Deadline(context);
    v1::UpdateQueueResponse response;
    return admin_->UpdateQueue(&context, request, &response);
  }
  grpc::Status UpdateLimit(const std::string& queue, const v1::RateLimit& limit) {
    v1::UpdateQueueRequest request;
    request.set_queue(queue);
    *request.mutable_rate_limit() = limit;
    return Update(request);
  }
  v1::QueueStats Stats(const std::string& queue) {
    grpc::ClientContext context;
    Deadline(context);
    v1::GetQueueStatsRequest request;
    request.set_queue(queue);
    v1::GetQueueStatsResponse response;
    EXPECT_TRUE(admin_->GetQueueStats(&context, request, &response).ok());
    return response.stats();
  }

  std::unique_ptr<v1::AdminService::Stub> admin_;
};

// The field a refusal names (BadRequest), or "" when it names none.
std::string FieldOf(const grpc::Status& status) {
  const std::string& message = status.error_message();
  return message.substr(0, message.find(':'));
}

TEST_F(RateLimitTest, RefusalsNameTheFieldAndChangeNothing) {
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

TEST_F(RateLimitTest, TheBucketHoldsAcrossStreamsAndReplicas) {
  const std::string queue = "metered";
  constexpr int32_t kCount = 5;
  constexpr int64_t kIntervalMs = 1000;
  constexpr int32_t kBurst = 3;
  constexpr int kJobs = 23;  // 3 at once, then 20 at 5 a second: about 4 s
  ASSERT_TRUE(Create(queue, Limit(kCount, kIntervalMs, kBurst)).ok());
  std::unique_ptr<BrokerProcess> other = AnotherBroker();
  JW_ASSERT_OK(other->Start());
  std::vector<std::unique_ptr<ClaimReader>> readers;
  readers.push_back(OpenClaim(MakeClaim({queue}, 10)));
  readers.push_back(OpenClaim(MakeClaim({queue}, 10)));
  readers.push_back(std::make_unique<ClaimReader>(other->NewStub(), MakeClaim({queue}, 10)));
  absl::SleepFor(absl::Milliseconds(300));  // every stream waits
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

TEST_F(RateLimitTest, RemovingTheLimitReleasesTheWaitingJobsAtOnce) {
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
