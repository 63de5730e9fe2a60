// jobwire_bench: the load generator of the benchmark (bench/README.md). One
// scenario per run, against a running broker, through the C++ client; prints
// one JSON object with what it measured. bench/run_bench.py starts Redis and
// the broker, runs the scenarios, reads Redis' INFO around each run and
// writes the report.
//
//   jobwire_bench --addr=127.0.0.1:50051 --scenario=e2e --jobs=20000
//
// Scenarios:
//   enqueue        --producers threads each Enqueue one job per call
//   enqueue_batch  the same with EnqueueBatch of --batch jobs
//   drain          --jobs already queued (batched); --workers workers of
//                  --concurrency claim and ack them all
//   e2e            producers (batched) and workers at once: first enqueue to
//                  last ack
//   latency        workers idle; one producer enqueues at --rate jobs/s for
//                  --seconds; enqueue-to-handler latency percentiles
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cpp/client.h"
#include "client/cpp/worker.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, addr, "127.0.0.1:50051", "broker host:port");
ABSL_FLAG(std::string, scenario, "e2e", "enqueue, enqueue_batch, drain, e2e or latency");
ABSL_FLAG(std::string, queue, "bench", "queue name");
ABSL_FLAG(int, jobs, 20000, "jobs per run (enqueue, enqueue_batch, drain, e2e)");
ABSL_FLAG(int, producers, 4, "producer threads");
ABSL_FLAG(int, batch, 100, "jobs per EnqueueBatch");
ABSL_FLAG(int, workers, 2, "Worker instances (one Claim stream each)");
ABSL_FLAG(int, concurrency, 64, "handlers per worker (max_in_flight)");
ABSL_FLAG(double, rate, 1000, "latency: offered jobs per second");
ABSL_FLAG(double, seconds, 5, "latency: how long to offer load");

namespace {

using Clock = std::chrono::steady_clock;
using jobwire::client::BatchJob;
using jobwire::client::Client;
using jobwire::client::ClientOptions;
using jobwire::client::Job;
using jobwire::client::Outcome;
using jobwire::client::Worker;
using jobwire::client::WorkerOptions;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// The ~64-byte JSON payload of every job; `sent_ns` is the producer's
// steady-clock time (producers and workers share this process).
std::string Payload(int64_t n, int64_t sent_ns) {
  return absl::StrCat(R"({"n":)", n, R"(,"sent_ns":)", sent_ns, R"(,"pad":"jobwire-bench"})");
}

// Counts acks; collects enqueue-to-handler latencies. Thread-safe.
class Sink {
 public:
  void Started(const Job& job) {
    int64_t now = NowNs();
    nlohmann::json payload = nlohmann::json::parse(job.payload, nullptr, false);
    if (!payload.is_object()) return;
    absl::MutexLock lock(&mu_);
    latencies_ns_.push_back(now - payload.value("sent_ns", now));
  }
  void Acked() {
    if (++acked_ == target_) {
      absl::MutexLock lock(&mu_);
      done_at_ = Clock::now();
    }
  }
  void SetTarget(int64_t target) { target_ = target; }
  // Waits until `target` acks (or `timeout`); returns when the last came.
  Clock::time_point WaitDone(absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return done_at_ != Clock::time_point{};
    };
    mu_.AwaitWithTimeout(absl::Condition(&done), timeout);
    return done_at_;
  }
  int64_t acked() const { return acked_.load(); }
  std::vector<int64_t> Latencies() {
    absl::MutexLock lock(&mu_);
    return latencies_ns_;
  }

 private:
  std::atomic<int64_t> acked_{0};
  std::atomic<int64_t> target_{-1};
  absl::Mutex mu_;
  Clock::time_point done_at_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> latencies_ns_ ABSL_GUARDED_BY(mu_);
};

// Workers running on their own threads until destroyed.
class WorkerPool {
 public:
  WorkerPool(Sink* sink, bool record_latency) {
    for (int i = 0; i < absl::GetFlag(FLAGS_workers); ++i) {
      WorkerOptions options;
      options.address = absl::GetFlag(FLAGS_addr);
      options.queues = {absl::GetFlag(FLAGS_queue)};
      options.concurrency = absl::GetFlag(FLAGS_concurrency);
      options.worker_id = absl::StrCat("bench-", i);
      options.on_outcome = [sink](const Job&, const Outcome& outcome) {
        if (outcome.kind == "ack_ok") sink->Acked();
      };
      workers_.push_back(std::make_unique<Worker>(options));
      workers_.back()->Register(
          "noop", [sink, record_latency](const Job& job) -> absl::StatusOr<std::string> {
            if (record_latency) sink->Started(job);
            return std::string();
          });
    }
    for (auto& worker : workers_) {
      threads_.emplace_back([w = worker.get()] { w->Run().IgnoreError(); });
    }
  }
  ~WorkerPool() {
    for (auto& worker : workers_) worker->Stop();
    for (auto& thread : threads_) thread.join();
  }

