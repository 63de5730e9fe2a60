// --redis_mode=sentinel against real processes: a broker pointed at three
// sentinels (tests/redis_sentinel.h) finds the master, follows a failover
// by itself (calls during it answer UNAVAILABLE, never INTERNAL; health goes
// NOT_SERVING and back), and the flags are checked at start. The last test
// measures what a failover loses under load (docs/guarantees.md).
#include <signal.h>
#include <stdlib.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/health_client.h"
#include "tests/redis_sentinel.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

// How long after the sentinels agree on the new master the broker may take
// to serve again: a +switch-master reconnects at once; without it the
// reconnect backoff (at most 2 s) and a sentinel question (1 s timeout per
// sentinel) bound it. 5 s leaves room for this loaded 2-core machine.
constexpr absl::Duration kFollowBound = absl::Seconds(5);

// Runs the broker with `flags` (and `env`, KEY=VALUE, set in this process
// while it starts) until it exits; its exit code and stderr.
struct Exit {
  int code = -1;
  std::string stderr_text;
};
Exit RunBroker(const std::vector<std::string>& flags,
               const std::vector<std::pair<std::string, std::string>>& env = {}) {
  char dir[] = "/tmp/jobwire-sentinel-flags-XXXXXX";
  Exit out;
  if (mkdtemp(dir) == nullptr) return out;
  const std::string err = std::string(dir) + "/stderr";
  std::vector<std::string> argv = {JOBWIRE_BROKER_PATH, "--listen=127.0.0.1:0",
                                   "--metrics_listen=", std::string("--data_dir=") + dir};
  argv.insert(argv.end(), flags.begin(), flags.end());
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  Subprocess broker;
  const bool spawned = broker.Spawn(argv, "", err).ok();
  for (const auto& [k, v] : env) unsetenv(k.c_str());
  if (!spawned) return out;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (broker.Running() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
  if (broker.Running()) {
    broker.Kill();
    return out;
  }
  const int status = broker.last_status();
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::stringstream text;
  text << std::ifstream(err).rdbuf();
  out.stderr_text = text.str();
  std::system(absl::StrCat("rm -rf ", dir).c_str());
  return out;
}

TEST(SentinelFlagsTest, BadModeAndMasterNameAreRefusedAtStart) {
  const std::string url = "--redis_url=redis://127.0.0.1:1,127.0.0.1:2";
  Exit e = RunBroker({url, "--redis_mode=replicated"});
  EXPECT_EQ(e.code, 2);
  EXPECT_TRUE(absl::StrContains(e.stderr_text, "--redis_mode must be standalone, sentinel or cluster"))
      << e.stderr_text;
  e = RunBroker({url}, {{"JOBWIRE_REDIS_MODE", "Sentinel"}});
  EXPECT_EQ(e.code, 2);
  EXPECT_TRUE(absl::StrContains(e.stderr_text, "got \"Sentinel\"")) << e.stderr_text;

  e = RunBroker({url, "--redis_mode=sentinel"});
  EXPECT_EQ(e.code, 2);
  EXPECT_TRUE(absl::StrContains(e.stderr_text, "needs --redis_sentinel_master")) << e.stderr_text;

  e = RunBroker({"--redis_url=redis://127.0.0.1:1", "--redis_sentinel_master=m"});
  EXPECT_EQ(e.code, 2);
  EXPECT_TRUE(absl::StrContains(e.stderr_text, "--redis_sentinel_master needs --redis_mode"))
      << e.stderr_text;

  // The embedded Redis is standalone.
  e = RunBroker({"--redis_mode=sentinel", "--redis_sentinel_master=m"});
  EXPECT_EQ(e.code, 2);
  EXPECT_TRUE(absl::StrContains(e.stderr_text, "needs --redis_url")) << e.stderr_text;

  // Standalone still refuses several hosts (exit 1: BrokerServer::Start).
  EXPECT_EQ(RunBroker({url}).code, 1);

  e = RunBroker({"--redis_url=redis://127.0.0.1:1"}, {{"JOBWIRE_REDIS_SENTINEL_PASSWORD", "pw"}});
  EXPECT_EQ(e.code, 2);
  EXPECT_TRUE(absl::StrContains(e.stderr_text, "--redis_sentinel_password needs --redis_mode"))
      << e.stderr_text;
}

std::string ReadFile(const std::string& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

// Sentinels with a password of their own (requirepass, here set with ACL
// SETUSER on each): a broker without --redis_sentinel_password never gets
// the master's address (and its log says why); one with it works, and the
// password never shows in its log.
TEST(SentinelAuthTest, SentinelsWithTheirOwnPasswordNeedIt) {
  RedisSentinelGroup group;
  JW_ASSERT_OK(group.Start());
  const std::string secret = "sentinel-secret-7f3a";
  for (int port : group.sentinel_ports()) {
    JW_ASSERT_OK(group.CommandAt(port, {"ACL", "SETUSER", "default", "resetpass", ">" + secret})
                     .status());
  }
  char dir[] = "/tmp/jobwire-sentinel-auth-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::vector<std::string> flags = {"--redis_mode=sentinel",
                                          "--redis_sentinel_master=" + group.master_name()};
  {
    BrokerProcess broker(0, flags);
    broker.set_redis_url(group.sentinel_url());
    broker.set_wait_for_redis(false);
    broker.set_stderr_path(std::string(dir) + "/without.log");
    JW_ASSERT_OK(broker.Start());
    EXPECT_FALSE(WaitForHealth(MakeChannel(broker.address()), "", kServing, absl::Seconds(3)))
        << "serving without the sentinels' password";
    broker.Stop();
    EXPECT_TRUE(absl::StrContains(ReadFile(std::string(dir) + "/without.log"), "NOAUTH"))
        << ReadFile(std::string(dir) + "/without.log");
  }
  std::vector<std::string> with = flags;
  with.push_back("--redis_sentinel_password=" + secret);
  BrokerProcess broker(0, with);
  broker.set_redis_url(group.sentinel_url());
  broker.set_stderr_path(std::string(dir) + "/with.log");
  JW_ASSERT_OK(broker.Start());
  {
    std::unique_ptr<v1::BrokerService::Stub> stub = broker.NewStub();
    const std::string id = MustEnqueue(*stub, MakeJob("authed", "p"));
    ClaimReader claim(broker.NewStub(), MakeClaim({"authed"}));
    std::optional<v1::ClaimedJob> job = claim.Next(absl::Seconds(10));
    ASSERT_TRUE(job.has_value());
    EXPECT_EQ(job->job().id(), id);
    EXPECT_TRUE(Ack(*stub, *job).ok());
  }
  broker.Stop();
  EXPECT_FALSE(absl::StrContains(ReadFile(std::string(dir) + "/with.log"), secret));
  std::system(absl::StrCat("rm -rf ", dir).c_str());
}

class SentinelBrokerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    JW_ASSERT_OK(group_.Start());
    broker_ = std::make_unique<BrokerProcess>(
        0, std::vector<std::string>{"--redis_mode=sentinel",
                                    "--redis_sentinel_master=" + group_.master_name()});
    broker_->set_redis_url(group_.sentinel_url());
    JW_ASSERT_OK(broker_->Start());
    stub_ = broker_->NewStub();
  }
  void TearDown() override {
    stub_.reset();
    if (broker_ != nullptr) broker_->Stop();
  }

  std::unique_ptr<ClaimReader> OpenClaim(v1::ClaimRequest request) const {
    return std::make_unique<ClaimReader>(broker_->NewStub(), std::move(request));
  }

  // Enqueues one job on `queue` and claims and acks it with a new stream.
  void EnqueueClaimAck(const std::string& queue) {
    const std::string id = MustEnqueue(*stub_, MakeJob(queue, "p"));
    ASSERT_FALSE(id.empty());
    std::unique_ptr<ClaimReader> reader = OpenClaim(MakeClaim({queue}));
    std::optional<v1::ClaimedJob> job = reader->Next(absl::Seconds(10));
    ASSERT_TRUE(job.has_value());
    EXPECT_EQ(job->job().id(), id);
    grpc::Status acked = Ack(*stub_, *job);
    EXPECT_TRUE(acked.ok()) << StatusText(acked);
  }

  RedisSentinelGroup group_;
  std::unique_ptr<BrokerProcess> broker_;
  std::unique_ptr<v1::BrokerService::Stub> stub_;
};

