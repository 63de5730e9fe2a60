#include "broker/server/embedded_redis.h"

#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace jobwire::server {
namespace {

bool AnswersPing(int port) {
  timeval timeout{0, 200000};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port, timeout);
  bool ok = false;
  if (c != nullptr && !c->err) {
    auto* reply = static_cast<redisReply*>(redisCommand(c, "PING"));
    ok = reply != nullptr && reply->type == REDIS_REPLY_STATUS;
    if (reply != nullptr) freeReplyObject(reply);
  }
  if (c != nullptr) redisFree(c);
  return ok;
}

void StopChild(pid_t pid) {
  kill(pid, SIGTERM);
  for (int i = 0; i < 500; ++i) {
    if (waitpid(pid, nullptr, WNOHANG) == pid) return;
    absl::SleepFor(absl::Milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

}  // namespace

absl::StatusOr<int> PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::UnavailableError("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  if (port < 0) return absl::UnavailableError("no free loopback port");
  return port;
}

absl::StatusOr<std::unique_ptr<EmbeddedRedis>> EmbeddedRedis::Start(
    const std::string& redis_server_path, const std::string& data_dir) {
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  std::string dir = std::filesystem::absolute(data_dir, ec).string();
  if (ec) return absl::UnavailableError(absl::StrCat("cannot create data dir ", data_dir));
  absl::StatusOr<int> port = PickFreePort();
  if (!port.ok()) return port.status();

  std::vector<std::string> args = {redis_server_path, "--port", absl::StrCat(*port), "--bind",
                                   "127.0.0.1", "--dir", dir, "--appendonly", "yes",
                                   "--appendfsync", "everysec", "--save", "", "--logfile",
                                   dir + "/redis.log", "--daemonize", "no"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return absl::UnavailableError("fork failed");
  if (pid == 0) {
    // The broker blocks SIGTERM/SIGINT/SIGHUP for sigwait; exec keeps the mask, and
    // redis-server must see SIGTERM to write its AOF and exit.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  std::unique_ptr<EmbeddedRedis> redis(new EmbeddedRedis(pid, *port));
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    if (AnswersPing(*port)) return redis;
    if (waitpid(pid, nullptr, WNOHANG) == pid) {
      redis->pid_ = -1;
      return absl::UnavailableError(absl::StrCat("embedded ", redis_server_path,
                                                 " exited at start; see ", dir, "/redis.log"));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::UnavailableError(
      absl::StrCat("embedded redis-server did not answer within 10 s; see ", dir, "/redis.log"));
}

EmbeddedRedis::~EmbeddedRedis() {
  if (pid_ > 0) StopChild(pid_);
}

std::string EmbeddedRedis::url() const { return absl::StrCat("redis://127.0.0.1:", port_); }

}  // namespace jobwire::server