 private:
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
};

// Enqueues `jobs` jobs from --producers threads, batched or not. Returns the
// number that failed.
int64_t Produce(int64_t jobs, bool batched) {
  const int producers = absl::GetFlag(FLAGS_producers);
  const int batch = absl::GetFlag(FLAGS_batch);
  const std::string queue = absl::GetFlag(FLAGS_queue);
  std::atomic<int64_t> failed{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      Client client(ClientOptions{absl::GetFlag(FLAGS_addr)});
      for (int64_t n = p; n < jobs;) {
        if (!batched) {
          if (!client.Enqueue(queue, "noop", Payload(n, NowNs())).ok()) ++failed;
          n += producers;
          continue;
        }
        std::vector<BatchJob> chunk;
        for (; n < jobs && static_cast<int>(chunk.size()) < batch; n += producers) {
          chunk.push_back(BatchJob{"noop", Payload(n, NowNs()), {}});
        }
        auto results = client.EnqueueBatch(queue, chunk);
        if (!results.ok()) {
          failed += static_cast<int64_t>(chunk.size());
          continue;
        }
        for (const auto& r : *results) failed += r.ok() ? 0 : 1;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  return failed.load();
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

double Percentile(std::vector<int64_t>& sorted_ns, double p) {
  if (sorted_ns.empty()) return 0;
  size_t i = std::min(sorted_ns.size() - 1, static_cast<size_t>(p * sorted_ns.size()));
  return static_cast<double>(sorted_ns[i]) / 1e6;  // ms
}

nlohmann::json Run(const std::string& scenario) {
  const int64_t jobs = absl::GetFlag(FLAGS_jobs);
  nlohmann::json out{{"scenario", scenario}};
  if (scenario == "enqueue" || scenario == "enqueue_batch") {
    auto start = Clock::now();
    int64_t failed = Produce(jobs, scenario == "enqueue_batch");
    double s = Seconds(Clock::now() - start);
    out.update({{"jobs", jobs}, {"failed", failed}, {"seconds", s}, {"jobs_per_s", jobs / s}});
  } else if (scenario == "drain" || scenario == "e2e") {
    Sink sink;
    sink.SetTarget(jobs);
    int64_t failed = 0;
    std::unique_ptr<WorkerPool> pool;
    Clock::time_point start;
    if (scenario == "drain") {
      failed = Produce(jobs, true);
      start = Clock::now();
      pool = std::make_unique<WorkerPool>(&sink, false);
    } else {
      pool = std::make_unique<WorkerPool>(&sink, false);
      absl::SleepFor(absl::Milliseconds(300));  // streams open
      start = Clock::now();
      failed = Produce(jobs, true);
    }
    Clock::time_point done = sink.WaitDone(absl::Minutes(5));
    double s = Seconds(done - start);
    out.update({{"jobs", jobs}, {"failed", failed}, {"acked", sink.acked()}, {"seconds", s},
                {"jobs_per_s", jobs / s}});
  } else if (scenario == "latency") {
    Sink sink;
    WorkerPool pool(&sink, true);
    absl::SleepFor(absl::Milliseconds(300));
    const double rate = absl::GetFlag(FLAGS_rate);
    const int64_t total = static_cast<int64_t>(rate * absl::GetFlag(FLAGS_seconds));
    sink.SetTarget(total);
    Client client(ClientOptions{absl::GetFlag(FLAGS_addr)});
    const std::string queue = absl::GetFlag(FLAGS_queue);
    int64_t failed = 0;
    auto start = Clock::now();
    for (int64_t n = 0; n < total; ++n) {
      // Open loop: job n is sent at start + n / rate, whatever came before.
      auto due = start + std::chrono::nanoseconds(static_cast<int64_t>(n * 1e9 / rate));
      std::this_thread::sleep_until(due);
      if (!client.Enqueue(queue, "noop", Payload(n, NowNs())).ok()) ++failed;
    }
    sink.WaitDone(absl::Seconds(30));
    std::vector<int64_t> lat = sink.Latencies();
    std::sort(lat.begin(), lat.end());
    out.update({{"offered_per_s", rate}, {"jobs", total}, {"failed", failed},
                {"acked", sink.acked()}, {"p50_ms", Percentile(lat, 0.50)},
                {"p99_ms", Percentile(lat, 0.99)}, {"p999_ms", Percentile(lat, 0.999)},
                {"max_ms", lat.empty() ? 0 : static_cast<double>(lat.back()) / 1e6}});
  } else {
    out["error"] = "unknown scenario";
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  nlohmann::json result = Run(absl::GetFlag(FLAGS_scenario));
  std::cout << result.dump() << std::endl;
  return result.contains("error") || result.value("failed", 0) > 0 ? 1 : 0;
}
