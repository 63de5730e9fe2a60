// FaultProxy: a TCP proxy on 127.0.0.1 in front of one server port (a
// RedisServer, a broker), for tests that need a connection to fail at a
// precise point: cut after the server has answered a request, before the
// client reads the answer; or hang for a while (as if the network hung or
// the client process were stopped) and flow again. Bytes pass through
// unchanged otherwise.
//
// Thread safety: every method may be called from any thread; one thread of
// its own moves the bytes.
#ifndef JOBWIRE_TESTS_FAULT_PROXY_H_
#define JOBWIRE_TESTS_FAULT_PROXY_H_

#include <atomic>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace jobwire::testing {

class FaultProxy {
 public:
  explicit FaultProxy(int target_port) : target_port_(target_port) {}
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;
  // Stops the thread and closes every connection.
  ~FaultProxy();

  // Listens on a free port and starts forwarding. REQUIRES: called once.
  absl::Status Start();
  int port() const { return port_; }

  // The next chunk the server sends that contains `needle` is dropped, and
  // that connection is closed on both sides at once (the client sees the
  // connection reset with its request answered but the answer lost). Then
  // the proxy forwards as before.
  void CutOnNextReplyContaining(std::string needle);
  // How many connections CutOnNextReplyContaining has cut so far.
  int cuts() const { return cuts_.load(); }

  // Stops / restarts forwarding, both ways on every connection: meanwhile
  // bytes wait in the kernel's buffers and connections stay open (new ones
  // are accepted); on Resume they flow again, in order.
  void Pause() { paused_ = true; }
  void Resume();

 private:
  void Run();

  const int target_port_;
  int port_ = 0;
  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> cuts_{0};
  std::atomic<bool> paused_{false};
  absl::Mutex mu_;
  std::string needle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwire::testing

#endif  // JOBWIRE_TESTS_FAULT_PROXY_H_
