#include "client/cpp/worker.h"

#include <cxxabi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <random>
#include <typeinfo>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace jobwire::client {
namespace {

constexpr char kNonRetryableUrl[] = "type.jobwire.dev/non-retryable";
constexpr absl::Duration kInitialBackoff = absl::Milliseconds(100);
constexpr absl::Duration kMaxBackoff = absl::Seconds(5);

std::string DefaultWorkerId() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return absl::StrCat("cpp-", host, "-", getpid());
}

// "queue/id": queue names cannot hold '/', job ids are unique per queue.
std::string LeaseKey(const Job& job) { return absl::StrCat(job.queue, "/", job.id); }

bool Retryable(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status);
}

// A uniformly random duration in [0, limit] ("full jitter").
absl::Duration Jitter(absl::Duration limit) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<int64_t> dist(0, absl::ToInt64Milliseconds(limit));
  return absl::Milliseconds(dist(rng));
}

std::string Demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 ? std::string(demangled.get()) : std::string(name);
}

Job FromClaimed(const v1::ClaimedJob& claimed) {
  const v1::Job& job = claimed.job();
  return Job{job.id(),       job.queue(),        job.type(),
             job.payload(),  job.attempts(),     job.max_attempts(),
             claimed.lease_expires_at_ms()};
}

}  // namespace

absl::Status NonRetryable(absl::Status status) {
  status.SetPayload(kNonRetryableUrl, absl::Cord("1"));
  return status;
}

bool IsNonRetryable(const absl::Status& status) {
  return status.GetPayload(kNonRetryableUrl).has_value();
}

Worker::Worker(WorkerOptions options)
    : options_(std::move(options)),
      worker_id_(options_.worker_id.empty() ? DefaultWorkerId() : options_.worker_id),
      client_(ClientOptions{options_.address, options_.timeout}) {}

Worker::~Worker() {
  Stop();
  {
    absl::MutexLock lock(&mu_);
    shutdown_ = true;
  }
  for (std::thread& thread : threads_) thread.join();
}

void Worker::Register(std::string type, Handler handler) {
  handlers_[std::move(type)] = std::move(handler);
}

void Worker::Stop() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
  if (stream_context_ != nullptr) stream_context_->TryCancel();
}

void Worker::Log(const std::string& line) {
  if (options_.log) {
    options_.log(line);
  } else {
    std::cerr << "jobwire worker " << worker_id_ << ": " << line << "\n";
  }
}

absl::Status Worker::Run() {
  for (int i = 0; i < std::max(1, options_.concurrency); ++i) {
    threads_.emplace_back([this] { HandlerThread(); });
  }
  threads_.emplace_back([this] { RenewThread(); });

  absl::Status status = StreamLoop();

  // Drain: wait up to `grace` for delivered jobs to be settled.
  absl::MutexLock lock(&mu_);
  auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return running_ == 0; };
  mu_.AwaitWithTimeout(absl::Condition(&drained), options_.grace);
  if (running_ > 0) {
    Log(absl::StrCat(running_, " job(s) still running after the grace period"));
  }
  shutdown_ = true;
  return status;
}

absl::Status Worker::StreamLoop() {
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
    std::unique_ptr<grpc::ClientReader<v1::ClaimedJob>> reader = client_.Claim(&context, request);

    v1::ClaimedJob claimed;
    while (reader->Read(&claimed)) {
      backoff = kInitialBackoff;
      Task task{FromClaimed(claimed), claimed.lease_token()};
      absl::MutexLock lock(&mu_);
      ++running_;
      tasks_.push_back(std::move(task));
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

void Worker::HandlerThread() {
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
    }
    Process(task);
    absl::MutexLock lock(&mu_);
    --running_;
  }
}

void Worker::Process(const Task& task) {
  const std::string key = LeaseKey(task.job);
  const absl::Duration lease = absl::Milliseconds(options_.lease_ms);
  {
    absl::MutexLock lock(&mu_);
    absl::Time now = absl::Now();
    leases_[key] = Lease{&task.job, task.lease_token, now + lease, now + lease / 3};
  }
  absl::StatusOr<std::string> result = RunHandler(task.job);
  Settle(task, result);
  absl::MutexLock lock(&mu_);
  leases_.erase(key);
}

