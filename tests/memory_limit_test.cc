// Redis over its maxmemory with noeviction (docs/guarantees.md, "Redis
// memory limit"): scripts that create work (enqueue, claim, retry_dead) are
// refused before they run and Enqueue answers RESOURCE_EXHAUSTED naming the
// cause, while finishing work (Ack, Fail, ExtendLease, Cancel, the reaper)
// and reads (GetQueueStats) still succeed. Once memory is freed, enqueues
// are accepted again and open Claim streams deliver by themselves.
//
// The limit is real: maxmemory is set at runtime just above the memory in
// use, and filler keys are written until Redis refuses them.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

constexpr char kQueue[] = "mem";
constexpr char kKeyBase[] = "jw:{mem}:";  // broker/store/keys.h, default prefix

absl::Status ConfigSet(RedisServer& redis, const std::string& name, const std::string& value) {
  absl::StatusOr<RedisReply> reply = redis.Command("CONFIG", "SET", name, value);
  if (!reply.ok()) return reply.status();
  if (reply->is_error()) return absl::InternalError(reply->str);
  return absl::OkStatus();
}

// The job's state, or nullopt when GetJob fails.
std::optional<v1::JobState> StateOf(v1::BrokerService::Stub& stub, const std::string& id,
                                    v1::Job* out = nullptr) {
  v1::Job job;
  if (!GetJob(stub, kQueue, id, &job).ok()) return std::nullopt;
  if (out != nullptr) *out = job;
  return job.state();
}

std::unique_ptr<grpc::ClientContext> Context() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return context;
}

class MemoryLimitTest : public BrokerTest {};

