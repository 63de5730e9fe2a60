// RedisCluster: a real Redis Cluster on 127.0.0.1 for tests, started from
// redis-server processes with --cluster-enabled yes (each in its own
// temporary directory, without persistence) and joined with
// `redis-cli --cluster create ... --cluster-replicas R --cluster-yes`.
//
// Start() returns once every node reports cluster_state:ok and sees all
// 16384 slots served, and every replica has synced with its master. Nodes can then be killed (a
// replica of a killed master is promoted by the cluster itself after the
// node timeout) and slots moved between masters, the two events a client of
// a cluster has to follow (MOVED and ASK redirections, a new slot map). Not
// thread-safe.
#ifndef JOBWIRE_TESTS_REDIS_CLUSTER_H_
#define JOBWIRE_TESTS_REDIS_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "tests/test_harness.h"

namespace jobwire::testing {

class RedisCluster {
 public:
  // `node_timeout` is the cluster's failure detection time
  // (cluster-node-timeout): a master down longer is failed over.
  explicit RedisCluster(int masters = 3, int replicas_per_master = 1,
                        absl::Duration node_timeout = absl::Seconds(2));
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;
  // Stops every node and removes their directories.
  ~RedisCluster();

  // Starts the nodes on free ports, creates the cluster and waits (up to
  // 60 s) until it is healthy. UNAVAILABLE when it does not come up.
  absl::Status Start();

  // Every node's port, in start order (killed ones included).
  std::vector<int> ports() const;
  // "redis://127.0.0.1:P1,127.0.0.1:P2,...": every node as a seed.
  std::string url() const;

  // One command on node `port` (RedisCommandAt).
  absl::StatusOr<RedisReply> CommandAt(int port, const std::vector<std::string>& argv);

  // The ports of the nodes that are masters now (CLUSTER NODES, as a live
  // node sees it), each serving at least one slot.
  absl::StatusOr<std::vector<int>> MasterPorts();
  // The port of the master serving `slot` now (CLUSTER SHARDS).
  absl::StatusOr<int> MasterOfSlot(int slot);

  // SIGKILLs node `port`; its replica takes over after the node timeout.
  void Kill(int port);

  // Waits until every live node reports cluster_state:ok and all slots are
  // served by live masters. UNAVAILABLE after `timeout`.
  absl::Status WaitHealthy(absl::Duration timeout);

  // Moves `slot` and its keys to the master on `to_port` the way
  // `redis-cli --cluster reshard` does (SETSLOT IMPORTING / MIGRATING,
  // MIGRATE of every key, SETSLOT NODE on every master). While it runs a
  // client sees ASK for keys already moved; afterwards MOVED.
  absl::Status MoveSlot(int slot, int to_port);

  // The ASK and MOVED redirections node `port` has answered since it
  // started (INFO errorstats); -1 when it does not answer.
  int64_t RedirectionsSent(int port);

  // Cuts master `port` off from its replicas, a stand-in for a replica that
  // lags or a link between them that fails first: a password set on the
  // master (its replicas have none) keeps them from reconnecting once their
  // links are killed. Connections already authenticated go on; CommandAt on
  // that node fails from then on (NOAUTH). Kill it next.
  absl::Status CutReplication(int port);

 private:
  struct Node;

  absl::Status StartNode(Node& node);
  absl::StatusOr<std::string> NodeId(int port);
  bool Alive(int port) const;

  const int masters_;
  const int replicas_per_master_;
  const absl::Duration node_timeout_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

}  // namespace jobwire::testing

#endif  // JOBWIRE_TESTS_REDIS_CLUSTER_H_
