// The C++ interop worker (tests/interop/README.md): handlers for types
// "interop" and "behaviour" on the jobwire::client::Worker, logging every run
// and outcome.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client/cpp/worker.h"

namespace {

std::string Env(const char* name, const char* fallback = "") {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
}

// Appends whole lines with one write(2) each, unbuffered: a crash right after
// a write never loses or tears the line.
class LineLog {
 public:
  explicit LineLog(const std::string& path)
      : fd_(open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) {}
  bool ok() const { return fd_ >= 0; }
  void Write(const std::string& line) {
    std::string text = line + "\n";
    ssize_t written = write(fd_, text.data(), text.size());
    (void)written;
  }

 private:
  int fd_;
};

// Scenario turned_away: how many times this process ran each job (by queue
// and job id). Runs turned away with keep_attempt do not advance
// job.attempt, so the handler counts them itself, in memory.
class RunCounter {
 public:
  int Next(const std::string& queue, const std::string& job_id) {
    std::lock_guard lock(mutex_);
    return ++runs_[{queue, job_id}];
  }

 private:
  std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, int> runs_;
};

// The queues to consume (INTEROP_QUEUES, comma-separated, else the one
// INTEROP_QUEUE) and their weights (INTEROP_WEIGHTS, comma-separated ints in
// the order of the queues; unset or empty: none, strict order). False, with
// the reason in `error`, for weights that do not match the queues.
bool QueuesAndWeights(std::vector<std::string>& queues, std::map<std::string, int>& weights,
                      std::string& error) {
  const std::string names = Env("INTEROP_QUEUES");
  queues = names.empty() ? std::vector<std::string>{Env("INTEROP_QUEUE", "interop")}
                         : std::vector<std::string>(absl::StrSplit(names, ','));
  const std::string text = Env("INTEROP_WEIGHTS");
  if (text.empty()) return true;
  std::vector<std::string> values = absl::StrSplit(text, ',');
  if (values.size() != queues.size()) {
    error = absl::StrCat("INTEROP_WEIGHTS has ", values.size(), " weights for ", queues.size(),
                         " queues");
    return false;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    int weight = 0;
    if (!absl::SimpleAtoi(values[i], &weight)) {
      error = absl::StrCat("INTEROP_WEIGHTS=", text, ": not an int: ", values[i]);
      return false;
    }
    weights[queues[i]] = weight;
  }
  return true;
}

// The "behaviour" handler (tests/interop/README.md, "The behaviour handler"):
// payload {"scenario": string, ...}; `start` is logged by the caller.
absl::StatusOr<std::string> RunBehaviour(const jobwire::client::Job& job,
                                         const std::string& lang, LineLog& log,
                                         RunCounter& runs) {
  nlohmann::json payload = job.Json();
  const std::string scenario = payload.value("scenario", "");
  if (scenario == "lease_ms") {
    absl::SleepFor(absl::Milliseconds(payload.value("sleep_ms", int64_t{0})));
    return nlohmann::json{{"lang", lang}, {"lease_ms", job.lease_ms}}.dump();
  }
  if (scenario == "long_error") {
    const std::string unit = payload.value("unit", "");
    const int64_t count = payload.value("count", int64_t{0});
    std::string text;
    if (count > 0) text.reserve(unit.size() * static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) text += unit;
    return absl::InternalError(text);
  }
  if (scenario == "retry_after") {
    if (job.attempt == 1) {
      return jobwire::client::RetryAfter(
          absl::UnavailableError("retry later"),
          absl::Milliseconds(payload.value("delay_ms", int64_t{0})));
    }
    return nlohmann::json{{"lang", lang}}.dump();
  }
  if (scenario == "turned_away") {
    const int run = runs.Next(job.queue, job.id);
    log.Write(absl::StrCat("run ", job.id, " ", job.attempt, " ", lang, " ", run, " ",
                           absl::ToUnixMillis(absl::Now())));
    if (run <= payload.value("times", 0)) {
      return jobwire::client::RetryAfter(
          absl::UnavailableError("turned away"),
          absl::Milliseconds(payload.value("delay_ms", int64_t{0})), /*keep_attempt=*/true);
    }
    return nlohmann::json{{"lang", lang}, {"runs", run}}.dump();
  }
  if (scenario == "non_retryable") {
    return jobwire::client::NonRetryable(absl::InvalidArgumentError("bad input"));
  }
  if (scenario == "wait_lease_lost") {
    // Woken by the lost-lease signal (the job's stop_token) or the timeout.
    std::mutex mutex;
    std::condition_variable_any lost;
    std::unique_lock lock(mutex);
    lost.wait_for(lock, job.stop_token(),
                  std::chrono::milliseconds(payload.value("wait_ms", int64_t{0})),
                  [] { return false; });
    lock.unlock();
    const bool lease_lost = job.lease_lost();
    log.Write(absl::StrCat(lease_lost ? "lease_lost " : "lease_kept ", job.id, " ",
                           job.attempt, " ", lang));
    return nlohmann::json{{"lang", lang}, {"lease_lost", lease_lost}}.dump();
  }
  if (scenario == "sleep") {
    absl::SleepFor(absl::Milliseconds(payload.value("sleep_ms", int64_t{0})));
    return nlohmann::json{{"lang", lang}}.dump();
  }
  if (scenario == "keyed") {
    log.Write(absl::StrCat("key_start ", job.id, " ", job.attempt, " ", lang, " ",
                           job.concurrency_key));
    absl::SleepFor(absl::Milliseconds(payload.value("sleep_ms", int64_t{0})));
    log.Write(absl::StrCat("key_end ", job.id, " ", job.attempt, " ", lang, " ",
                           job.concurrency_key));
    return nlohmann::json{{"lang", lang}, {"key", job.concurrency_key}}.dump();
  }
  if (scenario == "deps") {
    log.Write(absl::StrCat("deps ", job.id, " ", job.attempt, " ", lang, " ",
                           job.dependency_results.size()));
    for (const auto& [parent, result] : job.dependency_results) {
      log.Write(absl::StrCat("dep ", job.id, " ", job.attempt, " ", lang, " ", parent, " ",
                             absl::BytesToHexString(result)));
    }
    return nlohmann::json{{"lang", lang}, {"job", job.id}}.dump();
  }
  return absl::InternalError(absl::StrCat("unknown scenario ", scenario));
}

}  // namespace

