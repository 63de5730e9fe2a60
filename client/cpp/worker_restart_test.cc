// jobwire::client::Worker across broker restarts: a real redis-server and
// the real broker on a fixed port, stopped and started again by the test.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "client/cpp/client.h"
#include "client/cpp/worker.h"
#include "client/cpp/worker_test_util.h"
#include "gtest/gtest.h"
#include "tests/test_harness.h"

namespace jobwire::client {
namespace {

using ::jobwire::testing::kCompleted;
using ::jobwire::testing::PickFreePort;
using ::jobwire::testing::RedisServer;
using ::jobwire::testing::Subprocess;

// A broker on a fixed port, so that a restart keeps its address.
class WorkerRestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    JW_ASSERT_OK(redis_.Start());
    absl::StatusOr<int> port = PickFreePort();
    JW_ASSERT_OK(port.status());
    address_ = absl::StrCat("127.0.0.1:", *port);
    argv_ = {JOBWIRE_BROKER_PATH, "--listen=" + address_, "--redis_url=" + redis_.url(),
             "--log_level=error", "--shutdown_grace_ms=200"};
    port_ = *port;
    StartBroker();
    client_ = std::make_unique<Client>(ClientOptions{address_});
  }

  void StopBroker() { broker_.Terminate(absl::Seconds(5)); }
  // Spawns the broker and waits up to 10 s until its port accepts
  // connections (a gRPC channel that finds it closed backs off for seconds).
  void StartBroker() {
    JW_ASSERT_OK(broker_.Spawn(argv_));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < 1000; ++i) {
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      ASSERT_GE(fd, 0);
      bool listening = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
      close(fd);
      if (listening) return;
      absl::SleepFor(absl::Milliseconds(10));
    }
    FAIL() << "the broker never listened on " << address_;
  }

  // Enqueues a job of type "t", retrying until the broker listens.
  std::string Enqueue() {
    absl::StatusOr<Enqueued> enqueued;
    for (int i = 0; i < 200; ++i) {
      enqueued = client_->Enqueue("q", "t", "");
      if (enqueued.ok()) break;
      absl::SleepFor(absl::Milliseconds(50));
    }
    EXPECT_TRUE(enqueued.ok()) << enqueued.status();
    return enqueued.ok() ? enqueued->job_id : "";
  }

  // Polls for up to 15 s until job `id` is completed; returns it (or the
  // last state seen).
  v1::Job WaitCompleted(const std::string& id) {
    absl::StatusOr<v1::Job> job;
    for (int i = 0; i < 300; ++i) {
      job = client_->GetJob("q", id);
      if (job.ok() && job->state() == kCompleted) break;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return job.ok() ? *job : v1::Job();
  }

  WorkerOptions Options() {
    WorkerOptions options;
    options.address = address_;
    options.queues = {"q"};
    options.concurrency = 2;
    options.log = [](const std::string&) {};
    return options;
  }

  RedisServer redis_;
  int port_ = 0;
  std::string address_;
  std::vector<std::string> argv_;
  Subprocess broker_;
  std::unique_ptr<Client> client_;
};

TEST_F(WorkerRestartTest, SurvivesABrokerRestart) {
  std::string before = Enqueue();
  RunningWorker worker(Options(), {{"t", [](const Job&) -> absl::StatusOr<std::string> {
                                      return std::string("ok");
                                    }}});
  EXPECT_EQ(WaitCompleted(before).state(), kCompleted);

  StopBroker();
  StartBroker();
  std::string after = Enqueue();
  EXPECT_EQ(WaitCompleted(after).state(), kCompleted)
      << "job enqueued after the restart was not processed";
  JW_EXPECT_OK(worker.Stop());
}

// The handler finishes while the broker is down: its Ack answers UNAVAILABLE
// and is sent again, with backoff, until the restarted broker takes it.
TEST_F(WorkerRestartTest, AnAckRefusedWhileTheBrokerIsDownIsSentAgain) {
  std::string id = Enqueue();
  absl::Notification started;
  absl::Notification broker_down;
  std::atomic<int> runs{0};
  OutcomeLog outcomes;
  WorkerOptions options = Options();
  options.on_outcome = [&](const Job& job, const Outcome& outcome) {
    outcomes.Add(job, outcome);
  };
  RunningWorker worker(options, {{"t", [&](const Job&) -> absl::StatusOr<std::string> {
                                    ++runs;
                                    started.Notify();
                                    broker_down.WaitForNotification();
                                    return std::string("finished while the broker was down");
                                  }}});
  ASSERT_TRUE(started.WaitForNotificationWithTimeout(absl::Seconds(10)));
  StopBroker();
  broker_down.Notify();
  absl::SleepFor(absl::Milliseconds(500));  // the Ack fails at least once
  StartBroker();

  v1::Job job = WaitCompleted(id);
  EXPECT_EQ(job.state(), kCompleted);
  EXPECT_EQ(job.result(), "finished while the broker was down");
  EXPECT_EQ(outcomes.WaitFor(1), std::vector<std::string>{id + " 1 ack_ok"});
  EXPECT_EQ(runs.load(), 1);
  JW_EXPECT_OK(worker.Stop());
}

// The broker stays down until past the lease end: the Ack is sent again up
// to the lease end, then reported as ack_unknown (it may or may not have been
// stored), not as ack_error. The broker retries the job once it is back.
TEST_F(WorkerRestartTest, AnAckStillUnansweredWhenTheLeaseEndsIsUnknown) {
  std::string id = Enqueue();
  absl::Notification started;
  absl::Notification broker_down;
  std::atomic<int64_t> lease_end_ms{0};
  std::atomic<int64_t> reported_ms{0};
  OutcomeLog outcomes;
  WorkerOptions options = Options();
  options.lease_ms = 3000;
  options.on_outcome = [&](const Job& job, const Outcome& outcome) {
    int64_t none = 0;
    reported_ms.compare_exchange_strong(none, absl::ToUnixMillis(absl::Now()));
    outcomes.Add(job, outcome);
  };
  RunningWorker worker(options, {{"t", [&](const Job& job) -> absl::StatusOr<std::string> {
                                    if (job.attempt == 1) {
                                      started.Notify();
                                      broker_down.WaitForNotification();
                                      // No renewal since the claim: the lease ends here.
                                      lease_end_ms = job.lease_expires_at_ms;
                                    }
                                    return absl::StrCat("attempt ", job.attempt);
                                  }}});
  ASSERT_TRUE(started.WaitForNotificationWithTimeout(absl::Seconds(10)));
  StopBroker();
  broker_down.Notify();
  for (int i = 0; i < 500 && lease_end_ms == 0; ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_NE(lease_end_ms.load(), 0);
  absl::SleepFor(absl::FromUnixMillis(lease_end_ms) + absl::Seconds(1) - absl::Now());
  StartBroker();

  v1::Job job = WaitCompleted(id);
  EXPECT_EQ(job.state(), kCompleted);
  EXPECT_EQ(job.attempts(), 2);
  EXPECT_EQ(outcomes.WaitFor(2),
            (std::vector<std::string>{id + " 1 ack_unknown UNAVAILABLE", id + " 2 ack_ok"}));
  // Given up only once the lease had ended (not a backoff earlier).
  EXPECT_GE(reported_ms.load(), lease_end_ms.load() - 50)
      << "gave up " << lease_end_ms - reported_ms << " ms before the lease ended";
  JW_EXPECT_OK(worker.Stop());
}

}  // namespace
}  // namespace jobwire::client
