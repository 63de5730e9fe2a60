#include "broker/core/metrics.h"

#include <algorithm>
#include <utility>

#include "absl/strings/strip.h"
#include "broker/base/build_info.h"
#include "broker/core/process_metrics.h"

namespace jobwire::core {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

// Seconds, from 5 ms to an hour: claim waits and run times both span that.
const prometheus::Histogram::BucketBoundaries& DurationBuckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600};
  return kBuckets;
}

// Seconds, from 100 us to 10 s: RPC latencies (a Claim stream, which
// lasts minutes, lands in +Inf) and Redis round trips.
const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10};
  return kBuckets;
}

// "/jobwire.v1.BrokerService/Enqueue" -> {"jobwire.v1.BrokerService", "Enqueue"}.
std::pair<std::string, std::string> SplitMethod(absl::string_view full_method) {
  absl::string_view path = absl::StripPrefix(full_method, "/");
  size_t slash = path.rfind('/');
  if (slash == absl::string_view::npos) return {"", std::string(path)};
  return {std::string(path.substr(0, slash)), std::string(path.substr(slash + 1))};
}

double Seconds(absl::Duration d) { return absl::ToDoubleSeconds(std::max(d, absl::ZeroDuration())); }

}  // namespace

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      enqueued_(BuildCounter()
                    .Name("jobwire_jobs_enqueued_total")
                    .Help("Jobs stored by Enqueue and EnqueueBatch (duplicates not counted)")
                    .Register(*registry_)),
      claimed_(BuildCounter()
                   .Name("jobwire_jobs_claimed_total")
                   .Help("Jobs delivered on Claim streams of this broker")
                   .Register(*registry_)),
      acked_(BuildCounter()
                 .Name("jobwire_jobs_acked_total")
                 .Help("Successful Acks through this broker")
                 .Register(*registry_)),
      failed_(BuildCounter()
                  .Name("jobwire_jobs_failed_total")
                  .Help("Successful Fails through this broker (retried or dead)")
                  .Register(*registry_)),
      retried_(BuildCounter()
                   .Name("jobwire_jobs_retried_total")
                   .Help("Fails through this broker that scheduled a retry")
                   .Register(*registry_)),
      dead_(BuildCounter()
                .Name("jobwire_jobs_dead_total")
                .Help("Jobs made dead through this broker by Fail or Cancel")
                .Register(*registry_)),
      lease_expired_(BuildCounter()
                         .Name("jobwire_jobs_lease_expired_total")
                         .Help("Expired leases settled by this broker's reaper")
                         .Register(*registry_)),
      claim_wait_(BuildHistogram()
                      .Name("jobwire_job_claim_wait_seconds")
                      .Help("Time from a job becoming due (available_at) to its claim")
                      .Register(*registry_)),
      run_time_(BuildHistogram()
                    .Name("jobwire_job_run_seconds")
                    .Help("Time from claim to Ack, for jobs claimed and acked through this broker")
                    .Register(*registry_)),
      rpcs_(BuildCounter()
                .Name("jobwire_rpc_requests_total")
                .Help("gRPC calls handled, by service, method and status code")
                .Register(*registry_)),
      rpc_duration_(BuildHistogram()
                        .Name("jobwire_rpc_duration_seconds")
                        .Help("gRPC call latency, from its start to its status, by service and "
                              "method (a stream's whole life)")
                        .Register(*registry_)),
      streams_open_(BuildGauge()
                        .Name("jobwire_claim_streams_open")
                        .Help("Claim streams open on this broker")
                        .Register(*registry_)
                        .Add({})),
      queue_streams_open_(BuildGauge()
                              .Name("jobwire_queue_claim_streams")
                              .Help("Claim streams open on this broker that read the queue")
                              .Register(*registry_)),
      redis_up_(BuildGauge()
                    .Name("jobwire_redis_up")
                    .Help("1 while the broker's Redis command connection is up, else 0")
                    .Register(*registry_)
                    .Add({})),
      redis_round_trip_(BuildHistogram()
                            .Name("jobwire_redis_roundtrip_seconds")
                            .Help("Round trip of the broker's periodic PING to Redis")
                            .Register(*registry_)
                            .Add({}, LatencyBuckets())),
      queue_jobs_(BuildGauge()
                      .Name("jobwire_queue_jobs")
                      .Help("Jobs per queue and state (refreshed every few seconds)")
                      .Register(*registry_)),
      oldest_due_age_(BuildGauge()
                          .Name("jobwire_queue_oldest_due_age_seconds")
                          .Help("How long the longest-waiting due job of the queue has been due")
                          .Register(*registry_)) {
  process_ = std::make_shared<ProcessMetrics>();
  BuildGauge()
      .Name("jobwire_build_info")
      .Help("Always 1; the labels say which build of the broker runs")
      .Register(*registry_)
      .Add({{"version", std::string(base::Version())}, {"commit", std::string(base::GitCommit())}})
      .Set(1);
}

void Metrics::JobEnqueued(const std::string& queue) {
  Track(queue); enqueued_.Add({{"queue", queue}}).Increment(); }

void Metrics::JobClaimed(const std::string& queue, absl::Duration wait) {
  Track(queue);
  claimed_.Add({{"queue", queue}}).Increment();
  claim_wait_.Add({{"queue", queue}}, DurationBuckets()).Observe(Seconds(wait));
}

