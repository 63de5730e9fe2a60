// SentinelMasterSource: where the master named `master_name` is, according
// to a set of Redis Sentinels, for the broker's data connections
// (--redis_mode=sentinel), following the Sentinel client spec
// (redis.io/docs/latest/develop/reference/sentinel-clients):
//
// - GetMaster asks the sentinels in order (SENTINEL get-master-addr-by-name)
//   until one names a master; a sentinel that is down fails at once, one
//   that does not answer within `query_timeout` is skipped. The first that
//   answers moves to the front, so the next question goes to it first.
//   The caller (RedisClient, through AsAddressSource) then checks with ROLE
//   that the node really is a master. Questions asked before a first
//   sentinel connection is up wait for it (at most query_timeout after
//   Start), so that a broker starting does not fail its first attempts.
// - Every sentinel has a subscribed connection on `+switch-master`
//   ("<name> <old-ip> <old-port> <new-ip> <new-port>"); when one announces a
//   new master for `master_name`, on_switch runs once per new master and
//   that sentinel is asked first from then on. After
//   each (re)subscription the sentinels are asked again, so a switch missed
//   while a sentinel connection was down is noticed too.
//
// Sentinel connections use the TLS setting (and context) of the data nodes
// but not their password, user or db: sentinels have their own password
// (SentinelOptions::password; none: no AUTH).
//
// Thread safety: SetOnSwitch before Start; Start from any thread (once);
// GetMaster, known_master and every callback on the loop thread only. The
// destructor REQUIRES the loop to be stopped.
#ifndef JOBWIRE_BROKER_STORE_SENTINEL_MASTER_SOURCE_H_
#define JOBWIRE_BROKER_STORE_SENTINEL_MASTER_SOURCE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "broker/base/event_loop.h"
#include "broker/store/redis_client.h"
#include "broker/store/redis_tls_context.h"
#include "broker/store/redis_url.h"

namespace jobwire::store {

struct SentinelOptions {
  std::vector<RedisEndpoint> sentinels;  // REQUIRES: not empty
  std::string master_name;               // REQUIRES: not empty
  std::string password;                  // the sentinels' requirepass; empty: no AUTH
  bool tls = false;                      // rediss:// to the sentinels too
  std::shared_ptr<const RedisTlsContext> tls_context;  // as for RedisClient
  absl::Duration query_timeout = absl::Seconds(1);     // per sentinel
};

class SentinelMasterSource {
 public:
  using MasterCallback = std::function<void(absl::StatusOr<RedisEndpoint>)>;

  // `loop` must outlive this object.
  SentinelMasterSource(base::EventLoop* loop, SentinelOptions options);
  ~SentinelMasterSource();
  SentinelMasterSource(const SentinelMasterSource&) = delete;
  SentinelMasterSource& operator=(const SentinelMasterSource&) = delete;

  // Runs on the loop thread when a sentinel reports a master other than the
  // last one known (a +switch-master message, or a different answer to the
  // question asked after a resubscription), with the new master. Set before
  // Start.
  void SetOnSwitch(std::function<void(const RedisEndpoint&)> fn) { on_switch_ = std::move(fn); }

  // Connects to every sentinel and subscribes to +switch-master. Call once.
  void Start();

  // Answers, on the loop thread, the master's endpoint as the first sentinel
  // that knows it says; UNAVAILABLE naming each sentinel's failure (down,
  // timed out, does not know `master_name`, a malformed answer) when none
  // does. REQUIRES: loop thread, after Start.
  void GetMaster(MasterCallback callback);

  // GetMaster as a RedisClient::AddressSource. This object must outlive the
  // clients using it.
  RedisClient::AddressSource AsAddressSource();

  // The master last named (by an answer or a switch message), if any.
  // Loop thread only.
  const std::optional<RedisEndpoint>& known_master() const { return known_; }

 private:
  struct Query;
  void Ask(std::shared_ptr<Query> query);
  // A first sentinel connection is up, or query_timeout passed since Start:
  // the questions asked meanwhile go out.
  void OnFirstReachable();
  void OnAnswer(const std::shared_ptr<Query>& query, size_t sentinel,
                absl::StatusOr<RedisReply> reply);
  // A +switch-master message (or "" on (re)subscribing) from `sentinel`.
  void OnSwitchMessage(size_t sentinel, const std::string& message);
  // `sentinel` (an index into options_.sentinels) is asked first from now.
  void MoveToFront(size_t sentinel);
  // Records `master` as known; with `notify`, runs on_switch_ when it
  // differs from the previous one (not for the first one). Plain answers do
  // not notify: a sentinel lagging behind a failover may still name the old
  // master, which the asking client's ROLE check then refuses.
  void Learn(const RedisEndpoint& master, const char* how, bool notify);

  base::EventLoop* const loop_;
  const SentinelOptions options_;
  std::function<void(const RedisEndpoint&)> on_switch_;
  // Per sentinel, in options_.sentinels' order: commands and +switch-master.
  std::vector<std::unique_ptr<RedisClient>> commands_;
  std::vector<std::unique_ptr<RedisClient>> subscribers_;
  // Loop-thread state: the sentinels' indices in the order to ask them.
  std::vector<size_t> order_;
  std::optional<RedisEndpoint> known_;
  bool started_ = false;                        // OnFirstReachable ran
  std::vector<std::shared_ptr<Query>> deferred_;  // asked before it did
};

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_SENTINEL_MASTER_SOURCE_H_
