// RedisClient over its RedisConnection transport, against a real
// redis-server, plain TCP and TLS (rediss://, certificates from
// tests/test_pki.h): thousands of pipelined commands answered in order,
// values spanning many buffer chains, the error mapping, pub/sub routing,
// a lost connection failing what was in flight and coming back, and the
// address source (Sentinel mode) with its ROLE check and Reconnect().
#include "broker/store/redis_client.h"

#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/test_harness.h"
#include "tests/test_pki.h"

namespace jobwire::store {
namespace {

using Result = absl::StatusOr<RedisReply>;

class RedisClientTest : public ::testing::TestWithParam<bool> {
 protected:
  bool tls() const { return GetParam(); }

  void SetUp() override {
    std::optional<testing::RedisServerTls> server_tls;
    if (tls()) {
      auto pki = testing::TestPki::Create();
      ASSERT_TRUE(pki.ok()) << pki.status();
      pki_ = std::move(*pki);
      server_tls = testing::RedisServerTls{pki_->server_cert(), pki_->server_key(),
                                           pki_->ca_cert(), false, "", ""};
      RedisTlsOptions options;
      options.ca_file = pki_->ca_cert();
      auto context = RedisTlsContext::Create(options);
      ASSERT_TRUE(context.ok()) << context.status();
      tls_context_ = *std::move(context);
    }
    redis_ = std::make_unique<testing::RedisServer>("", server_tls);
    ASSERT_TRUE(redis_->Start().ok());
    loop_.Start();
  }

  // RedisClient's destructor requires a stopped loop: the clients live
  // until here.
  void TearDown() override {
    loop_.Stop();
    clients_.clear();
  }

  // A started client on redis_ (owned by the fixture); waits until it
  // answers PING.
  // With `source`, the client asks it where to connect (and redis_'s port
  // is only the configured address).
  RedisClient* NewClient(const std::string& name,
                                         std::function<void()> on_connected = nullptr,
                                         std::function<void()> on_disconnected = nullptr,
                                         RedisClient::AddressSource source = nullptr,
                                         int port = 0) {
    RedisAddress address{"127.0.0.1", port != 0 ? port : redis_->port(), "", 0, "", tls()};
    auto client = std::make_unique<RedisClient>(&loop_, address, name, tls_context_);
    if (on_connected) client->SetOnConnected(std::move(on_connected));
    if (on_disconnected) client->SetOnDisconnected(std::move(on_disconnected));
    if (source) client->SetAddressSource(std::move(source));
    client->Start();
    EXPECT_TRUE(WaitForPing(*client, absl::Seconds(10)));
    clients_.push_back(std::move(client));
    return clients_.back().get();
  }

  static Result Run(RedisClient& client, std::vector<std::string> args) {
    std::promise<Result> done;
    client.Command(std::move(args), [&done](Result r) { done.set_value(std::move(r)); });
    return done.get_future().get();
  }

  static bool WaitForPing(RedisClient& client, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      if (Run(client, {"PING"}).ok()) return true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }

  // Runs `fn` on the loop thread and waits for it.
  void OnLoop(std::function<void()> fn) {
    std::promise<void> done;
    loop_.Post([&] {
      fn();
      done.set_value();
    });
    done.get_future().get();
  }

