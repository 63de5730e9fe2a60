// TLS and mutual TLS on the broker's gRPC listener (--tls_cert, --tls_key,
// --tls_client_ca), with certificates made by the openssl CLI for each test
// (tests/test_pki.h).
#include <sys/wait.h>

#include <memory>
#include <string>

#include <fstream>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "broker/service/authorizer.h"
#include "client/cpp/client.h"
#include "client/cpp/worker.h"
#include "gtest/gtest.h"
#include "tests/health_client.h"
#include "tests/test_harness.h"
#include "tests/test_pki.h"

namespace jobwire::testing {
namespace {

// GetJob of an unknown job on `credentials`: NOT_FOUND proves the call got
// through the handshake to the broker.
grpc::Status Probe(const std::string& address,
                   std::shared_ptr<grpc::ChannelCredentials> credentials) {
  auto stub = v1::BrokerService::NewStub(MakeChannel(address, std::move(credentials)));
  v1::Job job;
  return GetJob(*stub, "tls", "missing", &job);
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<TestPki>> pki = TestPki::Create();
    JW_ASSERT_OK(pki.status());
    pki_ = std::move(*pki);
    redis_ = std::make_unique<RedisServer>();
    JW_ASSERT_OK(redis_->Start());
  }

  // Starts a broker with TLS; with `mutual`, also --tls_client_ca. The
  // startup probe presents the valid client certificate.
  void StartBroker(bool mutual, std::vector<std::string> flags = {}) {
    flags.push_back("--tls_cert=" + pki_->server_cert());
    flags.push_back("--tls_key=" + pki_->server_key());
    if (mutual) flags.push_back("--tls_client_ca=" + pki_->ca_cert());
    broker_ = std::make_unique<BrokerProcess>(redis_->port(), flags);
    broker_->set_client_security({pki_->Credentials(mutual ? "client" : ""), ""});
    JW_ASSERT_OK(broker_->Start());
  }

  std::unique_ptr<TestPki> pki_;
  std::unique_ptr<RedisServer> redis_;
  std::unique_ptr<BrokerProcess> broker_;
};

TEST_F(TlsTest, ClientTrustingTheCaSucceedsAndPlaintextFails) {
  ASSERT_NO_FATAL_FAILURE(StartBroker(/*mutual=*/false));
  EXPECT_EQ(Probe(broker_->address(), pki_->Credentials()).error_code(),
            grpc::StatusCode::NOT_FOUND);
  // The channel targets 127.0.0.1, which the server certificate names.
  const grpc::Status plaintext =
      Probe(broker_->address(), grpc::InsecureChannelCredentials());
  EXPECT_EQ(plaintext.error_code(), grpc::StatusCode::UNAVAILABLE)
      << StatusText(plaintext);
  // A client trusting another CA refuses the server's certificate.
  grpc::SslCredentialsOptions other;
  other.pem_root_certs = pki_->Read("other-ca.pem");
  EXPECT_EQ(Probe(broker_->address(), grpc::SslCredentials(other)).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

// --health_listen: a plaintext port with only the health service, for the
// Kubernetes gRPC probe (which cannot speak TLS); it follows Redis like the
// TLS listener's health service and serves nothing else.
TEST_F(TlsTest, PlaintextHealthListenerForProbes) {
  absl::StatusOr<int> health_port = PickFreePort();
  JW_ASSERT_OK(health_port.status());
  const std::string health_address = absl::StrCat("127.0.0.1:", *health_port);
  ASSERT_NO_FATAL_FAILURE(
      StartBroker(/*mutual=*/true, {"--health_listen=" + health_address}));
  auto plaintext = MakeChannel(health_address, grpc::InsecureChannelCredentials());
  EXPECT_TRUE(WaitForHealth(plaintext, "", kServing, absl::Seconds(5)));
  EXPECT_TRUE(WaitForHealth(plaintext, "jobwire.v1.BrokerService", kServing, absl::Seconds(5)));
  EXPECT_EQ(Probe(health_address, grpc::InsecureChannelCredentials()).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);

  redis_.reset();  // Redis gone: both listeners report NOT_SERVING.
  EXPECT_TRUE(WaitForHealth(plaintext, "", kNotServing, absl::Seconds(10)));
  EXPECT_TRUE(WaitForHealth(MakeChannel(broker_->address(), pki_->Credentials("client")), "",
                            kNotServing, absl::Seconds(10)));
}

TEST_F(TlsTest, MutualTlsRequiresAClientCertificateFromTheCa) {
  ASSERT_NO_FATAL_FAILURE(StartBroker(/*mutual=*/true));
  EXPECT_EQ(Probe(broker_->address(), pki_->Credentials("client")).error_code(),
            grpc::StatusCode::NOT_FOUND);
  const grpc::Status no_cert = Probe(broker_->address(), pki_->Credentials());
  EXPECT_EQ(no_cert.error_code(), grpc::StatusCode::UNAVAILABLE)
      << StatusText(no_cert);
  const grpc::Status other_ca =
      Probe(broker_->address(), pki_->Credentials("other-client"));
  EXPECT_EQ(other_ca.error_code(), grpc::StatusCode::UNAVAILABLE)
      << StatusText(other_ca);
  EXPECT_EQ(Probe(broker_->address(), grpc::InsecureChannelCredentials())
                .error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

TEST_F(TlsTest, InconsistentOrUnreadableTlsFilesStopTheBroker) {
  // Flags that must come together: a configuration error (2).
  EXPECT_EQ(BrokerExitCode("redis://127.0.0.1:1", {"--tls_cert=" + pki_->server_cert()}), 2);
  EXPECT_EQ(BrokerExitCode("redis://127.0.0.1:1", {"--tls_client_ca=" + pki_->ca_cert()}), 2);
  // Files that cannot be used: the broker cannot start (1).
  EXPECT_EQ(BrokerExitCode("redis://127.0.0.1:1", {"--tls_cert=/nonexistent/cert.pem",
                        "--tls_key=" + pki_->server_key()}),
            1);
  EXPECT_EQ(BrokerExitCode("redis://127.0.0.1:1", {"--tls_cert=" + pki_->server_cert(),
                        "--tls_key=" + pki_->Path("server.ext")}),
            1);
}

// The C++ client and Worker over mutual TLS with a bearer token: a job
// enqueued by the Client is run and acked by the Worker; a Client without
// the token is refused, one with an unreadable CA file fails with that error.
TEST_F(TlsTest, CppClientAndWorkerWithMutualTlsAndAToken) {
  const std::string token = "cpp-client-token-3e1";
  const std::string tokens = pki_->Path("tokens.json");
  std::ofstream(tokens) << R"({"tokens": [{"name": "cpp", "sha256": ")"
                        << service::Sha256Hex(token)
                        << R"(", "enqueue": ["secure"], "claim": ["secure"]}]})";
  broker_ = std::make_unique<BrokerProcess>(
      redis_->port(),
      std::vector<std::string>{"--tls_cert=" + pki_->server_cert(),
                               "--tls_key=" + pki_->server_key(),
                               "--tls_client_ca=" + pki_->ca_cert(),
                               "--auth_tokens_file=" + tokens});
  broker_->set_client_security({pki_->Credentials("client"), token});
  JW_ASSERT_OK(broker_->Start());

