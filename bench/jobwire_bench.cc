// jobwire_bench: the load generator of the scale checks (bench/scale_checks.py)
// and of the partitioned-queue benchmark (bench/cluster_partitions.py). One
// scenario per run, against a running broker, through the C++ client; prints
// one JSON object with what it measured. (The side-by-side benchmark runs
// jobwire's C++ client as separate producer and worker processes instead:
// bench/side_cpp.cc.)
//
//   jobwire_bench --addr=127.0.0.1:50051 --scenario=e2e --jobs=20000
//
// Scenarios:
//   e2e            --producers threads (EnqueueBatch of --batch) and
//                  --workers Workers of --concurrency at once: first enqueue
//                  to last ack
// Scale checks (bench/README.md, "Scale checks"):
//   backlog_drain  --backlog queued, then --rounds times: --jobs more ahead
//                  of it, which workers claim and ack while the backlog
//                  stays pending
//   due_burst      workers idle; --jobs enqueued to become due at one moment
//                  (--due_in_ms after the enqueue starts); due moment to last
//                  ack, and a GetJob probe every --probe_interval_ms
//   idle_streams   --streams raw Claim streams over --channels connections,
//                  held open with nothing to claim
//   idle_workers   --workers Workers, warmed up with one job, then idle
//
// With --pause, a scenario that prints a phase line ({"phase": ...}) waits
// for a line on stdin before it goes on, so that the driver can measure the
// broker and Redis at that point; without it, idle_streams and idle_workers
// hold their streams for --seconds.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <numeric>
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
#include "grpcpp/grpcpp.h"
#include "jobwire/v1/broker.grpc.pb.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, addr, "127.0.0.1:50051", "broker host:port");
ABSL_FLAG(std::string, scenario, "e2e",
          "e2e, backlog_drain, due_burst, idle_streams or idle_workers");
ABSL_FLAG(std::string, queue, "bench", "queue name");
ABSL_FLAG(int, jobs, 20000, "jobs per run (e2e, backlog_drain, due_burst)");
ABSL_FLAG(int, producers, 4, "producer threads");
ABSL_FLAG(int, batch, 100, "jobs per EnqueueBatch");
ABSL_FLAG(int, workers, 2, "Worker instances (one Claim stream each)");
ABSL_FLAG(int, concurrency, 64, "handlers per worker (max_in_flight)");
ABSL_FLAG(double, seconds, 5, "idle_streams, idle_workers without --pause: how long to hold");
ABSL_FLAG(int64_t, backlog, 1000, "backlog_drain: jobs left pending behind the --jobs drained");
ABSL_FLAG(int, rounds, 1, "backlog_drain: rounds of --jobs drained, each enqueued before it");
ABSL_FLAG(int64_t, due_in_ms, 0,
          "due_burst: all jobs become due this long after the enqueue starts (0: 1 s + 1 ms "
          "per 20 jobs)");
ABSL_FLAG(int64_t, probe_interval_ms, 10, "due_burst: one GetJob probe per interval");
ABSL_FLAG(int, streams, 10000, "idle_streams: Claim streams to hold open");
ABSL_FLAG(int, channels, 10, "idle_streams: client connections the streams are spread over");
ABSL_FLAG(bool, pause, false, "after each phase line, wait for a line on stdin");

