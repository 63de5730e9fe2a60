// Worker and its Impl: the handler threads, the task queue, the drain and
// the abandonment after the grace. The parts it composes live in their own
// files: ClaimStream (the Claim streams and their reconnect), LeaseRenewer
// (the leases), OutcomeSettler (Ack / Fail and their retries).
#include "client/cpp/worker.h"

#include <unistd.h>

#include <algorithm>
#include <deque>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <stop_token>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client/cpp/claim_stream.h"
#include "client/cpp/claimed_job.h"
#include "client/cpp/error_details.h"
#include "client/cpp/handler_errors.h"
#include "client/cpp/lease_renewer.h"
#include "client/cpp/lease_rules.h"
#include "client/cpp/outcome_settler.h"

namespace jobwire::client {
namespace {

// The most job types one Claim takes (ClaimRequest.types).
constexpr size_t kMaxClaimTypes = 64;
// ClaimRequest.weights: each 1..kMaxWeight.
constexpr int kMaxWeight = 1000;

std::string DefaultWorkerId() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return absl::StrCat("cpp-", host, "-", getpid());
}

// OK when options.weights is empty or gives every queue, and only those, a
// weight the broker takes (1..1000).
absl::Status CheckWeights(const WorkerOptions& options) {
  if (options.weights.empty()) return absl::OkStatus();
  for (const std::string& queue : options.queues) {
    auto it = options.weights.find(queue);
    if (it == options.weights.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("weights: no weight for queue \"", queue, "\" (give every queue one, or none)"));
    }
    if (it->second < 1 || it->second > kMaxWeight) {
      return absl::InvalidArgumentError(absl::StrCat("weights: queue \"", queue, "\" has weight ",
                                                     it->second, "; must be 1..", kMaxWeight));
    }
  }
  for (const auto& [queue, weight] : options.weights) {
    if (std::find(options.queues.begin(), options.queues.end(), queue) == options.queues.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("weights: names queue \"", queue, "\", which is not in queues"));
    }
  }
  return absl::OkStatus();
}

// The Claim request of every stream of a worker (max_in_flight set per stream).
v1::ClaimRequest ClaimRequestOf(const WorkerOptions& options, const std::string& worker_id) {
  v1::ClaimRequest request;
  // Bad weights: none sent (Run refuses to start).
  const bool weighted = !options.weights.empty() && CheckWeights(options).ok();
  for (const std::string& queue : options.queues) {
    request.add_queues(queue);
    if (weighted) request.add_weights(options.weights.at(queue));
  }
  request.set_lease_ms(options.lease_ms);
  request.set_worker_id(worker_id);
  return request;
}

}  // namespace

// The worker proper. Run's threads hold a shared_ptr to it, so a handler
// thread detached by ~Worker keeps everything it touches alive.
class Worker::Impl : public std::enable_shared_from_this<Worker::Impl> {
 public:
  explicit Impl(WorkerOptions options)
      : options_(std::move(options)),
        worker_id_(options_.worker_id.empty() ? DefaultWorkerId() : options_.worker_id),
        concurrency_(std::max(1, options_.concurrency)),
        client_(ClientOptions{options_.address, options_.timeout, options_.token, options_.tls,
                              options_.tls_root_ca, options_.tls_client_cert,
                              options_.tls_client_key}),
        leases_(&client_, [this](const std::string& line) { Log(line); }),
        settler_(&client_, &leases_,
                 [this](const v1::AckBatchRequest& batch) { return SendAcks(batch); }),
        stream_(ClaimStream::Params{
            &client_, ClaimRequestOf(options_, worker_id_), [this] { return AwaitFreeSlots(); },
            [this](const v1::ClaimResponse& message) { Receive(message); },
            [this](const std::string& line) { Log(line); }}) {}

  void Register(std::string type, Handler handler) {
    handlers_[std::move(type)] = std::move(handler);
  }
  void Use(Middleware middleware) { middlewares_.push_back(std::move(middleware)); }
  absl::Status Run();
  void Stop();
  // Stops, then joins the threads, detaching those inside an abandoned job.
  void Release();
  const std::string& worker_id() const { return worker_id_; }
  WorkerStats stats() {
    absl::MutexLock lock(&mu_);
    return WorkerStats{expired_dropped_};
  }