int main() {
  using jobwire::client::Job;
  using jobwire::client::Outcome;

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const std::string lang = Env("INTEROP_LANG", "cpp");
  LineLog log(Env("INTEROP_LOG"));
  if (!log.ok()) {
    std::cerr << "cannot open INTEROP_LOG\n";
    return 2;
  }
  int concurrency = 4;
  int64_t lease_ms = 30000;
  (void)absl::SimpleAtoi(Env("INTEROP_CONCURRENCY", "4"), &concurrency);
  (void)absl::SimpleAtoi(Env("INTEROP_LEASE_MS", "30000"), &lease_ms);

  jobwire::client::WorkerOptions options;
  options.address = Env("JOBWIRE_ADDR");
  if (std::string error; !QueuesAndWeights(options.queues, options.weights, error)) {
    std::cerr << error << "\n";
    return 2;
  }
  options.concurrency = concurrency;
  options.lease_ms = lease_ms;
  options.worker_id = absl::StrCat(lang, "-", getpid());
  // Every kind the client reports, with its detail (the Fail's outcome or the
  // code name) when it has one.
  options.on_outcome = [&](const Job& job, const Outcome& outcome) {
    log.Write(absl::StrCat(outcome.kind, " ", job.id, " ", job.attempt, " ", lang,
                           outcome.detail.empty() ? "" : " ", outcome.detail));
  };
  jobwire::client::Worker worker(options);
  RunCounter runs;
  worker.Register("interop", [&](const Job& job) -> absl::StatusOr<std::string> {
    log.Write(absl::StrCat("start ", job.id, " ", job.attempt, " ", lang));
    // The C++ client propagates trace headers only (no OpenTelemetry in
    // Debian 12): the producer's span is the parent this handler would give
    // its span.
    if (auto trace = jobwire::client::TraceContext::FromHeaders(job.headers)) {
      log.Write(absl::StrCat("span ", job.id, " ", job.attempt, " ", lang, " ", trace->trace_id,
                             " ", trace->parent_id));
    }
    nlohmann::json payload = job.Json();
    if (payload.value("crash", false) && job.attempt == 1) {
      log.Write(absl::StrCat("crash ", job.id, " ", job.attempt, " ", lang));
      _exit(3);
    }
    if (payload.value("hold_in", "") == lang && job.attempt == 1) {
      // run_interop.py freezes this process (SIGSTOP) during the sleep.
      log.Write(absl::StrCat("hold ", job.id, " ", job.attempt, " ", lang));
      absl::SleepFor(absl::Milliseconds(payload.value("hold_ms", 0)));
    }
    if (int work_ms = payload.value("work_ms", 0); work_ms > 0) {
      absl::SleepFor(absl::Milliseconds(work_ms));
    }
    if (payload.value("always_fail", false)) return absl::InternalError("always fails");
    if (payload.value("fail_first", false) && job.attempt == 1) {
      return absl::InternalError("planned first-attempt failure");
    }
    return nlohmann::json{{"n", payload["n"]}, {"lang", lang}}.dump();
  });
  worker.Register("behaviour", [&](const Job& job) -> absl::StatusOr<std::string> {
    log.Write(absl::StrCat("start ", job.id, " ", job.attempt, " ", lang, " ", job.queue));
    return RunBehaviour(job, lang, log, runs);
  });

  std::thread signal_thread([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    worker.Stop();
  });
  absl::Status status = worker.Run();
  if (!status.ok()) {
    std::cerr << "worker: " << status << "\n";
    _exit(1);
  }
  // Stopped by a signal: the signal thread has returned.
  signal_thread.join();
  return 0;
}