TEST_F(SentinelBrokerTest, WorksThroughTheMasterTheSentinelsName) {
  EnqueueClaimAck("q");
  // The job went to the master the sentinels name.
  absl::StatusOr<RedisReply> keys = group_.CommandAt(group_.data_ports()[0], {"DBSIZE"});
  JW_ASSERT_OK(keys.status());
  EXPECT_GT(keys->integer, 0);
}

TEST_F(SentinelBrokerTest, FollowsAFailoverByItself) {
  EnqueueClaimAck("before");
  auto channel = MakeChannel(broker_->address());
  ASSERT_TRUE(WaitForHealth(channel, "", kServing, absl::Seconds(5)));

  // Calls all through the failover, each answer's code counted.
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::map<int, int> codes;
  std::thread caller([&] {
    auto stub = broker_->NewStub();
    while (!stop.load()) {
      v1::EnqueueResponse response;
      grpc::Status s = Enqueue(*stub, MakeJob("during", "x"), &response);
      {
        std::lock_guard<std::mutex> lock(mu);
        ++codes[s.error_code()];
        if (s.error_code() == grpc::StatusCode::INTERNAL) {
          ADD_FAILURE() << "INTERNAL during the failover: " << StatusText(s);
        }
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
  });

  const int old_master = group_.data_ports()[0];
  group_.Kill(old_master);
  EXPECT_TRUE(WaitForHealth(channel, "", kNotServing, absl::Seconds(5)));
  absl::StatusOr<int> promoted = group_.WaitMaster(old_master, absl::Seconds(30));
  JW_ASSERT_OK(promoted.status());
  const absl::Time agreed = absl::Now();
  EXPECT_TRUE(WaitForHealth(channel, "", kServing, kFollowBound));
  std::printf("broker SERVING %lld ms after the sentinels agreed on port %d\n",
              static_cast<long long>(absl::ToInt64Milliseconds(absl::Now() - agreed)), *promoted);
  absl::SleepFor(absl::Milliseconds(300));  // a few calls after the failover too
  stop = true;
  caller.join();

  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [code, n] : codes) std::printf("during the failover: code %d x %d\n", code, n);
    EXPECT_GT(codes[grpc::StatusCode::UNAVAILABLE], 0);
    EXPECT_GT(codes[grpc::StatusCode::OK], 0);
    for (const auto& [code, n] : codes) {
      EXPECT_TRUE(code == grpc::StatusCode::OK || code == grpc::StatusCode::UNAVAILABLE)
          << "code " << code << " x " << n;
    }
  }
  EnqueueClaimAck("after");
  // The new jobs are on the promoted node.
  absl::StatusOr<RedisReply> role = group_.CommandAt(*promoted, {"ROLE"});
  JW_ASSERT_OK(role.status());
  ASSERT_FALSE(role->elements.empty());
  EXPECT_EQ(role->elements[0].str, "master");
}

