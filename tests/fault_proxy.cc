#include "tests/fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace jobwire::testing {
namespace {

int ConnectLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// One proxied connection: the client side and the server side.
struct Pair {
  int client;
  int server;
};

}  // namespace

FaultProxy::~FaultProxy() {
  stop_ = true;
  if (wake_fds_[1] >= 0) {
    char c = 0;
    (void)!write(wake_fds_[1], &c, 1);
  }
  if (thread_.joinable()) thread_.join();
  for (int fd : {listen_fd_, wake_fds_[0], wake_fds_[1]}) {
    if (fd >= 0) close(fd);
  }
}

absl::Status FaultProxy::Start() {
  listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
  if (listen_fd_ < 0) return absl::InternalError(strerror(errno));
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listen_fd_, 16) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      pipe(wake_fds_) != 0) {
    return absl::InternalError(strerror(errno));
  }
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void FaultProxy::CutOnNextReplyContaining(std::string needle) {
  absl::MutexLock lock(&mu_);
  needle_ = std::move(needle);
}

void FaultProxy::Resume() {
  paused_ = false;
  char c = 0;
  (void)!write(wake_fds_[1], &c, 1);
}

void FaultProxy::Run() {
  std::vector<Pair> pairs;
  std::vector<char> buffer(1 << 16);
  while (!stop_) {
    const bool paused = paused_.load();
    std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}, {wake_fds_[0], POLLIN, 0}};
    for (const Pair& p : pairs) {
      // Paused: not polled, so their bytes stay in the kernel until Resume.
      const short events = paused ? 0 : POLLIN;
      fds.push_back({p.client, events, 0});
      fds.push_back({p.server, events, 0});
    }
    if (poll(fds.data(), fds.size(), 100) < 0 && errno != EINTR) return;
    // Read again: a Pause() while poll waited must hold what it woke for.
    const bool hold = paused_.load();
    if (fds[1].revents & POLLIN) {
      char drain[64];
      (void)!read(wake_fds_[0], drain, sizeof(drain));
    }
    // Pairs accepted below were not polled: their fds have no entry yet.
    const size_t polled = pairs.size();
    if (fds[0].revents & POLLIN) {
      int client = accept(listen_fd_, nullptr, nullptr);
      if (client >= 0) {
        int server = ConnectLoopback(target_port_);
        if (server < 0) {
          close(client);
        } else {
          pairs.push_back({client, server});
        }
      }
    }
    std::vector<Pair> kept;
    for (size_t i = 0; i < pairs.size(); ++i) {
      const Pair& p = pairs[i];
      bool open = true;
      for (int side = 0; side < 2 && i < polled && open && !paused && !hold; ++side) {
        const pollfd& f = fds[2 + 2 * i + side];
        if (!(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const int from = side == 0 ? p.client : p.server;
        const int to = side == 0 ? p.server : p.client;
        ssize_t n = read(from, buffer.data(), buffer.size());
        if (n <= 0) {
          open = false;
          break;
        }
        if (side == 1) {
          absl::MutexLock lock(&mu_);
          if (!needle_.empty() &&
              std::string(buffer.data(), static_cast<size_t>(n)).find(needle_) !=
                  std::string::npos) {
            needle_.clear();
            ++cuts_;
            open = false;
            break;
          }
        }
        if (!WriteAll(to, buffer.data(), static_cast<size_t>(n))) open = false;
      }
      if (open) {
        kept.push_back(p);
      } else {
        close(p.client);
        close(p.server);
      }
    }
    pairs.swap(kept);
  }
  for (const Pair& p : pairs) {
    close(p.client);
    close(p.server);
  }
}

}  // namespace jobwire::testing
