#include "client/cpp/worker.h"

#include <unistd.h>

#include <algorithm>
#include <deque>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "client/cpp/ack_coalescer.h"
#include "client/cpp/handler_errors.h"
#include "client/cpp/lease_renewer.h"
#include "client/cpp/lease_rules.h"

namespace jobwire::client {
namespace {

constexpr absl::Duration kInitialBackoff = absl::Milliseconds(100);
constexpr absl::Duration kMaxBackoff = absl::Seconds(5);
// Ack / Fail retries: backoff from kInitialBackoff doubling to this.
constexpr absl::Duration kMaxRetryBackoff = absl::Seconds(2);

std::string DefaultWorkerId() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return absl::StrCat("cpp-", host, "-", getpid());
}

bool Retryable(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status);
}

// The outcome of an Ack / Fail (`verb`: "ack" or "fail") that ended with the
// error `status`: unknown when it may have been stored, else refused.
Outcome Unsettled(absl::string_view verb, const absl::Status& status) {
  return Outcome{absl::StrCat(verb, Retryable(status) ? "_unknown" : "_error"),
                 absl::StatusCodeToString(status.code())};
}

// A uniformly random duration in [0, limit] ("full jitter").
absl::Duration Jitter(absl::Duration limit) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<int64_t> dist(0, absl::ToInt64Milliseconds(limit));
  return absl::Milliseconds(dist(rng));
}

// The job of `claimed`, whose lost-lease signal is raised through `lost`.
Job FromClaimed(const v1::ClaimedJob& claimed, std::stop_source lost) {
  const v1::Job& from = claimed.job();
  Job job(std::move(lost));
  job.id = from.id();
  job.queue = from.queue();
  job.type = from.type();
  job.payload = from.payload();
  job.attempt = from.attempts();
  job.max_attempts = from.max_attempts();
  job.lease_expires_at_ms = claimed.lease_expires_at_ms();
  job.lease_ms = claimed.lease_ms();
  return job;
}

}  // namespace

// The worker proper. Run's threads hold a shared_ptr to it, so a handler
// thread detached by ~Worker keeps everything it touches alive.
class Worker::Impl : public std::enable_shared_from_this<Worker::Impl> {
 public:
  explicit Impl(WorkerOptions options)
      : options_(std::move(options)),
        worker_id_(options_.worker_id.empty() ? DefaultWorkerId() : options_.worker_id),
        client_(ClientOptions{options_.address, options_.timeout, options_.token, options_.tls,
                              options_.tls_root_ca, options_.tls_client_cert,
                              options_.tls_client_key}) {}

