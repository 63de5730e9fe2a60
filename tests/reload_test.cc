// Live reload of the token file and the listener's TLS certificate
// (--reload_interval_ms, SIGHUP), end to end on the real broker binary and a
// real Redis, under a running C++ Worker:
//  - a token removed from the file (replaced atomically, as Kubernetes
//    updates a Secret) is refused on its next call while the other still
//    works, and the Worker's open Claim stream keeps delivering;
//  - SIGHUP reloads at once with a long interval, and does not stop the
//    broker;
//  - a malformed token file keeps the tokens in use and logs a warning that
//    names no token nor hash;
//  - a certificate signed by another CA is served to new connections while
//    the connected Worker keeps running; a key that does not match its
//    certificate is refused and the previous certificate stays served.
#include <signal.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "broker/service/authorizer.h"
#include "client/cpp/worker.h"
#include "gtest/gtest.h"
#include "tests/subprocess.h"
#include "tests/test_harness.h"
#include "tests/test_pki.h"

namespace jobwire::testing {
namespace {

constexpr char kTokenA[] = "reload-token-a-7c1e09";
constexpr char kTokenB[] = "reload-token-b-42d9f3";
constexpr char kQueue[] = "reload.jobs";

// A token file granting enqueue and claim on reload.* to each (name, token).
std::string TokensJson(const std::vector<std::pair<std::string, std::string>>& tokens) {
  std::vector<std::string> entries;
  for (const auto& [name, token] : tokens) {
    entries.push_back(absl::StrCat(R"({"name": ")", name, R"(", "sha256": ")",
                                   service::Sha256Hex(token),
                                   R"(", "enqueue": ["reload.*"], "claim": ["reload.*"]})"));
  }
  return absl::StrCat("{\"tokens\": [", absl::StrJoin(entries, ",\n"), "]}\n");
}

// Writes `content` beside `path` and renames it over `path`: readers see the
// old file or the new one, never a part (as a Kubernetes Secret volume).
void ReplaceFile(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".new";
  std::ofstream(tmp, std::ios::binary) << content;
  ASSERT_EQ(std::rename(tmp.c_str(), path.c_str()), 0) << path;
}

// Enqueue on a fresh channel presenting `token`.
grpc::Status EnqueueAs(const std::string& address, const std::string& token,
                       const std::string& queue) {
  auto stub = v1::BrokerService::NewStub(MakeChannel(address, nullptr, token));
  v1::EnqueueResponse response;
  return Enqueue(*stub, MakeJob(queue), &response);
}

// Calls `call` until it returns `want`, for up to `timeout`; the last status.
template <typename Call>
grpc::Status AwaitCode(grpc::StatusCode want, absl::Duration timeout, Call call) {
  const absl::Time deadline = absl::Now() + timeout;
  grpc::Status status = call();
  while (status.error_code() != want && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
    status = call();
  }
  return status;
}

// The outcomes a Worker reports, in order.
class Outcomes {
 public:
  void Add(const client::Outcome& outcome) {
    absl::MutexLock lock(&mu_);
    outcomes_.push_back(outcome);
  }
  // Waits up to 10 s for the n-th outcome (1-based); "kind detail", or ""
  // when it did not come.
  std::string Await(size_t n) {
    absl::MutexLock lock(&mu_);
    auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return outcomes_.size() >= n; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Seconds(10))) return "";
    return absl::StrCat(outcomes_[n - 1].kind, " ", outcomes_[n - 1].detail);
  }

 private:
  absl::Mutex mu_;
  std::vector<client::Outcome> outcomes_ ABSL_GUARDED_BY(mu_);
};

// A Worker on kQueue running handlers of type "test" (MakeJob's), on its own
// thread until Stop.
class RunningWorker {
 public:
  explicit RunningWorker(client::WorkerOptions options) {
    options.queues = {kQueue};
    options.grace = absl::Seconds(1);
    options.on_outcome = [this](const client::Job&, const client::Outcome& outcome) {
      outcomes_.Add(outcome);
    };
    options.log = [](const std::string&) {};
    worker_ = std::make_unique<client::Worker>(std::move(options));
    worker_->Register("test", [](const client::Job& job) -> absl::StatusOr<std::string> {
      return job.payload;
    });
    thread_ = std::thread([this] { worker_->Run().IgnoreError(); });
  }
  ~RunningWorker() {
    worker_->Stop();
    thread_.join();
  }
  Outcomes& outcomes() { return outcomes_; }

