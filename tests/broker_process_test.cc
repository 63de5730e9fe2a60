// The broker program itself: its embedded redis-server default (AOF
// persistence across restarts) and how fast it stops on SIGTERM.
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

// Stops `broker` with SIGTERM and checks that it exits cleanly and promptly
// (well inside its grace period; the harness would SIGKILL after 5 s).
void ExpectPromptCleanStop(BrokerProcess& broker) {
  const absl::Time stop_at = absl::Now();
  int status = broker.Stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_LT(absl::Now() - stop_at, absl::Seconds(3));
}

// The broker's Stop() closes the test's own channel first; these tests keep a
// separate channel open on purpose.
TEST(BrokerProcessTest, EmbeddedRedisPersistsJobsAcrossRestarts) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / absl::StrCat("jobwire-embedded-", getpid()))
          .string();
  std::filesystem::remove_all(dir);
  // An empty --redis_url (the last flag wins) selects the embedded Redis.
  const std::vector<std::string> flags = {"--redis_url=", "--data_dir=" + dir};
  std::string id;
  {
    BrokerProcess broker(0, flags);
    JW_ASSERT_OK(broker.Start());
    auto stub = broker.NewStub();
    v1::EnqueueRequest job = MakeJob("persisted", "kept-across-restart");
    id = MustEnqueue(*stub, job);
    ASSERT_FALSE(id.empty());
    stub.reset();
    // The embedded redis-server stops on SIGTERM too (no 5 s kill).
    ExpectPromptCleanStop(broker);
  }
  EXPECT_TRUE(std::filesystem::exists(dir + "/appendonlydir"));
  {
    BrokerProcess broker(0, flags);
    JW_ASSERT_OK(broker.Start());
    auto stub = broker.NewStub();
    v1::Job stored;
    JW_ASSERT_OK(GetJob(*stub, "persisted", id, &stored));
    EXPECT_EQ(stored.payload(), "kept-across-restart");
    EXPECT_EQ(stored.state(), kPending);
  }
  std::filesystem::remove_all(dir);
}

// The broker checks the key layout marker on connect (docs/redis-layout.md,
// "Layout versions"): a new Redis gets the marker with its first queue and no
// error; queues registered without a marker (layout 1 or 2) are marked 2 and
// logged as an error, by every later broker too.
TEST(BrokerProcessTest, LogsAnErrorOnDataOfAnotherLayout) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / absl::StrCat("jobwire-layout-", getpid()))
          .string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string error = R"("level":"error","msg":"redis holds jobwire)";
  // The broker's log once an Enqueue has been answered and, when `want` is
  // not empty, it shows up (the check's second read may come after it).
  auto log_of_broker = [&](int redis_port, const std::string& name, const std::string& want) {
    BrokerProcess broker(redis_port, {});
    broker.set_stderr_path(dir + "/" + name);
    absl::Status started = broker.Start();
    EXPECT_TRUE(started.ok()) << started;
    if (started.ok()) MustEnqueue(*broker.NewStub(), MakeJob("layout", "p"));
    const absl::Time deadline = absl::Now() + absl::Seconds(5);
    while (!want.empty() && absl::Now() < deadline &&
           ReadTextFile(dir + "/" + name).find(want) == std::string::npos) {
      absl::SleepFor(absl::Milliseconds(50));
    }
    broker.Stop();
    return ReadTextFile(dir + "/" + name);
  };

  RedisServer fresh;
  JW_ASSERT_OK(fresh.Start());
  const std::string first = log_of_broker(fresh.port(), "fresh.log", "");
  EXPECT_EQ(first.find(error), std::string::npos) << first;
  EXPECT_EQ(fresh.Command("GET", "jw:layout")->str, "4");
  const std::string again = log_of_broker(fresh.port(), "again.log", "");
  EXPECT_EQ(again.find(error), std::string::npos) << again;

  RedisServer old;
  JW_ASSERT_OK(old.Start());
  ASSERT_TRUE(old.Command("SADD", "jw:queues", "emails").ok());
  const std::string unmarked = log_of_broker(old.port(), "unmarked.log", error);
  EXPECT_NE(unmarked.find(error), std::string::npos) << unmarked;
  EXPECT_NE(unmarked.find("layout 1 or 2"), std::string::npos) << unmarked;

  // Marked, so that the next broker (which registered a queue meanwhile)
  // reports it too.
  EXPECT_EQ(old.Command("GET", "jw:layout")->str, "2");
  const std::string other = log_of_broker(old.port(), "other.log", error);
  EXPECT_NE(other.find(R"("layout":"2")"), std::string::npos) << other;
  std::filesystem::remove_all(dir);
}

