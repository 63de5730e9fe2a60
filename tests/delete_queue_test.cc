// Admin.DeleteQueue on the real broker: every job of the queue goes (with
// its idempotency key) and the queue leaves ListQueues; active jobs make it
// refuse unless forced; a queue created again under the name never reuses
// an id.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

class DeleteQueueTest : public BrokerTest {
 protected:
  void SetUp() override {
    BrokerTest::SetUp();
    admin_ = v1::AdminService::NewStub(broker_->channel());
  }

  grpc::Status Delete(const std::string& queue, bool force, int64_t* deleted = nullptr) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::DeleteQueueRequest request;
    request.set_queue(queue);
    request.set_force(force);
    v1::DeleteQueueResponse response;
    grpc::Status status = admin_->DeleteQueue(&context, request, &response);
    if (deleted != nullptr) *deleted = response.deleted();
    return status;
  }

  bool Listed(const std::string& queue) {
    grpc::ClientContext context;
    v1::ListQueuesResponse response;
    EXPECT_TRUE(admin_->ListQueues(&context, v1::ListQueuesRequest(), &response).ok());
    for (const auto& q : response.queues()) {
      if (q.queue() == queue) return true;
    }
    return false;
  }

  // The keys of `queue` left in Redis, but claim records (they expire with
  // their leases).
  std::vector<std::string> KeysOf(const std::string& queue) {
    std::vector<std::string> keys;
    const std::string pattern = absl::StrCat("jw:{", queue, "}:*");
    auto reply = RedisCommandFor(pattern, {"KEYS", pattern});
    if (reply.ok()) {
      for (const auto& e : reply->elements) {
        if (!absl::StrContains(e.str, "}:claim:")) keys.push_back(e.str);
      }
    }
    std::sort(keys.begin(), keys.end());
    return keys;
  }

  std::unique_ptr<v1::AdminService::Stub> admin_;
};

TEST_F(DeleteQueueTest, RemovesEveryJobInEveryState) {
  const std::string q = "doomed";
  v1::EnqueueRequest keyed = MakeJob(q, "p");
  keyed.set_idempotency_key("k");
  const std::string first = MustEnqueue(*stub_, keyed);  // claimed and acked below
  v1::EnqueueRequest later = MakeJob(q, "p");
  later.set_delay_ms(3600000);
  MustEnqueue(*stub_, later);
  JW_ASSERT_OK(Cancel(*stub_, q, MustEnqueue(*stub_, MakeJob(q, "p"))));  // dead
  {
    ClaimReader reader(broker_->NewStub(), MakeClaim({q}, 1));
    std::optional<v1::ClaimedJob> job = reader.Next(absl::Seconds(5));
    ASSERT_TRUE(job.has_value());
    JW_ASSERT_OK(Ack(*stub_, *job));  // completed
  }
  ASSERT_TRUE(Listed(q));

  int64_t deleted = 0;
  JW_ASSERT_OK(Delete(q, /*force=*/false, &deleted));
  EXPECT_EQ(deleted, 3);  // the completed (keyed) one, the scheduled one, the dead one
  EXPECT_FALSE(Listed(q));
  // Only the id counter is left.
  EXPECT_EQ(KeysOf(q), std::vector<std::string>{absl::StrCat("jw:{", q, "}:seq")});
  v1::Job job;
  EXPECT_EQ(GetJob(*stub_, q, first, &job).error_code(), grpc::StatusCode::NOT_FOUND);

  // The name can be used again: a new id, and the idempotency key is free.
  v1::EnqueueResponse again;
  JW_ASSERT_OK(Enqueue(*stub_, keyed, &again));
  EXPECT_FALSE(again.duplicate());
  EXPECT_GT(again.job_id(), first);
  EXPECT_TRUE(Listed(q));
  // Deleting again is fine, and so is a queue that never existed.
  JW_EXPECT_OK(Delete(q, false));
  JW_EXPECT_OK(Delete("never-was", false));
}

