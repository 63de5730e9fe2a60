#include "broker/store/redis_client.h"

#include <event2/dns.h>
#include <hiredis/hiredis.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/strings/numbers.h"
#include "broker/base/error_reason.h"
#include "broker/base/logging.h"
#include "broker/store/key_slot.h"

namespace jobwire::store {
namespace {

constexpr absl::Duration kMinBackoff = absl::Milliseconds(100);
constexpr absl::Duration kMaxBackoff = absl::Seconds(2);

absl::StatusOr<RedisReply> ToResult(const redisReply& reply) {
  RedisReply out = RedisReply::FromHiredis(reply);
  if (!out.is_error() || absl::StartsWith(out.str, "ERR Function not found")) return out;
  for (const char* transient : {"LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "READONLY"}) {
    if (absl::StartsWith(out.str, transient)) {
      return base::RedisUnavailableError(absl::StrCat("redis: ", out.str));
    }
  }
  return absl::InternalError(absl::StrCat("redis: ", out.str));
}

// The message prefix of the status every command in flight gets when the
// connection drops (as opposed to an answer from Redis).
constexpr absl::string_view kLost = "redis connection lost";

bool IsLost(const absl::Status& s) { return absl::StartsWith(s.message(), kLost); }

absl::string_view Str(const redisReply* r) {
  return (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
             ? absl::string_view(r->str, r->len)
             : absl::string_view();
}

}  // namespace

RedisClient::RedisClient(base::EventLoop* loop, RedisAddress address, std::string name,
                         std::shared_ptr<const RedisTlsContext> tls)
    : loop_(loop), address_(std::move(address)), name_(std::move(name)), tls_(std::move(tls)) {}

RedisClient::~RedisClient() {
  connection_.reset();  // no callback from it
  std::deque<ReplyCallback> pending = std::move(pending_);
  for (ReplyCallback& cb : pending) cb(base::RedisUnavailableError("redis client destroyed"));
  if (dns_ != nullptr) evdns_base_free(dns_, /*fail_requests=*/0);
}

void RedisClient::Start() {
  loop_->RunInLoop([this] { Connect(); });
}

void RedisClient::Connect() {
  if (address_.tls && tls_ == nullptr) {
    absl::StatusOr<std::shared_ptr<const RedisTlsContext>> made = RedisTlsContext::Create({});
    if (!made.ok()) {
      base::Log(base::LogLevel::kError, "redis TLS setup failed",
                {{"conn", name_}, {"error", made.status().ToString()}});
      ScheduleReconnect();
      return;
    }
    tls_ = *std::move(made);
  }
  if (dns_ == nullptr) {
    dns_ = evdns_base_new(loop_->base(), EVDNS_BASE_INITIALIZE_NAMESERVERS);
    // Without a usable resolver configuration: IP literals still connect,
    // names fail with a logged "cannot resolve" and are retried.
    if (dns_ == nullptr) dns_ = evdns_base_new(loop_->base(), 0);
  }
  if (!address_source_) {
    Open();
    return;
  }
  const uint64_t attempt = ++attempt_;
  asking_source_ = true;
  address_source_([this, attempt](absl::StatusOr<RedisEndpoint> endpoint) {
    if (attempt != attempt_) return;  // Reconnect asked again meanwhile
    asking_source_ = false;
    if (!endpoint.ok()) {
      OnClose(std::string(endpoint.status().message()), false);
      return;
    }
    address_.host = endpoint->host;
    address_.port = endpoint->port;
    address_.seeds.clear();  // logs name the node, not the seeds
    Open();
  });
}

void RedisClient::Open() {
  connection_ = std::make_unique<RedisConnection>(
      loop_->base(), dns_, address_.tls ? tls_.get() : nullptr,
      RedisEndpoint{address_.host, address_.port},
      RedisConnection::Callbacks{
          [this] { OnOpen(); }, [this](const redisReply& r) { OnReply(r); },
          [this](const std::string& error, bool tls) { OnClose(error, tls); }});
  if (absl::Status opened = connection_->Open(); !opened.ok()) {
    connection_.reset();
    OnClose(std::string(opened.message()), false);
  }
}

void RedisClient::ScheduleReconnect() {
  absl::Duration delay = backoff_;
  backoff_ = std::min(backoff_ * 2, kMaxBackoff);
  reconnect_timer_ = loop_->RunAfter(delay, [this] {
    reconnect_timer_ = 0;
    Connect();
  });
}

void RedisClient::Reconnect() {
  loop_->RunInLoop([this] {
    backoff_ = kMinBackoff;
    Drop("reconnect requested");
  });
}

void RedisClient::Drop(const std::string& why) {
  if (connection_ != nullptr) {
    OnClose(why, false);  // fails what is in flight, schedules the next attempt
  } else if (reconnect_timer_ != 0) {
    loop_->Cancel(reconnect_timer_);
    reconnect_timer_ = 0;
    Connect();
  } else if (asking_source_) {
    Connect();  // a fresh question; the answer to the older one is ignored
  }
}

void RedisClient::OnRole(absl::StatusOr<RedisReply> reply) {
  if (!reply.ok() && IsLost(reply.status())) return;  // OnClose's to report
  // Like PING, an error answer (NOAUTH: AUTH's failure is logged) counts.
  if (!reply.ok() || reply->is_error()) {
    OnReady();
    return;
  }
  const std::string role = reply->elements.empty() ? reply->str : reply->elements[0].str;
  if (role == "master") {
    OnReady();
  } else {
    Drop(absl::StrCat("not a master (ROLE: ", role.empty() ? "?" : role, ")"));
  }
}

void RedisClient::OnOpen() {
  connected_ = true;
  subscribed_mode_ = false;
  if (!address_.password.empty()) {
    std::vector<std::string> auth = {"AUTH"};
    if (!address_.user.empty()) auth.push_back(address_.user);
    auth.push_back(address_.password);
    // Redis's refusal (WRONGPASS ...) never repeats the password.
    Command(std::move(auth), [name = name_](absl::StatusOr<RedisReply> reply) {
      // A lost connection is OnClose's to report; Redis' refusal arrives as
      // INTERNAL or UNAVAILABLE ("redis: WRONGPASS ...", never the password).
      if (reply.ok() || IsLost(reply.status())) return;
      base::Log(base::LogLevel::kError, "redis AUTH refused",
                {{"conn", name}, {"error", std::string(reply.status().message())}});
    });
  }
  if (address_.db != 0) Command({"SELECT", absl::StrCat(address_.db)}, [](auto) {});
  // Ready once Redis has answered something: a TLS server that refuses the
  // client's certificate does so only after the client's side of the
  // handshake is done.
  if (address_source_) {
    // The node the source named must still be a master (a sentinel may
    // answer with a stale address during a failover).
    Command({"ROLE"}, [this](absl::StatusOr<RedisReply> reply) { OnRole(std::move(reply)); });
    return;
  }
  Command({"PING"}, [this](absl::StatusOr<RedisReply> reply) {
    // Any answer from Redis (NOAUTH included) counts; only a lost
    // connection does not.
    if (reply.ok() || !IsLost(reply.status())) OnReady();
  });
}

void RedisClient::OnReady() {
  ready_ = true;
  backoff_ = kMinBackoff;
  last_failure_.clear();
  base::Log(base::LogLevel::kInfo, was_ready_ ? "redis reconnected" : "redis connected",
            {{"conn", name_}, {"redis", address_.ToString()}});
  was_ready_ = true;
  for (auto it = subscriptions_.begin(); it != subscriptions_.end();) {
    Subscription& sub = it->second;
    if (sub.unsubscribing && !sub.resubscribe) {
      it = subscriptions_.erase(it);  // the old connection took it along
      continue;
    }
    sub.unsubscribing = sub.resubscribe = false;
    SendSubscribe(it->first);
    ++it;
  }
  if (on_connected_) on_connected_();
}

void RedisClient::OnClose(const std::string& error, bool during_tls_handshake) {
  connection_.reset();
  const bool was_ready = ready_;
  connected_ = ready_ = false;
  std::deque<ReplyCallback> pending = std::move(pending_);
  pending_.clear();
  ScheduleReconnect();
  // The loss is reported before the commands in flight fail, so whoever
  // sees such a failure can rely on on_disconnected_ having run.
  if (was_ready) {
    base::Log(base::LogLevel::kWarning, "redis connection lost",
              {{"conn", name_}, {"error", error}});
    if (on_disconnected_) on_disconnected_();
  }
  for (ReplyCallback& cb : pending) {
    cb(base::RedisUnavailableError(absl::StrCat(kLost, ": ", error)));
  }
  if (was_ready) return;
  // A failed attempt. Each new reason is logged once (TLS failures, which
  // are configuration errors an operator must see, at error level); repeats
  // at debug level.
  const bool tls = during_tls_handshake || absl::StrContains(error, ": TLS: ");
  base::LogLevel level = tls ? base::LogLevel::kError : base::LogLevel::kWarning;
  if (error == last_failure_) level = base::LogLevel::kDebug;
  last_failure_ = error;
  base::Log(level, tls ? "redis TLS handshake failed" : "redis connect failed",
            {{"conn", name_}, {"redis", address_.ToString()}, {"error", error}});
}

void RedisClient::Command(Args shared, ReplyCallback callback) {
  loop_->RunInLoop([this, shared = std::move(shared), callback = std::move(callback)]() mutable {
    const std::vector<std::string>& args = *shared;
    if (!connected_) {
      callback(base::RedisUnavailableError(
          absl::StrCat("redis is not reachable at ", address_.host, ":", address_.port)));
      return;
    }
    constexpr size_t kInline = 16;
    const char* argv_inline[kInline];
    size_t len_inline[kInline];
    std::vector<const char*> argv_heap;
    std::vector<size_t> len_heap;
    const char** argv = argv_inline;
    size_t* lens = len_inline;
    if (args.size() > kInline) {
      argv_heap.resize(args.size());
      len_heap.resize(args.size());
      argv = argv_heap.data();
      lens = len_heap.data();
    }
    for (size_t i = 0; i < args.size(); ++i) {
      argv[i] = args[i].data();
      lens[i] = args[i].size();
    }
    connection_->Send(static_cast<int>(args.size()), argv, lens);
    pending_.push_back(std::move(callback));
  });
}

void RedisClient::Send(std::initializer_list<absl::string_view> args) {
  const char* argv[4];
  size_t lens[4];
  int n = 0;
  for (absl::string_view a : args) {
    argv[n] = a.data();
    lens[n++] = a.size();
  }
  connection_->Send(n, argv, lens);
}

void RedisClient::OnReply(const redisReply& reply) {
  if (subscribed_mode_ && OnPush(reply)) return;
  if (pending_.empty()) {
    // An error reply to SSUBSCRIBE / SUNSUBSCRIBE (NOAUTH; MOVED from a
    // cluster node that does not serve the channel's slot).
    if (reply.type == REDIS_REPLY_ERROR) OnSubscriptionRefused(Str(&reply));
    return;
  }
  ReplyCallback cb = std::move(pending_.front());
  pending_.pop_front();
  // A master demoted to replica answers writes with READONLY: with an
  // address source, ask it again where the master is.
  const bool demoted = address_source_ && reply.type == REDIS_REPLY_ERROR &&
                       absl::StartsWith(absl::string_view(reply.str, reply.len), "READONLY");
  const uint64_t attempt = attempt_;
  cb(ToResult(reply));
  if (demoted && attempt == attempt_ && connection_ != nullptr) {
    Drop("READONLY: the node is no longer a master");
  }
}

void RedisClient::Subscribe(const std::string& channel, MessageHandler handler) {
  loop_->RunInLoop([this, channel, handler = std::move(handler)]() mutable {
    auto [it, inserted] = subscriptions_.try_emplace(channel);
    Subscription& sub = it->second;
    if (!inserted) {
      if (sub.unsubscribing) {
        sub.handler = std::move(handler);
        sub.resubscribe = true;
      }
      return;
    }
    sub.handler = std::move(handler);
    if (ready_) SendSubscribe(channel);
  });
}

void RedisClient::Unsubscribe(const std::string& channel) {
  loop_->RunInLoop([this, channel] {
    auto it = subscriptions_.find(channel);
    if (it == subscriptions_.end()) return;
    Subscription& sub = it->second;
    if (!ready_) {
      subscriptions_.erase(it);  // not sent again on the next connect
      return;
    }
    sub.resubscribe = false;
    if (sub.unsubscribing) return;
    sub.unsubscribing = true;
    Send({sharded_ ? "SUNSUBSCRIBE" : "UNSUBSCRIBE", channel});  // confirmed through OnPush
  });
}

void RedisClient::SendSubscribe(const std::string& channel) {
  subscribed_mode_ = true;
  Send({sharded_ ? "SSUBSCRIBE" : "SUBSCRIBE", channel});
}

bool RedisClient::Subscribed(const std::string& channel) const {
  auto it = subscriptions_.find(channel);
  return it != subscriptions_.end() && !it->second.unsubscribing;
}

void RedisClient::OnSubscriptionRefused(absl::string_view error) {
  base::Log(base::LogLevel::kWarning, "redis refused a subscription",
            {{"conn", name_}, {"error", std::string(error)}});
  // "MOVED <slot> <host:port>" (or ASK, mid-migration): no channel of that
  // slot is subscribed here, whatever was asked last.
  absl::string_view rest = error;
  int slot = -1;
  if ((!absl::ConsumePrefix(&rest, "MOVED ") && !absl::ConsumePrefix(&rest, "ASK ")) ||
      !absl::SimpleAtoi(rest.substr(0, rest.find(' ')), &slot)) {
    return;
  }
  for (auto it = subscriptions_.begin(); it != subscriptions_.end();) {
    if (KeySlot(it->first) == slot) {
      subscriptions_.erase(it++);
    } else {
      ++it;
    }
  }
}

bool RedisClient::OnPush(const redisReply& r) {
  if (r.type != REDIS_REPLY_ARRAY || r.elements != 3) return false;
  const absl::string_view kind = Str(r.element[0]);
  // Sharded: "smessage", "ssubscribe", "sunsubscribe"; classic without "s".
  absl::string_view base = kind;
  if (sharded_) {
    if (!absl::ConsumePrefix(&base, "s")) return false;
  }
  if (base != "message" && base != "subscribe" && base != "unsubscribe") return false;
  const std::string channel(Str(r.element[1]));
  auto it = subscriptions_.find(channel);
  if (it == subscriptions_.end()) return true;
  Subscription& sub = it->second;
  if (base == "message") {
    sub.handler(channel, std::string(Str(r.element[2])));
  } else if (base == "subscribe") {
    // Confirmed: anything published before this point was missed, so tell
    // the handler with an empty message that it should catch up.
    sub.handler(channel, std::string());
  } else if (sub.unsubscribing) {
    if (sub.resubscribe) {
      sub.unsubscribing = sub.resubscribe = false;
      SendSubscribe(channel);
    } else {
      subscriptions_.erase(it);
    }
  } else {
    // Not asked for: a cluster node whose slot left it ended the
    // subscription.
    subscriptions_.erase(it);
  }
  return true;
}

}  // namespace jobwire::store
