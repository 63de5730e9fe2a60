// Process and file helpers for the cross-process tests: child processes
// that die with the test (Subprocess), free loopback ports, whole files.
#ifndef JOBWIRE_TESTS_SUBPROCESS_H_
#define JOBWIRE_TESTS_SUBPROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace jobwire::testing {

// The whole contents of the file at `path` ("" when it cannot be read).
std::string ReadTextFile(const std::string& path);

// Returns a TCP port on 127.0.0.1 that was free when this returned (picked by
// binding port 0). Another process may take it before the caller binds it.
absl::StatusOr<int> PickFreePort();

// A child process started with fork/execvp. The child gets PR_SET_PDEATHSIG =
// SIGKILL. Not thread-safe: use from one thread.
class Subprocess {
 public:
  Subprocess() = default;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  // Kills (SIGTERM, then SIGKILL after 5 s) and reaps a running child.
  ~Subprocess();

  // Starts argv[0] (looked up in PATH) with argv. The child's stdout goes to
  // `stdout_path` (created or truncated) when it is not empty, else to ours.
  // Returns INTERNAL when fork fails. An exec failure shows up as the child
  // exiting with status 127.
  // REQUIRES: no child is running.
  // Likewise stderr with `stderr_path`.
  absl::Status Spawn(const std::vector<std::string>& argv,
                     const std::string& stdout_path = "",
                     const std::string& stderr_path = "");

  // True while the child has not exited. Reaps it when it has.
  bool Running();

  // The wait status of the last child reaped by Running() or Terminate();
  // -1 before any.
  int last_status() const { return last_status_; }

  // Sends SIGTERM, waits up to `grace` for the child to exit, then sends
  // SIGKILL and waits (a zero `grace` sends SIGKILL at once). Returns the wait status, or -1 when nothing was
  // running. No-op when not running.
  int Terminate(absl::Duration grace);

  // SIGKILL (a crash, no shutdown) and reap. Returns the wait status, or -1
  // when nothing was running.
  int Kill() { return Terminate(absl::ZeroDuration()); }

  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int last_status_ = -1;
};

}  // namespace jobwire::testing

#endif  // JOBWIRE_TESTS_SUBPROCESS_H_