  void Register(std::string type, Handler handler) {
    handlers_[std::move(type)] = std::move(handler);
  }
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
    // Set when the handler has run and its Ack is to be sent again: the
    // first try's AckBatch call answered UNAVAILABLE / DEADLINE_EXCEEDED.
    std::optional<v1::AckRequest> retry_ack;
  };

  // Claim streams, one after another, until Stop. Returns the fatal error.
  absl::Status StreamLoop();
  // Registers the leases of the jobs of a stream message and queues them.
  void Receive(const v1::ClaimResponse& message);
  void HandlerThread(size_t index);
  void Process(Task task);
  // Drops the delivery of `task` if its lease has ended (no handler, no Ack
  // / Fail: the broker delivers the job again); returns whether it did.
  bool DropIfExpired(const Task& task);
  // Runs the handler; returns the result or the failure text in the status.
  absl::StatusOr<std::string> RunHandler(const Task& task);
  // Queues the Ack of a handler's result without waiting for its answer:
  // OnAcked settles the job on whichever thread sends the call.
  void Ack(Task task, std::string result);
  void OnAcked(Task task, const absl::Status& status, v1::AckRequest request);
  // Sends task.retry_ack until it is answered or its lease ends.
  void RetryAck(const Task& task);
  void Fail(const Task& task, const absl::Status& failure);
  // Reports the final outcome and releases the job's slot.
  void Settled(const Task& task, const Outcome& outcome);
  // Repeats `call` while it answers UNAVAILABLE / DEADLINE_EXCEEDED and the
  // lease under `token` lasts and is not abandoned, the last attempts just
  // before and at the lease end (RetryWait). An UNAVAILABLE /
  // DEADLINE_EXCEEDED status returned means the outcome is unknown.
  absl::Status Retry(const std::string& token, const std::function<absl::Status()>& call);
  // Runs `report` (user code: on_outcome or log) unless the lease under
  // `token` was abandoned. Run does not return while a report runs.
  void Report(const std::string& token, const std::function<void()>& report);
  // Marks the leases of every unsettled job abandoned and drops the jobs not
  // started yet. Returns how many jobs were abandoned.
  int AbandonAll() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Log(const std::string& line) const;

  const WorkerOptions options_;
  const std::string worker_id_;
  Client client_;
  // Every Ack goes through it (AckBatch calls); a handler thread whose ack
  // finds a call in flight returns to work without waiting for the answer.
  AckCoalescer acks_{&client_};
  // Every delivered job's lease, from receipt until the job is settled.
  LeaseRenewer leases_{&client_, [this](const std::string& line) { Log(line); }};
  absl::flat_hash_map<std::string, Handler> handlers_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;  // Run is done: threads may exit
  int running_ ABSL_GUARDED_BY(mu_) = 0;        // delivered, not yet settled
  int reporting_ ABSL_GUARDED_BY(mu_) = 0;      // Report calls in progress
  int64_t expired_dropped_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<Task> tasks_ ABSL_GUARDED_BY(mu_);
  grpc::ClientContext* stream_context_ ABSL_GUARDED_BY(mu_) = nullptr;
  // in_task_[i]: thread i is working on a task (handler, Ack / Fail).
  std::vector<bool> in_task_ ABSL_GUARDED_BY(mu_);

  std::vector<std::thread> threads_;  // handler threads
};

Worker::Worker(WorkerOptions options) : impl_(std::make_shared<Impl>(std::move(options))) {}

Worker::~Worker() { impl_->Release(); }

void Worker::Register(std::string type, Handler handler) {
  impl_->Register(std::move(type), std::move(handler));
}

absl::Status Worker::Run() { return impl_->Run(); }

void Worker::Stop() { impl_->Stop(); }

const std::string& Worker::worker_id() const { return impl_->worker_id(); }

WorkerStats Worker::stats() const { return impl_->stats(); }

void Worker::Impl::Stop() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
  if (stream_context_ != nullptr) stream_context_->TryCancel();
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
  const size_t concurrency = std::max(1, options_.concurrency);
  {
    absl::MutexLock lock(&mu_);
    in_task_.assign(concurrency, false);
  }
  std::shared_ptr<Impl> self = shared_from_this();
  for (size_t i = 0; i < concurrency; ++i) {
    threads_.emplace_back([self, i] { self->HandlerThread(i); });
  }
  leases_.Start();

  absl::Status status = StreamLoop();

  // Drain: wait up to `grace` for delivered jobs to be settled.
  absl::MutexLock lock(&mu_);
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

absl::Status Worker::Impl::StreamLoop() {
  const int concurrency = std::max(1, options_.concurrency);
  absl::Duration backoff = kInitialBackoff;
  while (true) {
    int free_slots = 0;
    grpc::ClientContext context;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this, concurrency]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || running_ < concurrency;
      };
      mu_.Await(absl::Condition(&ready));
      if (stopping_) return absl::OkStatus();
      free_slots = concurrency - running_;
      stream_context_ = &context;
    }

    v1::ClaimRequest request;
    for (const std::string& queue : options_.queues) request.add_queues(queue);
    request.set_max_in_flight(free_slots);
    request.set_lease_ms(options_.lease_ms);
    request.set_worker_id(worker_id_);
    std::unique_ptr<grpc::ClientReader<v1::ClaimResponse>> reader =
        client_.Claim(&context, request);

    v1::ClaimResponse message;
    while (reader->Read(&message)) {
      backoff = kInitialBackoff;
      Receive(message);
    }
    absl::Status status = FromGrpc(reader->Finish());

    absl::MutexLock lock(&mu_);
    stream_context_ = nullptr;
    if (stopping_) return absl::OkStatus();
    if (absl::IsInvalidArgument(status)) {
      stopping_ = true;
      return status;
    }
    Log(absl::StrCat("claim stream ended (", status.ToString(), "); reconnecting"));
    auto stopped = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
    mu_.AwaitWithTimeout(absl::Condition(&stopped), Jitter(backoff));
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

