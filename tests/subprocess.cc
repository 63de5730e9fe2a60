#include "tests/subprocess.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/time/clock.h"

namespace jobwire::testing {
namespace {

constexpr absl::Duration kStopGrace = absl::Seconds(5);

}  // namespace

absl::StatusOr<int> PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError(strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::string error = strerror(errno);
    close(fd);
    return absl::InternalError(error);
  }
  close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

std::string ReadTextFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// ---------------------------------------------------------------- Subprocess

Subprocess::~Subprocess() { Terminate(kStopGrace); }

absl::Status Subprocess::Spawn(const std::vector<std::string>& argv,
                               const std::string& stdout_path,
                               const std::string& stderr_path) {
  if (pid_ > 0) return absl::FailedPreconditionError("already running");
  // Everything the child needs is prepared before fork: after fork only
  // async-signal-safe calls are allowed (the parent has gRPC threads).
  std::vector<char*> cargv;
  cargv.reserve(argv.size() + 1);
  for (const std::string& arg : argv) {
    cargv.push_back(const_cast<char*>(arg.c_str()));
  }
  cargv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);
    // Do not let the child inherit blocked signals from the parent.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (!stdout_path.empty()) {
      const int fd =
          open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        close(fd);
      }
    }
    if (!stderr_path.empty()) {
      const int fd =
          open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, STDERR_FILENO);
        close(fd);
      }
    }
    execvp(cargv[0], cargv.data());
    _exit(127);
  }
  pid_ = pid;
  return absl::OkStatus();
}

bool Subprocess::Running() {
  if (pid_ <= 0) return false;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  if (r == pid_) last_status_ = status;
  pid_ = -1;
  return false;
}

int Subprocess::Terminate(absl::Duration grace) {
  if (pid_ <= 0) return -1;
  kill(pid_, grace > absl::ZeroDuration() ? SIGTERM : SIGKILL);
  const absl::Time deadline = absl::Now() + grace;
  int status = 0;
  while (true) {
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno != EINTR)) break;
    if (absl::Now() >= deadline) {
      kill(pid_, SIGKILL);
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  pid_ = -1;
  last_status_ = status;
  return status;
}

}  // namespace jobwire::testing
