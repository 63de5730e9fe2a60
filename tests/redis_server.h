// RedisServer: a real redis-server for the tests (plain or TLS, with or
// without a password), and one-shot commands to any local Redis port.
#ifndef JOBWIRE_TESTS_REDIS_SERVER_H_
#define JOBWIRE_TESTS_REDIS_SERVER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "tests/subprocess.h"

namespace jobwire::testing {

// One Redis reply, copied out of hiredis.
struct RedisReply {
  int type = 0;          // REDIS_REPLY_* from hiredis.h.
  int64_t integer = 0;   // REDIS_REPLY_INTEGER.
  std::string str;       // STRING, STATUS, ERROR, VERB, DOUBLE.
  std::vector<RedisReply> elements;  // ARRAY, MAP, SET.

  bool is_error() const;
};

// Runs one command on a new connection to 127.0.0.1:port (hiredis sync API,
// 5 s timeout), after AUTH `password` when it is not empty. UNAVAILABLE when
// the server cannot be reached, UNAUTHENTICATED when AUTH is refused; a Redis
// error reply is returned as a RedisReply with is_error().
absl::StatusOr<RedisReply> RedisCommandAt(int port, const std::string& password,
                                          const std::vector<std::string>& argv);
// Runs `commands` in order on one connection (as RedisCommandAt), and
// returns their replies. One connection matters for commands that depend on
// the connection's own history: WAIT counts the replicas that acknowledged
// this connection's last write (on a fresh connection it returns at once).
absl::StatusOr<std::vector<RedisReply>> RedisCommandsAt(
    int port, const std::string& password, const std::vector<std::vector<std::string>>& commands);

// TLS settings of a RedisServer (PEM paths, e.g. from TestPki). The server
// then listens with --tls-port only (--port 0); `client_cert` / `client_key`
// are what this class's own redis-cli connections present.
struct RedisServerTls {
  std::string cert;
  std::string key;
  std::string ca;           // --tls-ca-cert-file: verifies client certificates
  bool auth_clients = false;  // --tls-auth-clients yes|no
  std::string client_cert;
  std::string client_key;
};

// Waits up to `timeout` until the server `process` started on `port`
// answers PING (without AUTH). UNAVAILABLE when it exits first or never
// answers; `what` names it in the message.
absl::Status WaitForPong(Subprocess& process, int port, const std::string& what,
                         absl::Duration timeout = absl::Seconds(10));

// A real redis-server on 127.0.0.1, without persistence, in a temporary
// directory. The port is fixed at the first successful Start() and kept by
// Restart(). With a `requirepass`, the server demands AUTH and this class's
// own connections (startup PING, CommandArgv) authenticate with it. With
// `tls`, the port speaks TLS only and this class's own connections go
// through `redis-cli --tls` (CommandArgv then returns redis-cli's output as
// a string reply, or an integer reply when it is one). Not thread-safe.
class RedisServer {
 public:
  explicit RedisServer(std::string requirepass = "",
                       std::optional<RedisServerTls> tls = std::nullopt);
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  // Stops the server and removes its directory.
  ~RedisServer();

  // Starts redis-server and waits (up to 10 s) until it answers PING. On the
  // first start picks a free port (retrying with another port if the chosen
  // one was taken). Returns UNAVAILABLE when the server does not come up.
  absl::Status Start();

  // SIGTERM + waitpid. All data is lost (persistence is off).
  void Stop();

  // Stop() then Start() on the same port.
  absl::Status Restart();

  // Runs one command on a new connection (hiredis sync API, 5 s timeout).
  // Returns UNAVAILABLE when the server cannot be reached. A Redis error
  // reply is returned as a RedisReply with is_error().
  absl::StatusOr<RedisReply> CommandArgv(const std::vector<std::string>& argv);

  // Command("ZCARD", key), Command("DBSIZE"); arguments go through StrCat.
  template <typename... Args>
  absl::StatusOr<RedisReply> Command(const Args&... args) {
    return CommandArgv({absl::StrCat(args)...});
  }

  // DBSIZE, or -1 when it fails.
  int64_t DbSize();

  // used_memory from INFO memory, or -1 when it fails.
  int64_t UsedMemory();

  // Puts the server over a real memory limit: maxmemory-policy noeviction,
  // maxmemory (CONFIG SET) just above the memory in use, then 4 KiB filler
  // keys ("filler:<i>") until Redis refuses one with OOM; then the limit is
  // lowered 256 KiB below the memory in use, so that Redis stays over it
  // whatever short connections free. Returns INTERNAL when a plain SET is not
  // refused afterwards. `CONFIG SET maxmemory 0` lifts the limit.
  absl::Status FillToMaxmemory();

  int port() const { return port_; }
  // redis://127.0.0.1:<port>, rediss:// with TLS (no password).
  std::string url() const;

 private:
  absl::Status StartOnce();
  bool Ready();
  absl::StatusOr<std::string> RedisCli(const std::vector<std::string>& argv);

  const std::string requirepass_;
  const std::optional<RedisServerTls> tls_;
  int port_ = 0;
  std::string dir_;
  Subprocess process_;
};

}  // namespace jobwire::testing

#endif  // JOBWIRE_TESTS_REDIS_SERVER_H_
