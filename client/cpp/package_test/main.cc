// A producer and a worker in one program: enqueues a "multiply" job, runs a
// Worker until that job is settled, then reads the job back from the broker.
//   consumer [host:port]    (default: $JOBWIRE_ADDR, else localhost:50051)
// Prints the stored job and exits 0 when it completed with the result "42".
#include <chrono>
#include <future>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "jobwire/client.h"
#include "jobwire/worker.h"
#include "nlohmann/json.hpp"

using jobwire::client::Client;
using jobwire::client::Job;
using jobwire::client::Outcome;
using jobwire::client::Worker;

int main(int argc, char** argv) {
  const std::string address = argc > 1 ? argv[1] : "";

  // Producer: one job whose payload is JSON.
  Client client({.address = address});
  absl::StatusOr<jobwire::client::Enqueued> enqueued = client.EnqueueJson(
      "package-test", "multiply", {{"a", 6}, {"b", 7}}, {.max_attempts = 3});
  if (!enqueued.ok()) {
    std::cerr << "enqueue failed: " << enqueued.status() << "\n";
    return 1;
  }
  const std::string job_id = enqueued->job_id;
  std::cout << "enqueued " << job_id << "\n";

  // Worker: runs the handler, then reports the job's outcome once its Ack (or
  // Fail) has been answered.
  std::promise<Outcome> settled;
  std::once_flag settled_once;
  Worker worker({.address = address,
                 .queues = {"package-test"},
                 .concurrency = 2,
                 .on_outcome = [&](const Job& job, const Outcome& outcome) {
                   if (job.id != job_id) return;
                   std::call_once(settled_once, [&] { settled.set_value(outcome); });
                 }});
  worker.Register("multiply", [](const Job& job) -> absl::StatusOr<std::string> {
    nlohmann::json args = job.Json();  // throws on a payload that is not JSON
    if (!args["a"].is_number_integer() || !args["b"].is_number_integer()) {
      // Retrying would not help: straight to DEAD.
      return jobwire::client::NonRetryable(absl::InvalidArgumentError("a and b must be integers"));
    }
    return std::to_string(args["a"].get<int>() * args["b"].get<int>());  // the Ack's result
  });

  absl::Status run_status;
  std::thread runner([&] { run_status = worker.Run(); });  // blocks until Stop
  std::future<Outcome> outcome = settled.get_future();
  const bool done = outcome.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  worker.Stop();
  runner.join();
  if (!run_status.ok()) {
    std::cerr << "worker failed: " << run_status << "\n";
    return 1;
  }
  if (!done) {
    std::cerr << "job " << job_id << " not settled within 30 s\n";
    return 1;
  }
  Outcome result = outcome.get();
  std::cout << "outcome " << result.kind << "\n";

  // The job as the broker stored it.
  absl::StatusOr<jobwire::v1::Job> job = client.GetJob("package-test", job_id);
  if (!job.ok()) {
    std::cerr << "get job failed: " << job.status() << "\n";
    return 1;
  }
  std::cout << "job " << job->id() << " " << jobwire::v1::JobState_Name(job->state())
            << " result " << job->result() << "\n";
  return result.kind == "ack_ok" && job->state() == jobwire::v1::JOB_STATE_COMPLETED &&
                 job->result() == "42"
             ? 0
             : 1;
}
