#include "broker/store/redis_client.h"

#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "broker/base/logging.h"

namespace jobwire::store {
namespace {

constexpr absl::Duration kMinBackoff = absl::Milliseconds(100);
constexpr absl::Duration kMaxBackoff = absl::Seconds(2);

absl::StatusOr<RedisReply> ToResult(redisAsyncContext* ctx, redisReply* reply) {
  if (reply == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("redis connection lost", ctx->errstr[0] ? ": " : "", ctx->errstr));
  }
  RedisReply out = RedisReply::FromHiredis(*reply);
  if (!out.is_error() || absl::StartsWith(out.str, "NOSCRIPT")) return out;
  for (const char* transient : {"LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "READONLY"}) {
    if (absl::StartsWith(out.str, transient)) {
      return absl::UnavailableError(absl::StrCat("redis: ", out.str));
    }
  }
  return absl::InternalError(absl::StrCat("redis: ", out.str));
}

}  // namespace

struct RedisClient::Subscription {
  RedisClient* client;
  std::string channel;
  MessageHandler handler;
  // UNSUBSCRIBE sent, its confirmation not in yet: hiredis still calls this
  // subscription until then.
  bool unsubscribing = false;
  // Subscribe was called again meanwhile: subscribe anew once confirmed.
  bool resubscribe = false;
};

std::string RedisAddress::ToString() const {
  return absl::StrCat("redis://", user.empty() ? "" : absl::StrCat(user, "@"), host, ":", port,
                      "/", db);
}

namespace {

// Decodes %XX escapes; false on a malformed escape.
bool PercentDecode(absl::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    int value = 0;
    if (i + 2 >= in.size()) return false;
    for (char c : {in[i + 1], in[i + 2]}) {
      if (!absl::ascii_isxdigit(c)) return false;
      const char l = absl::ascii_tolower(c);
      value = value * 16 + (absl::ascii_isdigit(l) ? l - '0' : l - 'a' + 10);
    }
    out->push_back(static_cast<char>(value));
    i += 2;
  }
  return true;
}

}  // namespace

absl::StatusOr<RedisAddress> ParseRedisUrl(absl::string_view url) {
  constexpr absl::string_view kScheme = "redis://";
  if (!absl::StartsWith(url, kScheme)) {
    return absl::InvalidArgumentError("redis url must start with redis://");
  }
  absl::string_view rest = url.substr(kScheme.size());
  RedisAddress address;
  if (auto at = rest.rfind('@'); at != absl::string_view::npos) {
    absl::string_view userinfo = rest.substr(0, at);
    absl::string_view user;
    absl::string_view password = userinfo;
    if (auto colon = userinfo.find(':'); colon != absl::string_view::npos) {
      user = userinfo.substr(0, colon);
      password = userinfo.substr(colon + 1);
    }
    if (!PercentDecode(user, &address.user) || !PercentDecode(password, &address.password)) {
      return absl::InvalidArgumentError("bad percent-escape in the user or password of the redis url");
    }
    rest = rest.substr(at + 1);
  }
  // From here on `url` may be quoted: without its user and password.
  url = rest;
  if (auto slash = rest.find('/'); slash != absl::string_view::npos) {
    absl::string_view db = rest.substr(slash + 1);
    if (!db.empty() && !absl::SimpleAtoi(db, &address.db)) {
      return absl::InvalidArgumentError(absl::StrCat("bad database number in redis url: ", url));
    }
    rest = rest.substr(0, slash);
  }
  if (auto colon = rest.rfind(':'); colon != absl::string_view::npos) {
    if (!absl::SimpleAtoi(rest.substr(colon + 1), &address.port) || address.port <= 0 ||
        address.port > 65535) {
      return absl::InvalidArgumentError(absl::StrCat("bad port in redis url: ", url));
    }
    rest = rest.substr(0, colon);
  }
  if (!rest.empty()) address.host = std::string(rest);
  return address;
}

RedisClient::RedisClient(base::EventLoop* loop, RedisAddress address, std::string name)
    : loop_(loop), address_(std::move(address)), name_(std::move(name)) {}