absl::StatusOr<std::string> Worker::RunHandler(const Job& job) {
  auto it = handlers_.find(job.type);
  if (it == handlers_.end()) {
    std::string text =
        absl::StrCat("no handler for job type \"", job.type, "\" in worker ", worker_id_);
    Log(absl::StrCat(text, " (job ", job.queue, "/", job.id, ")"));
    return absl::NotFoundError(text);
  }
  try {
    absl::StatusOr<std::string> result = it->second(job);
    if (result.ok()) return result;
    // "<CODE>: <message>", keeping the non-retryable mark.
    absl::Status failure(result.status().code(),
                         absl::StrCat(absl::StatusCodeToString(result.status().code()), ": ",
                                      result.status().message()));
    return IsNonRetryable(result.status()) ? NonRetryable(failure) : failure;
  } catch (const std::exception& e) {
    return absl::UnknownError(absl::StrCat(Demangle(typeid(e).name()), ": ", e.what()));
  } catch (...) {
    return absl::UnknownError("unknown exception: (not a std::exception)");
  }
}

void Worker::Settle(const Task& task, const absl::StatusOr<std::string>& result) {
  const Job& job = task.job;
  const std::string key = LeaseKey(job);
  Outcome outcome;
  if (result.ok()) {
    absl::Status status = Retry(key, [&] {
      return client_.Ack(job.queue, job.id, task.lease_token, *result);
    });
    outcome = status.ok() ? Outcome{"ack_ok", ""}
                          : Outcome{"ack_error", absl::StatusCodeToString(status.code())};
  } else {
    v1::FailRequest request;
    request.set_queue(job.queue);
    request.set_job_id(job.id);
    request.set_lease_token(task.lease_token);
    // The handler's text is "<CODE>: <message>" already (or the exception's).
    request.set_error(std::string(result.status().message()));
    request.set_non_retryable(IsNonRetryable(result.status()));
    absl::StatusOr<v1::FailResponse> response;
    absl::Status status = Retry(key, [&] {
      response = client_.Fail(request);
      return response.status();
    });
    if (status.ok()) {
      outcome = Outcome{"fail_ok", response->outcome() == v1::FailResponse::DEAD
                                       ? "DEAD"
                                       : "RETRY_SCHEDULED"};
    } else {
      outcome = Outcome{"fail_error", absl::StatusCodeToString(status.code())};
    }
  }
  if (outcome.kind == "ack_error" || outcome.kind == "fail_error") {
    Log(absl::StrCat(outcome.kind, " ", outcome.detail, " for job ", key));
  }
  if (options_.on_outcome) options_.on_outcome(job, outcome);
}

absl::Status Worker::Retry(const std::string& lease_key,
                           const std::function<absl::Status()>& call) {
  absl::Duration backoff = kInitialBackoff;
  while (true) {
    absl::Status status = call();
    if (!Retryable(status)) return status;
    absl::Time expires = absl::InfinitePast();
    {
      absl::MutexLock lock(&mu_);
      auto it = leases_.find(lease_key);
      if (it != leases_.end()) expires = it->second.expires;
    }
    if (absl::Now() + backoff >= expires) return status;
    absl::SleepFor(Jitter(backoff));
    backoff = std::min(backoff * 2, absl::Seconds(2));
  }
}

void Worker::RenewThread() {
  const absl::Duration lease = absl::Milliseconds(options_.lease_ms);
  while (true) {
    struct Due {
      std::string key;
      std::string queue;
      std::string id;
      std::string token;
    };
    std::vector<Due> due;
    {
      absl::MutexLock lock(&mu_);
      auto finished = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return shutdown_ && leases_.empty();
      };
      absl::Time wake = absl::Now() + absl::Milliseconds(200);
      for (const auto& [key, entry] : leases_) {
        if (!entry.lost) wake = std::min(wake, entry.next_renew);
      }
      mu_.AwaitWithDeadline(absl::Condition(&finished), wake);
      if (shutdown_ && leases_.empty()) return;
      absl::Time now = absl::Now();
      for (auto& [key, entry] : leases_) {
        if (entry.lost || entry.next_renew > now) continue;
        due.push_back(Due{key, entry.job->queue, entry.job->id, entry.lease_token});
      }
    }
    for (const Due& d : due) {
      absl::Time sent = absl::Now();
      absl::StatusOr<int64_t> renewed = client_.ExtendLease(d.queue, d.id, d.token,
                                                            options_.lease_ms);
      absl::MutexLock lock(&mu_);
      auto it = leases_.find(d.key);
      if (it == leases_.end() || it->second.lease_token != d.token) continue;
      if (renewed.ok()) {
        it->second.expires = sent + lease;
        it->second.next_renew = sent + lease / 3;
      } else if (absl::IsFailedPrecondition(renewed.status()) ||
                 absl::IsNotFound(renewed.status())) {
        it->second.lost = true;
        Log(absl::StrCat("lease of job ", d.key, " lost: ", renewed.status().message()));
      } else {
        // Transient: try again soon, while the lease may still be alive.
        it->second.next_renew = absl::Now() + std::min(lease / 6, absl::Seconds(1));
      }
    }
  }
}

}  // namespace jobwire::client
