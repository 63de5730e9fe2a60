// The broker on a TLS-only redis-server (rediss://, --tls-port with --port 0,
// certificates from tests/test_pki.h): the server's certificate verified
// against --redis_tls_ca and the host name, client certificates when Redis
// demands them, the commands and pub/sub connections both over TLS and back
// after a Redis restart; a wrong CA, a wrong server name or a missing client
// certificate keep the broker NOT_SERVING with a clear log line; bad
// combinations of flags stop it; no secret appears in its log.
#include <sys/wait.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/health_client.h"
#include "tests/test_harness.h"
#include "tests/test_pki.h"

namespace jobwire::testing {
namespace {

constexpr char kPassword[] = "tls-redis-pw-5c2e";

class RedisTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<TestPki>> pki = TestPki::Create();
    JW_ASSERT_OK(pki.status());
    pki_ = std::move(*pki);
    char tmpl[] = "/tmp/jobwire-redis-tls-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    broker_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A TLS-only Redis; with `auth_clients` it demands a client certificate
  // signed by ca.pem.
  void StartRedis(bool auth_clients, const std::string& password = "") {
    RedisServerTls tls{pki_->server_cert(), pki_->server_key(), pki_->ca_cert(),
                       auth_clients, pki_->client_cert(), pki_->client_key()};
    redis_ = std::make_unique<RedisServer>(password, tls);
    JW_ASSERT_OK(redis_->Start());
  }

  std::string Url(const std::string& userinfo = "") const {
    return absl::StrCat("rediss://", userinfo, userinfo.empty() ? "" : "@",
                        "127.0.0.1:", redis_->port());
  }

  // A broker on `url` with `flags`, its log in dir_/broker.log. With
  // `reaches_redis` false, Start() does not wait for Redis.
  void StartBroker(const std::string& url, std::vector<std::string> flags,
                   bool reaches_redis = true) {
    broker_ = std::make_unique<BrokerProcess>(redis_->port(), std::move(flags));
    broker_->set_redis_url(url);
    broker_->set_stderr_path(dir_ + "/broker.log");
    broker_->set_wait_for_redis(reaches_redis);
    JW_ASSERT_OK(broker_->Start());
  }

  std::string StopAndReadLog() {
    broker_->Stop();
    return ReadTextFile(dir_ + "/broker.log");
  }

  // A broker that cannot finish its TLS connection: stays NOT_SERVING,
  // calls answer UNAVAILABLE, and its log says why (`reason`).
  // `reason` must be logged as a failed handshake. With
  // `server_refuses_after_handshake` (TLS 1.3: Redis refuses a missing client
  // certificate after the client's side of the handshake is done) the alert
  // carrying the reason can be lost when the connection is reset first;
  // then the server closing the connection must be logged instead.
  void ExpectRefused(const std::string& url, std::vector<std::string> flags,
                     const std::string& reason, bool server_refuses_after_handshake = false) {
    ASSERT_NO_FATAL_FAILURE(StartBroker(url, std::move(flags), false));
    // Several attempts (backoff 100, 200, 400, 800 ms).
    absl::SleepFor(absl::Milliseconds(1800));
    HealthStatus health;
    JW_EXPECT_OK(CheckHealth(broker_->channel(), "", &health));
    EXPECT_EQ(health, kNotServing);
    auto stub = broker_->NewStub();
    v1::EnqueueResponse resp;
    EXPECT_EQ(Enqueue(*stub, MakeJob("tls"), &resp).error_code(),
              grpc::StatusCode::UNAVAILABLE);
    stub.reset();
    const std::string log = StopAndReadLog();
    const bool reason_logged =
        absl::StrContains(log, "redis TLS handshake failed") && absl::StrContains(log, reason);
    EXPECT_TRUE(reason_logged || (server_refuses_after_handshake &&
                                  absl::StrContains(log, "connection closed by the server")))
        << log;
    EXPECT_FALSE(absl::StrContains(log, "redis connected")) << log;
    EXPECT_FALSE(absl::StrContains(log, kPassword)) << log;
    EXPECT_EQ(redis_->DbSize(), 0);
  }

  std::unique_ptr<TestPki> pki_;
  std::string dir_;
  std::unique_ptr<RedisServer> redis_;
  std::unique_ptr<BrokerProcess> broker_;
};

// Enqueue, a Claim stream woken by pub/sub, and Ack: both connections work.
void RunOneJob(BrokerProcess& broker, const std::string& queue) {
  auto stub = broker.NewStub();
  ClaimReader claim(broker.NewStub(), MakeClaim({queue}));
  absl::SleepFor(absl::Milliseconds(200));  // the stream waits: woken by pub/sub
  const std::string id = MustEnqueue(*stub, MakeJob(queue, "over tls"));
  ASSERT_FALSE(id.empty());
  std::optional<v1::ClaimedJob> job = claim.Next(absl::Seconds(10));
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->job().id(), id);
  JW_EXPECT_OK(Ack(*stub, *job));
}

