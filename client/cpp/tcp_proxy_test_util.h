// A TCP proxy for the Worker tests: forwards connections from a local port
// to a broker, and can stop forwarding for a while, as if the network hung or
// the worker process were stopped (SIGSTOP): bytes wait in the kernel's
// buffers and flow again, in order, on Resume. Connections stay open.
//
// Thread safety: every method may be called from any thread.
#ifndef JOBWIRE_CLIENT_CPP_TCP_PROXY_TEST_UTIL_H_
#define JOBWIRE_CLIENT_CPP_TCP_PROXY_TEST_UTIL_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace jobwire::client {

class TcpProxy {
 public:
  // Forwards to 127.0.0.1:`upstream_port`.
  explicit TcpProxy(int upstream_port) : upstream_port_(upstream_port) {}
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;
  // Closes every connection and joins the threads.
  ~TcpProxy() {
    stop_ = true;
    if (accepter_.joinable()) accepter_.join();
    absl::MutexLock lock(&mu_);
    for (std::thread& pump : pumps_) pump.join();
    if (listen_fd_ >= 0) close(listen_fd_);
  }

  // Listens on a free port of 127.0.0.1.
  absl::Status Start() {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = Loopback(0);
    socklen_t len = sizeof(addr);
    if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        listen(listen_fd_, 16) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return absl::InternalError(absl::StrCat("proxy listen: errno ", errno));
    }
    address_ = absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));
    accepter_ = std::thread([this] { Accept(); });
    return absl::OkStatus();
  }

  // "127.0.0.1:<port>". REQUIRES: Start() succeeded.
  const std::string& address() const { return address_; }

  // Stops / restarts forwarding (both directions, every connection).
  void Pause() { paused_ = true; }
  void Resume() { paused_ = false; }

 private:
  static sockaddr_in Loopback(int port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return addr;
  }

  void Accept() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      int client = accept(listen_fd_, nullptr, nullptr);
      if (client < 0) continue;
      int upstream = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr = Loopback(upstream_port_);
      if (upstream < 0 ||
          connect(upstream, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        close(client);
        if (upstream >= 0) close(upstream);
        continue;
      }
      absl::MutexLock lock(&mu_);
      pumps_.emplace_back([this, client, upstream] { Pump(client, upstream); });
    }
  }

  // Copies bytes both ways until either side closes or the proxy stops.
  void Pump(int client, int upstream) {
    char buf[64 * 1024];
    while (!stop_) {
      if (paused_) {
        usleep(10 * 1000);
        continue;
      }
      pollfd p[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
      // Paused while polling: the bytes stay in the kernel until Resume.
      if (poll(p, 2, 20) <= 0 || paused_) continue;
      bool closed = false;
      for (int i = 0; i < 2 && !closed; ++i) {
        if (p[i].revents == 0) continue;
        ssize_t n = read(p[i].fd, buf, sizeof(buf));
        closed = n <= 0 || !WriteAll(p[1 - i].fd, buf, static_cast<size_t>(n));
      }
      if (closed) break;
    }
    close(client);
    close(upstream);
  }

  static bool WriteAll(int fd, const char* data, size_t size) {
    while (size > 0) {
      ssize_t n = write(fd, data, size);
      if (n <= 0) return false;
      data += n;
      size -= static_cast<size_t>(n);
    }
    return true;
  }

  const int upstream_port_;
  int listen_fd_ = -1;
  std::string address_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> paused_{false};
  std::thread accepter_;
  absl::Mutex mu_;
  std::vector<std::thread> pumps_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_TCP_PROXY_TEST_UTIL_H_
