// jobwire_side: jobwire's C++ client in the side-by-side benchmark
// (bench/README.md, "Side by side"): one producer process and one worker
// process, the program protocol every system follows
// (bench/side_protocol.md).
//
//   jobwire_side --role worker --addr 127.0.0.1:50051 --jobs 50000 --concurrency 50
//   jobwire_side --role producer --addr 127.0.0.1:50051 --jobs 50000 --chunk 1000
//
// The producer is one thread: EnqueueBatch of --chunk jobs, one call after
// another; with --rate, one Enqueue per job on the async stub, each started
// at its scheduled time whether or not earlier calls have answered. The
// worker is one Worker of --concurrency handlers; a job counts as done when
// its outcome is ack_ok (the broker confirmed the ack).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cpp/client.h"
#include "client/cpp/worker.h"
#include "grpcpp/grpcpp.h"
#include "jobwire/v1/broker.grpc.pb.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, role, "", "producer or worker");
ABSL_FLAG(std::string, addr, "127.0.0.1:50051", "broker host:port");
ABSL_FLAG(std::string, redis_url, "", "unused (the broker has it); every program takes it");
ABSL_FLAG(std::string, queue, "bench", "queue name");
ABSL_FLAG(int64_t, jobs, 50000, "producer: jobs to enqueue; worker: acks to wait for");
ABSL_FLAG(int, chunk, 1000, "producer: jobs per EnqueueBatch");
ABSL_FLAG(int, concurrency, 50, "worker: handlers (max_in_flight)");
ABSL_FLAG(int, concurrency_keys, 0,
          "producer (batches): 0 = jobs without a concurrency key; N > 0 = job i gets the "
          "key k<i mod N>");
ABSL_FLAG(double, rate, 0, "producer: 0 = batches as fast as it can; > 0 = one Enqueue per "
                           "job, open loop at this many per second");

namespace {

using jobwire::client::BatchJob;
using jobwire::client::Client;
using jobwire::client::ClientOptions;
using jobwire::client::Job;
using jobwire::client::Outcome;
using jobwire::client::Worker;
using jobwire::client::WorkerOptions;

double NowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void Emit(const nlohmann::json& line) { std::cout << line.dump() << std::endl; }

// The 64-byte JSON payload of the protocol: {"i":..,"t":..,"p":"x..."}.
std::string Payload(int64_t i, double t_ms) {
  std::string head = absl::StrCat(R"({"i":)", i, R"(,"t":)", absl::StrFormat("%.3f", t_ms),
                                  R"(,"p":")");
  size_t pad = head.size() + 2 < 64 ? 64 - head.size() - 2 : 0;
  return absl::StrCat(head, std::string(pad, 'x'), "\"}");
}

nlohmann::json LatencySummary(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  auto pct = [&ms](double p) {
    return ms.empty() ? 0.0 : ms[std::min(ms.size() - 1, static_cast<size_t>(p * ms.size()))];
  };
  double mean = ms.empty() ? 0 : std::accumulate(ms.begin(), ms.end(), 0.0) / ms.size();
  return {{"n", ms.size()},     {"mean", mean},      {"p50", pct(0.5)},
          {"p90", pct(0.9)},    {"p99", pct(0.99)},  {"max", ms.empty() ? 0 : ms.back()}};
}

int RunWorker() {
  const int64_t jobs = absl::GetFlag(FLAGS_jobs);
  absl::Mutex mu;
  std::vector<double> latencies;
  int64_t done = 0;
  double first_done = 0, last_done = 0;
  latencies.reserve(jobs);

  WorkerOptions options;
  options.address = absl::GetFlag(FLAGS_addr);
  options.queues = {absl::GetFlag(FLAGS_queue)};
  options.concurrency = absl::GetFlag(FLAGS_concurrency);
  options.worker_id = "bench-cpp";
  options.on_outcome = [&](const Job&, const Outcome& outcome) {
    if (outcome.kind != "ack_ok") return;
    double now = NowMs();
    absl::MutexLock lock(&mu);
    if (done++ == 0) first_done = now;
    last_done = now;
  };
  Worker worker(options);
  worker.Register("noop", [&](const Job& job) -> absl::StatusOr<std::string> {
    double now = NowMs();
    nlohmann::json payload = nlohmann::json::parse(job.payload, nullptr, false);
    if (payload.is_object()) {
      absl::MutexLock lock(&mu);
      latencies.push_back(now - payload.value("t", now));
    }
    return std::string();
  });
  std::thread runner([&worker] { worker.Run().IgnoreError(); });
  // The Worker opens its Claim stream at once; a queue-stat round trip on a
  // second channel proves the broker answers before "ready".
  Client probe(ClientOptions{absl::GetFlag(FLAGS_addr)});
  probe.GetJob(absl::GetFlag(FLAGS_queue), "0").IgnoreError();
  absl::SleepFor(absl::Milliseconds(200));
  Emit({{"event", "ready"}});
  {
    absl::MutexLock lock(&mu);
    auto all_done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return done >= jobs; };
    mu.AwaitWithTimeout(absl::Condition(&all_done), absl::Minutes(10));
    Emit({{"event", "done"},
          {"completed", done},
          {"first_done_ms", first_done},
          {"last_done_ms", last_done},
          {"latency_ms", LatencySummary(latencies)}});
  }
  worker.Stop();
  runner.join();
  return 0;
}