  client::ClientOptions options;
  options.address = broker_->address();
  options.token = token;
  options.tls_root_ca = pki_->ca_cert();                  // a path
  options.tls_client_cert = pki_->Read("client.pem");     // PEM text
  options.tls_client_key = pki_->client_key();
  client::Client producer(options);
  absl::StatusOr<client::Enqueued> enqueued =
      producer.Enqueue("secure", "echo", "hello");
  JW_ASSERT_OK(enqueued.status());

  client::ClientOptions anonymous = options;
  anonymous.token = "wrong";
  EXPECT_EQ(client::Client(anonymous).Enqueue("secure", "echo", "x").status().code(),
            absl::StatusCode::kUnauthenticated);
  client::ClientOptions missing_ca = options;
  missing_ca.tls_root_ca = "/nonexistent/ca.pem";
  EXPECT_EQ(client::Client(missing_ca).Enqueue("secure", "echo", "x").status().code(),
            absl::StatusCode::kInvalidArgument);

  client::WorkerOptions worker_options;
  worker_options.address = broker_->address();
  worker_options.queues = {"secure"};
  worker_options.token = token;
  worker_options.tls_root_ca = pki_->ca_cert();
  worker_options.tls_client_cert = pki_->client_cert();
  worker_options.tls_client_key = pki_->client_key();
  absl::Notification settled;
  worker_options.on_outcome = [&](const client::Job&, const client::Outcome&) {
    if (!settled.HasBeenNotified()) settled.Notify();
  };
  client::Worker worker(worker_options);
  worker.Register("echo", [](const client::Job& job) -> absl::StatusOr<std::string> {
    return job.payload;
  });
  std::thread run([&] { worker.Run().IgnoreError(); });
  EXPECT_TRUE(settled.WaitForNotificationWithTimeout(absl::Seconds(10)));
  worker.Stop();
  run.join();
  absl::StatusOr<v1::Job> job = producer.GetJob("secure", enqueued->job_id);
  JW_ASSERT_OK(job.status());
  EXPECT_EQ(job->state(), kCompleted);
  EXPECT_EQ(job->result(), "hello");
}

}  // namespace
}  // namespace jobwire::testing