void Metrics::JobAcked(const std::string& queue) {
  Track(queue); acked_.Add({{"queue", queue}}).Increment(); }

void Metrics::JobRunTime(const std::string& queue, absl::Duration run_time) {
  Track(queue);
  run_time_.Add({{"queue", queue}}, DurationBuckets()).Observe(Seconds(run_time));
}

void Metrics::JobFailed(const std::string& queue, bool dead) {
  Track(queue);
  failed_.Add({{"queue", queue}}).Increment();
  (dead ? dead_ : retried_).Add({{"queue", queue}}).Increment();
}

void Metrics::JobCancelled(const std::string& queue) {
  Track(queue); dead_.Add({{"queue", queue}}).Increment(); }

void Metrics::LeasesExpired(const std::string& queue, int64_t count, int64_t dead) {
  Track(queue);
  lease_expired_.Add({{"queue", queue}}).Increment(static_cast<double>(count));
  if (dead > 0) dead_.Add({{"queue", queue}}).Increment(static_cast<double>(dead));
  if (count > dead) retried_.Add({{"queue", queue}}).Increment(static_cast<double>(count - dead));
}

void Metrics::RpcFinished(absl::string_view full_method, absl::string_view code,
                          absl::Duration elapsed) {
  auto [service, method] = SplitMethod(full_method);
  rpc_duration_.Add({{"service", service}, {"method", method}}, LatencyBuckets())
      .Observe(Seconds(elapsed));
  rpcs_.Add({{"service", std::move(service)}, {"method", std::move(method)},
             {"code", std::string(code)}})
      .Increment();
}

void Metrics::ClaimStreamOpened(const std::vector<std::string>& queues) {
  streams_open_.Increment();
  absl::MutexLock lock(&mu_);
  for (const std::string& queue : queues) {
    queue_streams_open_.Add({{"queue", queue}}).Set(static_cast<double>(++queue_streams_[queue]));
  }
}

void Metrics::ClaimStreamClosed(const std::vector<std::string>& queues) {
  streams_open_.Decrement();
  absl::MutexLock lock(&mu_);
  for (const std::string& queue : queues) {
    auto it = queue_streams_.find(queue);
    if (it == queue_streams_.end()) continue;
    prometheus::Gauge& gauge = queue_streams_open_.Add({{"queue", queue}});
    if (--it->second > 0) {
      gauge.Set(static_cast<double>(it->second));
    } else {
      queue_streams_.erase(it);
      queue_streams_open_.Remove(&gauge);
    }
  }
}

void Metrics::SetRedisUp(bool up) { redis_up_.Set(up ? 1 : 0); }

void Metrics::RedisRoundTrip(absl::Duration round_trip) {
  redis_round_trip_.Observe(Seconds(round_trip));
}

namespace {

template <typename T>
void RemoveSeries(prometheus::Family<T>& family, const prometheus::Labels& labels) {
  if (family.Has(labels)) family.Remove(&family.Add(labels));
}

// Add() needs the bucket boundaries of a histogram it would create; Has()
// guarantees it does not create one here.
void RemoveSeries(prometheus::Family<prometheus::Histogram>& family,
                  const prometheus::Labels& labels) {
  if (family.Has(labels)) family.Remove(&family.Add(labels, DurationBuckets()));
}

}  // namespace

void Metrics::Track(const std::string& queue) {
  absl::MutexLock lock(&mu_);
  if (!queues_.contains(queue)) queues_.insert(queue);
}

std::vector<std::string> Metrics::Queues() const {
  absl::MutexLock lock(&mu_);
  return std::vector<std::string>(queues_.begin(), queues_.end());
}

void Metrics::ForgetQueue(const std::string& queue) {
  {
    absl::MutexLock lock(&mu_);
    queues_.erase(queue);
  }
  const prometheus::Labels labels = {{"queue", queue}};
  for (auto* family : {&enqueued_, &claimed_, &acked_, &failed_, &retried_, &dead_,
                       &lease_expired_}) {
    RemoveSeries(*family, labels);
  }
  RemoveSeries(claim_wait_, labels);
  RemoveSeries(run_time_, labels);
  RemoveSeries(oldest_due_age_, labels);
  for (const char* state : {"pending_due", "pending_scheduled", "active", "completed", "dead"}) {
    RemoveSeries(queue_jobs_, {{"queue", queue}, {"state", state}});
  }
}

void Metrics::SetQueueStats(const v1::QueueStats& stats) {
  const std::string& q = stats.queue();
  Track(q);
  for (const auto& [state, count] : {std::pair<const char*, int64_t>{"pending_due", stats.pending_due()},
                                     {"pending_scheduled", stats.pending_scheduled()},
                                     {"active", stats.active()},
                                     {"completed", stats.completed()},
                                     {"dead", stats.dead()}}) {
    queue_jobs_.Add({{"queue", q}, {"state", state}}).Set(static_cast<double>(count));
  }
  oldest_due_age_.Add({{"queue", q}}).Set(static_cast<double>(stats.oldest_due_age_ms()) / 1000.0);
}

}  // namespace jobwire::core