TEST_F(RedisTlsTest, VerifiedServerWithAPasswordAndARestart) {
  ASSERT_NO_FATAL_FAILURE(StartRedis(/*auth_clients=*/false, kPassword));
  ASSERT_NO_FATAL_FAILURE(StartBroker(Url(absl::StrCat(":", kPassword)),
                                      {"--redis_tls_ca=" + pki_->ca_cert()}));
  EXPECT_TRUE(WaitForHealth(broker_->channel(), "", kServing, absl::Seconds(5)));
  ASSERT_NO_FATAL_FAILURE(RunOneJob(*broker_, "tls-a"));
  EXPECT_GT(redis_->DbSize(), 0);

  JW_ASSERT_OK(redis_->Restart());  // data lost (no persistence), port kept
  EXPECT_TRUE(WaitForHealth(broker_->channel(), "", kServing, absl::Seconds(8)));
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  auto stub = broker_->NewStub();
  grpc::Status last;
  do {
    v1::EnqueueResponse resp;
    last = Enqueue(*stub, MakeJob("tls-b"), &resp);
    if (last.ok()) break;
    absl::SleepFor(absl::Milliseconds(50));
  } while (absl::Now() < deadline);
  JW_EXPECT_OK(last);
  stub.reset();
  ASSERT_NO_FATAL_FAILURE(RunOneJob(*broker_, "tls-c"));

  const std::string log = StopAndReadLog();
  EXPECT_TRUE(absl::StrContains(log, "rediss://127.0.0.1")) << log;
  EXPECT_TRUE(absl::StrContains(log, "redis reconnected")) << log;
  EXPECT_FALSE(absl::StrContains(log, kPassword)) << log;
}

TEST_F(RedisTlsTest, ServerNameOverridesTheUrlHost) {
  ASSERT_NO_FATAL_FAILURE(StartRedis(/*auth_clients=*/false));
  // The certificate names DNS:localhost and IP:127.0.0.1.
  ASSERT_NO_FATAL_FAILURE(StartBroker(
      Url(), {"--redis_tls_ca=" + pki_->ca_cert(), "--redis_tls_server_name=localhost"}));
  ASSERT_NO_FATAL_FAILURE(RunOneJob(*broker_, "sni"));
}

TEST_F(RedisTlsTest, ClientCertificateWhenRedisDemandsOne) {
  ASSERT_NO_FATAL_FAILURE(StartRedis(/*auth_clients=*/true));
  ASSERT_NO_FATAL_FAILURE(StartBroker(Url(), {"--redis_tls_ca=" + pki_->ca_cert(),
                                              "--redis_tls_cert=" + pki_->client_cert(),
                                              "--redis_tls_key=" + pki_->client_key()}));
  ASSERT_NO_FATAL_FAILURE(RunOneJob(*broker_, "mtls"));
  broker_->Stop();
  EXPECT_GT(redis_->DbSize(), 0);
  JW_ASSERT_OK(redis_->Command("FLUSHALL").status());
  // Without one, Redis refuses the handshake.
  ExpectRefused(Url(), {"--redis_tls_ca=" + pki_->ca_cert()}, "certificate required",
                /*server_refuses_after_handshake=*/true);
}

TEST_F(RedisTlsTest, WrongCaIsRefusedWithTheReason) {
  ASSERT_NO_FATAL_FAILURE(StartRedis(/*auth_clients=*/false, kPassword));
  ExpectRefused(Url(absl::StrCat(":", kPassword)),
                {"--redis_tls_ca=" + pki_->Path("other-ca.pem")},
                "certificate verify failed");
}

TEST_F(RedisTlsTest, WrongServerNameIsRefused) {
  ASSERT_NO_FATAL_FAILURE(StartRedis(/*auth_clients=*/false));
  ExpectRefused(Url(), {"--redis_tls_ca=" + pki_->ca_cert(),
                        "--redis_tls_server_name=redis.example.com"},
                "hostname mismatch");
}

TEST_F(RedisTlsTest, InsecureSkipVerifyIsExplicitAndLogged) {
  ASSERT_NO_FATAL_FAILURE(StartRedis(/*auth_clients=*/false));
  ASSERT_NO_FATAL_FAILURE(StartBroker(Url(), {"--redis_tls_ca=" + pki_->Path("other-ca.pem"),
                                              "--redis_tls_insecure_skip_verify"}));
  ASSERT_NO_FATAL_FAILURE(RunOneJob(*broker_, "insecure"));
  const std::string log = StopAndReadLog();
  EXPECT_TRUE(absl::StrContains(log, "\"level\":\"warning\"") &&
              absl::StrContains(log, "redis TLS certificate verification is OFF"))
      << log;
}

TEST_F(RedisTlsTest, BadFlagsStopTheBroker) {
  const std::string ca = "--redis_tls_ca=" + pki_->ca_cert();
  // Configuration errors (2): TLS files without rediss://, a certificate
  // without its key.
  EXPECT_EQ(BrokerExitCode("redis://127.0.0.1:1", {ca}), 2);
  EXPECT_EQ(BrokerExitCode("redis://127.0.0.1:1", {"--redis_tls_insecure_skip_verify"}), 2);
  EXPECT_EQ(BrokerExitCode("rediss://127.0.0.1:1", {ca, "--redis_tls_cert=" + pki_->client_cert()}),
            2);
  // Cannot start (1): an unreadable CA, a key that is not the certificate's,
  // several hosts in standalone mode.
  EXPECT_EQ(BrokerExitCode("rediss://127.0.0.1:1", {"--redis_tls_ca=/nonexistent/ca.pem"}), 1);
  EXPECT_EQ(BrokerExitCode("rediss://127.0.0.1:1", {ca, "--redis_tls_cert=" + pki_->client_cert(),
                                                "--redis_tls_key=" + pki_->server_key()}),
            1);
  EXPECT_EQ(BrokerExitCode("redis://127.0.0.1:1,127.0.0.1:2", {}), 1);
}

}  // namespace
}  // namespace jobwire::testing
