#include "tests/redis_server.h"

#include <stdlib.h>
#include <sys/time.h>

#include <filesystem>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "hiredis/hiredis.h"

namespace jobwire::testing {
namespace {

constexpr absl::Duration kStartupTimeout = absl::Seconds(10);
constexpr absl::Duration kStopGrace = absl::Seconds(5);

RedisReply CopyReply(const redisReply& reply) {
  RedisReply out;
  out.type = reply.type;
  out.integer = reply.integer;
  if (reply.str != nullptr) out.str.assign(reply.str, reply.len);
  for (size_t i = 0; i < reply.elements; ++i) {
    out.elements.push_back(CopyReply(*reply.element[i]));
  }
  return out;
}

// AUTH `password` on `c` when it is not empty; true when that succeeded.
bool Authenticate(redisContext* c, const std::string& password) {
  if (password.empty()) return true;
  auto* reply = static_cast<redisReply*>(
      redisCommand(c, "AUTH %b", password.data(), password.size()));
  const bool ok = reply != nullptr && reply->type != REDIS_REPLY_ERROR;
  if (reply != nullptr) freeReplyObject(reply);
  return ok;
}

// PING on a fresh connection; true when the answer is PONG.
bool Ping(int port, const std::string& password) {
  timeval timeout{0, 200 * 1000};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port, timeout);
  bool ok = false;
  if (c != nullptr && c->err == 0) {
    redisSetTimeout(c, timeout);
    Authenticate(c, password);
    auto* reply = static_cast<redisReply*>(redisCommand(c, "PING"));
    ok = reply != nullptr && reply->type == REDIS_REPLY_STATUS &&
         std::string(reply->str, reply->len) == "PONG";
    if (reply != nullptr) freeReplyObject(reply);
  }
  if (c != nullptr) redisFree(c);
  return ok;
}

}  // namespace

absl::Status WaitForPong(Subprocess& process, int port, const std::string& what,
                         absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (!process.Running()) return absl::UnavailableError(absl::StrCat(what, " exited on port ", port));
    absl::StatusOr<RedisReply> pong = RedisCommandAt(port, "", {"PING"});
    if (pong.ok() && pong->str == "PONG") return absl::OkStatus();
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::UnavailableError(absl::StrCat(what, " did not answer PING on port ", port));
}

absl::StatusOr<std::vector<RedisReply>> RedisCommandsAt(
    int port, const std::string& password, const std::vector<std::vector<std::string>>& commands) {
  timeval timeout{5, 0};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port, timeout);
  if (c == nullptr || c->err != 0) {
    std::string error = c == nullptr ? "out of memory" : c->errstr;
    if (c != nullptr) redisFree(c);
    return absl::UnavailableError(error);
  }
  redisSetTimeout(c, timeout);
  if (!Authenticate(c, password)) {
    redisFree(c);
    return absl::UnauthenticatedError("redis AUTH failed");
  }
  std::vector<RedisReply> out;
  for (const std::vector<std::string>& argv : commands) {
    std::vector<const char*> args;
    std::vector<size_t> lens;
    for (const std::string& arg : argv) {
      args.push_back(arg.data());
      lens.push_back(arg.size());
    }
    auto* reply = static_cast<redisReply*>(redisCommandArgv(
        c, static_cast<int>(args.size()), args.data(), lens.data()));
    if (reply == nullptr) {
      std::string error = c->errstr;
      redisFree(c);
      return absl::UnavailableError(error);
    }
    out.push_back(CopyReply(*reply));
    freeReplyObject(reply);
  }
  redisFree(c);
  return out;
}

absl::StatusOr<RedisReply> RedisCommandAt(int port, const std::string& password,
                                          const std::vector<std::string>& argv) {
  absl::StatusOr<std::vector<RedisReply>> replies = RedisCommandsAt(port, password, {argv});
  if (!replies.ok()) return replies.status();
  return std::move(replies->front());
}

// --------------------------------------------------------------- RedisServer

bool RedisReply::is_error() const { return type == REDIS_REPLY_ERROR; }

RedisServer::RedisServer(std::string requirepass,
                         std::optional<RedisServerTls> tls)
    : requirepass_(std::move(requirepass)), tls_(std::move(tls)) {
  char tmpl[] = "/tmp/jobwire-redis-XXXXXX";
  if (mkdtemp(tmpl) != nullptr) dir_ = tmpl;
}

