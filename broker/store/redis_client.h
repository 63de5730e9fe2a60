// RedisClient: one asynchronous, pipelined connection to Redis on the
// broker's EventLoop that reconnects by itself. The transport (TCP or TLS,
// DNS, RESP framing) is a RedisConnection; this class pairs replies with
// the commands it sent, keeps the subscriptions, and reconnects.
//
// Commands never block the caller: the reply (or the error) is delivered to
// a callback on the loop thread. While the connection is down every command
// fails at once with UNAVAILABLE and the client retries the connection with
// backoff (100 ms doubling to 2 s). Commands in flight when the connection
// drops also fail with UNAVAILABLE: the caller cannot know whether they ran.
// With a password in the address, every (re)connect first sends AUTH
// [user] password (a refused AUTH is logged, without the password). With
// address.tls (rediss://) the connection speaks TLS with the given
// RedisTlsContext; a failed handshake or certificate check is logged at
// error level with OpenSSL's reason and retried with the same backoff.
//
// With an address source (SetAddressSource: Sentinel mode), the endpoint is
// not fixed: the source is asked before every connection attempt, the node
// it names must answer ROLE as a master before the connection counts as up,
// and a READONLY reply (the node was demoted) drops the connection so that
// the next attempt asks again. Reconnect() drops the connection on demand
// (a master switch announced by the sentinels).
#ifndef JOBWIRE_BROKER_STORE_REDIS_CLIENT_H_
#define JOBWIRE_BROKER_STORE_REDIS_CLIENT_H_

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "broker/base/event_loop.h"
#include "broker/store/redis_commands.h"
#include "broker/store/redis_connection.h"
#include "broker/store/redis_subscriptions.h"
#include "broker/store/redis_reply.h"
#include "broker/store/redis_tls_context.h"
#include "broker/store/redis_url.h"

struct evdns_base;

namespace jobwire::store {

// Thread safety: every public method may be called from any thread;
// callbacks run on the loop thread and must not block.
class RedisClient : public RedisCommands, public RedisSubscriptions {
 public:
  // Error replies arrive as RedisCommands documents.
  using ReplyCallback = RedisCommands::ReplyCallback;
  using MessageHandler = RedisSubscriptions::MessageHandler;
  // Answers where to connect now (on the loop thread, possibly later); a
  // non-OK status counts as a failed attempt (logged, retried with backoff).
  using AddressCallback = std::function<void(absl::StatusOr<RedisEndpoint>)>;
  using AddressSource = std::function<void(AddressCallback)>;

  // `loop` must outlive the client; `name` appears in logs. `tls` is used
  // when address.tls (rediss://); null then means the system's CAs, no
  // client certificate, verification on. Only address.host:port is used
  // (REQUIRES: RequireSingleHost(address) is OK, unless an address source
  // names the endpoint: then address.host:port and the seeds are not used).
  RedisClient(base::EventLoop* loop, RedisAddress address, std::string name,
              std::shared_ptr<const RedisTlsContext> tls = nullptr);
  ~RedisClient() override;  // REQUIRES: the loop is stopped.
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // Starts connecting. Call once.
  void Start();

  // Sends one command (pipelined behind earlier ones on this connection).
  using RedisCommands::Command;
  void Command(Args args, ReplyCallback callback) override;

  // Subscribes this connection to shard channel `channel` (SSUBSCRIBE:
  // sharded pub/sub, Redis 7, which a cluster keeps on the channel's shard;
  // publishers use SPUBLISH; classic SUBSCRIBE after
  // SetShardedPubSub(false)) now (if connected) and after
  // every reconnect. A connection with subscriptions must not be used for
  // Command. `handler` runs on the loop thread for each message. Subscribing
  // to a channel already subscribed does nothing, except while it is being
  // unsubscribed: then `handler` replaces the old one and the channel is
  // subscribed again once the unsubscribe is confirmed.
  void Subscribe(const std::string& channel, MessageHandler handler) override;
  // Ends the subscription to `channel` (no-op when there is none). The
  // handler may still see messages published before Redis processed the
  // UNSUBSCRIBE; it is destroyed once the unsubscribe is confirmed.
  //
  // A Redis Cluster node ends a sharded subscription by itself when the
  // channel's slot leaves it (an unrequested SUNSUBSCRIBE), and answers
  // SSUBSCRIBE / SUNSUBSCRIBE for a slot it does not serve with MOVED: in
  // both cases the subscription is gone (Subscribed turns false), so that a
  // later Subscribe sends SSUBSCRIBE again (RedisClusterSubscriber does).
  void Unsubscribe(const std::string& channel) override;
  // Whether `channel` is subscribed and not being unsubscribed. Loop thread
  // only.
  bool Subscribed(const std::string& channel) const;
  // Channels subscribed or being unsubscribed (for tests). Loop thread only.
  size_t subscription_count() const override { return subscriptions_.size(); }