void Worker::Impl::Receive(const v1::ClaimResponse& message) {
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  for (const v1::ClaimedJob& claimed : message.jobs()) {
    std::stop_source lost;
    Task task{FromClaimed(claimed, lost), claimed.lease_token(), std::nullopt};
    ++running_;
    // Kept before the job is queued, so that it is renewed while it waits
    // for a handler thread too.
    leases_.Add(task.lease_token,
                LeaseRenewer::Lease{task.job.queue, task.job.id,
                                    LeaseLength(claimed, options_.lease_ms, now),
                                    RenewLeaseMs(claimed, options_.lease_ms),
                                    claimed.lease_expires_at_ms(), std::move(lost)},
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
    RetryAck(task);
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
    Fail(task, result.status());
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
  v1::AckRequest request;
  request.set_queue(task.job.queue);
  request.set_job_id(task.job.id);
  request.set_lease_token(task.lease_token);
  request.set_result(std::move(result));
  acks_.Ack(std::move(request),
            [this, task = std::move(task)](absl::Status status, v1::AckRequest sent) mutable {
              OnAcked(std::move(task), status, std::move(sent));
            });
}

void Worker::Impl::OnAcked(Task task, const absl::Status& status, v1::AckRequest request) {
  if (Retryable(status) && absl::Now() < leases_.Expiry(task.lease_token)) {
    // Retried by a handler thread, so that this one (sending other acks)
    // never sleeps in a backoff.
    task.retry_ack = std::move(request);
    absl::MutexLock lock(&mu_);
    tasks_.push_back(std::move(task));
    return;
  }
  Settled(task, status.ok() ? Outcome{"ack_ok", ""} : Unsettled("ack", status));
}

void Worker::Impl::RetryAck(const Task& task) {
  std::optional<absl::Duration> wait =
      RetryWait(Jitter(kInitialBackoff), leases_.Expiry(task.lease_token) - absl::Now());
  if (wait.has_value()) absl::SleepFor(*wait);
  absl::Status status = Retry(task.lease_token, [&] { return acks_.AckAndWait(*task.retry_ack); });
  Settled(task, status.ok() ? Outcome{"ack_ok", ""} : Unsettled("ack", status));
}

void Worker::Impl::Fail(const Task& task, const absl::Status& failure) {
  const Job& job = task.job;
  v1::FailRequest request;
  request.set_queue(job.queue);
  request.set_job_id(job.id);
  request.set_lease_token(task.lease_token);
  SetFailure(failure, &request);
  absl::StatusOr<v1::FailResponse> response;
  absl::Status status = Retry(task.lease_token, [&] {
    response = client_.Fail(request);
    return response.status();
  });
  if (status.ok()) {
    Settled(task, Outcome{"fail_ok", response->outcome() == v1::FailResponse::OUTCOME_DEAD
                                         ? "DEAD"
                                         : "RETRY_SCHEDULED"});
  } else {
    Settled(task, Unsettled("fail", status));
  }
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

absl::Status Worker::Impl::Retry(const std::string& token,
                                 const std::function<absl::Status()>& call) {
  absl::Duration backoff = kInitialBackoff;
  while (true) {
    absl::Status status = call();
    if (!Retryable(status)) return status;
    // Abandoned or settled: InfinitePast, no attempt left.
    std::optional<absl::Duration> wait =
        RetryWait(Jitter(backoff), leases_.Expiry(token) - absl::Now());
    if (!wait.has_value()) return status;
    absl::SleepFor(*wait);
    backoff = std::min(backoff * 2, kMaxRetryBackoff);
  }
}

}  // namespace jobwire::client
