// Redis AUTH from the URL (redis://[user]:password@host:port, percent-
// decoded) against a real redis-server with --requirepass and with an ACL
// user, and the rule that no secret (Redis password, bearer token) ever
// appears in the broker's log or in an error message.
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "broker/service/authorizer.h"
#include "gtest/gtest.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

constexpr char kAdminPassword[] = "redis-admin-pw-41d9";
// Needs escaping in a URL: @ : / %.
constexpr char kUserPassword[] = "us@r:pa/ss%7";
constexpr char kUserPasswordEscaped[] = "us%40r%3Apa%2Fss%257";
constexpr char kGoodToken[] = "good-token-0c8e1f";
constexpr char kBadToken[] = "bad-token-77aa02";

class RedisAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/jobwire-secrets-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    redis_ = std::make_unique<RedisServer>(kAdminPassword);
    JW_ASSERT_OK(redis_->Start());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Starts a broker on `url` with its stderr in dir_/broker.log.
  void StartBroker(const std::string& url,
                   std::vector<std::string> flags = {},
                   const std::string& token = "") {
    broker_ = std::make_unique<BrokerProcess>(redis_->port(), std::move(flags));
    broker_->set_redis_url(url);
    broker_->set_stderr_path(dir_ + "/broker.log");
    broker_->set_client_security({nullptr, token});
    JW_ASSERT_OK(broker_->Start());
  }

  // Stops the broker and returns its whole log.
  std::string StopAndReadLog() {
    broker_->Stop();
    return ReadTextFile(dir_ + "/broker.log");
  }

  std::string Url(const std::string& userinfo) const {
    return absl::StrCat("redis://", userinfo, "@127.0.0.1:", redis_->port());
  }

  std::string dir_;
  std::unique_ptr<RedisServer> redis_;
  std::unique_ptr<BrokerProcess> broker_;
};

TEST_F(RedisAuthTest, PasswordOfTheDefaultUser) {
  ASSERT_NO_FATAL_FAILURE(StartBroker(Url(absl::StrCat(":", kAdminPassword))));
  auto stub = broker_->NewStub();
  ASSERT_FALSE(MustEnqueue(*stub, MakeJob("authed")).empty());
  EXPECT_GT(redis_->DbSize(), 0);
  stub.reset();
  const std::string log = StopAndReadLog();
  EXPECT_FALSE(absl::StrContains(log, kAdminPassword)) << log;
}

TEST_F(RedisAuthTest, AclUserWithAnEscapedPasswordAndReconnect) {
  absl::StatusOr<RedisReply> created = redis_->Command(
      "ACL", "SETUSER", "jobwire", "on", absl::StrCat(">", kUserPassword), "~*",
      "&*", "+@all");
  JW_ASSERT_OK(created.status());
  ASSERT_FALSE(created->is_error()) << created->str;
  ASSERT_NO_FATAL_FAILURE(
      StartBroker(Url(absl::StrCat("jobwire:", kUserPasswordEscaped))));
  auto stub = broker_->NewStub();
  ASSERT_FALSE(MustEnqueue(*stub, MakeJob("acl")).empty());
  // Killing the broker's connections makes it reconnect, and AUTH again.
  JW_ASSERT_OK(redis_->Command("CLIENT", "KILL", "USER", "jobwire").status());
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  grpc::Status last;
  do {
    v1::EnqueueResponse resp;
    last = Enqueue(*stub, MakeJob("acl"), &resp);
    if (last.ok()) break;
    absl::SleepFor(absl::Milliseconds(50));
  } while (absl::Now() < deadline);
  JW_EXPECT_OK(last);
  stub.reset();
  const std::string log = StopAndReadLog();
  EXPECT_TRUE(absl::StrContains(log, "redis://jobwire@127.0.0.1")) << log;
  EXPECT_FALSE(absl::StrContains(log, kUserPassword)) << log;
  EXPECT_FALSE(absl::StrContains(log, kUserPasswordEscaped)) << log;
}

TEST_F(RedisAuthTest, WrongPasswordIsLoggedWithoutIt) {
  const std::string wrong = "wrong-redis-pw-913";
  ASSERT_NO_FATAL_FAILURE(StartBroker(Url(":" + wrong)));
  auto stub = broker_->NewStub();
  v1::EnqueueResponse resp;
  grpc::Status s = Enqueue(*stub, MakeJob("q"), &resp);
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(absl::StrContains(s.error_message(), wrong));
  stub.reset();
  const std::string log = StopAndReadLog();
  EXPECT_TRUE(absl::StrContains(log, "redis AUTH refused")) << log;
  EXPECT_FALSE(absl::StrContains(log, wrong)) << log;
}

// The broker with a token file and a Redis password, at debug level: calls
// with good, bad and missing tokens leave no secret in its log or in any
// error message.
TEST_F(RedisAuthTest, NoSecretInLogsOrErrors) {
  const std::string tokens = dir_ + "/tokens.json";
  std::ofstream(tokens) << R"({"tokens": [{"name": "app", "sha256": ")"
                        << service::Sha256Hex(kGoodToken)
                        << R"(", "enqueue": ["app.*"], "claim": ["app.*"]}]})";
  ASSERT_NO_FATAL_FAILURE(
      StartBroker(Url(absl::StrCat(":", kAdminPassword)),
                  {"--auth_tokens_file=" + tokens, "--log_level=debug"},
                  kGoodToken));
  std::vector<std::string> errors;
  for (const std::string& token :
       std::vector<std::string>{kGoodToken, kBadToken, ""}) {
    auto stub =
        v1::BrokerService::NewStub(MakeChannel(broker_->address(), nullptr, token));
    for (const char* queue : {"app.jobs", "other"}) {
      v1::EnqueueResponse resp;
      grpc::Status s = Enqueue(*stub, MakeJob(queue), &resp);
      errors.push_back(s.error_message());
      v1::Job job;
      errors.push_back(GetJob(*stub, queue, "1", &job).error_message());
    }
  }
  const std::string log = StopAndReadLog();
  errors.push_back(log);
  for (const std::string& text : errors) {
    for (const std::string& secret :
         {std::string(kAdminPassword), std::string(kGoodToken),
          std::string(kBadToken), service::Sha256Hex(kGoodToken)}) {
      EXPECT_FALSE(absl::StrContains(text, secret)) << secret << " in " << text;
    }
  }
  EXPECT_TRUE(absl::StrContains(log, "bearer token authentication on"));
}

}  // namespace
}  // namespace jobwire::testing