namespace {

using Clock = std::chrono::steady_clock;
using jobwire::client::BatchJob;
using jobwire::client::Client;
using jobwire::client::ClientOptions;
using jobwire::client::EnqueueOptions;
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

// Enqueues `jobs` jobs from --producers threads, EnqueueBatch of --batch,
// each with `options`; payloads carry `stamp_ns` as sent_ns (0: the time of
// sending). Returns the number that failed.
int64_t Produce(int64_t jobs, const EnqueueOptions& options = {}, int64_t stamp_ns = 0) {
  const int producers = absl::GetFlag(FLAGS_producers);
  const int batch = absl::GetFlag(FLAGS_batch);
  const std::string queue = absl::GetFlag(FLAGS_queue);
  std::atomic<int64_t> failed{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      Client client(ClientOptions{absl::GetFlag(FLAGS_addr)});
      for (int64_t n = p; n < jobs;) {
        std::vector<BatchJob> chunk;
        for (; n < jobs && static_cast<int>(chunk.size()) < batch; n += producers) {
          chunk.push_back(BatchJob{"noop", Payload(n, stamp_ns ? stamp_ns : NowNs()), options});
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

int64_t Ns(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

// p50 / p99 / max (ms) of `ns`, keys prefixed with `name`.
nlohmann::json Summary(const std::string& name, std::vector<int64_t> ns) {
  std::sort(ns.begin(), ns.end());
  return {{name + "_count", ns.size()},
          {name + "_p50_ms", Percentile(ns, 0.50)},
          {name + "_p99_ms", Percentile(ns, 0.99)},
          {name + "_max_ms", ns.empty() ? 0 : static_cast<double>(ns.back()) / 1e6}};
}

// Prints a phase line. With --pause, then waits for a line on stdin (the
// driver measures meanwhile); without it, sleeps --seconds when `hold`.
void Phase(const nlohmann::json& line, bool hold) {
  std::cout << line.dump() << std::endl;
  if (absl::GetFlag(FLAGS_pause)) {
    std::string reply;
    std::getline(std::cin, reply);
  } else if (hold) {
    absl::SleepFor(absl::Seconds(absl::GetFlag(FLAGS_seconds)));
  }
}

// backlog_drain: --backlog jobs are enqueued, then --rounds times --jobs more
// at priority 1 (claimed before the backlog), which workers claim and ack
// while the backlog stays pending in the same sets. jobs_per_s is the median
// round's. Each round starts with a "round" phase line (with --pause the
// driver decides when: it alternates the rounds of two backlogs).
nlohmann::json BacklogDrain() {
  const int64_t jobs = absl::GetFlag(FLAGS_jobs);
  const int64_t backlog = absl::GetFlag(FLAGS_backlog);
  const int rounds = std::max(1, absl::GetFlag(FLAGS_rounds));
  EnqueueOptions first;
  first.priority = 1;
  auto load_start = Clock::now();
  int64_t failed = Produce(backlog) + Produce(jobs, first);
  double load_s = Seconds(Clock::now() - load_start);
  Phase({{"phase", "loaded"}, {"pending", jobs + backlog}, {"load_seconds", load_s}}, false);
  std::vector<double> rates;
  int64_t acked = 0;
  for (int r = 0; r < rounds; ++r) {
    Phase({{"phase", "round"}, {"round", r}}, false);
    if (r > 0) failed += Produce(jobs, first);
    Sink sink;
    sink.SetTarget(jobs);
    auto start = Clock::now();
    WorkerPool pool(&sink, false);
    double s = Seconds(sink.WaitDone(absl::Minutes(5)) - start);
    acked += sink.acked();
    rates.push_back(jobs / s);
  }
  std::vector<double> sorted = rates;
  std::sort(sorted.begin(), sorted.end());
  nlohmann::json out{{"jobs", jobs}, {"backlog", backlog}, {"rounds", rounds},
                     {"failed", failed}, {"acked", acked}, {"load_seconds", load_s},
                     {"load_jobs_per_s", (jobs + backlog) / load_s},
                     {"round_jobs_per_s", rates}, {"jobs_per_s", sorted[sorted.size() / 2]},
                     {"min_jobs_per_s", sorted.front()}, {"max_jobs_per_s", sorted.back()}};
  if (acked < jobs * rounds) out["error"] = "not all jobs acked within 5 minutes";
  return out;
}

// due_burst: with workers idle, --jobs are enqueued with one run_at, --due_in_ms
// after the enqueue starts. Measures from that due moment to each handler
// start and to the last ack, and probes GetJob every --probe_interval_ms from
// the end of the enqueue to the last ack.
nlohmann::json DueBurst() {
  const int64_t jobs = absl::GetFlag(FLAGS_jobs);
  const int64_t due_in_ms = absl::GetFlag(FLAGS_due_in_ms) > 0 ? absl::GetFlag(FLAGS_due_in_ms)
                                                               : 1000 + jobs / 20;
  const std::string queue = absl::GetFlag(FLAGS_queue);
  const ClientOptions client_options{absl::GetFlag(FLAGS_addr)};
  Sink sink;
  sink.SetTarget(jobs);
  WorkerPool pool(&sink, true);
  // The probe reads a job of the same queue that is due in an hour.
  Client client(client_options);
  EnqueueOptions later;
  later.delay_ms = 3600 * 1000;
  absl::StatusOr<jobwire::client::Enqueued> probe_job =
      client.Enqueue(queue, "noop", Payload(-1, 0), later);
  if (!probe_job.ok()) return {{"error", probe_job.status().ToString()}};
  absl::SleepFor(absl::Milliseconds(300));  // streams open

  // Handler lateness is measured against `due` (the payloads carry it).
  EnqueueOptions at;
  at.run_at_ms = absl::ToUnixMillis(absl::Now()) + due_in_ms;
  const Clock::time_point due = Clock::now() + std::chrono::milliseconds(due_in_ms);
  auto enqueue_start = Clock::now();
  int64_t failed = Produce(jobs, at, Ns(due.time_since_epoch()));
  auto enqueued = Clock::now();

  std::atomic<bool> stop{false};
  std::vector<int64_t> before_due, burst;  // probe round trips, ns
  int64_t probe_errors = 0;
  std::thread prober([&] {
    Client probe_client(client_options);
    const auto interval = std::chrono::milliseconds(absl::GetFlag(FLAGS_probe_interval_ms));
    for (auto next = Clock::now(); !stop.load(); next = std::max(next + interval, Clock::now())) {
      std::this_thread::sleep_until(next);
      auto t0 = Clock::now();
      bool ok = probe_client.GetJob(queue, probe_job->job_id).ok();
      int64_t rtt = Ns(Clock::now() - t0);
      if (!ok) ++probe_errors;
      (t0 < due ? before_due : burst).push_back(rtt);
    }
  });
  Clock::time_point done = sink.WaitDone(absl::Minutes(5));
  stop = true;
  prober.join();

  std::vector<int64_t> lateness = sink.Latencies();
  std::sort(lateness.begin(), lateness.end());
  double s = Seconds(done - due);
  nlohmann::json out{{"jobs", jobs}, {"failed", failed}, {"acked", sink.acked()},
                     {"due_in_ms", due_in_ms},
                     {"enqueue_seconds", Seconds(enqueued - enqueue_start)},
                     {"seconds", s}, {"jobs_per_s", jobs / s},
                     {"first_start_ms", lateness.empty() ? 0 : lateness.front() / 1e6},
                     {"start_p50_ms", Percentile(lateness, 0.50)},
                     {"start_p99_ms", Percentile(lateness, 0.99)},
                     {"probe_interval_ms", absl::GetFlag(FLAGS_probe_interval_ms)},
                     {"probe_errors", probe_errors}};
  out.update(Summary("probe_idle", before_due));
  out.update(Summary("probe_burst", burst));
  if (enqueued > due) {
    out["error"] = absl::StrCat("the enqueue took ", Seconds(enqueued - enqueue_start),
                                " s, past the due moment: raise --due_in_ms");
  } else if (sink.acked() < jobs) {
    out["error"] = "not all jobs acked within 5 minutes";
  }
  return out;
}

// idle_streams: --streams Claim streams (max_in_flight 1, nothing to claim)
// over --channels connections, on the generated async stub. Each channel
// gets a local subchannel pool, so that gRPC gives it a connection of its own
// instead of sharing one among equal channels.
nlohmann::json IdleStreams() {
  const int streams = absl::GetFlag(FLAGS_streams);
  const int channels = std::max(1, absl::GetFlag(FLAGS_channels));
  std::vector<std::unique_ptr<jobwire::v1::BrokerService::Stub>> stubs;
  for (int c = 0; c < channels; ++c) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto channel = grpc::CreateCustomChannel(absl::GetFlag(FLAGS_addr),
                                             grpc::InsecureChannelCredentials(), args);
    if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
      return {{"error", "cannot connect"}};
    }
    stubs.push_back(jobwire::v1::BrokerService::NewStub(channel));
  }
  Phase({{"phase", "connected"}, {"channels", channels}}, false);

  // Tags: 2 * i + 2 when stream i has started, 2 * i + 3 when it has ended.
  grpc::CompletionQueue cq;
  absl::Mutex mu;
  int started = 0, start_failed = 0, ended = 0;
  nlohmann::json ended_by_code = nlohmann::json::object();
  struct Stream {
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientAsyncReaderInterface<jobwire::v1::ClaimResponse>> reader;
    grpc::Status status;
  };
  std::vector<std::unique_ptr<Stream>> open;
  std::thread poller([&] {
    void* tag;
    bool ok;
    while (cq.Next(&tag, &ok)) {
      intptr_t t = reinterpret_cast<intptr_t>(tag) - 2;
      absl::MutexLock lock(&mu);
      if (t % 2 == 0) {
        ++(ok ? started : start_failed);
      } else {
        ++ended;
        std::string code = std::to_string(open[t / 2]->status.error_code());
        ended_by_code[code] = ended_by_code.value(code, 0) + 1;
      }
    }
  });
  jobwire::v1::ClaimRequest request;
  request.add_queues(absl::GetFlag(FLAGS_queue));
  request.set_max_in_flight(1);
  request.set_worker_id("bench-idle");
  auto start = Clock::now();
  for (int i = 0; i < streams; ++i) {
    auto stream = std::make_unique<Stream>();
    stream->reader = stubs[i % channels]->PrepareAsyncClaim(&stream->context, request, &cq);
    Stream* raw = stream.get();
    {
      absl::MutexLock lock(&mu);  // the poller reads `open`
      open.push_back(std::move(stream));
    }
    raw->reader->StartCall(reinterpret_cast<void*>(static_cast<intptr_t>(2 * i + 2)));
    raw->reader->Finish(&raw->status, reinterpret_cast<void*>(static_cast<intptr_t>(2 * i + 3)));
  }
  auto all_started = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return started + start_failed == streams;
  };
  nlohmann::json out{{"streams", streams}, {"channels", channels}};
  {
    absl::MutexLock lock(&mu);
    mu.AwaitWithTimeout(absl::Condition(&all_started), absl::Minutes(2));
    out.update({{"started", started}, {"open_seconds", Seconds(Clock::now() - start)}});
  }
  Phase({{"phase", "open"}, {"started", out["started"]}}, true);
  {
    absl::MutexLock lock(&mu);
    out.update({{"start_failed", start_failed}, {"ended_while_open", ended},
                {"ended_while_open_by_code", ended_by_code}});
  }
  for (auto& stream : open) stream->context.TryCancel();
  auto all_ended = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return ended == streams; };
  {
    absl::MutexLock lock(&mu);
    mu.AwaitWithTimeout(absl::Condition(&all_ended), absl::Minutes(1));
  }
  cq.Shutdown();
  poller.join();
  if (out["ended_while_open"] != 0 || out["started"] != streams) {
    out["error"] = "not every stream stayed open";
  }
  return out;
}

// idle_workers: --workers Workers of --concurrency; one job warms them up (and
// registers the queue), then they sit idle.
nlohmann::json IdleWorkers() {
  Sink sink;
  sink.SetTarget(1);
  WorkerPool pool(&sink, false);
  Client client(ClientOptions{absl::GetFlag(FLAGS_addr)});
  bool ok = client.Enqueue(absl::GetFlag(FLAGS_queue), "noop", Payload(0, NowNs())).ok();
  sink.WaitDone(absl::Seconds(30));
  nlohmann::json out{{"workers", absl::GetFlag(FLAGS_workers)},
                     {"concurrency", absl::GetFlag(FLAGS_concurrency)},
                     {"warmup_acked", sink.acked()}};
  if (!ok || sink.acked() != 1) {
    out["error"] = "the warm-up job was not acked";
    return out;
  }
  Phase({{"phase", "idle"}}, true);
  return out;
}

nlohmann::json Run(const std::string& scenario) {
  const int64_t jobs = absl::GetFlag(FLAGS_jobs);
  nlohmann::json out{{"scenario", scenario}};
  if (scenario == "e2e") {
    Sink sink;
    sink.SetTarget(jobs);
    WorkerPool pool(&sink, false);
    absl::SleepFor(absl::Milliseconds(300));  // streams open
    const Clock::time_point start = Clock::now();
    const int64_t failed = Produce(jobs);
    double s = Seconds(sink.WaitDone(absl::Minutes(5)) - start);
    out.update({{"jobs", jobs}, {"failed", failed}, {"acked", sink.acked()}, {"seconds", s},
                {"jobs_per_s", jobs / s}});
  } else if (scenario == "backlog_drain") {
    out.update(BacklogDrain());
  } else if (scenario == "due_burst") {
    out.update(DueBurst());
  } else if (scenario == "idle_streams") {
    out.update(IdleStreams());
  } else if (scenario == "idle_workers") {
    out.update(IdleWorkers());
  } else {
    out["error"] = "unknown scenario";
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // Debian's abseil is built without NDEBUG, so absl::Mutex tracks lock order
  // for deadlock detection on every acquisition; release builds skip that.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  nlohmann::json result = Run(absl::GetFlag(FLAGS_scenario));
  std::cout << result.dump() << std::endl;
  return result.contains("error") || result.value("failed", 0) > 0 ? 1 : 0;
}