  // False: Subscribe uses classic pub/sub (SUBSCRIBE / UNSUBSCRIBE), for
  // servers without sharded pub/sub (Redis Sentinel). Default true. Set
  // before Start.
  void SetShardedPubSub(bool sharded) { sharded_ = sharded; }

  // Runs on the loop thread after every successful (re)connect (Redis has
  // answered a first PING), after subscriptions are re-sent. Set before
  // Start.
  void SetOnConnected(std::function<void()> fn) { on_connected_ = std::move(fn); }
  // Runs on the loop thread each time an established connection is lost
  // (not when a connection attempt fails), before the commands that were in
  // flight fail. Set before Start.
  void SetOnDisconnected(std::function<void()> fn) { on_disconnected_ = std::move(fn); }

  // Asked before every connection attempt for the endpoint to use instead
  // of address.host:port (the password, user, db and TLS of `address` still
  // apply), and the node must answer ROLE as a master (else the attempt
  // fails and the source is asked again). Called on the loop thread; it
  // must answer exactly once per call. Set before Start.
  void SetAddressSource(AddressSource source) { address_source_ = std::move(source); }

  // Drops the connection now and connects again (through the address
  // source, if any) with the shortest backoff: commands in flight fail with
  // UNAVAILABLE ("redis connection lost") and on_disconnected runs, as for
  // any lost connection. Between attempts it starts the next one at once.
  void Reconnect();

  base::EventLoop* loop() const { return loop_; }
  // The configured address; with an address source, the endpoint last used
  // (loop thread only then).
  const RedisAddress& address() const { return address_; }

 private:
  struct Subscription {
    MessageHandler handler;
    // UNSUBSCRIBE sent, its confirmation not in yet: messages may still come.
    bool unsubscribing = false;
    // Subscribe was called again meanwhile: subscribe anew once confirmed.
    bool resubscribe = false;
  };

  void Connect();
  // Connects to address_ (after the address source answered, if any).
  void Open();
  void ScheduleReconnect();
  // Loop thread: drops the current connection or attempt (`why` is logged).
  void Drop(const std::string& why);
  // With an address source: ROLE's answer decides whether the node is used.
  void OnRole(absl::StatusOr<RedisReply> reply);
  void Send(std::initializer_list<absl::string_view> args);
  void SendSubscribe(const std::string& channel);
  void OnOpen();
  void OnReady();
  void OnReply(const redisReply& reply);
  // True when `reply` was a pub/sub message or confirmation (and handled).
  bool OnPush(const redisReply& reply);
  // An error reply to a (un)subscribe: logged; MOVED or ASK for a slot ends
  // every subscription of that slot here.
  void OnSubscriptionRefused(absl::string_view error);
  void OnClose(const std::string& error, bool during_tls_handshake);

  base::EventLoop* const loop_;
  RedisAddress address_;  // host and port replaced by the address source's answer
  const std::string name_;
  std::shared_ptr<const RedisTlsContext> tls_;
  std::function<void()> on_connected_;
  std::function<void()> on_disconnected_;
  bool sharded_ = true;
  AddressSource address_source_;

  // Loop-thread state.
  evdns_base* dns_ = nullptr;
  std::unique_ptr<RedisConnection> connection_;
  // The transport is up: commands are sent (pipelined behind AUTH, SELECT
  // and a PING).
  bool connected_ = false;
  // Redis answered that PING: subscriptions are sent, on_connected_ ran.
  bool ready_ = false;
  bool was_ready_ = false;
  // A SUBSCRIBE went out on this connection: array replies starting with
  // "message" / "subscribe" / "unsubscribe" are pub/sub traffic.
  bool subscribed_mode_ = false;
  std::string last_failure_;  // of the previous failed attempt, to log changes once
  absl::Duration backoff_ = absl::Milliseconds(100);
  base::EventLoop::TimerId reconnect_timer_ = 0;  // the next attempt, when waiting
  // Counts Connect calls: an address source's answer for an older attempt
  // (one that Reconnect replaced) is ignored.
  uint64_t attempt_ = 0;
  bool asking_source_ = false;  // an address source's answer is awaited
  // Callbacks of the commands sent on connection_, oldest first.
  std::deque<ReplyCallback> pending_;
  std::map<std::string, Subscription> subscriptions_;
};

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_REDIS_CLIENT_H_