RedisClient::~RedisClient() {
  if (ctx_ != nullptr) {
    ctx_->data = nullptr;
    redisAsyncFree(ctx_);
  }
}

void RedisClient::Start() {
  RunInLoop([this] { Connect(); });
}

void RedisClient::RunInLoop(std::function<void()> fn) {
  if (loop_->InLoopThread()) {
    fn();
  } else {
    loop_->Post(std::move(fn));
  }
}

void RedisClient::Connect() {
  ctx_ = redisAsyncConnect(address_.host.c_str(), address_.port);
  if (ctx_ == nullptr || ctx_->err) {
    base::Log(base::LogLevel::kWarning, "redis connect failed",
              {{"conn", name_}, {"error", ctx_ ? ctx_->errstr : "out of memory"}});
    if (ctx_ != nullptr) redisAsyncFree(ctx_);
    ctx_ = nullptr;
    ScheduleReconnect();
    return;
  }
  ctx_->data = this;
  redisLibeventAttach(ctx_, loop_->base());
  redisAsyncSetConnectCallback(ctx_, &RedisClient::OnConnect);
  redisAsyncSetDisconnectCallback(ctx_, &RedisClient::OnDisconnect);
}

void RedisClient::ScheduleReconnect() {
  absl::Duration delay = backoff_;
  backoff_ = std::min(backoff_ * 2, kMaxBackoff);
  loop_->RunAfter(delay, [this] { Connect(); });
}

void RedisClient::OnConnect(const redisAsyncContext* ctx, int status) {
  auto* self = static_cast<RedisClient*>(ctx->data);
  if (self == nullptr) return;
  if (status != REDIS_OK) {
    // hiredis frees the context after this callback.
    if (!self->was_connected_) {
      base::Log(base::LogLevel::kDebug, "redis connect failed",
                {{"conn", self->name_}, {"error", ctx->errstr}});
    }
    self->ctx_ = nullptr;
    self->ScheduleReconnect();
    return;
  }
  self->connected_ = true;
  self->backoff_ = kMinBackoff;
  base::Log(base::LogLevel::kInfo, self->was_connected_ ? "redis reconnected" : "redis connected",
            {{"conn", self->name_}, {"redis", self->address_.ToString()}});
  self->was_connected_ = true;
  auto ignore = [](absl::StatusOr<RedisReply>) {};
  if (!self->address_.password.empty()) {
    std::vector<std::string> auth = {"AUTH"};
    if (!self->address_.user.empty()) auth.push_back(self->address_.user);
    auth.push_back(self->address_.password);
    // Redis's refusal (WRONGPASS ...) never repeats the password.
    self->Command(std::move(auth), [name = self->name_](absl::StatusOr<RedisReply> reply) {
      if (reply.ok() && !reply->is_error()) return;
      base::Log(base::LogLevel::kError, "redis AUTH refused",
                {{"conn", name},
                 {"error", reply.ok() ? reply->str : std::string(reply.status().message())}});
    });
  }
  if (self->address_.db != 0) self->Command({"SELECT", absl::StrCat(self->address_.db)}, ignore);
  for (auto it = self->subscriptions_.begin(); it != self->subscriptions_.end();) {
    Subscription* sub = it->second.get();
    if (sub->unsubscribing && !sub->resubscribe) {
      it = self->subscriptions_.erase(it);  // the old connection took it along
      continue;
    }
    sub->unsubscribing = sub->resubscribe = false;
    self->SendSubscribe(sub);
    ++it;
  }
  if (self->on_connected_) self->on_connected_();
}

void RedisClient::OnDisconnect(const redisAsyncContext* ctx, int status) {
  auto* self = static_cast<RedisClient*>(ctx->data);
  if (self == nullptr) return;
  base::Log(base::LogLevel::kWarning, "redis connection lost",
            {{"conn", self->name_}, {"error", ctx->errstr}});
  self->ctx_ = nullptr;
  self->connected_ = false;
  self->ScheduleReconnect();
  if (self->on_disconnected_) self->on_disconnected_();
}

