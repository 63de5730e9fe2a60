// RedisSentinelGroup: a real Sentinel deployment on 127.0.0.1 for tests: one
// master, `replicas` replicas (--replicaof) and `sentinels` redis-server
// --sentinel processes (quorum: a majority) monitoring the master under
// `master_name`, each in its own temporary directory, without persistence.
//
// Start() returns once every sentinel names the master and knows every
// replica and every other sentinel, so that a failover can happen. Kill the
// master and the sentinels promote a replica after `down_after`; WaitMaster
// waits until every live sentinel names the new one. Not thread-safe.
#ifndef JOBWIRE_TESTS_REDIS_SENTINEL_H_
#define JOBWIRE_TESTS_REDIS_SENTINEL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/test_harness.h"

namespace jobwire::testing {

class RedisSentinelGroup {
 public:
  RedisSentinelGroup(int replicas = 1, int sentinels = 3, std::string master_name = "jobwire",
                     absl::Duration down_after = absl::Seconds(1));
  RedisSentinelGroup(const RedisSentinelGroup&) = delete;
  RedisSentinelGroup& operator=(const RedisSentinelGroup&) = delete;
  // Stops every process and removes their directories.
  ~RedisSentinelGroup();

  // Starts the data nodes and the sentinels on free ports and waits (up to
  // 30 s) until the sentinels are ready to fail over. UNAVAILABLE otherwise.
  absl::Status Start();

  const std::string& master_name() const { return master_name_; }
  // "redis://127.0.0.1:S1,127.0.0.1:S2,...": the sentinels, as seeds.
  std::string sentinel_url() const;
  std::vector<int> sentinel_ports() const;
  // The data nodes' ports: the first started as the master.
  std::vector<int> data_ports() const;

  // The master's port as sentinel `sentinel_port` names it
  // (SENTINEL get-master-addr-by-name).
  absl::StatusOr<int> MasterPort(int sentinel_port);
  // Waits until every live sentinel names the same master, other than
  // `not_port` (0: any), and that node answers ROLE as master. Returns its
  // port; UNAVAILABLE after `timeout`.
  absl::StatusOr<int> WaitMaster(int not_port, absl::Duration timeout);

  // SIGKILLs the process on `port` (a data node or a sentinel).
  void Kill(int port);

  // One command on `port` (RedisCommandAt).
  absl::StatusOr<RedisReply> CommandAt(int port, const std::vector<std::string>& argv);

 private:
  struct Process;

  absl::StatusOr<std::unique_ptr<Process>> Spawn(bool sentinel, int master_port);
  bool SentinelReady(int port);

  const int replicas_;
  const int sentinels_;
  const std::string master_name_;
  const absl::Duration down_after_;
  std::vector<std::unique_ptr<Process>> data_;
  std::vector<std::unique_ptr<Process>> sentinel_;
};

}  // namespace jobwire::testing

#endif  // JOBWIRE_TESTS_REDIS_SENTINEL_H_
