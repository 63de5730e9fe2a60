// The `jobwire` CLI end to end: the real binary against the real broker and a
// real Redis, checking what it prints and its exit status. Queue settings:
// cli_queue_settings_test.cc; TLS and tokens: cli_security_test.cc.
#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "absl/strings/match.h"
#include "tests/cli_test_util.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

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

// enqueue --depends-on stores the parents; job shows them, how many are
// left, and a completed parent's result.
TEST_F(CliTest, EnqueueWithDependencies) {
  const std::string a = MustEnqueue(*stub_, MakeJob("flow"));
  const std::string b = MustEnqueue(*stub_, MakeJob("flow"));
  CliResult r = Cli({"enqueue", "flow", "t", "--depends-on", absl::StrCat(a, ",", b),
                     "--run-after-failed-dependency"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string id = r.out.substr(0, r.out.find('\n'));
  EXPECT_THAT(Cli({"job", "flow", id}).out,
              HasSubstr(absl::StrCat("depends on:      ", a, ", ", b,
                                     " (2 left, runs after a failed one)\n")));
  auto reader = OpenClaim(MakeClaim({"flow"}, 1));
  std::optional<v1::ClaimedJob> first = reader->Next(absl::Seconds(5));
  ASSERT_TRUE(first);
  ASSERT_EQ(first->job().id(), a);
  JW_ASSERT_OK(Ack(*stub_, *first, "done"));
  EXPECT_THAT(Cli({"job", "flow", id}).out,
              ::testing::AllOf(HasSubstr("(1 left, runs after a failed one)\n"),
                    HasSubstr(absl::StrCat("result of ", a, ": done\n"))));
  r = Cli({"enqueue", "flow", "t", "--depends-on", "000000999999"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("depends_on: job 000000999999 in queue flow not found"));
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