 private:
  // A delivered job waiting for, or running on, a handler thread.
  struct Task {
    Job job;
    std::string lease_token;
    std::shared_ptr<RunSignal> signal;  // job's stop signal
    // Set when the handler has run and its Ack is to be sent again: the
    // first try's AckBatch call answered UNAVAILABLE / DEADLINE_EXCEEDED.
    std::optional<OutcomeSettler::AckRetry> retry_ack;
  };

  // For the AckCoalescer: sends `batch` on the Work stream, or as an
  // AckBatch call when none is open or it ended before answering.
  absl::StatusOr<std::vector<absl::Status>> SendAcks(const v1::AckBatchRequest& batch) {
    if (auto answer = stream_.SendAcks(batch)) return *std::move(answer);
    return client_.AckBatch(batch);
  }

  // For the ClaimStream: waits until a handler slot is free; returns how
  // many are, or 0 once stopping.
  int AwaitFreeSlots();
  // Registers the leases of the jobs of a stream message and queues them.
  void Receive(const v1::ClaimResponse& message);
  void ReceiveJobs(const v1::ClaimResponse& message, absl::Time now);
  void HandlerThread(size_t index);
  void Process(Task task);
  // Drops the delivery of `task` if its lease has ended (no handler, no Ack
  // / Fail: the broker delivers the job again); returns whether it did.
  bool DropIfExpired(const Task& task);
  // Runs the handler; returns the result or the failure text in the status.
  absl::StatusOr<std::string> RunHandler(const Task& task);
  // Queues the Ack of a handler's result without waiting for its answer:
  // the job is settled, or its Ack queued for a handler thread to send
  // again, on whichever thread sends the call.
  void Ack(Task task, std::string result);
  // Reports the final outcome and releases the job's slot.
  void Settled(const Task& task, const Outcome& outcome);
  // Runs `report` (user code: on_outcome or log) unless the lease under
  // `token` was abandoned. Run does not return while a report runs.
  void Report(const std::string& token, const std::function<void()>& report);
  // Marks the leases of every unsettled job abandoned and drops the jobs not
  // started yet. Returns how many jobs were abandoned.
  int AbandonAll() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Log(const std::string& line) const;

  static OutcomeSettler::Delivery DeliveryOf(const Task& task) {
    return {task.job.queue, task.job.id, task.lease_token, task.signal};
  }

  const WorkerOptions options_;
  const std::string worker_id_;
  const int concurrency_;
  Client client_;
  // Every delivered job's lease, from receipt until the job is settled.
  LeaseRenewer leases_;
  OutcomeSettler settler_;
  ClaimStream stream_;
  absl::flat_hash_map<std::string, Handler> handlers_;  // wrapped in middlewares_ by Run
  std::vector<Middleware> middlewares_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;  // Run is done: threads may exit
  int running_ ABSL_GUARDED_BY(mu_) = 0;        // delivered, not yet settled
  int reporting_ ABSL_GUARDED_BY(mu_) = 0;      // Report calls in progress
  int64_t expired_dropped_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<Task> tasks_ ABSL_GUARDED_BY(mu_);
  // in_task_[i]: thread i is working on a task (handler, Ack / Fail).
  std::vector<bool> in_task_ ABSL_GUARDED_BY(mu_);

  std::vector<std::thread> threads_;  // handler threads
};

Worker::Worker(WorkerOptions options) : impl_(std::make_shared<Impl>(std::move(options))) {}

Worker::~Worker() { impl_->Release(); }

void Worker::Register(std::string type, Handler handler) {
  impl_->Register(std::move(type), std::move(handler));
}

void Worker::Use(Middleware middleware) { impl_->Use(std::move(middleware)); }

absl::Status Worker::Run() { return impl_->Run(); }

void Worker::Stop() { impl_->Stop(); }

const std::string& Worker::worker_id() const { return impl_->worker_id(); }

WorkerStats Worker::stats() const { return impl_->stats(); }

void Worker::Impl::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  stream_.Stop();
}

void Worker::Impl::Release() {
  Stop();
  std::vector<bool> busy;
  {
    absl::MutexLock lock(&mu_);
    shutdown_ = true;
    busy = in_task_;
  }
  // Threads not inside a task end at once: the task queue is empty after Run.
  for (size_t i = 0; i < threads_.size(); ++i) {
    if (i < busy.size() && busy[i]) {
      threads_[i].detach();
    } else {
      threads_[i].join();
    }
  }
  leases_.Join();
}