 private:
  Outcomes outcomes_;
  std::unique_ptr<client::Worker> worker_;
  std::thread thread_;
};

class ReloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/jobwire-reload-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    tokens_file_ = dir_ + "/tokens.json";
    log_file_ = dir_ + "/broker.log";
    redis_ = std::make_unique<RedisServer>();
    JW_ASSERT_OK(redis_->Start());
  }

  void TearDown() override {
    broker_.reset();
    std::filesystem::remove_all(dir_);
  }

  void StartBroker(std::vector<std::string> flags, ClientSecurity security) {
    broker_ = std::make_unique<BrokerProcess>(redis_->port(), std::move(flags));
    broker_->set_client_security(std::move(security));
    broker_->set_stderr_path(log_file_);
    JW_ASSERT_OK(broker_->Start());
  }

  // The broker's log lines whose msg is `message`.
  std::vector<std::string> LogLines(const std::string& message) const {
    std::vector<std::string> lines;
    for (absl::string_view line : absl::StrSplit(ReadTextFile(log_file_), '\n')) {
      if (absl::StrContains(line, absl::StrCat("\"msg\":\"", message, "\""))) {
        lines.emplace_back(line);
      }
    }
    return lines;
  }

  // Waits up to 10 s for the n-th log line with `message` (1-based); it, or
  // "" and a test failure.
  std::string AwaitLogLine(const std::string& message, size_t n = 1) const {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    for (;;) {
      std::vector<std::string> lines = LogLines(message);
      if (lines.size() >= n) return lines[n - 1];
      if (absl::Now() > deadline) break;
      absl::SleepFor(absl::Milliseconds(20));
    }
    ADD_FAILURE() << "no log line #" << n << " \"" << message << "\" in:\n"
                  << ReadTextFile(log_file_);
    return "";
  }

  std::string dir_;
  std::string tokens_file_;
  std::string log_file_;
  std::unique_ptr<RedisServer> redis_;
  std::unique_ptr<BrokerProcess> broker_;
};

TEST_F(ReloadTest, ARemovedTokenIsRefusedOnItsNextCallUnderARunningWorker) {
  std::ofstream(tokens_file_) << TokensJson({{"a", kTokenA}, {"b", kTokenB}});
  ASSERT_NO_FATAL_FAILURE(StartBroker(
      {"--auth_tokens_file=" + tokens_file_, "--reload_interval_ms=200"}, {nullptr, kTokenB}));
  const std::string address = broker_->address();

  client::WorkerOptions options;
  options.address = address;
  options.token = kTokenA;
  RunningWorker worker(options);
  auto producer = v1::BrokerService::NewStub(MakeChannel(address, nullptr, kTokenB));
  ASSERT_FALSE(MustEnqueue(*producer, MakeJob(kQueue, "before")).empty());
  EXPECT_EQ(worker.outcomes().Await(1), "ack_ok ");

  ASSERT_NO_FATAL_FAILURE(ReplaceFile(tokens_file_, TokensJson({{"b", kTokenB}})));
  // Within a few reload intervals, A's next call is refused (on a queue the
  // worker does not take, so the probes leave no jobs for it).
  grpc::Status refused = AwaitCode(grpc::StatusCode::UNAUTHENTICATED, absl::Seconds(5),
                                   [&] { return EnqueueAs(address, kTokenA, "reload.probe"); });
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAUTHENTICATED) << StatusText(refused);
  EXPECT_FALSE(absl::StrContains(refused.error_message(), kTokenA));

  // B still works; the Worker's Claim stream, opened with A, still delivers,
  // and its Ack with A is refused.
  const std::string id = MustEnqueue(*producer, MakeJob(kQueue, "after"));
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(worker.outcomes().Await(2), "ack_error UNAUTHENTICATED");
  v1::Job job;
  JW_EXPECT_OK(GetJob(*producer, kQueue, id, &job));
  EXPECT_EQ(job.state(), kActive);

  const std::string line = AwaitLogLine("token file reloaded");
  // The count, as a string or (JSON-valued log fields) a number.
  EXPECT_TRUE(absl::StrContains(line, "\"tokens\":\"1\"") ||
              absl::StrContains(line, "\"tokens\":1,") ||
              absl::StrContains(line, "\"tokens\":1}"))
      << line;
  EXPECT_TRUE(absl::StrContains(line, "\"trigger\":\"file change\"")) << line;
  const std::string log = ReadTextFile(log_file_);
  for (const std::string& secret : {std::string(kTokenA), service::Sha256Hex(kTokenA),
                                    std::string(kTokenB), service::Sha256Hex(kTokenB)}) {
    EXPECT_FALSE(absl::StrContains(log, secret)) << secret;
  }
}

