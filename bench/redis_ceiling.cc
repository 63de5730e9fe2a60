// redis_ceiling: the benchmark's ceiling. The same job lifecycle as the
// broker's (enqueue.lua, claim.lua, ack.lua) run directly against Redis with
// the broker's own store layer: hiredis async, pipelined, no gRPC and no
// broker in between. What Redis itself allows on this machine; jobwire's
// end-to-end throughput is reported as a fraction of it.
//
//   redis_ceiling --redis_url=redis://127.0.0.1:6379 --jobs=20000
//
// Phase 1 enqueues --jobs jobs, --enqueue_batch per enqueue.lua call, with up
// to --pipeline calls in flight; phase 2 claims them --claim_batch at a time
// (--pipeline claims in flight) and acks each claimed batch with one ack.lua
// call. Prints one JSON object: the time of each phase and jobs/s over both.
#include <algorithm>
#include <memory>
#include <chrono>
#include <cstdint>
#include <utility>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "broker/base/event_loop.h"
#include "broker/store/job_store.h"
#include "broker/store/redis_client.h"
#include "broker/store/script_runner.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, redis_url, "redis://127.0.0.1:6379", "Redis to drive");
ABSL_FLAG(std::string, queue, "ceiling", "queue name");
ABSL_FLAG(int, jobs, 20000, "jobs per run");
ABSL_FLAG(int, pipeline, 256, "calls in flight");
ABSL_FLAG(int, claim_batch, 64, "jobs per claim.lua call");
ABSL_FLAG(int, enqueue_batch, 100, "jobs per enqueue.lua call (the e2e producers' EnqueueBatch)");

namespace {

using Clock = std::chrono::steady_clock;
using jobwire::store::AckOutcome;
using jobwire::store::ClaimOutcome;
using jobwire::store::EnqueueOutcome;
using jobwire::store::JobStore;

// Keeps `window` enqueue.lua calls of up to `batch` jobs in flight until
// `total` jobs are stored. Loop thread.
class EnqueueLoop {
 public:
  EnqueueLoop(const JobStore* store, jobwire::v1::EnqueueRequest request, int batch, int64_t total)
      : store_(store), request_(std::move(request)), batch_(batch), total_(total) {}
  void Run(int window) {
    for (int i = 0; i < window; ++i) Next();
  }
  absl::Notification& finished() { return finished_; }

 private:
  void Next() {
    if (issued_ >= total_) return;
    const int64_t n = std::min<int64_t>(batch_, total_ - issued_);
    issued_ += n;
    std::vector<jobwire::v1::EnqueueRequest> jobs(n, request_);
    store_->Enqueue(request_.queue(), jobs,
                    [this, n](absl::StatusOr<std::vector<EnqueueOutcome>> out) {
                      if (!out.ok()) std::cerr << "enqueue: " << out.status() << "\n";
                      done_ += n;
                      if (done_ == total_) finished_.Notify();
                      Next();
                    });
  }

  const JobStore* const store_;
  const jobwire::v1::EnqueueRequest request_;
  const int batch_;
  const int64_t total_;
  int64_t issued_ = 0;
  int64_t done_ = 0;
  absl::Notification finished_;
};

// `claimers` loops, each: claim up to `batch` jobs, ack them all, repeat,
// until `total` jobs are acked. Loop thread.
class DrainLoop {
 public:
  DrainLoop(const JobStore* store, std::string queue, int batch, int64_t total)
      : store_(store), queue_(std::move(queue)), batch_(batch), total_(total) {}
  void Run(int claimers) {
    for (int i = 0; i < claimers; ++i) Claim();
  }
  absl::Notification& finished() { return finished_; }
  int64_t errors() const { return errors_; }

