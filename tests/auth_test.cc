// Bearer tokens and per-queue permissions (--auth_tokens_file): missing or
// unknown tokens get UNAUTHENTICATED, a known token on a queue it may not
// touch gets PERMISSION_DENIED naming the queue and the permission, never
// the token; health checks need no token.
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <sstream>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "broker/service/authorizer.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/health_client.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

constexpr char kProducerToken[] = "producer-token-6f1c2d";
constexpr char kWorkerToken[] = "worker-token-a93b77";
constexpr char kOpsToken[] = "ops-token-55e0c4";
constexpr char kBillingOpsToken[] = "billing-ops-token-0d41e9";

std::string TokenEntry(const std::string& name, const std::string& token,
                       const std::string& permissions) {
  return absl::StrCat(R"({"name": ")", name, R"(", "sha256": ")",
                      service::Sha256Hex(token), "\"", permissions, "}");
}

class AuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/jobwire-tokens-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    tokens_file_ = dir_ + "/tokens.json";
    std::ofstream(tokens_file_)
        << "{\"tokens\": [\n"
        << TokenEntry("billing-producer", kProducerToken,
                      R"(, "enqueue": ["billing.*"])")
        << ",\n"
        << TokenEntry("billing-worker", kWorkerToken,
                      R"(, "claim": ["billing.*", "audit"])")
        << ",\n"
        << TokenEntry("ops", kOpsToken,
                      R"(, "enqueue": ["*"], "claim": ["*"], "admin": ["*"])")
        << ",\n"
        << TokenEntry("billing-ops", kBillingOpsToken, R"(, "admin": ["billing.*"])")
        << "\n]}\n";
    redis_ = std::make_unique<RedisServer>();
    JW_ASSERT_OK(redis_->Start());
    broker_ = std::make_unique<BrokerProcess>(
        redis_->port(),
        std::vector<std::string>{"--auth_tokens_file=" + tokens_file_});
    broker_->set_client_security({nullptr, kOpsToken});
    JW_ASSERT_OK(broker_->Start());
  }

  void TearDown() override {
    broker_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<v1::BrokerService::Stub> StubWith(const std::string& token) const {
    return v1::BrokerService::NewStub(MakeChannel(broker_->address(), nullptr, token));
  }

  std::string dir_;
  std::string tokens_file_;
  std::unique_ptr<RedisServer> redis_;
  std::unique_ptr<BrokerProcess> broker_;
};

TEST_F(AuthTest, MissingOrUnknownTokenIsUnauthenticated) {
  for (const std::string& token :
       std::vector<std::string>{"", "not-a-token", "producer-token-6f1c2"}) {
    v1::EnqueueResponse resp;
    grpc::Status s = Enqueue(*StubWith(token), MakeJob("billing.x"), &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED)
        << token << ": " << StatusText(s);
    if (!token.empty()) {
      EXPECT_FALSE(absl::StrContains(s.error_message(), token));
    }
  }
  // The health service stays open (Kubernetes probes carry no token).
  HealthStatus health;
  JW_EXPECT_OK(CheckHealth(MakeChannel(broker_->address()), "", &health));
  EXPECT_EQ(health, kServing);
}

