// EmbeddedRedis: a redis-server child process on a free loopback port, with
// AOF persistence in a data directory. The broker's default when no Redis URL
// is given. The child dies with the broker (PR_SET_PDEATHSIG) and is stopped
// (SIGTERM, then SIGKILL after 5 s) when this object is destroyed.
#ifndef JOBWIRE_BROKER_SERVER_EMBEDDED_REDIS_H_
#define JOBWIRE_BROKER_SERVER_EMBEDDED_REDIS_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace jobwire::server {

class EmbeddedRedis {
 public:
  // Starts `redis_server_path` with its data in `data_dir` (created if
  // missing) and waits up to 10 s until it answers PING. UNAVAILABLE when it
  // cannot be started or does not answer; its log is <data_dir>/redis.log.
  static absl::StatusOr<std::unique_ptr<EmbeddedRedis>> Start(const std::string& redis_server_path,
                                                              const std::string& data_dir);
  ~EmbeddedRedis();
  EmbeddedRedis(const EmbeddedRedis&) = delete;
  EmbeddedRedis& operator=(const EmbeddedRedis&) = delete;

  int port() const { return port_; }
  std::string url() const;

 private:
  EmbeddedRedis(pid_t pid, int port) : pid_(pid), port_(port) {}

  pid_t pid_;
  int port_;
};

// A TCP port on 127.0.0.1 that was free a moment ago.
absl::StatusOr<int> PickFreePort();

}  // namespace jobwire::server

#endif  // JOBWIRE_BROKER_SERVER_EMBEDDED_REDIS_H_
