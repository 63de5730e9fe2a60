// RedisCommands: what the store sends its commands through: one Redis
// server (RedisClient) or a Redis Cluster (RedisClusterClient, which routes
// each command by its first key's slot). ScriptRunner, JobStore and
// AdminStore depend on this interface only, so the same scripts and store
// code run in every Redis mode.
#ifndef JOBWIRE_BROKER_STORE_REDIS_COMMANDS_H_
#define JOBWIRE_BROKER_STORE_REDIS_COMMANDS_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
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
  // one exception is "ERR Function not found", which arrives as a reply of
  // type kError so that ScriptRunner can load its library.
  using ReplyCallback = std::function<void(absl::StatusOr<RedisReply>)>;
  // A command's arguments, shared rather than copied by whoever may send
  // them again (a cluster redirection, ScriptRunner after loading its
  // library).
  using Args = std::shared_ptr<const std::vector<std::string>>;

  virtual ~RedisCommands() = default;

  // Sends one command, pipelined behind earlier ones to the same server.
  // REQUIRES: args is not null.
  virtual void Command(Args args, ReplyCallback callback) = 0;
  void Command(std::vector<std::string> args, ReplyCallback callback) {
    Command(std::make_shared<const std::vector<std::string>>(std::move(args)),
            std::move(callback));
  }

  // Sends a command that names no key to the server that holds `key` (in a
  // Redis Cluster, the master of its slot; "": any master), as FUNCTION
  // LOAD must reach the node whose FCALL found no library.
  virtual void CommandAt(const std::string& key, Args args, ReplyCallback callback) {
    (void)key;
    Command(std::move(args), std::move(callback));
  }
  void CommandAt(const std::string& key, std::vector<std::string> args, ReplyCallback callback) {
    CommandAt(key, std::make_shared<const std::vector<std::string>>(std::move(args)),
              std::move(callback));
  }
};

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_REDIS_COMMANDS_H_