// --reload_interval_ms=0: the files are never checked, only reloaded on
// SIGHUP.
TEST_F(ReloadTest, SighupReloadsAtOnceAndKeepsTheBrokerRunning) {
  std::ofstream(tokens_file_) << TokensJson({{"a", kTokenA}, {"b", kTokenB}});
  ASSERT_NO_FATAL_FAILURE(StartBroker(
      {"--auth_tokens_file=" + tokens_file_, "--reload_interval_ms=0"}, {nullptr, kTokenB}));
  const std::string address = broker_->address();
  ASSERT_NO_FATAL_FAILURE(ReplaceFile(tokens_file_, TokensJson({{"b", kTokenB}})));
  // Nothing checks the file: A still works...
  absl::SleepFor(absl::Milliseconds(300));
  JW_EXPECT_OK(EnqueueAs(address, kTokenA, "reload.probe"));
  // ...until SIGHUP.
  broker_->Signal(SIGHUP);
  grpc::Status refused = AwaitCode(grpc::StatusCode::UNAUTHENTICATED, absl::Seconds(2),
                                   [&] { return EnqueueAs(address, kTokenA, "reload.probe"); });
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAUTHENTICATED) << StatusText(refused);
  JW_EXPECT_OK(EnqueueAs(address, kTokenB, "reload.probe"));
  EXPECT_TRUE(absl::StrContains(AwaitLogLine("token file reloaded"),
                                "\"trigger\":\"reload request\""));
  EXPECT_EQ(LogLines("reload requested").size(), 1u);

  // SIGHUP again, unchanged: reloaded again (the log confirms), still running.
  broker_->Signal(SIGHUP);
  AwaitLogLine("token file reloaded", 2);
  EXPECT_TRUE(broker_->Running());
  JW_EXPECT_OK(EnqueueAs(address, kTokenB, "reload.probe"));
}

TEST_F(ReloadTest, AMalformedTokenFileKeepsTheTokensInUse) {
  std::ofstream(tokens_file_) << TokensJson({{"a", kTokenA}});
  ASSERT_NO_FATAL_FAILURE(StartBroker(
      {"--auth_tokens_file=" + tokens_file_, "--reload_interval_ms=200"}, {nullptr, kTokenA}));
  const std::string address = broker_->address();

  ASSERT_NO_FATAL_FAILURE(ReplaceFile(
      tokens_file_, absl::StrCat(R"({"tokens": [{"name": "a", "sha256": ")",
                                 service::Sha256Hex(kTokenA), "\"")));  // cut short
  std::string warning = AwaitLogLine("token file reload failed, keeping the tokens in use");
  EXPECT_TRUE(absl::StrContains(warning, "\"level\":\"warning\"")) << warning;
  EXPECT_TRUE(absl::StrContains(warning, "not valid JSON")) << warning;
  JW_EXPECT_OK(EnqueueAs(address, kTokenA, "reload.probe"));

  // Valid JSON, an invalid entry: refused the same way, naming the entry.
  ASSERT_NO_FATAL_FAILURE(ReplaceFile(
      tokens_file_, absl::StrCat(R"({"tokens": [{"name": "b", "sha256": ")",
                                 service::Sha256Hex(kTokenB), R"(", "claim": ["a*b"]}]})")));
  warning = AwaitLogLine("token file reload failed, keeping the tokens in use", 2);
  EXPECT_TRUE(absl::StrContains(warning, "tokens[0] (b).claim")) << warning;
  JW_EXPECT_OK(EnqueueAs(address, kTokenA, "reload.probe"));
  EXPECT_EQ(EnqueueAs(address, kTokenB, "reload.probe").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);

  // Fixed: reloaded.
  ASSERT_NO_FATAL_FAILURE(ReplaceFile(tokens_file_, TokensJson({{"b", kTokenB}})));
  AwaitLogLine("token file reloaded");
  JW_EXPECT_OK(EnqueueAs(address, kTokenB, "reload.probe"));
  EXPECT_EQ(EnqueueAs(address, kTokenA, "reload.probe").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  const std::string log = ReadTextFile(log_file_);
  for (const std::string& secret : {std::string(kTokenA), service::Sha256Hex(kTokenA),
                                    std::string(kTokenB), service::Sha256Hex(kTokenB)}) {
    EXPECT_FALSE(absl::StrContains(log, secret)) << secret;
  }
}