// One Enqueue per job on the async stub at `rate` per second; returns the
// number of calls that failed once every call has answered.
int64_t ProduceOpenLoop(double rate, int64_t jobs, double start_ms) {
  struct Call {
    grpc::ClientContext context;
    jobwire::v1::EnqueueRequest request;
    jobwire::v1::EnqueueResponse response;
  };
  struct Tally {
    absl::Mutex mu;
    int64_t answering ABSL_GUARDED_BY(mu) = 0;
    int64_t failed ABSL_GUARDED_BY(mu) = 0;
  };
  auto tally = std::make_shared<Tally>();
  auto stub = jobwire::v1::BrokerService::NewStub(
      grpc::CreateChannel(absl::GetFlag(FLAGS_addr), grpc::InsecureChannelCredentials()));
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < jobs; ++i) {
    const auto offset = std::chrono::nanoseconds(static_cast<int64_t>(i * 1e9 / rate));
    std::this_thread::sleep_until(start + offset);
    auto* call = new Call;
    call->request.set_queue(absl::GetFlag(FLAGS_queue));
    call->request.set_type("noop");
    call->request.set_payload(Payload(i, start_ms + offset.count() / 1e6));
    {
      absl::MutexLock lock(&tally->mu);
      ++tally->answering;
    }
    stub->async()->Enqueue(&call->context, &call->request, &call->response,
                           [tally, call](const grpc::Status& status) {
                             delete call;
                             absl::MutexLock lock(&tally->mu);
                             if (!status.ok()) ++tally->failed;
                             --tally->answering;
                           });
  }
  absl::MutexLock lock(&tally->mu);
  auto answered = [&tally]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(tally->mu) {
    return tally->answering == 0;
  };
  tally->mu.Await(absl::Condition(&answered));
  return tally->failed;
}

int RunProducer() {
  const int64_t jobs = absl::GetFlag(FLAGS_jobs);
  const int chunk = std::max(1, absl::GetFlag(FLAGS_chunk));
  const double rate = absl::GetFlag(FLAGS_rate);
  const std::string queue = absl::GetFlag(FLAGS_queue);
  Client client(ClientOptions{absl::GetFlag(FLAGS_addr)});
  client.GetJob(queue, "0").IgnoreError();  // connects; enqueues nothing
  Emit({{"event", "ready"}});
  std::string go;
  std::getline(std::cin, go);
  const double start_ms = NowMs();
  int64_t failed = 0;
  if (rate > 0) {
    failed = ProduceOpenLoop(rate, jobs, start_ms);
  } else {
    const int keys = absl::GetFlag(FLAGS_concurrency_keys);
    for (int64_t i = 0; i < jobs;) {
      std::vector<BatchJob> batch;
      const double t = NowMs();
      for (; i < jobs && static_cast<int>(batch.size()) < chunk; ++i) {
        batch.push_back(BatchJob{"noop", Payload(i, t), {}});
        if (keys > 0) batch.back().options.concurrency_key = absl::StrCat("k", i % keys);
      }
      auto results = client.EnqueueBatch(queue, batch);
      if (!results.ok()) {
        failed += static_cast<int64_t>(batch.size());
        continue;
      }
      for (const auto& r : *results) failed += r.ok() ? 0 : 1;
    }
  }
  nlohmann::json done{{"event", "done"}, {"enqueued", jobs - failed},
                      {"start_ms", start_ms}, {"end_ms", NowMs()}};
  if (failed > 0) done["failed"] = failed;
  Emit(done);
  return failed > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const std::string role = absl::GetFlag(FLAGS_role);
  std::string settings =
      role == "worker"
          ? absl::StrCat("1 Worker, concurrency ", absl::GetFlag(FLAGS_concurrency),
                         "; completion counted by on_outcome ack_ok")
          : (absl::GetFlag(FLAGS_rate) > 0
                 ? absl::StrCat("one Enqueue per job on the async stub, open loop at ",
                                absl::GetFlag(FLAGS_rate), "/s")
                 : absl::StrCat("EnqueueBatch x", absl::GetFlag(FLAGS_chunk),
                                " from 1 thread, one call at a time"));
  Emit({{"event", "info"}, {"system", "jobwire-cpp"}, {"version", "jobwire C++ client"},
        {"settings", settings}});
  if (role == "worker") return RunWorker();
  if (role == "producer") return RunProducer();
  std::cerr << "--role must be producer or worker\n";
  return 2;
}
