// What the CLI tests share (cli_test.cc, cli_queue_settings_test.cc,
// cli_security_test.cc): running the real `jobwire` binary
// (JOBWIRE_CLI_PATH, set by tests/CMakeLists.txt) and collecting its exit
// status and output, and a fixture with a broker and Redis to point it at.
#ifndef JOBWIRE_TESTS_CLI_TEST_UTIL_H_
#define JOBWIRE_TESTS_CLI_TEST_UTIL_H_

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/test_harness.h"

#ifndef JOBWIRE_CLI_PATH
#define JOBWIRE_CLI_PATH ""
#endif

namespace jobwire::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs the CLI with `args` and waits for it.
inline CliResult RunCli(const std::vector<std::string>& args) {
  char dir[] = "/tmp/jobwire-cli-XXXXXX";
  if (mkdtemp(dir) == nullptr) return {};
  const std::string out_path = std::string(dir) + "/out", err_path = std::string(dir) + "/err";
  std::vector<std::string> argv = {JOBWIRE_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_t pid = fork();
  if (pid == 0) {
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> raw;
    for (std::string& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    execv(raw[0], raw.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CliResult result{WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadTextFile(out_path),
                   ReadTextFile(err_path)};
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  rmdir(dir);
  return result;
}

class CliTest : public BrokerTest {
 protected:
  // The CLI on this test's broker.
  CliResult Cli(std::vector<std::string> args) {
    args.insert(args.begin(), "--addr=" + broker_->address());
    return RunCli(args);
  }
};

}  // namespace jobwire::testing

#endif  // JOBWIRE_TESTS_CLI_TEST_UTIL_H_