RedisServer::~RedisServer() {
  Stop();
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

std::string RedisServer::url() const {
  return absl::StrCat(tls_ ? "rediss" : "redis", "://127.0.0.1:", port_);
}

absl::Status RedisServer::Start() {
  if (dir_.empty()) return absl::InternalError("mkdtemp failed");
  if (port_ != 0) return StartOnce();
  absl::Status status;
  for (int attempt = 0; attempt < 3; ++attempt) {
    absl::StatusOr<int> port = PickFreePort();
    if (!port.ok()) return port.status();
    port_ = *port;
    status = StartOnce();
    if (status.ok()) return status;
  }
  port_ = 0;
  return status;
}

absl::Status RedisServer::StartOnce() {
  const std::string port = absl::StrCat(port_);
  std::vector<std::string> argv = {"redis-server", "--port", port,
                                   "--bind", "127.0.0.1", "--save", "",
                                   "--appendonly", "no", "--dir", dir_,
                                   "--loglevel", "warning"};
  if (tls_) {
    argv[2] = "0";
    argv.insert(argv.end(),
                {"--tls-port", port, "--tls-cert-file", tls_->cert,
                 "--tls-key-file", tls_->key, "--tls-ca-cert-file", tls_->ca,
                 "--tls-auth-clients", tls_->auth_clients ? "yes" : "no"});
  }
  if (!requirepass_.empty()) {
    argv.insert(argv.end(), {"--requirepass", requirepass_});
  }
  absl::Status spawned =
      process_.Spawn(argv, absl::StrCat(dir_, "/redis.log"));
  if (!spawned.ok()) return spawned;
  const absl::Time deadline = absl::Now() + kStartupTimeout;
  while (absl::Now() < deadline) {
    if (!process_.Running()) {
      return absl::UnavailableError(
          absl::StrCat("redis-server exited on port ", port));
    }
    if (Ready()) return absl::OkStatus();
    absl::SleepFor(absl::Milliseconds(20));
  }
  process_.Terminate(kStopGrace);
  return absl::UnavailableError(
      absl::StrCat("redis-server did not answer PING on port ", port));
}

void RedisServer::Stop() { process_.Terminate(kStopGrace); }

absl::Status RedisServer::Restart() {
  Stop();
  return Start();
}

bool RedisServer::Ready() {
  if (!tls_) return Ping(port_, requirepass_);
  absl::StatusOr<std::string> out = RedisCli({"PING"});
  return out.ok() && *out == "PONG";
}

absl::StatusOr<std::string> RedisServer::RedisCli(
    const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"redis-cli", "--tls", "--cacert", tls_->ca,
                                   "-h", "127.0.0.1", "-p",
                                   absl::StrCat(port_)};
  if (!tls_->client_cert.empty()) {
    argv.insert(argv.end(),
                {"--cert", tls_->client_cert, "--key", tls_->client_key});
  }
  if (!requirepass_.empty()) {
    argv.insert(argv.end(), {"--no-auth-warning", "-a", requirepass_});
  }
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string out_path = absl::StrCat(dir_, "/redis-cli.out");
  Subprocess cli;
  absl::Status spawned = cli.Spawn(argv, out_path, "/dev/null");
  if (!spawned.ok()) return spawned;
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (cli.Running()) {
    if (absl::Now() >= deadline) {
      cli.Terminate(absl::Seconds(1));
      return absl::UnavailableError("redis-cli --tls timed out");
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  std::string out = ReadTextFile(out_path);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) {
    out.pop_back();
  }
  if (cli.last_status() != 0 || absl::StartsWith(out, "Could not connect")) {
    return absl::UnavailableError(absl::StrCat("redis-cli --tls: ", out));
  }
  return out;
}

absl::StatusOr<RedisReply> RedisServer::CommandArgv(
    const std::vector<std::string>& argv) {
  if (tls_) {
    absl::StatusOr<std::string> out = RedisCli(argv);
    if (!out.ok()) return out.status();
    RedisReply reply;
    reply.str = *out;
    if (absl::SimpleAtoi(*out, &reply.integer)) {
      reply.type = REDIS_REPLY_INTEGER;
    } else {
      reply.type = absl::StartsWith(*out, "ERR") || absl::StartsWith(*out, "NOAUTH") ||
                           absl::StartsWith(*out, "WRONGPASS")
                       ? REDIS_REPLY_ERROR
                       : REDIS_REPLY_STRING;
    }
    return reply;
  }
  return RedisCommandAt(port_, requirepass_, argv);
}

int64_t RedisServer::DbSize() {
  absl::StatusOr<RedisReply> reply = Command("DBSIZE");
  if (!reply.ok() || reply->type != REDIS_REPLY_INTEGER) return -1;
  return reply->integer;
}

int64_t RedisServer::UsedMemory() {
  absl::StatusOr<RedisReply> info = Command("INFO", "memory");
  if (!info.ok() || info->is_error()) return -1;
  for (absl::string_view line : absl::StrSplit(info->str, "\r\n")) {
    int64_t value;
    if (absl::ConsumePrefix(&line, "used_memory:") && absl::SimpleAtoi(line, &value)) return value;
  }
  return -1;
}

absl::Status RedisServer::FillToMaxmemory() {
  auto config_set = [this](const std::string& name, int64_t value) -> absl::Status {
    absl::StatusOr<RedisReply> reply = Command("CONFIG", "SET", name, value);
    if (!reply.ok()) return reply.status();
    if (reply->is_error()) return absl::InternalError(reply->str);
    return absl::OkStatus();
  };
  absl::StatusOr<RedisReply> policy = Command("CONFIG", "SET", "maxmemory-policy", "noeviction");
  if (!policy.ok()) return policy.status();
  const int64_t used = UsedMemory();
  if (used <= 0) return absl::InternalError("no used_memory in INFO memory");
  if (absl::Status s = config_set("maxmemory", used + 512 * 1024); !s.ok()) return s;
  const std::string filler(4096, 'x');
  bool refused = false;
  for (int i = 0; i < 10000 && !refused; ++i) {
    absl::StatusOr<RedisReply> reply = Command("SET", absl::StrCat("filler:", i), filler);
    if (!reply.ok()) return reply.status();
    if (reply->is_error()) {
      if (!absl::StartsWith(reply->str, "OOM")) return absl::InternalError(reply->str);
      refused = true;
    }
  }
  if (!refused) return absl::InternalError("filler writes were never refused");
  if (absl::Status s = config_set("maxmemory", UsedMemory() - 256 * 1024); !s.ok()) return s;
  absl::StatusOr<RedisReply> probe = Command("SET", "filler:probe", "x");
  if (!probe.ok()) return probe.status();
  if (!probe->is_error() || !absl::StartsWith(probe->str, "OOM")) {
    return absl::InternalError("a plain SET is not refused after the fill");
  }
  return absl::OkStatus();
}

}  // namespace jobwire::testing
