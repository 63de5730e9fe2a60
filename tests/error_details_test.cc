// Error details (proto/jobwire/v1/broker.proto, "Error details"): every
// error carries a google.rpc.Status in the gRPC binary details, with an
// ErrorInfo of domain "jobwire.dev" and a stable reason; INVALID_ARGUMENT
// adds a BadRequest naming the field; RESOURCE_EXHAUSTED adds a RetryInfo;
// batch results carry the reason. Each case drives the real broker into the
// error and decodes what a client receives.
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "broker/service/authorizer.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

// What a client decodes from a failed call's details.
struct Details {
  bool parsed = false;
  int code = 0;  // google.rpc.Status.code
  std::optional<google::rpc::ErrorInfo> info;
  std::optional<google::rpc::BadRequest> bad_request;
  std::optional<google::rpc::RetryInfo> retry;
};

Details Decode(const grpc::Status& status) {
  Details d;
  google::rpc::Status rpc;
  if (!rpc.ParseFromString(status.error_details())) return d;
  d.parsed = true;
  d.code = rpc.code();
  for (const google::protobuf::Any& any : rpc.details()) {
    if (google::rpc::ErrorInfo info; any.UnpackTo(&info)) d.info = info;
    if (google::rpc::BadRequest bad; any.UnpackTo(&bad)) d.bad_request = bad;
    if (google::rpc::RetryInfo retry; any.UnpackTo(&retry)) d.retry = retry;
  }
  return d;
}

// Checks that `status` failed with `code` and carries ErrorInfo `reason` in
// the jobwire.dev domain, with google.rpc.Status repeating code and message.
void ExpectReason(const grpc::Status& status, grpc::StatusCode code, const std::string& reason) {
  SCOPED_TRACE(StatusText(status));
  ASSERT_EQ(status.error_code(), code);
  Details d = Decode(status);
  ASSERT_TRUE(d.parsed) << "no google.rpc.Status in the details";
  EXPECT_EQ(d.code, static_cast<int>(code));
  ASSERT_TRUE(d.info.has_value()) << "no ErrorInfo";
  EXPECT_EQ(d.info->reason(), reason);
  EXPECT_EQ(d.info->domain(), "jobwire.dev");
}

std::unique_ptr<grpc::ClientContext> Context() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  return context;
}

class ErrorDetailsTest : public BrokerTest {
 protected:
  ErrorDetailsTest() : BrokerTest({"--max_claim_streams=2"}) {}
};

TEST_F(ErrorDetailsTest, AnInvalidFieldIsNamedInErrorInfoAndBadRequest) {
  v1::EnqueueRequest request = MakeJob("q");
  request.set_priority(1001);
  v1::EnqueueResponse response;
  grpc::Status status = Enqueue(*stub_, request, &response);
  ExpectReason(status, grpc::StatusCode::INVALID_ARGUMENT, "INVALID_FIELD");
  Details d = Decode(status);
  ASSERT_TRUE(d.info.has_value());
  EXPECT_EQ(d.info->metadata().at("field"), "priority");
  ASSERT_TRUE(d.bad_request.has_value());
  ASSERT_EQ(d.bad_request->field_violations_size(), 1);
  EXPECT_EQ(d.bad_request->field_violations(0).field(), "priority");
  EXPECT_EQ(d.bad_request->field_violations(0).description(), status.error_message());
  EXPECT_FALSE(d.retry.has_value());
}

TEST_F(ErrorDetailsTest, EachStateErrorHasItsReason) {
  // An unknown job.
  v1::Job job;
  ExpectReason(GetJob(*stub_, "q", "424242", &job), grpc::StatusCode::NOT_FOUND, "JOB_NOT_FOUND");

  // A stale lease token, then a job in the wrong state.
  const std::string id = MustEnqueue(*stub_, MakeJob("q"));
  std::unique_ptr<ClaimReader> reader = OpenClaim(MakeClaim({"q"}));
  std::optional<v1::ClaimedJob> claimed = reader->Next(absl::Seconds(10));
  ASSERT_TRUE(claimed.has_value());
  ExpectReason(Ack(*stub_, "q", id, claimed->lease_token() + "x"),
               grpc::StatusCode::FAILED_PRECONDITION, "LEASE_STALE");
  // Nothing changed: the job is still active under its lease.
  ASSERT_TRUE(GetJob(*stub_, "q", id, &job).ok());
  EXPECT_EQ(job.state(), kActive);
  EXPECT_TRUE(Ack(*stub_, *claimed).ok());
  grpc::Status cancel = Cancel(*stub_, "q", id);
  ExpectReason(cancel, grpc::StatusCode::FAILED_PRECONDITION, "JOB_STATE");
  Details d = Decode(cancel);
  ASSERT_TRUE(d.info.has_value());
  EXPECT_EQ(d.info->metadata().at("state"), "completed");
}

