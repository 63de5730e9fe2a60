// RedisClient: one asynchronous, pipelined connection to Redis (hiredis on
// the broker's EventLoop) that reconnects by itself.
//
// Commands never block the caller: the reply (or the error) is delivered to
// a callback on the loop thread. While the connection is down every command
// fails at once with UNAVAILABLE and the client retries the connection with
// backoff (100 ms doubling to 2 s). Commands in flight when the connection
// drops also fail with UNAVAILABLE: the caller cannot know whether they ran.
// With a password in the address, every (re)connect first sends AUTH
// [user] password (a refused AUTH is logged, without the password).
#ifndef JOBWIRE_BROKER_STORE_REDIS_CLIENT_H_
#define JOBWIRE_BROKER_STORE_REDIS_CLIENT_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "broker/base/event_loop.h"
#include "broker/store/redis_reply.h"

struct redisAsyncContext;

namespace jobwire::store {

struct RedisAddress {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string password;  // empty: no AUTH
  int db = 0;
  std::string user = "";  // ACL user; empty: AUTH <password> (the default user)

  // redis://[user@]host:port/db: never the password.
  std::string ToString() const;
};

// Parses redis://[[user]:password@]host[:port][/db] (also
// redis://password@host for the default user); user and password are
// percent-decoded. INVALID_ARGUMENT otherwise; the message never contains
// the password.
absl::StatusOr<RedisAddress> ParseRedisUrl(absl::string_view url);

// Thread safety: every public method may be called from any thread;
// callbacks run on the loop thread and must not block.
class RedisClient {
 public:
  // Error replies arrive as statuses: UNAVAILABLE for LOADING, BUSY,
  // MASTERDOWN, TRYAGAIN, READONLY and lost connections; INTERNAL otherwise.
  // The one exception is NOSCRIPT, which arrives as a reply of type kError so
  // that ScriptRunner can fall back to EVAL.
  using ReplyCallback = std::function<void(absl::StatusOr<RedisReply>)>;
  using MessageHandler = std::function<void(const std::string& channel, const std::string& message)>;

  // `loop` must outlive the client; `name` appears in logs.
  RedisClient(base::EventLoop* loop, RedisAddress address, std::string name);
  ~RedisClient();  // REQUIRES: the loop is stopped.
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // Starts connecting. Call once.
  void Start();

  // Sends one command (pipelined behind earlier ones on this connection).
  void Command(std::vector<std::string> args, ReplyCallback callback);

  // Subscribes this connection to `channel` now (if connected) and after
  // every reconnect. A connection with subscriptions must not be used for
  // Command. `handler` runs on the loop thread for each message. Subscribing
  // to a channel already subscribed does nothing, except while it is being
  // unsubscribed: then `handler` replaces the old one and the channel is
  // subscribed again once the unsubscribe is confirmed.
  void Subscribe(const std::string& channel, MessageHandler handler);
  // Ends the subscription to `channel` (no-op when there is none). The
  // handler may still see messages published before Redis processed the
  // UNSUBSCRIBE; it is destroyed once the unsubscribe is confirmed.
  void Unsubscribe(const std::string& channel);
  // Channels subscribed or being unsubscribed (for tests). Loop thread only.
  size_t subscription_count() const { return subscriptions_.size(); }

  // Runs on the loop thread after every successful (re)connect, after
  // subscriptions are re-sent. Set before Start.
  void SetOnConnected(std::function<void()> fn) { on_connected_ = std::move(fn); }
  // Runs on the loop thread each time an established connection is lost
  // (not when a connection attempt fails). Set before Start.
  void SetOnDisconnected(std::function<void()> fn) { on_disconnected_ = std::move(fn); }

  base::EventLoop* loop() const { return loop_; }
  const RedisAddress& address() const { return address_; }

 private:
  struct Subscription;

  void RunInLoop(std::function<void()> fn);
  void Connect();
  void ScheduleReconnect();
  void SendSubscribe(Subscription* sub);
  static void OnConnect(const redisAsyncContext* ctx, int status);
  static void OnDisconnect(const redisAsyncContext* ctx, int status);
  static void OnReply(redisAsyncContext* ctx, void* reply, void* privdata);
  static void OnMessage(redisAsyncContext* ctx, void* reply, void* privdata);

  base::EventLoop* const loop_;
  const RedisAddress address_;
  const std::string name_;
  std::function<void()> on_connected_;
  std::function<void()> on_disconnected_;

  // Loop-thread state.
  redisAsyncContext* ctx_ = nullptr;
  bool connected_ = false;
  bool was_connected_ = false;
  absl::Duration backoff_ = absl::Milliseconds(100);
  std::map<std::string, std::unique_ptr<Subscription>> subscriptions_;
};

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_REDIS_CLIENT_H_
