// Admin ListWorkers (admin.proto) through real brokers and a real Redis: two
// replicas list each other's Claim streams with what the streams asked for
// and how many jobs they hold; a stream closed on the answering replica is
// gone at once; a replica that stops removes its report; one that is
// killed drops out once its report is three intervals old, and the reader
// removes the stale report from Redis; a replica without streams writes
// nothing.
#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/lifecycle_test_util.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

constexpr char kInterval[] = "--worker_report_interval_ms=200";

class ListWorkersTest : public BrokerTest {
 protected:
  ListWorkersTest() : BrokerTest({kInterval}) {}

  static absl::StatusOr<v1::ListWorkersResponse> List(const BrokerProcess& broker) {
    auto admin = v1::AdminService::NewStub(broker.channel());
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::ListWorkersResponse response;
    grpc::Status status = admin->ListWorkers(&context, v1::ListWorkersRequest(), &response);
    if (!status.ok()) return absl::UnknownError(status.error_message());
    return response;
  }

  // Lists on `broker` until `done(response)` holds, for up to `timeout`;
  // the last response.
  static v1::ListWorkersResponse ListUntil(
      const BrokerProcess& broker, const std::function<bool(const v1::ListWorkersResponse&)>& done,
      absl::Duration timeout = absl::Seconds(5)) {
    const absl::Time deadline = absl::Now() + timeout;
    v1::ListWorkersResponse last;
    while (true) {
      absl::StatusOr<v1::ListWorkersResponse> r = List(broker);
      EXPECT_TRUE(r.ok()) << r.status();
      if (r.ok()) last = *r;
      if ((r.ok() && done(last)) || absl::Now() > deadline) return last;
      absl::SleepFor(absl::Milliseconds(50));
    }
  }

  static const v1::WorkerStream* Find(const v1::ListWorkersResponse& r, const std::string& worker) {
    for (const v1::WorkerStream& s : r.streams()) {
      if (s.worker_id() == worker) return &s;
    }
    return nullptr;
  }
  static bool Has(const v1::ListWorkersResponse& r, const std::string& worker) {
    return Find(r, worker) != nullptr;
  }
  static bool HasBroker(const v1::ListWorkersResponse& r, const std::string& broker) {
    for (const v1::BrokerReport& b : r.brokers()) {
      if (b.broker() == broker) return true;
    }
    return false;
  }
  // The broker name a replica listening on `address` ("127.0.0.1:<port>")
  // reports: "<host>:<port>".
  static std::string PortOf(const std::string& address) {
    return address.substr(address.rfind(':'));
  }
};

TEST_F(ListWorkersTest, ReplicasListEachOthersStreams) {
  auto other = AnotherBroker({kInterval});
  JW_ASSERT_OK(other->Start());
  v1::ClaimRequest weighted = MakeClaim({"lw1", "lw2"}, 5, 0, "worker-a");
  weighted.add_weights(3);
  weighted.add_weights(1);
  weighted.add_types("test");
  auto a = OpenClaim(weighted);
  auto b = std::make_unique<ClaimReader>(other->NewStub(), MakeClaim({"lw3"}, 2, 0, "worker-b"));
  MustEnqueue(*stub_, MakeJob("lw1"));
  ASSERT_TRUE(a->Next(absl::Seconds(10)).has_value());  // held: in flight 1

  for (const BrokerProcess* asked : {broker_.get(), other.get()}) {
    v1::ListWorkersResponse r = ListUntil(*asked, [](const v1::ListWorkersResponse& r) {
      return Has(r, "worker-a") && Has(r, "worker-b") && Find(r, "worker-a")->in_flight() == 1;
    });
    ASSERT_TRUE(Has(r, "worker-a") && Has(r, "worker-b")) << r.DebugString();
    const v1::WorkerStream& sa = *Find(r, "worker-a");
    EXPECT_EQ(std::vector<std::string>(sa.queues().begin(), sa.queues().end()),
              (std::vector<std::string>{"lw1", "lw2"}));
    EXPECT_EQ(std::vector<int>(sa.weights().begin(), sa.weights().end()),
              (std::vector<int>{3, 1}));
    EXPECT_EQ(std::vector<std::string>(sa.types().begin(), sa.types().end()),
              (std::vector<std::string>{"test"}));
    EXPECT_EQ(sa.max_in_flight(), 5);
    EXPECT_EQ(sa.in_flight(), 1);
    EXPECT_NEAR(sa.opened_at_ms(), absl::ToUnixMillis(absl::Now()), 60000);
    EXPECT_FALSE(sa.peer().empty());
    const v1::WorkerStream& sb = *Find(r, "worker-b");
    EXPECT_EQ(sb.max_in_flight(), 2);
    EXPECT_EQ(sb.in_flight(), 0);
    // Each stream names the replica it is open on.
    EXPECT_TRUE(absl::EndsWith(sa.broker(), PortOf(broker_->address()))) << sa.broker();
    EXPECT_TRUE(absl::EndsWith(sb.broker(), PortOf(other->address()))) << sb.broker();
    ASSERT_EQ(r.brokers_size(), 2) << r.DebugString();
    for (const v1::BrokerReport& report : r.brokers()) {
      EXPECT_EQ(report.streams(), 1);
      EXPECT_FALSE(report.truncated());
      EXPECT_GT(report.expires_at_ms(), report.reported_at_ms());
    }
  }
}