TEST_F(ErrorDetailsTest, BatchResultsCarryTheReason) {
  v1::EnqueueBatchRequest batch;
  *batch.add_jobs() = MakeJob("q");
  *batch.add_jobs() = MakeJob("");
  v1::EnqueueBatchResponse enqueued;
  ASSERT_TRUE(EnqueueBatch(*stub_, batch, &enqueued).ok());
  ASSERT_EQ(enqueued.results_size(), 2);
  EXPECT_EQ(enqueued.results(0).code(), 0);
  EXPECT_EQ(enqueued.results(0).reason(), "");
  EXPECT_EQ(enqueued.results(1).code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_EQ(enqueued.results(1).reason(), "INVALID_FIELD");

  v1::AckBatchRequest acks;
  v1::AckRequest* ack = acks.add_acks();
  ack->set_queue("q");
  ack->set_job_id("424242");
  ack->set_lease_token("no-such-lease");
  v1::AckBatchResponse acked;
  ASSERT_TRUE(AckBatch(*stub_, acks, &acked).ok());
  ASSERT_EQ(acked.results_size(), 1);
  EXPECT_EQ(acked.results(0).code(), static_cast<int>(grpc::StatusCode::NOT_FOUND));
  EXPECT_EQ(acked.results(0).reason(), "JOB_NOT_FOUND");
}

TEST_F(ErrorDetailsTest, AdminErrorsHaveTheirReasons) {
  std::unique_ptr<v1::AdminService::Stub> admin = v1::AdminService::NewStub(broker_->channel());
  v1::CreateQueueRequest create;
  create.set_queue("made");
  create.set_partitions(2);
  v1::CreateQueueResponse created;
  ASSERT_TRUE(admin->CreateQueue(Context().get(), create, &created).ok());
  ExpectReason(admin->CreateQueue(Context().get(), create, &created),
               grpc::StatusCode::ALREADY_EXISTS, "QUEUE_EXISTS");
  v1::UpdateQueueRequest update;
  update.set_queue("never-made");
  update.set_partitions(2);
  v1::UpdateQueueResponse updated;
  ExpectReason(admin->UpdateQueue(Context().get(), update, &updated), grpc::StatusCode::NOT_FOUND,
               "QUEUE_NOT_FOUND");
}

TEST_F(ErrorDetailsTest, TooManyClaimStreamsSaysWhenToRetry) {
  std::unique_ptr<ClaimReader> first = OpenClaim(MakeClaim({"q"}));
  std::unique_ptr<ClaimReader> second = OpenClaim(MakeClaim({"q"}));
  // The first two are open once a job reaches each of them.
  MustEnqueue(*stub_, MakeJob("q"));
  MustEnqueue(*stub_, MakeJob("q"));
  ASSERT_TRUE(first->Next(absl::Seconds(10)).has_value());
  ASSERT_TRUE(second->Next(absl::Seconds(10)).has_value());
  std::unique_ptr<ClaimReader> third = OpenClaim(MakeClaim({"q"}));
  std::optional<grpc::Status> end = third->WaitForEnd(absl::Seconds(10));
  ASSERT_TRUE(end.has_value());
  ExpectReason(*end, grpc::StatusCode::RESOURCE_EXHAUSTED, "TOO_MANY_CLAIM_STREAMS");
  Details d = Decode(*end);
  ASSERT_TRUE(d.retry.has_value());
  EXPECT_EQ(d.retry->retry_delay().seconds(), 1);
  EXPECT_EQ(d.retry->retry_delay().nanos(), 0);
}

TEST_F(ErrorDetailsTest, RedisDownIsRedisUnavailable) {
  if (redis_ == nullptr) GTEST_SKIP() << "stops the single Redis server";
  redis_->Stop();
  v1::Job job;
  grpc::Status status;
  // The broker notices the lost connection on its next command.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  do {
    status = GetJob(*stub_, "q", "1", &job);
  } while (status.error_code() != grpc::StatusCode::UNAVAILABLE && absl::Now() < deadline);
  ExpectReason(status, grpc::StatusCode::UNAVAILABLE, "REDIS_UNAVAILABLE");
}

// Tokens: a missing and an unknown token, and one that may not use a queue.
class ErrorDetailsAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/jobwire-tokens-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    const std::string tokens_file = dir_ + "/tokens.json";
    std::ofstream(tokens_file) << R"({"tokens": [{"name": "producer", "sha256": ")"
                               << service::Sha256Hex(kToken) << R"(", "enqueue": ["mine"]}]})";
    redis_ = std::make_unique<RedisServer>();
    JW_ASSERT_OK(redis_->Start());
    broker_ = std::make_unique<BrokerProcess>(
        redis_->port(), std::vector<std::string>{"--auth_tokens_file=" + tokens_file});
    broker_->set_client_security({nullptr, kToken});
    JW_ASSERT_OK(broker_->Start());
  }
  void TearDown() override {
    broker_.reset();
    redis_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::unique_ptr<v1::BrokerService::Stub> StubWith(const std::string& token) const {
    return v1::BrokerService::NewStub(MakeChannel(broker_->address(), nullptr, token));
  }

  static constexpr char kToken[] = "producer-token-e41d";
  std::string dir_;
  std::unique_ptr<RedisServer> redis_;
  std::unique_ptr<BrokerProcess> broker_;
};

TEST_F(ErrorDetailsAuthTest, TokenErrorsHaveTheirReasons) {
  v1::EnqueueResponse response;
  ExpectReason(Enqueue(*StubWith(""), MakeJob("mine"), &response),
               grpc::StatusCode::UNAUTHENTICATED, "TOKEN_MISSING");
  ExpectReason(Enqueue(*StubWith("not-a-known-token"), MakeJob("mine"), &response),
               grpc::StatusCode::UNAUTHENTICATED, "TOKEN_INVALID");
  grpc::Status denied = Enqueue(*StubWith(kToken), MakeJob("theirs"), &response);
  ExpectReason(denied, grpc::StatusCode::PERMISSION_DENIED, "TOKEN_NOT_PERMITTED");
  Details d = Decode(denied);
  ASSERT_TRUE(d.info.has_value());
  EXPECT_EQ(d.info->metadata().at("queue"), "theirs");
  EXPECT_TRUE(Enqueue(*StubWith(kToken), MakeJob("mine"), &response).ok());
}

}  // namespace
}  // namespace jobwire::testing