void RedisClient::Command(std::vector<std::string> args, ReplyCallback callback) {
  RunInLoop([this, args = std::move(args), callback = std::move(callback)]() mutable {
    if (!connected_) {
      callback(absl::UnavailableError(
          absl::StrCat("redis is not reachable at ", address_.host, ":", address_.port)));
      return;
    }
    std::vector<const char*> argv;
    std::vector<size_t> argvlen;
    argv.reserve(args.size());
    argvlen.reserve(args.size());
    for (const auto& a : args) {
      argv.push_back(a.data());
      argvlen.push_back(a.size());
    }
    auto* cb = new ReplyCallback(std::move(callback));
    if (redisAsyncCommandArgv(ctx_, &RedisClient::OnReply, cb, static_cast<int>(argv.size()),
                              argv.data(), argvlen.data()) != REDIS_OK) {
      std::unique_ptr<ReplyCallback> owned(cb);
      (*owned)(absl::UnavailableError("redis connection is closing"));
    }
  });
}

void RedisClient::OnReply(redisAsyncContext* ctx, void* reply, void* privdata) {
  std::unique_ptr<ReplyCallback> cb(static_cast<ReplyCallback*>(privdata));
  (*cb)(ToResult(ctx, static_cast<redisReply*>(reply)));
}

void RedisClient::Subscribe(const std::string& channel, MessageHandler handler) {
  RunInLoop([this, channel, handler = std::move(handler)]() mutable {
    auto& sub = subscriptions_[channel];
    if (sub != nullptr) {
      if (sub->unsubscribing) {
        sub->handler = std::move(handler);
        sub->resubscribe = true;
      }
      return;
    }
    sub.reset(new Subscription{this, channel, std::move(handler)});
    if (connected_) SendSubscribe(sub.get());
  });
}

void RedisClient::Unsubscribe(const std::string& channel) {
  RunInLoop([this, channel] {
    auto it = subscriptions_.find(channel);
    if (it == subscriptions_.end()) return;
    Subscription* sub = it->second.get();
    if (!connected_) {
      subscriptions_.erase(it);  // not sent again on the next connect
      return;
    }
    sub->resubscribe = false;
    if (sub->unsubscribing) return;
    sub->unsubscribing = true;
    const char* argv[] = {"UNSUBSCRIBE", sub->channel.data()};
    size_t argvlen[] = {11, sub->channel.size()};
    // hiredis takes no callback for UNSUBSCRIBE: the subscription's own
    // callback gets the confirmation (OnMessage).
    redisAsyncCommandArgv(ctx_, nullptr, nullptr, 2, argv, argvlen);
  });
}

void RedisClient::SendSubscribe(Subscription* sub) {
  const char* argv[] = {"SUBSCRIBE", sub->channel.data()};
  size_t argvlen[] = {9, sub->channel.size()};
  redisAsyncCommandArgv(ctx_, &RedisClient::OnMessage, sub, 2, argv, argvlen);
}

void RedisClient::OnMessage(redisAsyncContext*, void* reply, void* privdata) {
  auto* r = static_cast<redisReply*>(reply);
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != 3) return;
  auto* sub = static_cast<Subscription*>(privdata);
  absl::string_view kind(r->element[0]->str, r->element[0]->len);
  if (kind == "message") {
    sub->handler(sub->channel, std::string(r->element[2]->str, r->element[2]->len));
  } else if (kind == "subscribe") {
    // Confirmed: anything published before this point was missed, so tell
    // the handler with an empty message that it should catch up.
    sub->handler(sub->channel, std::string());
  } else if (kind == "unsubscribe" && sub->unsubscribing) {
    // hiredis has dropped its entry for the channel and will not call this
    // subscription again.
    RedisClient* self = sub->client;
    if (sub->resubscribe) {
      sub->unsubscribing = sub->resubscribe = false;
      self->SendSubscribe(sub);
    } else {
      const std::string channel = sub->channel;  // erase destroys sub
      self->subscriptions_.erase(channel);
    }
  }
}

}  // namespace jobwire::store