void Worker::Impl::Log(const std::string& line) const {
  if (options_.log) {
    options_.log(line);
  } else {
    std::cerr << "jobwire worker " << worker_id_ << ": " << line << "\n";
  }
}

absl::Status Worker::Impl::Run() {
  if (options_.lease_ms < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lease_ms must be 0 (the broker default) or more, got ", options_.lease_ms));
  }
  if (absl::Status weights = CheckWeights(options_); !weights.ok()) return weights;
  // The Claim takes the types this worker has handlers for, and no others.
  std::vector<std::string> types;
  for (const auto& [type, handler] : handlers_) types.push_back(type);
  std::sort(types.begin(), types.end());
  if (types.empty()) {
    return absl::FailedPreconditionError("no handler registered: Register one before Run");
  }
  if (types.size() > kMaxClaimTypes) {
    return absl::InvalidArgumentError(absl::StrCat("handlers for ", types.size(),
                                                   " job types; a Claim takes at most ",
                                                   kMaxClaimTypes));
  }
  // Each handler inside the middlewares, the first added outermost.
  for (auto& [type, handler] : handlers_) {
    for (auto mw = middlewares_.rbegin(); mw != middlewares_.rend(); ++mw) {
      handler = [middleware = *mw, next = std::move(handler)](const Job& job) {
        return middleware(job, next);
      };
    }
  }
  {
    absl::MutexLock lock(&mu_);
    in_task_.assign(concurrency_, false);
  }
  std::shared_ptr<Impl> self = shared_from_this();
  for (int i = 0; i < concurrency_; ++i) {
    threads_.emplace_back([self, i] { self->HandlerThread(i); });
  }
  leases_.Start();

  absl::Status status = stream_.Run(types);

  // Drain: wait up to `grace` for delivered jobs to be settled.
  absl::MutexLock lock(&mu_);
  stopping_ = true;
  auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return running_ == 0; };
  mu_.AwaitWithTimeout(absl::Condition(&drained), options_.grace);
  if (running_ > 0) {
    int abandoned = AbandonAll();
    Log(absl::StrCat("abandoned ", abandoned,
                     " job(s) still unsettled after the grace period; the broker retries "
                     "them when their leases expire"));
    auto quiet = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return reporting_ == 0; };
    mu_.Await(absl::Condition(&quiet));
  }
  shutdown_ = true;
  leases_.Shutdown();
  return status;
}

int Worker::Impl::AbandonAll() {
  int abandoned = 0;
  for (const Task& task : tasks_) {  // delivered, never started
    leases_.Remove(task.lease_token);
    --running_;
    ++abandoned;
  }
  tasks_.clear();
  return abandoned + leases_.AbandonAll();
}

int Worker::Impl::AwaitFreeSlots() {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || running_ < concurrency_;
  };
  mu_.Await(absl::Condition(&ready));
  return stopping_ ? 0 : concurrency_ - running_;
}

void Worker::Impl::Receive(const v1::ClaimResponse& message) {
  const absl::Time now = absl::Now();
  ReceiveJobs(message, now);
  // Runs Cancel asked to stop (after this message's jobs: a stop never
  // comes before its job), outside mu_: it runs the handlers' stop callbacks.
  for (const v1::StopRun& stop : message.stops()) {
    leases_.Stop(stop.lease_token(), StopReason::kCancelled);
  }
}

void Worker::Impl::ReceiveJobs(const v1::ClaimResponse& message, absl::Time now) {
  absl::MutexLock lock(&mu_);
  for (const v1::ClaimedJob& claimed : message.jobs()) {
    auto signal = std::make_shared<RunSignal>();
    Task task{FromClaimed(claimed, signal, &client_, now), claimed.lease_token(), signal,
              std::nullopt};
    ++running_;
    // Kept before the job is queued, so that it is renewed while it waits
    // for a handler thread too.
    leases_.Add(task.lease_token,
                LeaseRenewer::Lease{task.job.queue, task.job.id,
                                    LeaseLength(claimed, options_.lease_ms),
                                    RenewLeaseMs(claimed, options_.lease_ms),
                                    claimed.lease_expires_at_ms(), std::move(signal),
                                    task.job.deadline},
                now);
    tasks_.push_back(std::move(task));
  }
}

void Worker::Impl::HandlerThread(size_t index) {
  while (true) {
    Task task;
    {
      absl::MutexLock lock(&mu_);
      auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return shutdown_ || !tasks_.empty();
      };
      mu_.Await(absl::Condition(&has_work));
      if (tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
      in_task_[index] = true;
    }
    Process(std::move(task));
    absl::MutexLock lock(&mu_);
    in_task_[index] = false;
  }
}

