// Graceful drain and stream rebalancing of the real broker: on SIGTERM it
// reports NOT_SERVING, ends Claim streams with UNAVAILABLE, lets unary calls
// in flight finish and exits; a worker mid-job acks through another replica;
// Claim streams end by themselves after --max_stream_age_ms (jittered).
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "client/cpp/worker.h"
#include "gtest/gtest.h"
#include "tests/health_client.h"
#include "tests/job_record.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

// Outcomes reported by a client Worker, by job id.
class OutcomeLog {
 public:
  void Add(const std::string& job_id, const std::string& kind) {
    absl::MutexLock lock(&mu_);
    kinds_.push_back(job_id + ":" + kind);
  }
  // Waits until `n` outcomes were reported; false on timeout.
  bool WaitFor(size_t n, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return kinds_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
  }
  std::vector<std::string> kinds() {
    absl::MutexLock lock(&mu_);
    return kinds_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> kinds_ ABSL_GUARDED_BY(mu_);
};

// Counts the worker's "claim stream ended" log lines.
struct StreamEnds {
  std::atomic<int> count{0};
  std::function<void(const std::string&)> Logger() {
    return [this](const std::string& line) {
      if (line.find("claim stream ended") != std::string::npos) ++count;
    };
  }
};

TEST(DrainTest, SigtermReportsNotServingEndsStreamsAndFinishesUnaryCalls) {
  RedisServer redis;
  JW_ASSERT_OK(redis.Start());
  BrokerProcess broker(redis.port(), {"--shutdown_grace_ms=10000"});
  JW_ASSERT_OK(broker.Start());
  auto channel = MakeChannel(broker.address());
  ASSERT_TRUE(WaitForHealth(channel, "", kServing, absl::Seconds(5)));
  ClaimReader reader(v1::BrokerService::NewStub(channel), MakeClaim({"drain"}));
  absl::SleepFor(absl::Milliseconds(200));  // the stream is open and waiting

  // Hold Redis so that an Enqueue stays in flight across the SIGTERM.
  auto paused = redis.Command("CLIENT", "PAUSE", 2500, "ALL");
  JW_ASSERT_OK(paused.status());
  ASSERT_FALSE(paused->is_error()) << paused->str;
  grpc::Status enqueued;
  v1::EnqueueResponse response;
  std::thread producer([&] {
    auto stub = v1::BrokerService::NewStub(channel);
    enqueued = Enqueue(*stub, MakeJob("drain", "in-flight"), &response);
  });
  absl::SleepFor(absl::Milliseconds(300));
  HealthStatus before;
  JW_ASSERT_OK(CheckHealth(channel, "", &before));
  EXPECT_EQ(before, kServing);  // paused Redis is still a reachable Redis

  const absl::Time term_at = absl::Now();
  broker.Signal(SIGTERM);
  // Streams end at once with UNAVAILABLE and a hint to go elsewhere.
  std::optional<grpc::Status> end = reader.WaitForEnd(absl::Seconds(1));
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(end->error_message().find("reconnect"), std::string::npos) << end->error_message();
  // While the Enqueue is still in flight the broker drains: NOT_SERVING,
  // and a new Claim stream is refused the same way.
  HealthStatus during;
  JW_EXPECT_OK(CheckHealth(channel, "", &during));
  EXPECT_EQ(during, kNotServing);
  JW_EXPECT_OK(CheckHealth(channel, "jobwire.v1.BrokerService", &during));
  EXPECT_EQ(during, kNotServing);
  ClaimReader late(v1::BrokerService::NewStub(channel), MakeClaim({"drain"}));
  std::optional<grpc::Status> late_end = late.WaitForEnd(absl::Seconds(1));
  ASSERT_TRUE(late_end.has_value());
  EXPECT_EQ(late_end->error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(late.received(), 0);
  EXPECT_LT(absl::Now() - term_at, absl::Seconds(2));  // all of this while Redis was held

  // The call in flight finishes, then the broker exits, inside the grace.
  producer.join();
  JW_EXPECT_OK(enqueued);
  EXPECT_FALSE(response.job_id().empty());
  int status = broker.Stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_LT(absl::Now() - term_at, absl::Seconds(6));
  auto state = redis.CommandArgv(
      testing::ReadJobFieldArgv(testing::JobsKey("jw", "drain"), response.job_id(), "state"));
  JW_ASSERT_OK(state.status());
  EXPECT_EQ(state->str, "pending");
}

// Clients that follow a job call WaitJob again when the drain ends their
// call with UNAVAILABLE. The broker refuses each call made during the drain
// at once, with UNAVAILABLE (BROKER_SHUTTING_DOWN). When it then stops
// serving, gRPC ends a call that reached it in that instant with CANCELLED
// (grpc/grpc#41785), which is why every client treats a CANCELLED it did not
// cause like UNAVAILABLE on WaitJob and Subscribe (docs/clients.md). Here
// callers call again at once, with no backoff, to crowd that instant.
TEST(DrainTest, WaitJobCalledAgainDuringTheDrainIsRefusedUnavailable) {
  RedisServer redis;
  JW_ASSERT_OK(redis.Start());
  BrokerProcess broker(redis.port(), {"--shutdown_grace_ms=10000"});
  JW_ASSERT_OK(broker.Start());
  const std::string queue = "drain-wait";
  const std::string id = MustEnqueue(*broker.NewStub(), MakeJob(queue));
  constexpr int kCallers = 4;
  std::atomic<bool> done{false};
  std::atomic<int> following{0};
  absl::Mutex mu;
  std::map<std::string, int> ends;  // "<code>: <message>" -> calls
  std::vector<int> refused(kCallers, 0);  // "broker is shutting down" answers, by caller
  std::vector<std::thread> callers;
  for (int i = 0; i < kCallers; ++i) {
    callers.emplace_back([&, i] {
      auto stub = v1::BrokerService::NewStub(MakeChannel(broker.address()));
      bool first = true;
      while (!done.load()) {
        grpc::ClientContext ctx;
        ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(20)));
        v1::WaitJobRequest request;
        request.set_queue(queue);
        request.set_job_id(id);
        auto reader = stub->WaitJob(&ctx, request);
        v1::WaitJobResponse message;
        if (first && reader->Read(&message)) ++following;  // before the SIGTERM
        first = false;
        while (reader->Read(&message)) {
        }
        grpc::Status end = reader->Finish();
        absl::MutexLock lock(&mu);
        ++ends[absl::StrCat(end.error_code(), ": ", end.error_message())];
        if (end.error_message() == "broker is shutting down") ++refused[i];
      }
    });
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (following.load() < kCallers && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_EQ(following.load(), kCallers);
  // An Enqueue held in flight by a paused Redis keeps the drain going ~1.4 s.
  auto paused = redis.Command("CLIENT", "PAUSE", 1500, "WRITE");
  JW_ASSERT_OK(paused.status());
  ASSERT_FALSE(paused->is_error()) << paused->str;
  std::thread producer([&] {
    v1::EnqueueResponse response;
    Enqueue(*v1::BrokerService::NewStub(MakeChannel(broker.address())),
            MakeJob(queue, "in-flight"), &response);
  });
  absl::SleepFor(absl::Milliseconds(100));
  broker.Signal(SIGTERM);
  int status = broker.Stop();  // waits for the drain and the exit
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  absl::SleepFor(absl::Milliseconds(100));  // and calls to the stopped broker
  done = true;
  for (std::thread& t : callers) t.join();
  producer.join();

  absl::MutexLock lock(&mu);
  for (int i = 0; i < kCallers; ++i) EXPECT_GT(refused[i], 10) << "caller " << i;
  for (const auto& [end, count] : ends) {
    const bool went_away =
        end.starts_with(absl::StrCat(grpc::StatusCode::UNAVAILABLE, ": ")) ||
        end == absl::StrCat(grpc::StatusCode::CANCELLED, ": CANCELLED");
    EXPECT_TRUE(went_away) << count << " x " << end;
  }
}

TEST(DrainTest, WorkerMidJobAcksThroughSecondBrokerAndNothingIsLost) {
  RedisServer redis;
  JW_ASSERT_OK(redis.Start());
  BrokerProcess first(redis.port(), {"--shutdown_grace_ms=20000"});
  JW_ASSERT_OK(first.Start());
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(MustEnqueue(*first.NewStub(), MakeJob("handoff", "p")));

  // The channel knows both replicas from the start, but the second starts
  // listening only once the worker's Claim stream is on the first: the C++
  // client's round_robin puts a stream on any address that is up.
  absl::StatusOr<int> free_port = PickFreePort();
  JW_ASSERT_OK(free_port.status());
  const std::string port_a = first.address().substr(first.address().rfind(':') + 1);
  const std::string port_b = absl::StrCat(*free_port);
  const std::string address_b = absl::StrCat("127.0.0.1:", port_b);
  Subprocess second;
  OutcomeLog outcomes;
  absl::Notification started, release;
  std::atomic<int> runs{0};
  client::WorkerOptions options;
  options.address = absl::StrCat("ipv4:127.0.0.1:", port_a, ",127.0.0.1:", port_b);
  options.queues = {"handoff"};
  options.concurrency = 1;
  options.lease_ms = 30000;
  options.on_outcome = [&](const client::Job& job, const client::Outcome& o) {
    outcomes.Add(job.id, o.kind);
  };
  absl::Mutex log_mu;
  std::vector<std::string> log_lines;
  options.log = [&](const std::string& line) {
    absl::MutexLock lock(&log_mu);
    log_lines.push_back(line);
  };
  client::Worker worker(options);
  worker.Register("test", [&](const client::Job& job) -> absl::StatusOr<std::string> {
    if (runs++ == 0) {
      started.Notify();
      release.WaitForNotification();
      return std::string("finished-after-drain");
    }
    return std::string("ok");
  });
  std::thread run([&] { JW_EXPECT_OK(worker.Run()); });

  ASSERT_TRUE(started.WaitForNotificationWithTimeout(absl::Seconds(10)));
  JW_ASSERT_OK(second.Spawn({JOBWIRE_BROKER_PATH, "--listen=" + address_b,
                             absl::StrCat("--redis_url=redis://127.0.0.1:", redis.port()),
                             "--metrics_listen="}));
  ASSERT_TRUE(WaitForHealth(MakeChannel(address_b), "jobwire.v1.BrokerService", kServing,
                            absl::Seconds(10)));
  auto producer = v1::BrokerService::NewStub(MakeChannel(address_b));
  const absl::Time term_at = absl::Now();
  int status = first.Stop();  // SIGTERM while the worker holds the job
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_LT(absl::Now() - term_at, absl::Seconds(3));
  ASSERT_FALSE(first.Running());
  release.Notify();  // only the second broker is left to ack through

  EXPECT_TRUE(outcomes.WaitFor(ids.size(), absl::Seconds(20)));
  worker.Stop();
  run.join();
  std::vector<std::string> kinds = outcomes.kinds();
  EXPECT_EQ(kinds.size(), ids.size());
  for (const std::string& kind : kinds) EXPECT_TRUE(kind.ends_with(":ack_ok")) << kind;
  int handed_over = 0;
  for (const std::string& id : ids) {
    v1::Job job;
    JW_ASSERT_OK(GetJob(*producer, "handoff", id, &job));
    EXPECT_EQ(job.state(), kCompleted) << id;
    EXPECT_EQ(job.attempts(), 1) << id;  // the held lease was never lost
    if (job.result() == "finished-after-drain") ++handed_over;
  }
  EXPECT_EQ(handed_over, 1);
  // The worker's stream was on the first broker and was ended by its drain.
  absl::MutexLock lock(&log_mu);
  bool drained = false;
  for (const std::string& line : log_lines) {
    drained = drained || line.find("shutting down; reconnect") != std::string::npos;
  }
  EXPECT_TRUE(drained);
}

class MaxStreamAgeTest : public BrokerTest {
 protected:
  MaxStreamAgeTest() : BrokerTest({"--max_stream_age_ms=1500"}) {}
};

TEST_F(MaxStreamAgeTest, StreamEndsUnavailableAfterJitteredAgeAndLeasesSurvive) {
  const std::string id = MustEnqueue(*stub_, MakeJob("aged", "p"));
  const absl::Time opened = absl::Now();
  auto reader = OpenClaim(MakeClaim({"aged"}, 2, 30000));
  std::optional<v1::ClaimedJob> claimed = reader->Next(absl::Seconds(1));
  ASSERT_TRUE(claimed.has_value());
  std::optional<grpc::Status> end = reader->WaitForEnd(absl::Seconds(3));
  const absl::Duration age = absl::Now() - opened;
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::UNAVAILABLE) << end->error_message();
  EXPECT_NE(end->error_message().find("maximum age"), std::string::npos) << end->error_message();
  EXPECT_GE(age, absl::Milliseconds(1340));
  EXPECT_LE(age, absl::Milliseconds(1650 + 300));  // + slack on a shared machine
  // The delivered job kept its lease.
  JW_ASSERT_OK(Ack(*stub_, *claimed, "after-stream-end"));
  v1::Job job;
  JW_ASSERT_OK(GetJob(*stub_, "aged", id, &job));
  EXPECT_EQ(job.state(), kCompleted);
  EXPECT_EQ(job.attempts(), 1);
}

TEST_F(MaxStreamAgeTest, WorkerKeepsProcessingAcrossStreamEnds) {
  OutcomeLog outcomes;
  StreamEnds ends;
  client::WorkerOptions options;
  options.address = broker_->address();
  options.queues = {"steady"};
  options.concurrency = 2;
  options.on_outcome = [&](const client::Job& job, const client::Outcome& o) {
    outcomes.Add(job.id, o.kind);
  };
  options.log = ends.Logger();
  client::Worker worker(options);
  worker.Register("test", [](const client::Job&) -> absl::StatusOr<std::string> {
    absl::SleepFor(absl::Milliseconds(20));
    return std::string("ok");
  });
  std::thread run([&] { JW_EXPECT_OK(worker.Run()); });
  constexpr int kJobs = 25;
  for (int i = 0; i < kJobs; ++i) {  // over about 5 s: several stream ages
    ASSERT_FALSE(MustEnqueue(*stub_, MakeJob("steady", "p")).empty());
    absl::SleepFor(absl::Milliseconds(200));
  }
  EXPECT_TRUE(outcomes.WaitFor(kJobs, absl::Seconds(15)));
  worker.Stop();
  run.join();
  std::vector<std::string> kinds = outcomes.kinds();
  EXPECT_EQ(kinds.size(), static_cast<size_t>(kJobs));
  for (const std::string& kind : kinds) EXPECT_TRUE(kind.ends_with(":ack_ok")) << kind;
  EXPECT_GE(ends.count.load(), 2);  // the streams did end by age meanwhile
}

}  // namespace
}  // namespace jobwire::testing
