// Every line the broker writes is one JSON object (nlohmann's strict parser,
// which also rejects malformed UTF-8), with a millisecond UTC timestamp and
// numbers as JSON numbers: checked on a line of each kind a real broker
// writes: start-up info, a job line, an error (metrics port taken), a
// warning (Redis lost) and gRPC's own lines (a TLS handshake failure,
// routed through gpr_set_log_function).
#include <unistd.h>

#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/lifecycle_test_util.h"
#include "tests/subprocess.h"
#include "tests/test_harness.h"
#include "tests/test_pki.h"

namespace jobwire::testing {
namespace {

class LogFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<TestPki>> pki = TestPki::Create();
    JW_ASSERT_OK(pki.status());
    pki_ = std::move(*pki);
    redis_ = std::make_unique<RedisServer>();
    JW_ASSERT_OK(redis_->Start());
    log_path_ = absl::StrCat(::testing::TempDir(), "/log_format_", getpid(), ".log");
    broker_ = std::make_unique<BrokerProcess>(
        redis_->port(),
        std::vector<std::string>{"--tls_cert=" + pki_->server_cert(),
                                 "--tls_key=" + pki_->server_key(),
                                 // Taken by Redis: the broker logs an error and goes on.
                                 absl::StrCat("--metrics_listen=127.0.0.1:", redis_->port())});
    broker_->set_client_security({pki_->Credentials(""), ""});
    broker_->set_stderr_path(log_path_);
    JW_ASSERT_OK(broker_->Start());
  }

  // Every line of the broker's log, parsed; a line that does not parse is a
  // test failure (and a null element).
  std::vector<nlohmann::json> Lines() {
    std::vector<nlohmann::json> out;
    for (absl::string_view line : absl::StrSplit(ReadTextFile(log_path_), '\n', absl::SkipEmpty())) {
      nlohmann::json parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      EXPECT_TRUE(parsed.is_object()) << "not a JSON object: " << line;
      out.push_back(std::move(parsed));
    }
    return out;
  }

  // The first line for which `match` holds, waiting up to 10 s.
  template <typename Match>
  nlohmann::json Await(const char* what, Match match) {
    const absl::Time end = absl::Now() + absl::Seconds(10);
    do {
      for (nlohmann::json& line : Lines()) {
        if (line.is_object() && match(line)) return line;
      }
      absl::SleepFor(absl::Milliseconds(50));
    } while (absl::Now() < end);
    ADD_FAILURE() << "no log line: " << what << "\n" << ReadTextFile(log_path_);
    return nlohmann::json();
  }

  static bool Msg(const nlohmann::json& line, const std::string& msg) {
    return line.value("msg", "") == msg;
  }

  std::unique_ptr<TestPki> pki_;
  std::unique_ptr<RedisServer> redis_;
  std::unique_ptr<BrokerProcess> broker_;
  std::string log_path_;
};

TEST_F(LogFormatTest, ALineOfEachKindIsJsonWithMillisecondsAndNumbers) {
  // A job line: a Fail that makes the job dead.
  auto stub = broker_->NewStub();
  v1::EnqueueRequest request = MakeJob("log.kinds");
  request.set_max_attempts(1);
  v1::EnqueueResponse enqueued;
  ASSERT_TRUE(Enqueue(*stub, request, &enqueued).ok());
  {
    ClaimReader reader(broker_->NewStub(), MakeClaim({"log.kinds"}, 1, 30000));
    std::optional<v1::ClaimedJob> claimed = reader.Next(kPrompt);
    ASSERT_TRUE(claimed.has_value());
    v1::FailResponse failed;
    ASSERT_TRUE(Fail(*stub, MakeFail(*claimed, "boom"), &failed).ok());
  }
  // gRPC's own line: a plaintext client on the TLS listener fails the
  // handshake, which gRPC's TLS transport logs at error level.
  auto plaintext = v1::BrokerService::NewStub(
      MakeChannel(broker_->address(), grpc::InsecureChannelCredentials()));
  v1::Job job;
  EXPECT_FALSE(GetJob(*plaintext, "log.kinds", "x", &job).ok());

  const nlohmann::json started = Await("start-up", [](const nlohmann::json& l) {
    return Msg(l, "jobwire broker listening");
  });
  EXPECT_EQ(started.value("level", ""), "info");
  ASSERT_TRUE(started.contains("port"));
  EXPECT_TRUE(started["port"].is_number_integer()) << started;
  EXPECT_EQ(absl::StrCat("127.0.0.1:", started["port"].get<int>()), broker_->address());

  const nlohmann::json job_line = Await("job dead", [&](const nlohmann::json& l) {
    return Msg(l, "job dead") && l.value("job_id", "") == enqueued.job_id();
  });
  EXPECT_EQ(job_line.value("queue", ""), "log.kinds");

  const nlohmann::json error = Await("cannot serve metrics", [](const nlohmann::json& l) {
    return Msg(l, "cannot serve metrics");
  });
  EXPECT_EQ(error.value("level", ""), "error");

  const nlohmann::json grpc_line = Await("a gRPC line", [](const nlohmann::json& l) {
    return l.value("source", "") == "grpc";
  });
  EXPECT_EQ(grpc_line.value("level", ""), "error") << grpc_line;
  EXPECT_TRUE(grpc_line["line"].is_number_integer()) << grpc_line;
  EXPECT_FALSE(grpc_line.value("file", "").empty()) << grpc_line;

  redis_->Stop();
  const nlohmann::json warning = Await("redis connection lost", [](const nlohmann::json& l) {
    return Msg(l, "redis connection lost");
  });
  EXPECT_EQ(warning.value("level", ""), "warning");

  const std::regex ts(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");
  for (const nlohmann::json& line : Lines()) {
    ASSERT_TRUE(line.is_object());
    EXPECT_TRUE(std::regex_match(line.value("ts", ""), ts)) << line;
    EXPECT_TRUE(line["msg"].is_string()) << line;
    const std::string level = line.value("level", "");
    EXPECT_TRUE(level == "debug" || level == "info" || level == "warning" || level == "error")
        << line;
  }
}

}  // namespace
}  // namespace jobwire::testing