TEST_F(ListWorkersTest, AStreamClosedOnTheAnsweringReplicaIsGoneAtOnce) {
  auto reader = OpenClaim(MakeClaim({"lw"}, 1, 0, "short-lived"));
  ASSERT_TRUE(Has(ListUntil(*broker_, [](auto& r) { return Has(r, "short-lived"); }),
                  "short-lived"));
  reader.reset();  // cancels the stream
  EXPECT_FALSE(Has(ListUntil(*broker_, [](auto& r) { return !Has(r, "short-lived"); },
                             absl::Seconds(2)),
                   "short-lived"));
}

TEST_F(ListWorkersTest, AStoppedReplicaLeavesAtOnceAKilledOneWhenItsReportIsStale) {
  auto stopped = AnotherBroker({kInterval});
  auto killed = AnotherBroker({kInterval});
  JW_ASSERT_OK(stopped->Start());
  JW_ASSERT_OK(killed->Start());
  // A replica reports only while it has streams.
  auto here = OpenClaim(MakeClaim({"lw"}, 1, 0, "on-this-one"));
  auto on_stopped = std::make_unique<ClaimReader>(stopped->NewStub(), MakeClaim({"lw"}, 1, 0, "s"));
  auto on_killed = std::make_unique<ClaimReader>(killed->NewStub(), MakeClaim({"lw"}, 1, 0, "k"));
  const std::string stopped_port = PortOf(stopped->address());
  const std::string killed_port = PortOf(killed->address());
  auto named = [](const v1::ListWorkersResponse& r, const std::string& port) {
    for (const v1::BrokerReport& b : r.brokers()) {
      if (absl::EndsWith(b.broker(), port)) return true;
    }
    return false;
  };
  v1::ListWorkersResponse all = ListUntil(*broker_, [&](auto& r) {
    return named(r, stopped_port) && named(r, killed_port);
  });
  ASSERT_EQ(all.brokers_size(), 3) << all.DebugString();

  on_stopped.reset();
  stopped->Stop();  // SIGTERM: drains and removes its report
  v1::ListWorkersResponse after_stop = *List(*broker_);
  EXPECT_FALSE(named(after_stop, stopped_port)) << after_stop.DebugString();
  EXPECT_TRUE(named(after_stop, killed_port));

  on_killed->Cancel();
  killed->Signal(SIGKILL);
  const absl::Time killed_at = absl::Now();
  // Its last report goes stale 3 intervals (600 ms) after it was written.
  v1::ListWorkersResponse later = ListUntil(
      *broker_, [&](auto& r) { return !named(r, killed_port); }, absl::Seconds(5));
  EXPECT_FALSE(named(later, killed_port)) << later.DebugString();
  EXPECT_LT(absl::Now() - killed_at, absl::Seconds(2));
  EXPECT_EQ(later.brokers_size(), 1);
  // The stale report was removed from Redis by that listing: its HDEL is
  // sent as the listing answers, not before, so it lands moments later.
  const absl::Time removed_by = absl::Now() + absl::Seconds(2);
  absl::StatusOr<RedisReply> fields;
  do {
    fields = RedisCommandFor("jw:{workers}:reports", {"HLEN", "jw:{workers}:reports"});
    JW_ASSERT_OK(fields.status());
    if (fields->integer == 1) break;
    absl::SleepFor(absl::Milliseconds(10));
  } while (absl::Now() < removed_by);
  EXPECT_EQ(fields->integer, 1);
  killed->Stop();
}

TEST_F(ListWorkersTest, AReplicaWithoutStreamsWritesNothingAndItsReportGoesWithItsLastStream) {
  auto reports = [&] {
    absl::StatusOr<RedisReply> n =
        RedisCommandFor("jw:{workers}:reports", {"HLEN", "jw:{workers}:reports"});
    return n.ok() ? n->integer : -1;
  };
  absl::SleepFor(absl::Milliseconds(600));  // three report intervals
  EXPECT_EQ(RedisDbSize(), 0);
  v1::ListWorkersResponse none = *List(*broker_);
  EXPECT_EQ(none.streams_size(), 0);
  EXPECT_EQ(none.brokers_size(), 0);

  auto reader = OpenClaim(MakeClaim({"lw"}, 1, 0, "only"));
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (reports() != 1 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
  EXPECT_EQ(reports(), 1);
  reader.reset();
  while (reports() != 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
  EXPECT_EQ(reports(), 0);
  EXPECT_EQ(RedisDbSize(), 0);
}

}  // namespace
}  // namespace jobwire::testing
