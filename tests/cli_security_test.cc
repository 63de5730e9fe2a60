// The CLI against a broker with mutual TLS and tokens: the real binary,
// broker and Redis, with certificates from tests/test_pki.h.
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "broker/service/authorizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cli_test_util.h"
#include "tests/test_harness.h"
#include "tests/test_pki.h"

namespace jobwire::testing {
namespace {

using ::testing::HasSubstr;

// A broker with mutual TLS and tokens: the CLI connects with --tls-ca,
// --tls-cert, --tls-key and a token from --token or $JOBWIRE_TOKEN.
class CliSecurityTest : public ::testing::Test {
 protected:
  static constexpr char kOpsToken[] = "cli-ops-token-7d21";
  static constexpr char kProducerToken[] = "cli-producer-token-0b9e";

  void SetUp() override {
    absl::StatusOr<std::unique_ptr<TestPki>> pki = TestPki::Create();
    JW_ASSERT_OK(pki.status());
    pki_ = std::move(*pki);
    tokens_file_ = pki_->Path("tokens.json");
    std::ofstream(tokens_file_) << absl::StrCat(
        R"({"tokens": [{"name": "ops", "sha256": ")", service::Sha256Hex(kOpsToken),
        R"(", "admin": ["*"], "enqueue": ["*"]}, {"name": "producer", "sha256": ")",
        service::Sha256Hex(kProducerToken), R"(", "enqueue": ["orders"]}]})");
    redis_ = std::make_unique<RedisServer>();
    JW_ASSERT_OK(redis_->Start());
    broker_ = std::make_unique<BrokerProcess>(
        redis_->port(), std::vector<std::string>{"--tls_cert=" + pki_->server_cert(),
                                                 "--tls_key=" + pki_->server_key(),
                                                 "--tls_client_ca=" + pki_->ca_cert(),
                                                 "--auth_tokens_file=" + tokens_file_});
    broker_->set_client_security({pki_->Credentials("client"), kOpsToken});
    JW_ASSERT_OK(broker_->Start());
  }

  // The CLI on this broker with the valid client certificate, then `args`.
  CliResult SecureCli(std::vector<std::string> args) {
    args.insert(args.begin(), {"--addr=" + broker_->address(), "--timeout-ms=3000",
                               "--tls-ca=" + pki_->ca_cert(),
                               "--tls-cert=" + pki_->client_cert(),
                               "--tls-key=" + pki_->client_key()});
    return RunCli(args);
  }

  std::unique_ptr<TestPki> pki_;
  std::string tokens_file_;
  std::unique_ptr<RedisServer> redis_;
  std::unique_ptr<BrokerProcess> broker_;
};

TEST_F(CliSecurityTest, TokenAndClientCertificateGetThrough) {
  CliResult r = SecureCli({"--token", kOpsToken, "enqueue", "orders", "ship", "--json", "{}"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = SecureCli({"--token", kOpsToken, "stats", "orders", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).value("pending_due", std::string()), "1") << r.out;
}

TEST_F(CliSecurityTest, TokenFromTheEnvironment) {
  ASSERT_EQ(setenv("JOBWIRE_TOKEN", kProducerToken, 1), 0);
  CliResult allowed = SecureCli({"enqueue", "orders", "ship", "--json", "{}"});
  CliResult denied = SecureCli({"stats", "orders"});
  unsetenv("JOBWIRE_TOKEN");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
  EXPECT_EQ(denied.exit_code, 1);
  EXPECT_THAT(denied.err, HasSubstr("PERMISSION_DENIED: "));
  EXPECT_THAT(denied.err, HasSubstr("\"producer\""));
  EXPECT_THAT(denied.err, ::testing::Not(HasSubstr(kProducerToken)));
}

TEST_F(CliSecurityTest, RefusedWithoutTokenCertificateOrTls) {
  CliResult no_token = SecureCli({"queues"});
  EXPECT_EQ(no_token.exit_code, 1);
  EXPECT_THAT(no_token.err, HasSubstr("UNAUTHENTICATED: "));

  CliResult bad_token = SecureCli({"--token", "not-a-token", "queues"});
  EXPECT_EQ(bad_token.exit_code, 1);
  EXPECT_THAT(bad_token.err, HasSubstr("UNAUTHENTICATED: "));
  EXPECT_THAT(bad_token.err, ::testing::Not(HasSubstr("not-a-token")));

  // TLS without the client certificate, and plaintext: the handshake fails.
  for (std::vector<std::string> connection :
       {std::vector<std::string>{"--tls-ca=" + pki_->ca_cert()}, std::vector<std::string>{}}) {
    std::vector<std::string> args = {"--addr=" + broker_->address(), "--timeout-ms=2000",
                                     "--token", kOpsToken};
    args.insert(args.end(), connection.begin(), connection.end());
    args.push_back("queues");
    CliResult r = RunCli(args);
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_TRUE(absl::StrContains(r.err, "UNAVAILABLE") ||
                absl::StrContains(r.err, "DEADLINE_EXCEEDED"))
        << r.err;
  }

  CliResult missing_file = RunCli({"--addr=" + broker_->address(), "--tls-ca=/nonexistent/ca.pem",
                                   "queues"});
  EXPECT_EQ(missing_file.exit_code, 1);
  EXPECT_THAT(missing_file.err, HasSubstr("cannot read PEM file /nonexistent/ca.pem"));
}

}  // namespace
}  // namespace jobwire::testing