  std::unique_ptr<testing::TestPki> pki_;
  std::shared_ptr<const RedisTlsContext> tls_context_;
  std::unique_ptr<testing::RedisServer> redis_;
  base::EventLoop loop_;
  std::vector<std::unique_ptr<RedisClient>> clients_;
};

TEST_P(RedisClientTest, PipelinedRepliesArriveInOrder) {
  auto client = NewClient("pipeline");
  constexpr int kCommands = 5000;
  std::vector<int64_t> got;
  std::promise<void> all;
  // Issued in one loop iteration, buffered in the bufferevent's output.
  OnLoop([&] {
    for (int i = 0; i < kCommands; ++i) {
      client->Command({"INCR", "counter"}, [&, i](Result r) {
        got.push_back(r.ok() ? r->integer : -1);
        if (i == kCommands - 1) all.set_value();
      });
    }
  });
  all.get_future().get();
  ASSERT_EQ(got.size(), static_cast<size_t>(kCommands));
  for (int i = 0; i < kCommands; ++i) ASSERT_EQ(got[i], i + 1) << i;
}

TEST_P(RedisClientTest, LargeValuesRoundTrip) {
  auto client = NewClient("large");
  std::string value(3 << 20, 'x');
  for (size_t i = 0; i < value.size(); i += 4093) value[i] = static_cast<char>('a' + i % 26);
  Result set = Run(*client, {"SET", "big", value});
  ASSERT_TRUE(set.ok()) << set.status();
  Result get = Run(*client, {"GET", "big"});
  ASSERT_TRUE(get.ok()) << get.status();
  EXPECT_TRUE(get->str == value) << get->str.size();
}

TEST_P(RedisClientTest, ErrorRepliesAreMapped) {
  auto client = NewClient("errors");
  // The one error that arrives as a reply: ScriptRunner loads its library.
  Result missing = Run(*client, {"FCALL", "no_such_function", "0"});
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_TRUE(missing->is_error());
  EXPECT_TRUE(absl::StartsWith(missing->str, "ERR Function not found")) << missing->str;
  ASSERT_TRUE(Run(*client, {"SET", "s", "v"}).ok());
  Result wrongtype = Run(*client, {"LPUSH", "s", "x"});
  EXPECT_EQ(wrongtype.status().code(), absl::StatusCode::kInternal) << wrongtype.status();
  EXPECT_TRUE(absl::StrContains(wrongtype.status().message(), "WRONGTYPE"));
}

TEST_P(RedisClientTest, SubscriptionsGetTheirMessagesUntilUnsubscribed) {
  auto publisher = NewClient("publisher");
  auto subscriber = NewClient("subscriber");
  // Shared with the handler, which lives as long as the client.
  struct Seen {
    absl::Mutex mu;
    std::vector<std::string> entries;  // "channel:message"
  };
  auto seen = std::make_shared<Seen>();
  auto record = [seen](const std::string& channel, const std::string& message) {
    absl::MutexLock lock(&seen->mu);
    seen->entries.push_back(channel + ":" + message);
  };
  subscriber->Subscribe("a", record);
  subscriber->Subscribe("b", record);
  auto wait_for = [&](const std::string& entry) {
    absl::MutexLock lock(&seen->mu);
    auto has = [&] {
      return std::find(seen->entries.begin(), seen->entries.end(), entry) != seen->entries.end();
    };
    return seen->mu.AwaitWithTimeout(absl::Condition(&has), absl::Seconds(10));
  };
  ASSERT_TRUE(wait_for("a:"));  // confirmations arrive as empty messages
  ASSERT_TRUE(wait_for("b:"));
  ASSERT_TRUE(Run(*publisher, {"SPUBLISH", "b", "to-b"}).ok());
  ASSERT_TRUE(Run(*publisher, {"SPUBLISH", "a", "to-a"}).ok());
  EXPECT_TRUE(wait_for("b:to-b"));
  EXPECT_TRUE(wait_for("a:to-a"));

  subscriber->Unsubscribe("a");
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  size_t count = 2;
  while (absl::Now() < deadline) {
    OnLoop([&] { count = subscriber->subscription_count(); });
    if (count == 1) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(count, 1u);
  Result receivers = Run(*publisher, {"SPUBLISH", "a", "late"});
  ASSERT_TRUE(receivers.ok());
  EXPECT_EQ(receivers->integer, 0);
}

TEST_P(RedisClientTest, ALostConnectionFailsWhatWasInFlightAndComesBack) {
  // Shared: the hooks live as long as the client, past this body.
  auto connects = std::make_shared<std::atomic<int>>(0);
  auto losses = std::make_shared<std::atomic<int>>(0);
  auto client = NewClient(
      "restart", [connects] { ++*connects; }, [losses] { ++*losses; });
  EXPECT_EQ(connects->load(), 1);
  std::promise<Result> blocked;
  client->Command({"BLPOP", "never", "0"}, [&](Result r) { blocked.set_value(std::move(r)); });
  absl::SleepFor(absl::Milliseconds(100));
  redis_->Stop();
  Result lost = blocked.get_future().get();
  EXPECT_EQ(lost.status().code(), absl::StatusCode::kUnavailable) << lost.status();
  EXPECT_TRUE(absl::StrContains(lost.status().message(), "connection lost")) << lost.status();
  EXPECT_EQ(losses->load(), 1);
  EXPECT_EQ(Run(*client, {"PING"}).status().code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(redis_->Start().ok());
  EXPECT_TRUE(WaitForPing(*client, absl::Seconds(10)));
  EXPECT_EQ(connects->load(), 2);
}

// The address source (Sentinel mode's hook): asked before every attempt,
// its node used only while ROLE says master, and Reconnect() moving in-flight
// commands to UNAVAILABLE and the connection to the source's new answer.
TEST_P(RedisClientTest, AnAddressSourceIsAskedAndReconnectFollowsIt) {
  std::optional<testing::RedisServerTls> server_tls;
  if (tls()) {
    server_tls = testing::RedisServerTls{pki_->server_cert(), pki_->server_key(),
                                         pki_->ca_cert(), false, "", ""};
  }
  testing::RedisServer other("", server_tls);
  ASSERT_TRUE(other.Start().ok());
  RedisClient* admin = NewClient("admin", nullptr, nullptr, nullptr, other.port());

  auto target = std::make_shared<std::atomic<int>>(redis_->port());
  auto asked = std::make_shared<std::atomic<int>>(0);
  RedisClient::AddressSource source = [target, asked](RedisClient::AddressCallback answer) {
    ++*asked;
    answer(RedisEndpoint{"127.0.0.1", target->load()});
  };
  // The configured port (1) is never used: the source names redis_.
  RedisClient* client = NewClient("sourced", nullptr, nullptr, source, 1);
  auto port_of = [this](RedisClient& c) {
    Result r = Run(c, {"CONFIG", "GET", tls() ? "tls-port" : "port"});
    return r.ok() && r->elements.size() == 2 ? r->elements[1].str : r.status().ToString();
  };
  EXPECT_EQ(port_of(*client), std::to_string(redis_->port()));
  EXPECT_GE(asked->load(), 1);

  // `other` as a replica (of a master that does not exist): refused by ROLE.
  ASSERT_TRUE(Run(*admin, {"REPLICAOF", "127.0.0.1", "1"}).ok());
  target->store(other.port());
  std::promise<Result> blocked;
  client->Command({"BLPOP", "never", "0"}, [&](Result r) { blocked.set_value(std::move(r)); });
  absl::SleepFor(absl::Milliseconds(100));
  client->Reconnect();
  Result lost = blocked.get_future().get();
  EXPECT_EQ(lost.status().code(), absl::StatusCode::kUnavailable) << lost.status();
  EXPECT_TRUE(absl::StrContains(lost.status().message(), "connection lost")) << lost.status();
  const int asked_before = asked->load();
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_EQ(Run(*client, {"PING"}).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_GT(asked->load(), asked_before);  // asked again after each refusal

  // Promoted: the next attempt (backoff at most 2 s) takes it.
  ASSERT_TRUE(Run(*admin, {"REPLICAOF", "NO", "ONE"}).ok());
  EXPECT_TRUE(WaitForPing(*client, absl::Seconds(10)));
  EXPECT_EQ(port_of(*client), std::to_string(other.port()));
  OnLoop([&] { EXPECT_EQ(client->address().port, other.port()); });
}

INSTANTIATE_TEST_SUITE_P(Transports, RedisClientTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Tls" : "Tcp";
                         });

}  // namespace
}  // namespace jobwire::store