void Worker::Impl::Process(Task task) {
  if (task.retry_ack.has_value()) {
    Settled(task, settler_.RetryAck(DeliveryOf(task), *task.retry_ack));
    return;
  }
  if (DropIfExpired(task)) return;
  absl::StatusOr<std::string> result = RunHandler(task);
  if (leases_.Expiry(task.lease_token) == absl::InfinitePast()) {
    // Abandoned after the grace: left to expire, so that the broker retries it.
    absl::MutexLock lock(&mu_);
    leases_.Remove(task.lease_token);
    --running_;
    return;
  }
  if (result.ok()) {
    Ack(std::move(task), *std::move(result));
  } else {
    Settled(task, settler_.Fail(DeliveryOf(task), result.status()));
  }
}

bool Worker::Impl::DropIfExpired(const Task& task) {
  std::optional<absl::Duration> ago;
  {
    absl::MutexLock lock(&mu_);
    ago = leases_.EndedAgo(task.lease_token, absl::Now());
    if (!ago.has_value()) return false;
    ++expired_dropped_;
  }
  const Job& job = task.job;
  Report(task.lease_token, [&] {
    Log(absl::StrCat("delivery of job ", job.queue, "/", job.id, " (attempt ", job.attempt,
                     ") dropped: its lease ended ", absl::ToInt64Milliseconds(*ago),
                     " ms ago, before its handler could start"));
    if (options_.on_outcome) options_.on_outcome(job, Outcome{"expired_dropped", ""});
  });
  absl::MutexLock lock(&mu_);
  leases_.Remove(task.lease_token);
  --running_;
  return true;
}

absl::StatusOr<std::string> Worker::Impl::RunHandler(const Task& task) {
  const Job& job = task.job;
  auto it = handlers_.find(job.type);
  if (it == handlers_.end()) {
    // Only a broker older than ClaimRequest.types delivers a type this
    // worker did not claim: failed (retryable) for a worker that knows it.
    std::string text =
        absl::StrCat("no handler for job type \"", job.type, "\" in worker ", worker_id_);
    Report(task.lease_token,
           [&] { Log(absl::StrCat(text, " (job ", job.queue, "/", job.id, ")")); });
    return absl::NotFoundError(text);
  }
  try {
    absl::StatusOr<std::string> result = it->second(job);
    if (result.ok()) return result;
    return HandlerFailure(result.status());
  } catch (const std::exception& e) {
    return ExceptionFailure(e);
  } catch (...) {
    return absl::UnknownError("unknown exception: (not a std::exception)");
  }
}

void Worker::Impl::Ack(Task task, std::string result) {
  // Before `task` moves into the callback.
  const OutcomeSettler::Delivery delivery = DeliveryOf(task);
  settler_.Ack(delivery, std::move(result),
               [this, task = std::move(task)](
                   std::variant<Outcome, OutcomeSettler::AckRetry> answer) mutable {
                 if (const Outcome* outcome = std::get_if<Outcome>(&answer)) {
                   Settled(task, *outcome);
                   return;
                 }
                 // Sent again by a handler thread, so that this one (sending
                 // other acks) never sleeps in a backoff.
                 task.retry_ack = std::get<OutcomeSettler::AckRetry>(std::move(answer));
                 absl::MutexLock lock(&mu_);
                 tasks_.push_back(std::move(task));
               });
}

void Worker::Impl::Settled(const Task& task, const Outcome& outcome) {
  const Job& job = task.job;
  Report(task.lease_token, [&] {
    if (outcome.kind != "ack_ok" && outcome.kind != "fail_ok") {
      Log(absl::StrCat(outcome.kind, " ", outcome.detail, " for job ", job.queue, "/", job.id));
    }
    if (options_.on_outcome) options_.on_outcome(job, outcome);
  });
  absl::MutexLock lock(&mu_);
  leases_.Remove(task.lease_token);
  --running_;
}

void Worker::Impl::Report(const std::string& token, const std::function<void()>& report) {
  {
    absl::MutexLock lock(&mu_);
    if (leases_.Abandoned(token)) return;
    ++reporting_;
  }
  report();
  absl::MutexLock lock(&mu_);
  --reporting_;
}

}  // namespace jobwire::client