TEST(BrokerProcessTest, EnvironmentVariablesSetFlagsAndFlagsWin) {
  RedisServer redis;
  JW_ASSERT_OK(redis.Start());
  setenv("JOBWIRE_DEFAULT_MAX_ATTEMPTS", "7", 1);
  setenv("JOBWIRE_BACKOFF_BASE_MS", "1234", 1);
  BrokerProcess broker(redis.port(), {"--backoff_base_ms=2345"});
  absl::Status started = broker.Start();
  unsetenv("JOBWIRE_DEFAULT_MAX_ATTEMPTS");
  unsetenv("JOBWIRE_BACKOFF_BASE_MS");
  JW_ASSERT_OK(started);
  auto stub = broker.NewStub();
  const std::string id = MustEnqueue(*stub, MakeJob("env", "p"));
  v1::Job job;
  JW_ASSERT_OK(GetJob(*stub, "env", id, &job));
  EXPECT_EQ(job.max_attempts(), 7);         // from the environment
  EXPECT_EQ(job.backoff_base_ms(), 2345);   // the flag wins
}

TEST(BrokerProcessTest, StopsPromptlyWithAnIdleClientConnected) {
  RedisServer redis;
  JW_ASSERT_OK(redis.Start());
  BrokerProcess broker(redis.port(), {"--shutdown_grace_ms=20000"});
  JW_ASSERT_OK(broker.Start());
  // A second connection that made a call and stays open, idle.
  auto channel = MakeChannel(broker.address());
  auto stub = v1::BrokerService::NewStub(channel);
  v1::Job job;
  EXPECT_EQ(GetJob(*stub, "q", "1", &job).error_code(), grpc::StatusCode::NOT_FOUND);
  ExpectPromptCleanStop(broker);
}

TEST(BrokerProcessTest, ShutdownEndsClaimStreamsAndLeasesSurviveOnAnotherBroker) {
  RedisServer redis;
  JW_ASSERT_OK(redis.Start());
  BrokerProcess first(redis.port(), {"--shutdown_grace_ms=20000"});
  BrokerProcess second(redis.port());
  JW_ASSERT_OK(first.Start());
  JW_ASSERT_OK(second.Start());
  auto first_stub = first.NewStub();
  const std::string id = MustEnqueue(*first_stub, MakeJob("drain", "p"));
  ClaimReader reader(v1::BrokerService::NewStub(MakeChannel(first.address())),
                     MakeClaim({"drain"}, 1, 30000));
  std::optional<v1::ClaimedJob> claimed = reader.Next(absl::Seconds(5));
  ASSERT_TRUE(claimed.has_value());

  first_stub.reset();
  ExpectPromptCleanStop(first);
  std::optional<grpc::Status> end = reader.WaitForEnd(absl::Seconds(3));
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::UNAVAILABLE) << end->error_message();

  // The lease lives in Redis: the job is acked through the other broker.
  auto second_stub = second.NewStub();
  JW_ASSERT_OK(Ack(*second_stub, *claimed, "done-elsewhere"));
  v1::Job stored;
  JW_ASSERT_OK(GetJob(*second_stub, "drain", id, &stored));
  EXPECT_EQ(stored.state(), kCompleted);
  EXPECT_EQ(stored.result(), "done-elsewhere");
}

TEST(BrokerProcessTest, TwoReplicasReapEachExpiredLeaseOnce) {
  RedisServer redis;
  JW_ASSERT_OK(redis.Start());
  BrokerProcess a(redis.port());
  BrokerProcess b(redis.port());
  JW_ASSERT_OK(a.Start());
  JW_ASSERT_OK(b.Start());
  auto stub = a.NewStub();
  constexpr int kJobs = 40;
  std::set<std::string> ids;
  for (int i = 0; i < kJobs; ++i) {
    v1::EnqueueRequest job = MakeJob("reaped", "p");
    job.set_backoff_base_ms(100);
    ids.insert(MustEnqueue(*stub, job));
  }
  {
    // A worker takes every job with a 1 s lease, then vanishes.
    ClaimReader worker(a.NewStub(), MakeClaim({"reaped"}, kJobs, 1000));
    for (int i = 0; i < kJobs; ++i) ASSERT_TRUE(worker.Next(absl::Seconds(5)).has_value());
  }
  // Both replicas' reapers run; each job comes back exactly once, on its
  // second attempt, to a worker on the other replica.
  ClaimReader other(b.NewStub(), MakeClaim({"reaped"}, kJobs, 30000));
  std::set<std::string> redelivered;
  for (int i = 0; i < kJobs; ++i) {
    std::optional<v1::ClaimedJob> job = other.Next(absl::Seconds(5));
    ASSERT_TRUE(job.has_value()) << "only " << i << " redelivered";
    EXPECT_EQ(job->job().attempts(), 2);
    EXPECT_EQ(job->job().error(), "lease expired");
    EXPECT_TRUE(redelivered.insert(job->job().id()).second) << "twice: " << job->job().id();
  }
  EXPECT_EQ(redelivered, ids);
  EXPECT_FALSE(other.Next(absl::Milliseconds(500)).has_value());
}

}  // namespace
}  // namespace jobwire::testing