TEST_F(AuthTest, EachTokenMayTouchOnlyItsQueues) {
  auto producer = StubWith(kProducerToken);
  auto worker = StubWith(kWorkerToken);

  const std::string id = MustEnqueue(*producer, MakeJob("billing.invoices"));
  ASSERT_FALSE(id.empty());
  v1::EnqueueResponse resp;
  grpc::Status denied = Enqueue(*producer, MakeJob("emails"), &resp);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(absl::StrContains(denied.error_message(), "\"emails\""))
      << denied.error_message();
  EXPECT_TRUE(absl::StrContains(denied.error_message(), "enqueue"));
  EXPECT_FALSE(absl::StrContains(denied.error_message(), kProducerToken));

  // A batch with one forbidden queue stores nothing.
  v1::EnqueueBatchRequest batch;
  *batch.add_jobs() = MakeJob("billing.ok");
  *batch.add_jobs() = MakeJob("other");
  v1::EnqueueBatchResponse batch_resp;
  EXPECT_EQ(EnqueueBatch(*producer, batch, &batch_resp).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);

  // The producer may read its job but not claim or ack.
  v1::Job job;
  JW_EXPECT_OK(GetJob(*producer, "billing.invoices", id, &job));
  ClaimReader refused(StubWith(kProducerToken), MakeClaim({"billing.invoices"}));
  std::optional<grpc::Status> end = refused.WaitForEnd(absl::Seconds(5));
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(absl::StrContains(end->error_message(), "claim"));

  // A Claim naming one forbidden queue is refused as a whole.
  ClaimReader mixed(StubWith(kWorkerToken), MakeClaim({"billing.invoices", "emails"}));
  end = mixed.WaitForEnd(absl::Seconds(5));
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::PERMISSION_DENIED);

  // The worker claims and acks, and may not enqueue or cancel.
  ClaimReader reader(StubWith(kWorkerToken), MakeClaim({"billing.invoices"}));
  std::optional<v1::ClaimedJob> claimed = reader.Next(absl::Seconds(5));
  ASSERT_TRUE(claimed.has_value());
  EXPECT_EQ(Ack(*producer, *claimed).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  JW_EXPECT_OK(Ack(*worker, *claimed, "done"));
  EXPECT_EQ(Enqueue(*worker, MakeJob("billing.invoices"), &resp).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Cancel(*worker, "billing.invoices", id).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  JW_EXPECT_OK(GetJob(*worker, "billing.invoices", id, &job));
  EXPECT_EQ(job.state(), kCompleted);
}

TEST_F(AuthTest, AdminNeedsTheAdminPermission) {
  MustEnqueue(*StubWith(kProducerToken), MakeJob("billing.invoices"));
  auto as = [&](const std::string& token) {
    return v1::AdminService::NewStub(MakeChannel(broker_->address(), nullptr, token));
  };
  auto call_stats = [&](const std::string& token) {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    v1::GetQueueStatsRequest req;
    req.set_queue("billing.invoices");
    v1::GetQueueStatsResponse response;
    return as(token)->GetQueueStats(&ctx, req, &response);
  };
  EXPECT_EQ(call_stats("").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  grpc::Status denied = call_stats(kProducerToken);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(absl::StrContains(denied.error_message(), "administer"));
  JW_EXPECT_OK(call_stats(kOpsToken));

  grpc::ClientContext ctx;
  v1::ListQueuesResponse queues;
  EXPECT_EQ(as(kWorkerToken)->ListQueues(&ctx, {}, &queues).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  grpc::ClientContext ops_ctx;
  JW_EXPECT_OK(as(kOpsToken)->ListQueues(&ops_ctx, {}, &queues));
}

// An admin token without enqueue or claim reads the jobs of the queues it
// administers (GetJob, Subscribe), as ListJobs shows them, and no others.
TEST_F(AuthTest, AdminReadsJobsOfItsQueues) {
  const std::string id = MustEnqueue(*StubWith(kProducerToken), MakeJob("billing.invoices"));
  auto ops = StubWith(kBillingOpsToken);
  v1::Job job;
  JW_EXPECT_OK(GetJob(*ops, "billing.invoices", id, &job));
  EXPECT_EQ(job.id(), id);
  v1::EnqueueResponse resp;
  EXPECT_EQ(Enqueue(*ops, MakeJob("billing.invoices"), &resp).error_code(),
            grpc::StatusCode::PERMISSION_DENIED)
      << "admin does not grant enqueue";
  const std::string other = MustEnqueue(*StubWith(kOpsToken), MakeJob("emails"));
  grpc::Status denied = GetJob(*ops, "emails", other, &job);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(absl::StrContains(denied.error_message(), "needs enqueue, claim or admin"))
      << denied.error_message();

  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  v1::SubscribeRequest subscribe;
  subscribe.add_queues("billing.invoices");
  auto stream = ops->Subscribe(&ctx, subscribe);
  v1::SubscribeResponse first;
  ASSERT_TRUE(stream->Read(&first)) << stream->Finish().error_message();
  EXPECT_TRUE(first.subscribed());
  ctx.TryCancel();
}

// ListWorkers lists only the streams whose queues the token may all
// administer, and needs some admin permission.
TEST_F(AuthTest, ListWorkersShowsOnlyStreamsOfQueuesTheTokenAdministers) {
  auto claim = [&](std::vector<std::string> queues, const std::string& worker) {
    return std::make_unique<ClaimReader>(StubWith(kWorkerToken),
                                         MakeClaim(std::move(queues), 1, 0, worker));
  };
  auto billing = claim({"billing.invoices"}, "billing-only");
  auto mixed = claim({"billing.refunds", "audit"}, "billing-and-audit");
  auto list = [&](const std::string& token, v1::ListWorkersResponse* response) {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    return v1::AdminService::NewStub(MakeChannel(broker_->address(), nullptr, token))
        ->ListWorkers(&ctx, {}, response);
  };
  auto workers = [](const v1::ListWorkersResponse& r) {
    std::vector<std::string> out;
    for (const v1::WorkerStream& s : r.streams()) out.push_back(s.worker_id());
    std::sort(out.begin(), out.end());
    return out;
  };
  v1::ListWorkersResponse all;
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  do {
    JW_ASSERT_OK(list(kOpsToken, &all));  // both streams open on this replica: live
  } while (all.streams_size() < 2 && absl::Now() < deadline);
  EXPECT_EQ(workers(all), (std::vector<std::string>{"billing-and-audit", "billing-only"}));
  v1::ListWorkersResponse some;
  JW_ASSERT_OK(list(kBillingOpsToken, &some));
  EXPECT_EQ(workers(some), (std::vector<std::string>{"billing-only"}));
  v1::ListWorkersResponse none;
  EXPECT_EQ(list(kWorkerToken, &none).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(list("", &none).error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

// Where the LISTEN socket on port 50051 is bound, from /proc/net/tcp and
// /proc/net/tcp6: "loopback" (127.0.0.1, ::ffff:127.0.0.1, ::1), "any"
// (0.0.0.0, ::), another address in hex, or empty until there is one.
std::string DefaultListenAddress() {
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream tcp(table);
    std::string line;
    std::getline(tcp, line);  // header
    while (std::getline(tcp, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      if (state != "0A" || !absl::EndsWith(local, ":C383")) continue;
      const std::string addr = local.substr(0, local.size() - 5);
      if (addr == "0100007F" || addr == "0000000000000000FFFF00000100007F" ||
          addr == "00000000000000000000000001000000") {
        return "loopback";
      }
      if (addr.find_first_not_of('0') == std::string::npos) return "any";
      return addr;
    }
  }
  return "";
}

// Without --listen the broker binds loopback only, unless a token file
// authenticates its callers.
TEST(DefaultListenTest, LoopbackOnlyWithoutTokens) {
  ASSERT_EQ(DefaultListenAddress(), "") << "port 50051 is taken on this machine";
  RedisServer redis;
  JW_ASSERT_OK(redis.Start());
  char tmpl[] = "/tmp/jobwire-listen-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string tokens_file = std::string(tmpl) + "/tokens.json";
  std::ofstream(tokens_file) << TokenEntry("ops", kOpsToken, R"(, "admin": ["*"])")
                                    .insert(0, "{\"tokens\": [")
                             << "]}";
  struct Case {
    std::vector<std::string> extra_flags;
    std::string want;
  };
  for (const Case& c : {Case{{}, "loopback"},
                        Case{{"--auth_tokens_file=" + tokens_file}, "any"}}) {
    std::vector<std::string> argv = {JOBWIRE_BROKER_PATH,
                                     absl::StrCat("--redis_url=redis://127.0.0.1:", redis.port()),
                                     "--metrics_listen="};
    argv.insert(argv.end(), c.extra_flags.begin(), c.extra_flags.end());
    Subprocess broker;
    JW_ASSERT_OK(broker.Spawn(argv));
    std::string bound;
    for (absl::Time deadline = absl::Now() + absl::Seconds(10);
         bound.empty() && broker.Running() && absl::Now() < deadline;) {
      absl::SleepFor(absl::Milliseconds(20));
      bound = DefaultListenAddress();
    }
    EXPECT_EQ(bound, c.want) << (c.extra_flags.empty() ? "no tokens" : "tokens");
    broker.Terminate(absl::Seconds(10));
  }
  std::filesystem::remove_all(tmpl);
}

TEST(AuthorizerTest, RejectsMalformedTokenFiles) {
  using service::Authorizer;
  const std::string hash = service::Sha256Hex("t");
  for (const std::string& bad : std::vector<std::string>{
           std::string("not json"),
           std::string(R"({"tokens": {}})"),
           absl::StrCat(R"({"tokens": [{"sha256": ")", hash, R"("}]})"),
           std::string(R"({"tokens": [{"name": "a", "sha256": "abc"}]})"),
           absl::StrCat(R"({"tokens": [{"name": "a", "sha256": ")", hash,
                        R"(", "enqueue": ["a*b"]}]})"),
           absl::StrCat(R"({"tokens": [{"name": "a", "sha256": ")", hash,
                        R"(", "enqeue": ["a"]}]})"),
           absl::StrCat(R"({"tokens": [{"name": "a", "sha256": ")", hash,
                        R"("}, {"name": "b", "sha256": ")", hash, R"("}]})"),
       }) {
    absl::StatusOr<std::unique_ptr<Authorizer>> parsed = Authorizer::FromJson(bad);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    if (!parsed.ok()) {
      EXPECT_FALSE(absl::StrContains(parsed.status().message(), hash));
    }
  }
  absl::StatusOr<std::unique_ptr<Authorizer>> ok = Authorizer::FromJson(
      absl::StrCat(R"({"tokens": [{"name": "a", "sha256": ")", hash,
                   R"(", "claim": ["jobs.*", "x"]}]})"));
  JW_ASSERT_OK(ok.status());
  service::Principal p = {"a", {}, {}, {"jobs.*", "x"}, {}};
  EXPECT_TRUE(Authorizer::Allows(&p, service::Permission::kClaim, "jobs.a"));
  EXPECT_TRUE(Authorizer::Allows(&p, service::Permission::kClaim, "x"));
  EXPECT_FALSE(Authorizer::Allows(&p, service::Permission::kClaim, "xy"));
  EXPECT_FALSE(Authorizer::Allows(&p, service::Permission::kClaim, "jobs"));
  EXPECT_TRUE(Authorizer::Allows(&p, service::Permission::kRead, "jobs.b"));
  EXPECT_FALSE(Authorizer::Allows(&p, service::Permission::kEnqueue, "jobs.b"));
  service::Principal admin = {"ops", {}, {}, {}, {"ops.*"}};
  EXPECT_TRUE(Authorizer::Allows(&admin, service::Permission::kRead, "ops.q"));
  EXPECT_FALSE(Authorizer::Allows(&admin, service::Permission::kRead, "jobs.b"));
  EXPECT_FALSE(Authorizer::Allows(&admin, service::Permission::kClaim, "ops.q"));
}

}  // namespace
}  // namespace jobwire::testing
