// The `jobwire` CLI end to end: the real binary against the real broker and a
// real Redis, checking what it prints and its exit status.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "absl/strings/match.h"
#include "broker/service/authorizer.h"
#include "tests/test_harness.h"
#include "tests/test_pki.h"

#ifndef JOBWIRE_CLI_PATH
#define JOBWIRE_CLI_PATH ""
#endif

namespace jobwire::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs the CLI with `args` and waits for it.
CliResult RunCli(const std::vector<std::string>& args) {
  char dir[] = "/tmp/jobwire-cli-XXXXXX";
  if (mkdtemp(dir) == nullptr) return {};
  const std::string out_path = std::string(dir) + "/out", err_path = std::string(dir) + "/err";
  std::vector<std::string> argv = {JOBWIRE_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_t pid = fork();
  if (pid == 0) {
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> raw;
    for (std::string& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    execv(raw[0], raw.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CliResult result{WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadTextFile(out_path),
                   ReadTextFile(err_path)};
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  rmdir(dir);
  return result;
}

class CliTest : public BrokerTest {
 protected:
  // The CLI on this test's broker.
  CliResult Cli(std::vector<std::string> args) {
    args.insert(args.begin(), "--addr=" + broker_->address());
    return RunCli(args);
  }
};

TEST_F(CliTest, EveryCommandEndToEnd) {
  CliResult r = Cli({"enqueue", "mail", "send", "--json", R"({"to": "ada@example.com"})",
                     "--priority", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string id = r.out.substr(0, r.out.find('\n'));
  v1::Job job;
  JW_ASSERT_OK(GetJob(*stub_, "mail", id, &job));
  EXPECT_EQ(job.payload(), R"({"to":"ada@example.com"})");
  EXPECT_EQ(job.priority(), 3);

  r = Cli({"queues"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("QUEUE"));
  EXPECT_THAT(r.out, HasSubstr("mail "));

  r = Cli({"stats", "mail"});
  EXPECT_THAT(r.out, HasSubstr("pending (due):       1\n"));

  r = Cli({"jobs", "mail", "--state", "pending"});
  EXPECT_THAT(r.out, HasSubstr(id + "  send"));

  r = Cli({"job", "mail", id});
  EXPECT_THAT(r.out, HasSubstr(R"(payload:         {"to":"ada@example.com"})"));

  r = Cli({"enqueue", "mail", "send", "--payload", "once", "--idempotency-key", "order-17"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string keyed = r.out.substr(0, r.out.find('\n'));
  r = Cli({"job", "mail", "--idempotency-key", "order-17"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("id:              " + keyed + "\n"));
  EXPECT_THAT(r.out, HasSubstr("idempotency key: order-17\n"));

  r = Cli({"pause", "mail"});
  EXPECT_EQ(r.out, "queue mail paused\n");
  EXPECT_THAT(Cli({"stats", "mail"}).out, HasSubstr("paused:              yes"));
  EXPECT_EQ(Cli({"resume", "mail"}).out, "queue mail resumed\n");

  r = Cli({"wait", "mail", id, "--timeout-ms", "300"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "pending (attempt 0/3)\n");
  EXPECT_THAT(r.err, HasSubstr("DEADLINE_EXCEEDED"));
  EXPECT_THAT(r.err, HasSubstr("did not finish within"));

  JW_ASSERT_OK(Cancel(*stub_, "mail", id));
  r = Cli({"wait", "mail", id});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("state:           dead\n"));
  EXPECT_THAT(r.err, HasSubstr("is dead: cancelled"));
  r = Cli({"jobs", "mail", "--state", "dead"});
  EXPECT_THAT(r.out, HasSubstr("cancelled"));
  r = Cli({"retry-dead", "mail", "--all"});
  EXPECT_EQ(r.out, "moved 1 dead job(s) of mail back to pending\n");
  JW_ASSERT_OK(Cancel(*stub_, "mail", id));
  r = Cli({"retry-dead", "mail", id});
  EXPECT_EQ(r.out, "moved 1 dead job(s) of mail back to pending\n");
  JW_ASSERT_OK(Cancel(*stub_, "mail", id));
  r = Cli({"purge-dead", "mail"});
  EXPECT_EQ(r.out, "purged 1 dead job(s) of mail\n");
  EXPECT_EQ(GetJob(*stub_, "mail", id, &job).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(CliTest, WaitFollowsAJobUntilItCompletes) {
  const std::string id = MustEnqueue(*stub_, MakeJob("waited", "in"));
  std::thread worker([this] {
    ClaimReader claims(broker_->NewStub(), MakeClaim({"waited"}));
    absl::SleepFor(absl::Milliseconds(300));  // the CLI is waiting by then
    std::optional<v1::ClaimedJob> claimed = claims.Next(absl::Seconds(5));
    ASSERT_TRUE(claimed);
    absl::SleepFor(absl::Milliseconds(200));
    EXPECT_TRUE(Ack(*stub_, *claimed, "out").ok());
  });
  CliResult r = Cli({"wait", "waited", id, "--timeout-ms", "20000"});
  worker.join();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("active (attempt 1/3)\n"));
  EXPECT_THAT(r.out, HasSubstr("completed (attempt 1/3)\n"));
  EXPECT_THAT(r.out, HasSubstr("result:          out\n"));
}

// cancel: a pending job is dead at once; a running one is asked to stop,
// which `job` shows with the run's timeout and progress.
TEST_F(CliTest, CancelAndTheRunControlFieldsOfAJob) {
  const std::string pending = MustEnqueue(*stub_, MakeJob("ctl.pending", "p"));
  CliResult r = Cli({"cancel", "ctl.pending", pending});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "cancelled: the job is dead\n");

  r = Cli({"enqueue", "ctl", "report", "--timeout-ms", "600000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string id(absl::StripAsciiWhitespace(r.out));
  ClaimReader claims(broker_->NewStub(), MakeClaim({"ctl"}));
  std::optional<v1::ClaimedJob> claimed = claims.Next(absl::Seconds(5));
  ASSERT_TRUE(claimed);
  ASSERT_EQ(claimed->job().id(), id);
  v1::ReportProgressRequest progress;
  progress.set_queue("ctl");
  progress.set_job_id(id);
  progress.set_lease_token(claimed->lease_token());
  progress.set_percent(30);
  progress.set_data("3 of 10 pages");
  v1::ReportProgressResponse progress_response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->ReportProgress(&context, progress, &progress_response).ok());

  r = Cli({"cancel", "ctl", id});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("cancel requested"));
  r = Cli({"job", "ctl", id});
  EXPECT_THAT(r.out, HasSubstr("timeout:         600000 ms\n"));
  EXPECT_THAT(r.out, HasSubstr("progress:        30% 3 of 10 pages\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("cancel asked:    -\n")));
  EXPECT_THAT(r.out, Not(HasSubstr("run deadline:    -\n")));
  r = Cli({"cancel", "ctl.pending", pending});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("FAILED_PRECONDITION"));
  // The cancel is in the job's error history, as run 0 (it never ran).
  r = Cli({"job", "ctl.pending", pending});
  EXPECT_THAT(r.out, ::testing::ContainsRegex(
                         "\nerrors:          run 0 at [0-9-]+ [0-9:.]+: cancelled\n"));
}

TEST_F(CliTest, WatchPrintsEventsAsTheyHappen) {
  // Jobs keep coming until the CLI has printed its 3 events (it may
  // subscribe after the first ones).
  std::atomic<bool> done{false};
  std::thread producer([&] {
    while (!done.load()) {
      v1::EnqueueResponse response;
      (void)Enqueue(*stub_, MakeJob("watched", "in"), &response);
      absl::SleepFor(absl::Milliseconds(100));
    }
  });
  CliResult r = Cli({"watch", "watched", "--kind", "enqueued", "--count", "3"});
  done = true;
  producer.join();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << r.out;
  for (const std::string& line : lines) {
    EXPECT_THAT(line, HasSubstr("  watched  "));
    EXPECT_THAT(line, HasSubstr("  enqueued  attempt 0  type test"));
  }

  r = Cli({"watch", "watched", "--kind", "bogus"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--kind: unknown event kind \"bogus\""));
  r = Cli({"watch", "bad name"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("queues[0]"));
}

TEST_F(CliTest, JsonOutputIsMachineReadable) {
  ASSERT_EQ(Cli({"enqueue", "q", "t", "--payload", "hello"}).exit_code, 0);
  CliResult r = Cli({"queues", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json queues = nlohmann::json::parse(r.out);
  ASSERT_EQ(queues["queues"].size(), 1u);
  EXPECT_EQ(queues["queues"][0]["queue"], "q");
  EXPECT_EQ(queues["queues"][0]["pending_due"], "1");  // int64 as a JSON string (proto3 JSON)

  r = Cli({"jobs", "q", "--json"});
  nlohmann::json jobs = nlohmann::json::parse(r.out);
  ASSERT_EQ(jobs["jobs"].size(), 1u);
  EXPECT_EQ(jobs["jobs"][0]["type"], "t");
  EXPECT_EQ(jobs["jobs"][0]["state"], "JOB_STATE_PENDING");

  r = Cli({"stats", "q", "--json"});
  EXPECT_EQ(nlohmann::json::parse(r.out)["queue"], "q");
}

// Failures: exit status 1 and the broker's code and message on stderr; bad
// usage: exit status 2.
TEST_F(CliTest, ErrorsCarryTheBrokersMessageAndANonZeroStatus) {
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string err;
  };
  std::vector<Case> cases = {
      {{"enqueue", "q", "t", "--priority", "5000"}, 1, "INVALID_ARGUMENT: priority: "},
      {{"enqueue", "q", "t", "--json", "{not json"}, 1, "INVALID_ARGUMENT: --json: "},
      {{"job", "q", "424242"}, 1, "NOT_FOUND: "},
      {{"job", "q"}, 1, "INVALID_ARGUMENT: job_id: "},
      {{"job", "q", "--idempotency-key", "nope"}, 1,
       "NOT_FOUND: no job in queue q holds idempotency key nope"},
      {{"job", "q", "7", "--idempotency-key", "k"}, 2, "excludes"},
      {{"jobs", "q", "--state", "sleeping"}, 1, "INVALID_ARGUMENT: --state: "},
      {{"retry-dead", "q"}, 1, "INVALID_ARGUMENT: job_ids: "},
      {{"stats", "bad queue"}, 1, "INVALID_ARGUMENT: queue: "},
      {{"stats"}, 2, "QUEUE is required"},
      {{"frobnicate"}, 2, "A subcommand is required"},
  };
  for (const Case& c : cases) {
    CliResult r = Cli(c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.args[0] << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.err)) << c.args[0];
  }
}

TEST(CliUnreachableTest, FailsAfterTheDeadline) {
  absl::StatusOr<int> port = PickFreePort();
  JW_ASSERT_OK(port.status());
  CliResult r = RunCli({absl::StrCat("--addr=127.0.0.1:", *port), "--timeout-ms=500", "queues"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(r.err, "UNAVAILABLE") ||
              absl::StrContains(r.err, "DEADLINE_EXCEEDED"))
      << r.err;
}

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

TEST(CliHelpTest, EveryCommandHasHelp) {
  for (const char* command : {"queues", "stats", "jobs", "job", "retry-dead", "purge-dead",
                              "pause", "resume", "enqueue", "put-schedule", "schedules",
                              "delete-schedule", "workers"}) {
    CliResult r = RunCli({command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << command;
    EXPECT_THAT(r.out, HasSubstr("Usage:")) << command;
  }
}

}  // namespace
}  // namespace jobwire::testing

namespace jobwire::testing {
namespace {

// create-queue / update-queue with a default job timeout, shown by stats
// and given to a job enqueued without one; update-queue with nothing to
// change is refused.
TEST_F(CliTest, QueueDefaultJobTimeout) {
  CliResult r = Cli({"create-queue", "timed", "--default-job-timeout-ms", "5000"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "created queue timed with 1 partition(s), default job timeout 5000 ms\n");
  v1::Job job;
  ASSERT_TRUE(GetJob(*stub_, "timed", MustEnqueue(*stub_, MakeJob("timed")), &job).ok());
  EXPECT_EQ(job.timeout_ms(), 5000);
  EXPECT_THAT(Cli({"stats", "timed"}).out, HasSubstr("default job timeout: 5000 ms\n"));

  r = Cli({"update-queue", "timed", "--default-job-timeout-ms", "0"});
  EXPECT_EQ(r.out, "queue timed: 1 -> 1 partition(s), default job timeout no limit\n") << r.err;
  r = Cli({"update-queue", "timed", "--default-job-timeout-ms", "-1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(Cli({"stats", "timed"}).out, HasSubstr("default job timeout: the broker's\n"));

  r = Cli({"update-queue", "timed"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("partitions, default_job_timeout_ms, rate_limit, max_active or "
                               "max_active_per_key must be given"));
}

// create-queue / update-queue with a rate limit, shown by stats; off
// removes it; a malformed flag is refused naming it, a partitioned one by
// the broker naming rate_limit.
TEST_F(CliTest, QueueRateLimit) {
  CliResult r = Cli({"create-queue", "metered", "--rate-limit", "5/1000"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "created queue metered with 1 partition(s), rate limit 5 per 1000 ms, burst 5\n");
  EXPECT_THAT(Cli({"stats", "metered"}).out, HasSubstr("rate limit:          5 per 1000 ms, burst 5\n"));
  r = Cli({"update-queue", "metered", "--rate-limit", "10/60000/2"});
  EXPECT_EQ(r.out, "queue metered: 1 -> 1 partition(s), rate limit 10 per 60000 ms, burst 2\n")
      << r.err;
  r = Cli({"update-queue", "metered", "--rate-limit", "off"});
  EXPECT_EQ(r.out, "queue metered: 1 -> 1 partition(s), rate limit removed\n") << r.err;
  EXPECT_THAT(Cli({"stats", "metered"}).out, HasSubstr("rate limit:          none\n"));

  r = Cli({"create-queue", "other", "--rate-limit", "5 per second"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--rate-limit: must be COUNT/INTERVAL_MS[/BURST], got 5 per second"));
  r = Cli({"create-queue", "other", "--partitions", "4", "--rate-limit", "5/1000"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("rate_limit: a rate-limited queue has one partition"));

  r = Cli({"update-queue", "metered", "--max-active", "3"});
  EXPECT_EQ(r.out, "queue metered: 1 -> 1 partition(s), max active 3\n") << r.err;
  EXPECT_THAT(Cli({"stats", "metered"}).out, HasSubstr("max active:          3\n"));
  r = Cli({"update-queue", "metered", "--max-active", "0"});
  EXPECT_EQ(r.out, "queue metered: 1 -> 1 partition(s), max active none\n") << r.err;
  EXPECT_THAT(Cli({"stats", "metered"}).out, HasSubstr("max active:          none\n"));
}

// --max-active-per-key on create-queue / update-queue, shown by stats; 0
// removes it; enqueue --concurrency-key stores the key, which job shows.
TEST_F(CliTest, QueueMaxActivePerKey) {
  CliResult r = Cli({"create-queue", "tenants", "--max-active-per-key", "2"});
  EXPECT_EQ(r.out, "created queue tenants with 1 partition(s), max active per key 2\n") << r.err;
  EXPECT_THAT(Cli({"stats", "tenants"}).out, HasSubstr("max active per key:  2\n"));
  r = Cli({"update-queue", "tenants", "--max-active-per-key", "0"});
  EXPECT_EQ(r.out, "queue tenants: 1 -> 1 partition(s), max active per key none\n") << r.err;
  EXPECT_THAT(Cli({"stats", "tenants"}).out, HasSubstr("max active per key:  none\n"));
  r = Cli({"create-queue", "wide", "--partitions", "2", "--max-active-per-key", "1"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("max_active_per_key: a queue with max_active_per_key has one "
                               "partition"));

  r = Cli({"enqueue", "tenants", "t", "--payload", "x", "--concurrency-key", "customer-7"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string id = r.out.substr(0, r.out.find('\n'));
  EXPECT_THAT(Cli({"job", "tenants", id}).out, HasSubstr("concurrency key: customer-7\n"));
}

// put-schedule / schedules / delete-schedule: a schedule every second
// enqueues jobs with its payload; the table shows it; a bad cron is refused
// with the broker's message.
TEST_F(CliTest, Schedules) {
  CliResult r = Cli({"put-schedule", "nightly", "reports", "build", "--cron", "0 3 * * *", "--tz",
                     "Europe/Berlin", "--json-payload", "{\"full\": true}"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("created schedule nightly, next run "));
  EXPECT_THAT(r.out, HasSubstr(":00:00.000 UTC"));
  r = Cli({"put-schedule", "tick", "ticks", "tick", "--every-ms", "1000", "--payload", "p"});
  EXPECT_EQ(r.exit_code, 0) << r.err;

  r = Cli({"schedules"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("NAME"));
  EXPECT_THAT(r.out, HasSubstr("0 3 * * * Europe/Berlin"));
  EXPECT_THAT(r.out, HasSubstr("every 1000 ms"));

  // The interval schedule's runs land in its queue.
  const absl::Time end = absl::Now() + absl::Seconds(10);
  std::string jobs;
  do {
    jobs = Cli({"jobs", "ticks", "--json"}).out;
    if (absl::StrContains(jobs, "schedule:tick:")) break;
    absl::SleepFor(absl::Milliseconds(100));
  } while (absl::Now() < end);
  EXPECT_THAT(jobs, HasSubstr("schedule:tick:"));

  r = Cli({"put-schedule", "bad", "q", "t", "--cron", "0 25 * * *"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("INVALID_ARGUMENT: schedule.cron: hour: 25 is out of range 0-23"));

  EXPECT_EQ(Cli({"delete-schedule", "tick"}).out, "deleted schedule tick\n");
  EXPECT_EQ(Cli({"delete-schedule", "tick"}).out, "no schedule tick\n");
  EXPECT_THAT(Cli({"schedules", "--json"}).out, Not(HasSubstr("\"tick\"")));
}

// workers: the Claim streams open, with what each asked for and holds.
TEST_F(CliTest, Workers) {
  EXPECT_EQ(Cli({"workers"}).out.substr(0, 23), "no worker is connected\n");
  v1::ClaimRequest claim = MakeClaim({"w1", "w2"}, 5, 0, "cli-worker");
  claim.add_weights(3);
  claim.add_weights(1);
  auto reader = OpenClaim(claim);
  MustEnqueue(*stub_, MakeJob("w2"));
  ASSERT_TRUE(reader->Next(absl::Seconds(10)).has_value());
  const absl::Time end = absl::Now() + absl::Seconds(10);
  CliResult r;
  do {
    r = Cli({"workers"});
    if (absl::StrContains(r.out, "1/5")) break;
    absl::SleepFor(absl::Milliseconds(50));
  } while (absl::Now() < end);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("WORKER"));
  EXPECT_THAT(r.out, HasSubstr("cli-worker"));
  EXPECT_THAT(r.out, HasSubstr("w1 x3,w2 x1"));
  EXPECT_THAT(r.out, HasSubstr("1/5"));
  EXPECT_THAT(r.out, HasSubstr("1 stream, reported "));
  EXPECT_THAT(Cli({"workers", "--json"}).out, HasSubstr("\"worker_id\":\"cli-worker\""));
}

}  // namespace
}  // namespace jobwire::testing