// A reload cannot switch authentication on: a broker started without a
// token file stays open, SIGHUP or not.
TEST_F(ReloadTest, WithoutATokenFileSighupChangesNothing) {
  ASSERT_NO_FATAL_FAILURE(StartBroker({"--reload_interval_ms=200"}, {}));
  broker_->Signal(SIGHUP);
  AwaitLogLine("reload requested");
  EXPECT_TRUE(broker_->Running());
  JW_EXPECT_OK(EnqueueAs(broker_->address(), "", "reload.probe"));
}

TEST(ReloadFlagsTest, IntervalIsZeroOrAtLeast100Ms) {
  for (const char* bad : {"--reload_interval_ms=99", "--reload_interval_ms=-1",
                          "--reload_interval_ms=86400001"}) {
    EXPECT_EQ(BrokerExitCode("redis://127.0.0.1:1", {bad}), 2) << bad;
  }
}

TEST(AuthorizerReloadTest, AFailedReloadKeepsTheTokensAndOffStaysOff) {
  absl::StatusOr<std::unique_ptr<service::Authorizer>> authorizer =
      service::Authorizer::FromJson(TokensJson({{"a", kTokenA}, {"b", kTokenB}}));
  JW_ASSERT_OK(authorizer.status());
  EXPECT_EQ((*authorizer)->token_count(), 2u);
  JW_EXPECT_OK((*authorizer)->Reload(TokensJson({{"b", kTokenB}})));
  EXPECT_EQ((*authorizer)->token_count(), 1u);
  const absl::Status bad = (*authorizer)->Reload(R"({"tokens": [{"name": "x"}]})");
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument) << bad;
  EXPECT_EQ((*authorizer)->token_count(), 1u);
  JW_EXPECT_OK((*authorizer)->Reload(R"({"tokens": []})"));  // nobody, yet still on
  EXPECT_EQ((*authorizer)->token_count(), 0u);
  EXPECT_TRUE((*authorizer)->enabled());

  service::Authorizer open;
  EXPECT_EQ(open.Reload(TokensJson({{"a", kTokenA}})).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(open.enabled());
}

// GetJob of an unknown job on a new connection made with `credentials`:
// NOT_FOUND proves the TLS handshake succeeded.
grpc::Status Probe(const std::string& address,
                   std::shared_ptr<grpc::ChannelCredentials> credentials) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
  auto stub = v1::BrokerService::NewStub(
      grpc::CreateCustomChannel(address, std::move(credentials), args));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
  v1::GetJobRequest request;
  request.set_queue("tls");
  request.set_job_id("missing");
  v1::GetJobResponse response;
  return stub->GetJob(&context, request, &response);
}

