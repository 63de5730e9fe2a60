// Input validation and error codes of the broker, table-driven. Every bad
// request must answer INVALID_ARGUMENT with a message naming the field, and
// leave Redis untouched (DBSIZE 0 on a fresh server).
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

constexpr int kMaxPayloadBytes = 1024;

class ValidationTest : public BrokerTest {
 protected:
  ValidationTest()
      : BrokerTest({absl::StrCat("--max_payload_bytes=", kMaxPayloadBytes)}) {}
};

struct EnqueueCase {
  std::string name;
  std::function<void(v1::EnqueueRequest&)> mutate;
  std::string field;  // Must appear in the error message.
};

std::vector<EnqueueCase> BadEnqueueCases() {
  using R = v1::EnqueueRequest;
  return {
      {"empty queue", [](R& r) { r.set_queue(""); }, "queue"},
      {"queue with a space", [](R& r) { r.set_queue("a b"); }, "queue"},
      {"queue with a brace", [](R& r) { r.set_queue("a{b"); }, "queue"},
      {"queue of 129 chars",
       [](R& r) { r.set_queue(std::string(129, 'q')); }, "queue"},
      {"empty type", [](R& r) { r.set_type(""); }, "type"},
      {"priority 1001", [](R& r) { r.set_priority(1001); }, "priority"},
      {"priority -1001", [](R& r) { r.set_priority(-1001); }, "priority"},
      {"negative delay_ms", [](R& r) { r.set_delay_ms(-1); }, "delay_ms"},
      {"delay_ms and run_at_ms",
       [](R& r) {
         r.set_delay_ms(1000);
         r.set_run_at_ms(NowMs() + 1000);
       },
       "delay_ms"},
      {"max_attempts 1001", [](R& r) { r.set_max_attempts(1001); },
       "max_attempts"},
      {"max_attempts -1", [](R& r) { r.set_max_attempts(-1); },
       "max_attempts"},
      {"payload over the limit",
       [](R& r) { r.set_payload(std::string(kMaxPayloadBytes + 1, 'p')); },
       "payload"},
      {"idempotency key of 257 bytes",
       [](R& r) { r.set_idempotency_key(std::string(257, 'k')); },
       "idempotency_key"},
      {"completed_retention_ms above the default maximum",
       [](R& r) { r.set_completed_retention_ms(7LL * 24 * 3600 * 1000 + 1); },
       "completed_retention_ms: must be in 0..604800000"},
      {"negative completed_retention_ms",
       [](R& r) { r.set_completed_retention_ms(-1); },
       "completed_retention_ms: must be in 0..604800000"},
  };
}

