// jobwire::client::Client against a real redis-server and the real broker.
#include "client/cpp/client.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "jobwire/v1/broker.grpc.pb.h"
#include "tests/test_harness.h"

namespace jobwire::client {
namespace {

using ::jobwire::testing::BrokerTest;
using ::jobwire::testing::kDead;
using ::jobwire::testing::kPending;
using ::jobwire::testing::NowMs;
using ::jobwire::testing::PickFreePort;

class ClientTest : public BrokerTest {
 protected:
  void SetUp() override {
    BrokerTest::SetUp();
    client_ = std::make_unique<Client>(ClientOptions{broker_->address()});
  }
  std::unique_ptr<Client> client_;
};

TEST_F(ClientTest, EnqueueStoresEveryOptionAndGetJobReadsItBack) {
  EnqueueOptions options;
  options.priority = 7;
  options.delay_ms = 60000;
  options.max_attempts = 9;
  options.idempotency_key = "order-1";
  options.backoff_base_ms = 250;
  options.backoff_max_ms = 5000;
  const std::string kBytes("raw\0bytes", 9);
  int64_t before = NowMs();
  absl::StatusOr<Enqueued> enqueued = client_->Enqueue("q", "resize", kBytes, options);
  JW_ASSERT_OK(enqueued.status());
  EXPECT_FALSE(enqueued->duplicate);

  absl::StatusOr<v1::Job> job = client_->GetJob("q", enqueued->job_id);
  JW_ASSERT_OK(job.status());
  EXPECT_EQ(job->type(), "resize");
  EXPECT_EQ(job->payload(), kBytes);
  EXPECT_EQ(job->priority(), 7);
  EXPECT_EQ(job->state(), kPending);
  EXPECT_GE(job->available_at_ms(), before + 59000);
  EXPECT_EQ(job->max_attempts(), 9);
  EXPECT_EQ(job->idempotency_key(), "order-1");
  EXPECT_EQ(job->backoff_base_ms(), 250);
  EXPECT_EQ(job->backoff_max_ms(), 5000);

  absl::StatusOr<Enqueued> again = client_->Enqueue("q", "resize", "other", options);
  JW_ASSERT_OK(again.status());
  EXPECT_TRUE(again->duplicate);
  EXPECT_EQ(again->job_id, enqueued->job_id);

  absl::StatusOr<v1::Job> by_key = client_->GetJobByIdempotencyKey("q", "order-1");
  JW_ASSERT_OK(by_key.status());
  EXPECT_EQ(by_key->id(), enqueued->job_id);
  EXPECT_EQ(by_key->payload(), kBytes);
  EXPECT_EQ(client_->GetJobByIdempotencyKey("q", "order-2").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(ClientTest, JsonPayloadIsStoredEncoded) {
  absl::StatusOr<Enqueued> enqueued =
      client_->EnqueueJson("q", "email", nlohmann::json{{"to", "a@example.com"}, {"n", 3}});
  JW_ASSERT_OK(enqueued.status());
  absl::StatusOr<v1::Job> job = client_->GetJob("q", enqueued->job_id);
  JW_ASSERT_OK(job.status());
  EXPECT_EQ(nlohmann::json::parse(job->payload()),
            (nlohmann::json{{"to", "a@example.com"}, {"n", 3}}));
}

TEST_F(ClientTest, BatchReturnsEachJobsOwnError) {
  EnqueueOptions bad;
  bad.priority = 5000;
  absl::StatusOr<std::vector<absl::StatusOr<Enqueued>>> results =
      client_->EnqueueBatch("q", {{"a", "1", {}}, {"b", "2", bad}, {"c", "3", {}}});
  JW_ASSERT_OK(results.status());
  ASSERT_EQ(results->size(), 3u);
  JW_EXPECT_OK((*results)[0].status());
  EXPECT_EQ((*results)[1].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE((*results)[1].status().message().find("priority"), absl::string_view::npos);
  JW_ASSERT_OK((*results)[2].status());
  absl::StatusOr<v1::Job> third = client_->GetJob("q", (*results)[2]->job_id);
  JW_ASSERT_OK(third.status());
  EXPECT_EQ(third->type(), "c");

  absl::StatusOr<std::vector<absl::StatusOr<Enqueued>>> empty = client_->EnqueueBatch("q", {});
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ClientTest, CancelMakesAPendingJobDead) {
  absl::StatusOr<Enqueued> enqueued = client_->Enqueue("q", "t", "");
  JW_ASSERT_OK(enqueued.status());
  JW_ASSERT_OK(client_->Cancel("q", enqueued->job_id).status());
  absl::StatusOr<v1::Job> job = client_->GetJob("q", enqueued->job_id);
  JW_ASSERT_OK(job.status());
  EXPECT_EQ(job->state(), kDead);
  EXPECT_EQ(client_->Cancel("q", "999999").status().code(), absl::StatusCode::kNotFound);
}

// Retention 0: the ack deletes the job (GetJob NOT_FOUND); a repeated ack
// with the same token still answers OK.
TEST_F(ClientTest, CompletedRetentionZeroDeletesTheJobOnAck) {
  EnqueueOptions options;
  options.completed_retention_ms = 0;
  absl::StatusOr<Enqueued> enqueued = client_->Enqueue("q", "t", "", options);
  JW_ASSERT_OK(enqueued.status());
  auto reader = OpenClaim(::jobwire::testing::MakeClaim({"q"}, 1));
  std::optional<v1::ClaimedJob> claimed = reader->Next(absl::Seconds(5));
  ASSERT_TRUE(claimed.has_value());
  ASSERT_EQ(claimed->job().id(), enqueued->job_id);
  v1::AckBatchRequest batch;
  v1::AckRequest* ack = batch.add_acks();
  ack->set_queue("q");
  ack->set_job_id(enqueued->job_id);
  ack->set_lease_token(claimed->lease_token());
  for (int i = 0; i < 2; ++i) {  // the second is a repeat
    SCOPED_TRACE(i);
    absl::StatusOr<std::vector<absl::Status>> acked = client_->AckBatch(batch);
    JW_ASSERT_OK(acked.status());
    ASSERT_EQ(acked->size(), 1u);
    JW_EXPECT_OK(acked->at(0));
    EXPECT_EQ(client_->GetJob("q", enqueued->job_id).status().code(),
              absl::StatusCode::kNotFound);
  }
}

// The broker's INVALID_ARGUMENT message reaches the caller unchanged.
TEST_F(ClientTest, InvalidArgumentCarriesTheBrokersMessage) {
  struct Case {
    std::string queue;
    std::string type;
    EnqueueOptions options;
    std::string field;
  };
  EnqueueOptions priority;
  priority.priority = 5000;
  EnqueueOptions attempts;
  attempts.max_attempts = 1001;
  std::vector<Case> cases = {
      {"q", "t", priority, "priority"},
      {"q", "t", attempts, "max_attempts"},
      {"bad queue!", "t", {}, "queue"},
      {"q", "", {}, "type"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Enqueued> enqueued = client_->Enqueue(c.queue, c.type, "", c.options);
    EXPECT_EQ(enqueued.status().code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_NE(enqueued.status().message().find(c.field), absl::string_view::npos)
        << enqueued.status().message();
    // The error details name the field too.
    EXPECT_EQ(ErrorReason(enqueued.status()), reason::kInvalidField);
    EXPECT_EQ(ErrorDomain(enqueued.status()), "jobwire.dev");
    EXPECT_EQ(ErrorField(enqueued.status()), c.field);
    EXPECT_EQ(ErrorMetadata(enqueued.status())["field"], c.field);
  }
}

// Each refusal carries its reason, for single calls and batch items alike.
TEST_F(ClientTest, ErrorsCarryTheBrokersReason) {
  EXPECT_EQ(ErrorReason(client_->GetJob("q", "424242").status()), reason::kJobNotFound);

  absl::StatusOr<Enqueued> enqueued = client_->Enqueue("q", "t", "");
  JW_ASSERT_OK(enqueued.status());
  auto reader = OpenClaim(::jobwire::testing::MakeClaim({"q"}));
  std::optional<v1::ClaimedJob> claimed = reader->Next(absl::Seconds(5));
  ASSERT_TRUE(claimed.has_value());
  EXPECT_EQ(ErrorReason(client_->Ack("q", enqueued->job_id, claimed->lease_token() + "x", "")),
            reason::kLeaseStale);
  JW_ASSERT_OK(client_->Ack("q", enqueued->job_id, claimed->lease_token(), ""));
  absl::Status cancel = client_->Cancel("q", enqueued->job_id).status();
  EXPECT_EQ(ErrorReason(cancel), reason::kJobState);
  EXPECT_EQ(ErrorMetadata(cancel)["state"], "completed");
  EXPECT_FALSE(ErrorRetryDelay(cancel).has_value());

  absl::StatusOr<std::vector<absl::StatusOr<Enqueued>>> batch =
      client_->EnqueueBatch("q", {BatchJob{"t", "", {}}, BatchJob{"", "", {}}});
  JW_ASSERT_OK(batch.status());
  ASSERT_EQ(batch->size(), 2u);
  JW_EXPECT_OK(batch->at(0).status());
  EXPECT_EQ(ErrorReason(batch->at(1).status()), reason::kInvalidField);
  EXPECT_EQ(ErrorDomain(batch->at(1).status()), "jobwire.dev");

  v1::AckBatchRequest acks;
  v1::AckRequest* ack = acks.add_acks();
  ack->set_queue("q");
  ack->set_job_id("424242");
  ack->set_lease_token("no-such-lease");
  absl::StatusOr<std::vector<absl::Status>> acked = client_->AckBatch(acks);
  JW_ASSERT_OK(acked.status());
  ASSERT_EQ(acked->size(), 1u);
  EXPECT_EQ(ErrorReason(acked->at(0)), reason::kJobNotFound);

  // Errors the client makes itself have no reason.
  EXPECT_EQ(ErrorReason(absl::DeadlineExceededError("late")), "");
  EXPECT_EQ(ErrorReason(absl::OkStatus()), "");
}

TEST(ClientUnreachableTest, FailsWithinTheDeadline) {
  absl::StatusOr<int> port = PickFreePort();
  JW_ASSERT_OK(port.status());
  Client client({absl::StrCat("127.0.0.1:", *port), absl::Milliseconds(500)});
  absl::Time start = absl::Now();
  absl::StatusOr<Enqueued> enqueued = client.Enqueue("q", "t", "");
  EXPECT_TRUE(absl::IsUnavailable(enqueued.status()) ||
              absl::IsDeadlineExceeded(enqueued.status()))
      << enqueued.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
}

}  // namespace
}  // namespace jobwire::client

namespace jobwire::client {
namespace {

// A target that resolves to several brokers (a headless Service's dns:///
// name; here the ipv4: list of two brokers with their own Redis): the
// client's calls spread over them (round_robin), instead of all going to
// the first address (gRPC's default pick_first).
TEST(ClientBalancingTest, CallsSpreadOverEveryAddressOfTheTarget) {
  ::jobwire::testing::RedisServer redis_a, redis_b;
  JW_ASSERT_OK(redis_a.Start());
  JW_ASSERT_OK(redis_b.Start());
  ::jobwire::testing::BrokerProcess broker_a(redis_a.port()), broker_b(redis_b.port());
  JW_ASSERT_OK(broker_a.Start());
  JW_ASSERT_OK(broker_b.Start());
  Client both(ClientOptions{absl::StrCat("ipv4:", broker_a.address(), ",", broker_b.address())});
  Client only_a(ClientOptions{broker_a.address()});
  Client only_b(ClientOptions{broker_b.address()});

  int on_a = 0, on_b = 0;
  for (int i = 0; i < 200 && (on_a == 0 || on_b == 0); ++i) {
    const std::string payload = absl::StrCat("{\"i\":", i, "}");
    absl::StatusOr<Enqueued> enqueued = both.Enqueue("q", "t", payload);
    ASSERT_TRUE(enqueued.ok()) << enqueued.status();
    // Each broker has its own Redis (and its own id sequence): this job, its
    // id with this payload, is on exactly one.
    auto stored_on = [&](Client& broker) {
      absl::StatusOr<v1::Job> job = broker.GetJob("q", enqueued->job_id);
      return job.ok() && job->payload() == payload;
    };
    const bool a = stored_on(only_a);
    const bool b = stored_on(only_b);
    EXPECT_NE(a, b) << enqueued->job_id;
    on_a += a;
    on_b += b;
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_GT(on_a, 0);
  EXPECT_GT(on_b, 0);
}

// Serves WaitJob and Subscribe by passing each call on to the real broker,
// except that the first call of each ends CANCELLED: a WaitJob at once, a
// Subscribe after its first message (live). That is how gRPC core ends a
// call that reached a broker as it began to shut down (grpc/grpc#41785).
class CancelsFirstCall final : public v1::BrokerService::Service {
 public:
  explicit CancelsFirstCall(const std::string& broker)
      : broker_(v1::BrokerService::NewStub(
            grpc::CreateChannel(broker, grpc::InsecureChannelCredentials()))) {}

  grpc::Status WaitJob(grpc::ServerContext* context, const v1::WaitJobRequest* request,
                       grpc::ServerWriter<v1::WaitJobResponse>* out) override {
    if (wait_calls.fetch_add(1) == 0) return Cancelled();
    // The deadline and a cancel by the client pass on to the broker's call.
    auto call = grpc::ClientContext::FromServerContext(*context);
    auto in = broker_->WaitJob(call.get(), *request);
    return Forward(in.get(), out, -1);
  }

  grpc::Status Subscribe(grpc::ServerContext* context, const v1::SubscribeRequest* request,
                         grpc::ServerWriter<v1::SubscribeResponse>* out) override {
    const bool first = subscribe_calls.fetch_add(1) == 0;
    auto call = grpc::ClientContext::FromServerContext(*context);
    auto in = broker_->Subscribe(call.get(), *request);
    grpc::Status status = Forward(in.get(), out, first ? 1 : -1);
    if (!first) return status;
    call->TryCancel();
    in->Finish().IgnoreError();
    return Cancelled();
  }

  std::atomic<int> wait_calls{0};
  std::atomic<int> subscribe_calls{0};

 private:
  static grpc::Status Cancelled() { return grpc::Status(grpc::StatusCode::CANCELLED, "CANCELLED"); }

  // Passes on up to `limit` messages (-1: all) and, when all, the end.
  template <typename M>
  static grpc::Status Forward(grpc::ClientReader<M>* in, grpc::ServerWriter<M>* out, int limit) {
    M message;
    for (int n = 0; limit < 0 || n < limit; ++n) {
      if (!in->Read(&message)) return in->Finish();
      out->Write(message);
    }
    return grpc::Status::OK;
  }

  std::unique_ptr<v1::BrokerService::Stub> broker_;
};

class ClientCancelledTest : public ClientTest {
 protected:
  void SetUp() override {
    ClientTest::SetUp();
    proxy_ = std::make_unique<CancelsFirstCall>(broker_->address());
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(proxy_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    via_proxy_ = std::make_unique<Client>(ClientOptions{absl::StrCat("127.0.0.1:", port)});
  }
  void TearDown() override {
    server_->Shutdown(std::chrono::system_clock::now());
    ClientTest::TearDown();
  }
  std::unique_ptr<CancelsFirstCall> proxy_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Client> via_proxy_;
};

// A CANCELLED the client did not cause is the broker going away: WaitJob
// calls again (here the job is already dead, so the second call answers).
TEST_F(ClientCancelledTest, WaitJobCallsAgainAfterACancelledItDidNotCause) {
  absl::StatusOr<Enqueued> enqueued = client_->Enqueue("q", "t", "{}");
  ASSERT_TRUE(enqueued.ok()) << enqueued.status();
  ASSERT_TRUE(client_->Cancel("q", enqueued->job_id).ok());
  absl::StatusOr<v1::Job> job = via_proxy_->WaitJob("q", enqueued->job_id);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state(), v1::JOB_STATE_DEAD);
  EXPECT_EQ(proxy_->wait_calls.load(), 2);
}

// A live subscription that ends CANCELLED subscribes again, says events
// may have been missed, and goes on: the job enqueued then is seen.
TEST_F(ClientCancelledTest, SubscribeGoesOnAfterACancelledItDidNotCause) {
  int missed = 0;
  std::string enqueued_id;
  bool seen = false;
  SubscribeOptions options;
  options.on_missed = [&] {
    ++missed;
    absl::StatusOr<Enqueued> enqueued = client_->Enqueue("q", "t", "{}");
    EXPECT_TRUE(enqueued.ok()) << enqueued.status();
    if (!enqueued.ok()) return false;
    enqueued_id = enqueued->job_id;
    return true;
  };
  options.on_event = [&](const v1::QueueEvent& event) {
    seen = !enqueued_id.empty() && event.job_id() == enqueued_id;
    return !seen;
  };
  absl::Status status = via_proxy_->Subscribe({"q"}, options);
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_TRUE(seen);
  EXPECT_EQ(missed, 1);
  EXPECT_EQ(proxy_->subscribe_calls.load(), 2);
}

}  // namespace
}  // namespace jobwire::client