TEST_F(DeleteQueueTest, RefusesActiveJobsUnlessForced) {
  const std::string q = "busy";
  MustEnqueue(*stub_, MakeJob(q, "p"));
  MustEnqueue(*stub_, MakeJob(q, "p"));
  ClaimReader reader(broker_->NewStub(), MakeClaim({q}, 1, /*lease_ms=*/60000));
  std::optional<v1::ClaimedJob> held = reader.Next(absl::Seconds(5));
  ASSERT_TRUE(held.has_value());

  grpc::Status refused = Delete(q, /*force=*/false);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(absl::StrContains(refused.error_message(), "1 active")) << refused.error_message();
  EXPECT_TRUE(Listed(q));
  // jobs, payloads, ready, ready_by_type, active, seq, registered: nothing removed
  EXPECT_EQ(KeysOf(q).size(), 7u);

  int64_t deleted = 0;
  JW_ASSERT_OK(Delete(q, /*force=*/true, &deleted));
  EXPECT_EQ(deleted, 2);
  EXPECT_FALSE(Listed(q));
  EXPECT_EQ(Ack(*stub_, *held).error_code(), grpc::StatusCode::NOT_FOUND);
}

// The queue is deleted through one replica and used again through another:
// the other registers it again (no broker caches that a queue is registered).
TEST_F(DeleteQueueTest, AQueueDeletedThroughOneReplicaIsRegisteredAgainByAnother) {
  std::unique_ptr<BrokerProcess> other = AnotherBroker();
  JW_ASSERT_OK(other->Start());
  auto other_stub = other->NewStub();
  const std::string q = "shared";
  MustEnqueue(*other_stub, MakeJob(q, "p"));
  ASSERT_TRUE(Listed(q));
  JW_ASSERT_OK(Delete(q, false));
  ASSERT_FALSE(Listed(q));
  MustEnqueue(*other_stub, MakeJob(q, "p"));
  EXPECT_TRUE(Listed(q));
}

// The replicas' metric series of a deleted queue go within two stats passes
// (5 s apart).
class DeleteQueueMetricsTest : public DeleteQueueTest {
 protected:
  void SetUp() override {
    absl::StatusOr<int> port = PickFreePort();
    ASSERT_TRUE(port.ok());
    metrics_port_ = *port;
    broker_flags_ = {absl::StrCat("--metrics_listen=127.0.0.1:", metrics_port_)};
    DeleteQueueTest::SetUp();
  }

  // GET /metrics; "" when it fails.
  std::string Scrape() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(metrics_port_));
    std::string body;
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      const std::string request = "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n";
      if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
        char buffer[8192];
        for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) body.append(buffer, n);
      }
    }
    close(fd);
    return body;
  }

  int metrics_port_ = 0;
};

TEST_F(DeleteQueueMetricsTest, ADeletedQueuesSeriesAreRemoved) {
  const std::string q = "measured";
  const std::string label = absl::StrCat("queue=\"", q, "\"");
  MustEnqueue(*stub_, MakeJob(q, "p"));
  absl::Time deadline = absl::Now() + absl::Seconds(15);
  while (!absl::StrContains(Scrape(), label) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(200));
  }
  ASSERT_TRUE(absl::StrContains(Scrape(), label));
  JW_ASSERT_OK(Delete(q, false));
  deadline = absl::Now() + absl::Seconds(20);
  while (absl::StrContains(Scrape(), label) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(200));
  }
  const std::string text = Scrape();
  EXPECT_FALSE(text.empty());
  EXPECT_FALSE(absl::StrContains(text, label)) << text;
}

TEST_F(DeleteQueueTest, NamesABadQueue) {
  grpc::Status status = Delete("bad queue", false);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StrContains(status.error_message(), "queue")) << status.error_message();
}

}  // namespace
}  // namespace jobwire::testing
