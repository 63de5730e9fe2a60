// RedisClusterClient: a Redis Cluster behind the same asynchronous Command()
// as RedisClient. It learns the slot map from CLUSTER SHARDS (asked of the
// URL's seed nodes, later of any known node), keeps one pipelined
// RedisClient per master, and sends each command to the master of its key's
// slot (store::KeySlot of the first key: the first key after numkeys for
// EVAL / EVALSHA / FCALL, else the first argument; a command without a key
// goes to any master).
//
// Redirections are followed on the loop thread, never by the caller:
//   MOVED       the slot map is refreshed and the command is sent to the
//               named node at once;
//   ASK         ASKING, then the command, pipelined on the named node;
//   TRYAGAIN    (a multi-key command during a slot migration) and
//   CLUSTERDOWN sent again after 25 ms, doubling;
// at most kMaxRedirects redirections and kMaxRetries retries per command,
// after which the command fails with UNAVAILABLE naming the last answer.
// Each of those answers means the command did not run, so following them
// never runs a command twice. A command whose connection is lost while it
// is in flight fails with UNAVAILABLE (it may have run) and the slot map is
// refreshed; a command for a master not yet connected waits up to
// kConnectWait for the connection, then fails with UNAVAILABLE.
//
// The map is also read again every kRefreshInterval, so a slot moved by a
// resharding is noticed even by a client that sends it nothing.
//
// A master that leaves the slot map (a failover, a removed node) gets no
// more commands; its RedisClient keeps trying to reconnect in the
// background (RedisClient cannot be destroyed while its loop runs) and is
// used again if the node comes back into the map.
//
// Scripts: an FCALL goes to its first key's master; when that node has no
// library, ScriptRunner loads it there with CommandAt (the same key), so
// each master gets the library the first time it runs a script.
#ifndef JOBWIRE_BROKER_STORE_REDIS_CLUSTER_CLIENT_H_
#define JOBWIRE_BROKER_STORE_REDIS_CLUSTER_CLIENT_H_

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "broker/base/event_loop.h"
#include "broker/store/cluster_topology.h"
#include "broker/store/redis_client.h"
#include "broker/store/redis_commands.h"
#include "broker/store/redis_tls_context.h"
#include "broker/store/redis_url.h"

namespace jobwire::store {

// Thread safety: Command and Start may be called from any thread; callbacks
// run on the loop thread and must not block.
class RedisClusterClient : public RedisCommands {
 public:
  using ReplyCallback = RedisClient::ReplyCallback;

  static constexpr int kMaxRedirects = 5;
  static constexpr int kMaxRetries = 5;
  static constexpr absl::Duration kConnectWait = absl::Seconds(2);
  static constexpr absl::Duration kRefreshInterval = absl::Seconds(5);

  // `loop` must outlive the client. `seeds`: the URL's hosts (every entry of
  // seeds.seeds is a seed node); its password, user and TLS apply to every
  // node. `tls` as for RedisClient.
  RedisClusterClient(base::EventLoop* loop, RedisAddress seeds, std::string name,
                     std::shared_ptr<const RedisTlsContext> tls = nullptr);
  ~RedisClusterClient() override;  // REQUIRES: the loop is stopped.
  RedisClusterClient(const RedisClusterClient&) = delete;
  RedisClusterClient& operator=(const RedisClusterClient&) = delete;

  // Connects to the seeds and reads the slot map. Call once.
  void Start();

  // Sends one command to the master of its key's slot, as described above.
  // Before the first slot map is known, fails at once with UNAVAILABLE.
  // Error replies arrive as RedisClient::Command documents.
  using RedisCommands::Command;
  using RedisCommands::CommandAt;
  void Command(Args args, ReplyCallback callback) override;
  // To the master of `key`'s slot (any master for "").
  void CommandAt(const std::string& key, Args args, ReplyCallback callback) override;

  // Run on the loop thread when the client starts serving (a slot map is
  // known and every master in it is connected) and when it stops (a master
  // of the map is lost). Set before Start.
  void SetOnConnected(std::function<void()> fn) { on_connected_ = std::move(fn); }
  void SetOnDisconnected(std::function<void()> fn) { on_disconnected_ = std::move(fn); }

  // Runs on the loop thread after every slot-map refresh (the map may be
  // unchanged). Call before Start.
  void AddTopologyListener(std::function<void()> fn) { listeners_.push_back(std::move(fn)); }
  // The current slot map, null before the first. Loop thread only.
  const ClusterTopology* topology() const { return topology_ ? &*topology_ : nullptr; }

  // For tests, loop thread only: slot-map refreshes completed so far, and
  // the master the current map names for `slot` (empty before any map).
  int refreshes() const { return refreshes_; }
  std::string MasterForSlot(int slot) const;

 private:
  struct Op;
  // Command and CommandAt: sends `args` to the master of `slot` (any master
  // for -1).
  void SubmitTo(int slot, Args args, ReplyCallback callback);
  struct Node {
    std::string key;  // NodeAddress::ToString()
    NodeAddress address;
    std::unique_ptr<RedisClient> client;
    bool ready = false;
    std::deque<std::shared_ptr<Op>> waiting;  // for the connection
    base::EventLoop::TimerId wait_timer = 0;
  };

  Node& NodeAt(const NodeAddress& address);
  void Send(std::shared_ptr<Op> op);
  void SendTo(Node& node, std::shared_ptr<Op> op);
  void OnReply(std::shared_ptr<Op> op, absl::StatusOr<RedisReply> reply);
  void Retry(std::shared_ptr<Op> op, absl::Status why);
  void Finish(std::shared_ptr<Op> op, absl::StatusOr<RedisReply> reply);
  void OnNodeReady(const std::string& key);
  void OnNodeLost(const std::string& key);
  void FailWaiting(const std::string& key);
  // Asks a ready node (else starts the seeds) for CLUSTER SHARDS; at most
  // one request at a time. A failed refresh is tried again after 200 ms
  // while `again` is set (the map is missing or known to be stale).
  void Refresh();
  void RefreshLater();
  void OnShards(absl::StatusOr<RedisReply> reply);
  void UpdateServing();

  base::EventLoop* const loop_;
  const RedisAddress seeds_;
  const std::string name_;
  std::shared_ptr<const RedisTlsContext> tls_;
  std::function<void()> on_connected_;
  std::function<void()> on_disconnected_;

  // Loop-thread state.
  bool stopping_ = false;
  std::map<std::string, std::unique_ptr<Node>> nodes_;  // by "host:port"; never erased
  std::optional<ClusterTopology> topology_;
  bool refreshing_ = false;
  bool refresh_again_ = false;
  base::EventLoop::TimerId refresh_timer_ = 0;
  base::EventLoop::TimerId periodic_timer_ = 0;
  std::vector<std::function<void()>> listeners_;
  // Commands between a TRYAGAIN / CLUSTERDOWN and their next attempt, by a
  // sequence number (failed by the destructor).
  std::map<uint64_t, std::shared_ptr<Op>> delayed_;
  uint64_t next_delayed_ = 0;
  int refreshes_ = 0;
  bool serving_ = false;
};

// The address of cluster node `node`: `seeds`' password, user and TLS, the
// node's host and port, database 0 (a cluster has no other).
RedisAddress ClusterNodeAddress(const RedisAddress& seeds, const NodeAddress& node);

// The slot a command is routed by: the first key's (see above), or -1 for a
// command without a key (PING, INFO, CONFIG, SCRIPT, CLUSTER, EVAL with no
// keys...). Exposed for tests.
int CommandSlot(const std::vector<std::string>& args);

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_REDIS_CLUSTER_CLIENT_H_