TEST_F(ValidationTest, BadEnqueueIsRejectedAndStoresNothing) {
  for (const EnqueueCase& c : BadEnqueueCases()) {
    SCOPED_TRACE(c.name);
    v1::EnqueueRequest request = MakeJob("valid.queue", "payload");
    c.mutate(request);
    v1::EnqueueResponse response;
    grpc::Status status = Enqueue(*stub_, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << StatusText(status);
    EXPECT_TRUE(absl::StrContains(status.error_message(), c.field))
        << "message does not name " << c.field << ": "
        << status.error_message();
    EXPECT_EQ(RedisDbSize(), 0);
  }
}

// The same cases inside a batch: the call succeeds, the job gets code 3.
TEST_F(ValidationTest, BadJobInBatchIsRejectedAndStoresNothing) {
  for (const EnqueueCase& c : BadEnqueueCases()) {
    SCOPED_TRACE(c.name);
    v1::EnqueueBatchRequest batch;
    v1::EnqueueRequest* job = batch.add_jobs();
    *job = MakeJob("valid.queue", "payload");
    c.mutate(*job);
    v1::EnqueueBatchResponse response;
    JW_EXPECT_OK(EnqueueBatch(*stub_, batch, &response));
    ASSERT_EQ(response.results_size(), 1);
    EXPECT_EQ(response.results(0).code(), 3) << response.results(0).message();
    EXPECT_TRUE(absl::StrContains(response.results(0).message(), c.field))
        << "message does not name " << c.field << ": "
        << response.results(0).message();
    EXPECT_EQ(RedisDbSize(), 0);
  }
}

TEST_F(ValidationTest, BatchSizeOutsideOneToThousandIsRejected) {
  struct Case {
    std::string name;
    int jobs;
  };
  for (const Case& c : std::vector<Case>{{"empty batch", 0},
                                         {"1001 jobs", 1001}}) {
    SCOPED_TRACE(c.name);
    v1::EnqueueBatchRequest batch;
    for (int i = 0; i < c.jobs; ++i) *batch.add_jobs() = MakeJob("batch.q");
    v1::EnqueueBatchResponse response;
    grpc::Status status = EnqueueBatch(*stub_, batch, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << StatusText(status);
    EXPECT_TRUE(absl::StrContains(status.error_message(), "jobs"))
        << status.error_message();
    EXPECT_EQ(RedisDbSize(), 0);
  }
}

TEST_F(ValidationTest, AckBatchSizeOutsideOneToThousandIsRejected) {
  for (int acks : {0, 1001}) {
    SCOPED_TRACE(acks);
    v1::AckBatchRequest batch;
    for (int i = 0; i < acks; ++i) {
      v1::AckRequest* ack = batch.add_acks();
      ack->set_queue("batch.q");
      ack->set_job_id("000000000001");
      ack->set_lease_token("t");
    }
    v1::AckBatchResponse response;
    grpc::Status status = AckBatch(*stub_, batch, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << StatusText(status);
    EXPECT_THAT(status.error_message(),
                ::testing::StartsWith("acks: must hold 1..1000 acks"));
    EXPECT_EQ(response.results_size(), 0);
  }
}

TEST_F(ValidationTest, BadClaimEndsTheStreamBeforeAnyJob) {
  const std::string queue = "claim.q";
  struct Case {
    std::string name;
    v1::ClaimRequest request;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"max_in_flight 1001", MakeClaim({queue}, 1001), "max_in_flight"},
      {"max_in_flight -1", MakeClaim({queue}, -1), "max_in_flight"},
      {"lease_ms 999", MakeClaim({queue}, 1, 999), "lease_ms"},
      {"lease_ms 43200001", MakeClaim({queue}, 1, 43200001), "lease_ms"},
      {"negative lease_ms", MakeClaim({queue}, 1, -1000), "lease_ms"},
      {"no queues", MakeClaim({}, 1), "queue"},
      {"bad queue name", MakeClaim({"bad queue"}, 1), "queue"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ClaimReader reader(broker_->NewStub(), c.request);
    std::optional<grpc::Status> end = reader.WaitForEnd(absl::Seconds(5));
    ASSERT_TRUE(end.has_value()) << "stream stayed open";
    EXPECT_EQ(end->error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << StatusText(*end);
    EXPECT_TRUE(absl::StrContains(end->error_message(), c.field))
        << "message does not name " << c.field << ": "
        << end->error_message();
    EXPECT_EQ(reader.received(), 0);
    EXPECT_EQ(RedisDbSize(), 0);
  }
}

// Enqueues and claims one job on `queue`.
class ActiveJobTest : public ValidationTest {
 protected:
  void ClaimOne(const std::string& queue) {
    id_ = MustEnqueue(*stub_, MakeJob(queue));
    ASSERT_FALSE(id_.empty());
    reader_ = OpenClaim(MakeClaim({queue}, 2, 30000));
    std::optional<v1::ClaimedJob> claimed = reader_->Next(absl::Seconds(5));
    ASSERT_TRUE(claimed.has_value());
    claimed_ = *claimed;
  }

  std::string id_;
  std::unique_ptr<ClaimReader> reader_;
  v1::ClaimedJob claimed_;
};

TEST_F(ActiveJobTest, ExtendLeaseBelowOneSecondIsRejected) {
  const std::string queue = "extend.q";
  ASSERT_NO_FATAL_FAILURE(ClaimOne(queue));
  v1::ExtendLeaseRequest request;
  request.set_queue(queue);
  request.set_job_id(id_);
  request.set_lease_token(claimed_.lease_token());
  request.set_lease_ms(500);
  v1::ExtendLeaseResponse response;
  grpc::Status status = ExtendLease(*stub_, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << StatusText(status);
  EXPECT_TRUE(absl::StrContains(status.error_message(), "lease_ms"))
      << status.error_message();
  v1::Job job;
  JW_ASSERT_OK(GetJob(*stub_, queue, id_, &job));
  EXPECT_EQ(job.lease_expires_at_ms(), claimed_.lease_expires_at_ms())
      << "the refused ExtendLease changed the lease";
}

TEST_F(ActiveJobTest, UnknownJobIdIsNotFound) {
  // A real id, looked up in a queue where it does not exist.
  ASSERT_NO_FATAL_FAILURE(ClaimOne("known.q"));
  const std::string other = "other.q";
  v1::Job job;
  EXPECT_EQ(GetJob(*stub_, other, id_, &job).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Ack(*stub_, other, id_, claimed_.lease_token()).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Cancel(*stub_, other, id_).error_code(),
            grpc::StatusCode::NOT_FOUND);
  v1::FailRequest fail = MakeFail(claimed_, "x");
  fail.set_queue(other);
  v1::FailResponse fail_response;
  EXPECT_EQ(Fail(*stub_, fail, &fail_response).error_code(),
            grpc::StatusCode::NOT_FOUND);
  v1::ExtendLeaseRequest extend;
  extend.set_queue(other);
  extend.set_job_id(id_);
  extend.set_lease_token(claimed_.lease_token());
  extend.set_lease_ms(5000);
  v1::ExtendLeaseResponse extend_response;
  EXPECT_EQ(ExtendLease(*stub_, extend, &extend_response).error_code(),
            grpc::StatusCode::NOT_FOUND);
  // And an id never issued in the job's own queue.
  EXPECT_EQ(GetJob(*stub_, "known.q", id_ + "0", &job).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(ActiveJobTest, AckWithAnotherTokenIsRefused) {
  const std::string queue = "token.q";
  ASSERT_NO_FATAL_FAILURE(ClaimOne(queue));
  const std::string other_id = MustEnqueue(*stub_, MakeJob(queue));
  std::optional<v1::ClaimedJob> other = reader_->Next(absl::Seconds(5));
  ASSERT_TRUE(other.has_value());
  ASSERT_EQ(other->job().id(), other_id);
  ASSERT_NE(other->lease_token(), claimed_.lease_token());

  // The other job's token (well-formed, but not this job's lease).
  EXPECT_EQ(Ack(*stub_, queue, id_, other->lease_token()).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  v1::Job job;
  JW_ASSERT_OK(GetJob(*stub_, queue, id_, &job));
  EXPECT_EQ(job.state(), kActive) << StateName(job.state());
  JW_EXPECT_OK(Ack(*stub_, claimed_));
}

}  // namespace
}  // namespace jobwire::testing