TEST_F(MemoryLimitTest, CreatingWorkIsRefusedAndFinishingWorkSucceeds) {
  // Before the limit: a job each to ack, fail, leave to lease expiry, cancel,
  // and one left pending for after.
  const std::string to_ack = MustEnqueue(*stub_, MakeJob(kQueue, "ack me"));
  const std::string to_fail = MustEnqueue(*stub_, MakeJob(kQueue, "fail me"));
  auto worker = OpenClaim(MakeClaim({kQueue}, /*max_in_flight=*/2, /*lease_ms=*/60000));
  std::optional<v1::ClaimedJob> acked = worker->Next(absl::Seconds(10));
  std::optional<v1::ClaimedJob> failed = worker->Next(absl::Seconds(10));
  ASSERT_TRUE(acked.has_value() && failed.has_value());
  if (acked->job().id() != to_ack) std::swap(acked, failed);
  ASSERT_EQ(acked->job().id(), to_ack);
  ASSERT_EQ(failed->job().id(), to_fail);

  const std::string to_expire = MustEnqueue(*stub_, MakeJob(kQueue, "let my lease expire"));
  auto expiring = OpenClaim(MakeClaim({kQueue}, 1, /*lease_ms=*/4000, "expiring-worker"));
  std::optional<v1::ClaimedJob> expired = expiring->Next(absl::Seconds(10));
  ASSERT_TRUE(expired.has_value());
  ASSERT_EQ(expired->job().id(), to_expire);
  expiring->Cancel();
  // Both streams are full (a cancelled stream's job keeps its lease): these
  // stay pending.
  const std::string pending = MustEnqueue(*stub_, MakeJob(kQueue, "pending through the limit"));
  const std::string to_cancel = MustEnqueue(*stub_, MakeJob(kQueue, "cancel me"));

  JW_ASSERT_OK(redis_->FillToMaxmemory());
  ASSERT_EQ(StateOf(*stub_, to_expire), kActive) << "the fill outlasted the 4 s lease";
  const int64_t keys_before = redis_->DbSize();
  absl::StatusOr<RedisReply> seq_before = redis_->Command("GET", absl::StrCat(kKeyBase, "seq"));
  ASSERT_TRUE(seq_before.ok());

  // Enqueue is refused, naming the cause; nothing is stored.
  v1::EnqueueRequest job = MakeJob(kQueue, "refused");
  job.set_idempotency_key("refused-key");
  v1::EnqueueResponse response;
  grpc::Status refused = Enqueue(*stub_, job, &response);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << StatusText(refused);
  EXPECT_TRUE(absl::StrContains(refused.error_message(), "maxmemory")) << refused.error_message();
  EXPECT_TRUE(absl::StrContains(refused.error_message(), "enqueue refused"))
      << refused.error_message();
  v1::EnqueueBatchRequest batch;
  *batch.add_jobs() = MakeJob(kQueue, "refused in a batch");
  v1::EnqueueBatchResponse batch_response;
  JW_EXPECT_OK(EnqueueBatch(*stub_, batch, &batch_response));
  ASSERT_EQ(batch_response.results_size(), 1);
  EXPECT_EQ(batch_response.results(0).code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << batch_response.results(0).DebugString();
  EXPECT_EQ(redis_->DbSize(), keys_before);
  absl::StatusOr<RedisReply> seq_after = redis_->Command("GET", absl::StrCat(kKeyBase, "seq"));
  ASSERT_TRUE(seq_after.ok());
  EXPECT_EQ(seq_after->str, seq_before->str);

  // Work in flight finishes.
  v1::ExtendLeaseRequest extend;
  extend.set_queue(kQueue);
  extend.set_job_id(to_ack);
  extend.set_lease_token(acked->lease_token());
  extend.set_lease_ms(60000);
  v1::ExtendLeaseResponse extended;
  JW_EXPECT_OK(ExtendLease(*stub_, extend, &extended));
  JW_EXPECT_OK(Ack(*stub_, *acked, "a result stored above the limit"));
  EXPECT_EQ(StateOf(*stub_, to_ack), kCompleted);
  v1::FailResponse fail_response;
  JW_EXPECT_OK(Fail(*stub_, MakeFail(*failed, "boom"), &fail_response));
  EXPECT_EQ(fail_response.outcome(), kRetryScheduled);
  JW_EXPECT_OK(Cancel(*stub_, kQueue, to_cancel));
  EXPECT_EQ(StateOf(*stub_, to_cancel), kDead);

  // The reaper settles the expired lease.
  v1::Job reaped;
  const absl::Time reap_deadline = absl::Now() + absl::Seconds(12);
  while (StateOf(*stub_, to_expire, &reaped) == kActive && absl::Now() < reap_deadline) {
    absl::SleepFor(absl::Milliseconds(200));
  }
  EXPECT_NE(reaped.state(), kActive);
  EXPECT_TRUE(absl::StrContains(reaped.error(), "lease expired")) << reaped.DebugString();

  // Reads still answer; redriving a dead job creates work and is refused.
  std::unique_ptr<v1::AdminService::Stub> admin = v1::AdminService::NewStub(broker_->channel());
  v1::GetQueueStatsRequest stats_request;
  stats_request.set_queue(kQueue);
  v1::GetQueueStatsResponse stats;
  JW_EXPECT_OK(admin->GetQueueStats(Context().get(), stats_request, &stats));
  EXPECT_GE(stats.stats().dead(), 1);
  v1::RetryDeadRequest redrive;
  redrive.set_queue(kQueue);
  redrive.add_job_ids(to_cancel);
  v1::RetryDeadResponse redriven;
  grpc::Status redrive_status = admin->RetryDead(Context().get(), redrive, &redriven);
  EXPECT_EQ(redrive_status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << StatusText(redrive_status);

  // No new run starts: the worker has a free slot and `pending` is due, but
  // claim.lua is refused.
  EXPECT_FALSE(worker->Next(absl::Seconds(3)).has_value());
  EXPECT_EQ(StateOf(*stub_, pending), kPending);

  // Memory freed: the open stream delivers without any new enqueue, and
  // enqueues are accepted again.
  JW_ASSERT_OK(ConfigSet(*redis_, "maxmemory", "0"));
  std::optional<v1::ClaimedJob> resumed = worker->Next(absl::Seconds(10));
  ASSERT_TRUE(resumed.has_value()) << "no delivery after memory was freed";
  JW_EXPECT_OK(Enqueue(*stub_, job, &response));
  EXPECT_FALSE(response.duplicate());
}

}  // namespace
}  // namespace jobwire::testing