TEST_F(ReloadTest, ANewCertificateIsServedToNewConnectionsAndABrokenOneRefused) {
  absl::StatusOr<std::unique_ptr<TestPki>> pki1 = TestPki::Create();
  JW_ASSERT_OK(pki1.status());
  absl::StatusOr<std::unique_ptr<TestPki>> pki2 = TestPki::Create();
  JW_ASSERT_OK(pki2.status());
  // Clients present pki1's client certificate throughout (the client CA is
  // not rotated); the server's certificate moves from pki1's CA to pki2's.
  const std::string cert = dir_ + "/tls.crt";
  const std::string key = dir_ + "/tls.key";
  std::ofstream(cert) << (*pki1)->Read("server.pem");
  std::ofstream(key) << (*pki1)->Read("server.key");
  auto trusting = [&](const TestPki& ca) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = ca.Read("ca.pem");
    options.pem_cert_chain = (*pki1)->Read("client.pem");
    options.pem_private_key = (*pki1)->Read("client.key");
    return grpc::SslCredentials(options);
  };
  ASSERT_NO_FATAL_FAILURE(StartBroker({"--tls_cert=" + cert, "--tls_key=" + key,
                                       "--tls_client_ca=" + (*pki1)->ca_cert(),
                                       "--reload_interval_ms=200"},
                                      {trusting(**pki1), ""}));
  const std::string address = broker_->address();

  client::WorkerOptions options;
  options.address = address;
  options.tls_root_ca = (*pki1)->ca_cert();  // trusts only the first CA
  options.tls_client_cert = (*pki1)->client_cert();
  options.tls_client_key = (*pki1)->client_key();
  RunningWorker worker(options);
  auto first = v1::BrokerService::NewStub(MakeChannel(address, trusting(**pki1)));
  ASSERT_FALSE(MustEnqueue(*first, MakeJob(kQueue, "before")).empty());
  EXPECT_EQ(worker.outcomes().Await(1), "ack_ok ");

  // Rotate: the key, then the certificate, each renamed into place.
  ASSERT_NO_FATAL_FAILURE(ReplaceFile(key, (*pki2)->Read("server.key")));
  ASSERT_NO_FATAL_FAILURE(ReplaceFile(cert, (*pki2)->Read("server.pem")));
  grpc::Status second = AwaitCode(grpc::StatusCode::NOT_FOUND, absl::Seconds(10),
                                  [&] { return Probe(address, trusting(**pki2)); });
  EXPECT_EQ(second.error_code(), grpc::StatusCode::NOT_FOUND) << StatusText(second);
  const grpc::Status old_ca = Probe(address, trusting(**pki1));
  EXPECT_EQ(old_ca.error_code(), grpc::StatusCode::UNAVAILABLE) << StatusText(old_ca);
  const std::string reloaded = AwaitLogLine("tls certificate reloaded");
  EXPECT_TRUE(absl::StrContains(reloaded, "\"subject\":\"CN=localhost\"")) << reloaded;
  EXPECT_TRUE(absl::StrContains(reloaded, "\"not_after\":\"")) << reloaded;

  // The Worker, connected before, keeps its connection and its jobs.
  auto producer = v1::BrokerService::NewStub(MakeChannel(address, trusting(**pki2)));
  ASSERT_FALSE(MustEnqueue(*producer, MakeJob(kQueue, "after")).empty());
  EXPECT_EQ(worker.outcomes().Await(2), "ack_ok ");

  // A key that does not match the certificate: refused, and logged.
  ASSERT_NO_FATAL_FAILURE(ReplaceFile(key, (*pki1)->Read("server.key")));
  const std::string failed =
      AwaitLogLine("tls certificate reload failed, keeping the certificate in use");
  EXPECT_TRUE(absl::StrContains(failed, "\"level\":\"warning\"")) << failed;
  EXPECT_TRUE(absl::StrContains(failed, "does not match the certificate")) << failed;
  EXPECT_FALSE(absl::StrContains(failed, "PRIVATE KEY")) << failed;
  // gRPC reads what it serves every second: for 2.5 s, every new connection
  // still gets the second certificate.
  for (const absl::Time end = absl::Now() + absl::Milliseconds(2500); absl::Now() < end;
       absl::SleepFor(absl::Milliseconds(250))) {
    const grpc::Status still = Probe(address, trusting(**pki2));
    ASSERT_EQ(still.error_code(), grpc::StatusCode::NOT_FOUND) << StatusText(still);
  }
  ASSERT_FALSE(MustEnqueue(*producer, MakeJob(kQueue, "still")).empty());
  EXPECT_EQ(worker.outcomes().Await(3), "ack_ok ");

  // Fixed: reloaded (the second "reloaded" line), served as before.
  ASSERT_NO_FATAL_FAILURE(ReplaceFile(key, (*pki2)->Read("server.key")));
  AwaitLogLine("tls certificate reloaded", 2);
  const grpc::Status fixed = Probe(address, trusting(**pki2));
  EXPECT_EQ(fixed.error_code(), grpc::StatusCode::NOT_FOUND) << StatusText(fixed);
}

}  // namespace
}  // namespace jobwire::testing
