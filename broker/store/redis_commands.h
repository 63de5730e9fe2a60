// RedisCommands: what the store sends its commands through: one Redis
// server (RedisClient) or a Redis Cluster (RedisClusterClient, which routes
// each command by its first key's slot). ScriptRunner, JobStore and
// AdminStore depend on this interface only, so the same scripts and store
// code run in every Redis mode.
#ifndef JOBWIRE_BROKER_STORE_REDIS_COMMANDS_H_
#define JOBWIRE_BROKER_STORE_REDIS_COMMANDS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "broker/store/redis_reply.h"

namespace jobwire::store {

// Thread safety: Command may be called from any thread; the callback runs on
// the implementation's loop thread and must not block.
class RedisCommands {
 public:
  // Error replies arrive as statuses: UNAVAILABLE when the command may be
  // retried (a lost connection, LOADING, BUSY, MASTERDOWN, TRYAGAIN,
  // READONLY), INTERNAL otherwise, with the message "redis: <reply>". The
  // one exception is NOSCRIPT, which arrives as a reply of type kError so
  // that ScriptRunner can fall back to EVAL.
  using ReplyCallback = std::function<void(absl::StatusOr<RedisReply>)>;

  virtual ~RedisCommands() = default;

  // Sends one command, pipelined behind earlier ones to the same server.
  virtual void Command(std::vector<std::string> args, ReplyCallback callback) = 0;
};

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_REDIS_COMMANDS_H_