// What a failover loses: a producer enqueues continuously, a worker claims
// and acks, the master is killed in the middle. Counted from the test's own
// records, by payload (job ids come from the master's counter and may be
// handed out again after a failover).
enum class Fault {
  kKill,  // SIGKILL of the master
  // SIGSTOP of the master: alive, connected, silent, as behind a network
  // partition, so the broker follows only because a sentinel announced
  // +switch-master.
  kHang,
  // The replication link cut (a password set on the master, which the
  // replica lacks, then CLIENT KILL TYPE replica), then the master killed
  // 300 ms later: what the master acknowledged meanwhile never reached the
  // replica.
  kCutThenKill,
};
const char* FaultName(Fault f) {
  return f == Fault::kKill ? "master killed"
         : f == Fault::kHang ? "master stopped"
                             : "replication cut, master killed 300 ms later";
}

void MeasureFailoverLoss(RedisSentinelGroup& group, BrokerProcess* broker, Fault fault) {
  const bool hang = fault == Fault::kHang;
  auto OpenClaim = [broker](v1::ClaimRequest request) {
    return std::make_unique<ClaimReader>(broker->NewStub(), std::move(request));
  };
  std::atomic<bool> stop_producing{false}, stop_working{false};
  std::mutex mu;
  std::set<std::string> enqueued_ok;  // payloads the producer got OK for
  std::map<std::string, int> received;
  int enqueue_unavailable = 0, enqueue_other = 0, ack_failed = 0;

  std::thread producer([&] {
    auto stub = broker->NewStub();
    for (int seq = 0; !stop_producing.load(); ++seq) {
      const std::string payload = absl::StrCat("p", seq);
      v1::EnqueueResponse response;
      grpc::Status s = Enqueue(*stub, MakeJob("load", payload), &response);
      std::lock_guard<std::mutex> lock(mu);
      if (s.ok()) {
        enqueued_ok.insert(payload);
      } else if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
        ++enqueue_unavailable;
      } else {
        ++enqueue_other;
      }
    }
  });
  std::thread worker([&] {
    auto stub = broker->NewStub();
    std::unique_ptr<ClaimReader> reader;
    while (!stop_working.load()) {
      if (reader == nullptr || reader->WaitForEnd(absl::ZeroDuration()).has_value()) {
        reader = OpenClaim(MakeClaim({"load"}, 16, /*lease_ms=*/2000));
      }
      std::optional<v1::ClaimedJob> job = reader->Next(absl::Milliseconds(100));
      if (!job.has_value()) continue;
      grpc::Status acked = Ack(*stub, *job);
      std::lock_guard<std::mutex> lock(mu);
      ++received[job->job().payload()];
      if (!acked.ok()) ++ack_failed;
    }
  });

  absl::SleepFor(absl::Seconds(3));
  const int old_master = group.data_ports()[0];
  if (hang) {
    absl::StatusOr<RedisReply> info = group.CommandAt(old_master, {"INFO", "server"});
    JW_ASSERT_OK(info.status());
    const size_t at = info->str.find("process_id:");
    ASSERT_NE(at, std::string::npos);
    ASSERT_EQ(kill(std::atoi(info->str.c_str() + at + 11), SIGSTOP), 0);
  } else {
    if (fault == Fault::kCutThenKill) {
      // A password keeps the replica from reconnecting (it has no
      // masterauth); connections already authenticated, the broker's
      // included, go on.
      JW_ASSERT_OK(group.CommandAt(old_master, {"CONFIG", "SET", "requirepass", "cut"}).status());
      JW_ASSERT_OK(RedisCommandAt(old_master, "cut", {"CLIENT", "KILL", "TYPE", "replica"}).status());
      absl::SleepFor(absl::Milliseconds(300));
      // How far apart they are when the master dies (printed, not judged:
      // the replica may have reconnected and caught up already).
      auto field = [](int port, const std::string& password,
                      const std::string& name) -> std::string {
        absl::StatusOr<RedisReply> info = RedisCommandAt(port, password, {"INFO", "replication"});
        if (!info.ok()) return "?";
        const size_t at = info->str.find(name + ":");
        if (at == std::string::npos) return "?";
        const size_t from = at + name.size() + 1;
        return info->str.substr(from, info->str.find('\r', from) - from);
      };
      const int replica = group.data_ports()[1];
      std::printf("at the kill: master offset %s, replica offset %s, replica link %s\n",
                  field(old_master, "cut", "master_repl_offset").c_str(),
                  field(replica, "", "master_repl_offset").c_str(),
                  field(replica, "", "master_link_status").c_str());
    }
    group.Kill(old_master);
  }
  absl::StatusOr<int> promoted = group.WaitMaster(old_master, absl::Seconds(30));
  JW_EXPECT_OK(promoted.status());
  size_t ok_at_promotion;
  {
    std::lock_guard<std::mutex> lock(mu);
    ok_at_promotion = enqueued_ok.size();
  }
  absl::SleepFor(absl::Seconds(3));  // load on the new master
  stop_producing = true;
  producer.join();
  // Drain: until nothing new arrived for 4 s (leases are 2 s).
  size_t seen = 0;
  absl::Time quiet_since = absl::Now();
  while (absl::Now() - quiet_since < absl::Seconds(4)) {
    absl::SleepFor(absl::Milliseconds(200));
    std::lock_guard<std::mutex> lock(mu);
    size_t n = 0;
    for (const auto& [p, times] : received) n += times;
    if (n != seen) quiet_since = absl::Now();
    seen = n;
  }
  stop_working = true;
  worker.join();

  std::lock_guard<std::mutex> lock(mu);
  int lost = 0, duplicates = 0, unexpected = 0;
  for (const std::string& p : enqueued_ok) lost += received.count(p) == 0 ? 1 : 0;
  for (const auto& [p, times] : received) {
    duplicates += times > 1 ? times - 1 : 0;
    unexpected += enqueued_ok.count(p) == 0 ? 1 : 0;  // its Enqueue answered UNAVAILABLE
  }
  if (hang) group.Kill(old_master);  // SIGKILL ends a stopped process too
  std::printf(
      "failover loss (%s): enqueue OK %zu, UNAVAILABLE %d, other %d; received distinct %zu; "
      "OK but never received (lost) %d; received again %d; received without an OK %d; "
      "ack failures %d; enqueue OK after the promotion %zu\n",
      FaultName(fault), enqueued_ok.size(), enqueue_unavailable, enqueue_other, received.size(), lost, duplicates,
      unexpected, ack_failed, enqueued_ok.size() - ok_at_promotion);
  EXPECT_EQ(enqueue_other, 0);
  EXPECT_GT(enqueued_ok.size(), 0u);
  // Loss is possible (asynchronous replication) but bounded by what the
  // master accepted in its last moments; most jobs must have made it.
  EXPECT_LT(lost, static_cast<int>(enqueued_ok.size() / 2));
  // The broker followed: the producer got OKs from the new master.
  EXPECT_GT(enqueued_ok.size(), ok_at_promotion);
}

TEST_F(SentinelBrokerTest, FailoverLossIsMeasured) {
  MeasureFailoverLoss(group_, broker_.get(), Fault::kKill);
}

TEST_F(SentinelBrokerTest, FailoverLossWhenTheMasterHangs) {
  MeasureFailoverLoss(group_, broker_.get(), Fault::kHang);
}

TEST_F(SentinelBrokerTest, FailoverLossWhenReplicationWasCut) {
  MeasureFailoverLoss(group_, broker_.get(), Fault::kCutThenKill);
}

}  // namespace
}  // namespace jobwire::testing