 private:
  void Claim() {
    if (acked_ >= total_) return;
    store_->Claim(queue_, batch_, 30000, "ceiling", JobStore::NewClaimId(), {}, [this](absl::StatusOr<ClaimOutcome> out) {
      if (!out.ok() || out->jobs.empty()) return Claim();  // the rest are being acked
      // One ack.lua call for the whole claimed batch, as a Worker's AckBatch.
      std::vector<jobwire::v1::AckRequest> acks(out->jobs.size());
      std::vector<const jobwire::v1::AckRequest*> refs;
      for (size_t i = 0; i < acks.size(); ++i) {
        acks[i].set_queue(queue_);
        acks[i].set_job_id(out->jobs[i].job().id());
        acks[i].set_lease_token(out->jobs[i].lease_token());
        refs.push_back(&acks[i]);
      }
      store_->Ack(queue_, refs, [this](absl::StatusOr<std::vector<AckOutcome>> acked) {
        if (!acked.ok()) {
          ++errors_;
        } else {
          for (const AckOutcome& ack : *acked) {
            if (!ack.status.ok()) ++errors_;
            if (++acked_ == total_) finished_.Notify();
          }
        }
        Claim();
      });
    });
  }

  const JobStore* const store_;
  const std::string queue_;
  const int batch_;
  const int64_t total_;
  int64_t acked_ = 0;
  int64_t errors_ = 0;
  absl::Notification finished_;
};

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  auto address = jobwire::store::ParseRedisUrl(absl::GetFlag(FLAGS_redis_url));
  if (!address.ok()) {
    std::cerr << address.status() << "\n";
    return 2;
  }
  const std::string queue = absl::GetFlag(FLAGS_queue);
  const int64_t jobs = absl::GetFlag(FLAGS_jobs);
  const int window = absl::GetFlag(FLAGS_pipeline);
  const int batch = absl::GetFlag(FLAGS_claim_batch);

  jobwire::base::EventLoop loop;
  jobwire::store::RedisClient client(&loop, *address, "ceiling");
  jobwire::store::ScriptRunner scripts(&client);
  JobStore store(&client, &scripts, jobwire::store::StoreOptions{});
  loop.Start();
  client.Start();
  // Wait for the connection: calls before it fail with UNAVAILABLE.
  for (int i = 0;; ++i) {
    absl::Notification pong;
    bool ok = false;
    client.Command({"PING"}, [&](absl::StatusOr<jobwire::store::RedisReply> reply) {
      ok = reply.ok();
      pong.Notify();
    });
    pong.WaitForNotification();
    if (ok) break;
    if (i == 200) {
      std::cerr << "no connection to Redis\n";
      return 2;
    }
    absl::SleepFor(absl::Milliseconds(25));
  }

  jobwire::v1::EnqueueRequest request;
  request.set_queue(queue);
  request.set_type("noop");
  request.set_payload(R"({"n":12345,"sent_ns":1234567890123,"pad":"jobwire-bench"})");
  request.set_max_attempts(3);
  request.set_backoff_base_ms(1000);
  request.set_backoff_max_ms(3600000);
  EnqueueLoop enqueue(&store, request, absl::GetFlag(FLAGS_enqueue_batch), jobs);
  DrainLoop drain(&store, queue, batch, jobs);

  auto t0 = Clock::now();
  loop.Post([&] { enqueue.Run(window); });
  enqueue.finished().WaitForNotification();
  auto t1 = Clock::now();
  loop.Post([&] { drain.Run(std::max(1, window / batch)); });
  drain.finished().WaitForNotificationWithTimeout(absl::Minutes(5));
  auto t2 = Clock::now();
  loop.Stop();

  double enqueue_s = Seconds(t1 - t0), drain_s = Seconds(t2 - t1);
  nlohmann::json out{{"scenario", "ceiling"},          {"jobs", jobs},
                     {"enqueue_seconds", enqueue_s},   {"drain_seconds", drain_s},
                     {"enqueue_per_s", jobs / enqueue_s}, {"drain_per_s", jobs / drain_s},
                     {"jobs_per_s", jobs / (enqueue_s + drain_s)}, {"failed", drain.errors()}};
  std::cout << out.dump() << std::endl;
  return drain.errors() == 0 ? 0 : 1;
}
