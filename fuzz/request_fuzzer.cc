// libFuzzer target: arbitrary bytes as each request message of the Broker and
// Admin services (the first byte picks the message, fuzz/request_kind.h),
// through the validators and, when a request validates, through the
// lifecycle / admin layers against a real redis-server started once by this
// process. Every answer is judged by the oracle of fuzz/job_model.h (a
// shadow model of every job the fuzzer created), and the jobs an input
// touched are read back from Redis and compared with the model. Every
// kCheckEvery inputs and at exit the stored state must also keep the
// invariant of fuzz/state_checker.h. A finding, a crash, a sanitizer report
// or a Redis call that never answers ends the run.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "broker/base/event_loop.h"
#include "broker/core/dependency_links.h"
#include "broker/core/dispatcher.h"
#include "broker/core/job_lifecycle.h"
#include "broker/core/metrics.h"
#include "broker/core/queue_admin.h"
#include "broker/service/admin_validator.h"
#include "broker/service/request_validator.h"
#include "broker/store/admin_store.h"
#include "broker/store/dependency_store.h"
#include "broker/store/job_store.h"
#include "broker/store/keys.h"
#include "broker/store/redis_client.h"
#include "broker/store/script_runner.h"
#include "fuzz/job_model.h"
#include "fuzz/job_view.h"
#include "fuzz/request_kind.h"
#include "fuzz/state_checker.h"
#include "jobwire/v1/admin.pb.h"
#include "jobwire/v1/broker.pb.h"
#include "tests/test_harness.h"

namespace jobwire::fuzz {
namespace {

constexpr char kPrefix[] = "jw";
constexpr int kCheckEvery = 500;  // inputs between invariant checks and reaper passes
constexpr int kFlushEvery = 5000;  // inputs between FLUSHALLs (keeps checks fast)
constexpr int kReapBatch = 1000;

// The layers below the gRPC handlers, wired as BrokerServer wires them (no
// reaper or stats loop: the fuzzer reaps itself, so that no lease expires
// behind the model's back).
struct Stack {
  testing::RedisServer redis;
  base::EventLoop loop;
  std::unique_ptr<store::RedisClient> commands;
  std::unique_ptr<store::RedisClient> subscriber;
  std::unique_ptr<store::ScriptRunner> scripts;
  std::unique_ptr<store::JobStore> store;
  std::unique_ptr<store::AdminStore> admin_store;
  std::unique_ptr<store::DependencyStore> dependency_store;
  std::unique_ptr<core::DependencyLinks> dependency_links;
  core::Metrics metrics;
  std::unique_ptr<core::QueuePartitions> partitions;
  std::unique_ptr<core::Dispatcher> dispatcher;
  std::unique_ptr<core::JobLifecycle> lifecycle;
  std::unique_ptr<core::QueueAdmin> admin;
  std::unique_ptr<JobModel> model;
  // The inputs since the last FLUSHALL: a finding's reproducer.
  std::vector<std::string> since_flush;
  int64_t inputs = 0;
  int64_t dispatched = 0;  // inputs that validated and reached Redis
  int64_t checks = 0;
};

Stack* stack = nullptr;

void Die(const std::string& what) {
  std::fprintf(stderr, "request_fuzzer: %s\n", what.c_str());
  std::abort();
}

// Writes the inputs since the last FLUSHALL, in order, to a new directory:
// replaying them (`jobwire_request_fuzzer <dir>/*`) rebuilds the state the
// finding was made in (time-dependent steps, leases and retries, may differ).
std::string WriteReproducer() {
  const char* base = std::getenv("JOBWIRE_FUZZ_FINDINGS_DIR");
  std::string dir = absl::StrCat(base != nullptr ? base : ".", "/finding-", getpid());
  if (std::system(absl::StrCat("mkdir -p '", dir, "'").c_str()) != 0) return "(not written)";
  for (size_t i = 0; i < stack->since_flush.size(); ++i) {
    std::ofstream(absl::StrFormat("%s/%06d", dir, i), std::ios::binary) << stack->since_flush[i];
  }
  return dir;
}

// Aborts when the oracle has a finding; `what` names the step.
void DieOnFinding(const std::string& what) {
  const std::optional<Finding>& f = stack->model->finding();
  std::string dir = WriteReproducer();
  Die(absl::StrCat("oracle finding: rule ", f->rule, ", ", what, ", job ", f->job, ": ",
                   f->detail, "\nreproducer (", stack->since_flush.size(),
                   " inputs since the last FLUSHALL): ", dir, "/*"));
}

// Runs an asynchronous call and waits for its callback (a call that never
// answers is a finding).
template <typename T, typename F>
absl::StatusOr<T> Sync(F call) {
  auto promise = std::make_shared<std::promise<absl::StatusOr<T>>>();
  std::future<absl::StatusOr<T>> future = promise->get_future();
  call([promise](absl::StatusOr<T> result) { promise->set_value(std::move(result)); });
  if (future.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    Die("a store call did not answer within 30 s");
  }
  return future.get();
}

absl::StatusOr<store::RedisReply> Command(std::vector<std::string> argv) {
  return Sync<store::RedisReply>(
      [&](auto cb) { stack->commands->Command(std::move(argv), std::move(cb)); });
}

// Redis TIME in epoch ms, computed as lua/_lib.lua's now_ms().
int64_t RedisNowMs() {
  auto t = Command({"TIME"});
  if (!t.ok() || t->elements.size() != 2) Die("TIME failed");
  return t->elements[0].AsInt() * 1000 + t->elements[1].AsInt() / 1000;
}

// The clock window of a call whose answer the model judges by time; none
// (zeros) when `needed` is false.
TimeWindow StartWindow(bool needed) { return TimeWindow{needed ? RedisNowMs() : 0, 0}; }
void EndWindow(TimeWindow& w) {
  if (w.from_ms != 0) w.to_ms = RedisNowMs();
}

// Reads back every job the model marks as touched and compares it.
void ReadBack() {
  std::vector<JobRef> refs = stack->model->TakeTouched();
  if (refs.empty()) return stack->model->EndInput();
  ReadJobsArguments read = ReadJobsArgumentsFor(kPrefix, refs);
  auto reply = Sync<store::RedisReply>([&](auto cb) {
    stack->scripts->Eval(stack->scripts->Get(kReadJobsFunction), std::move(read.keys),
                         std::move(read.ids), std::move(cb));
  });
  if (!reply.ok()) Die(absl::StrCat("reading jobs back failed: ", reply.status().ToString()));
  auto views = ParseReadJobsReply(*reply, refs.size());
  if (!views) Die("reading jobs back: unexpected reply");
  for (size_t i = 0; i < refs.size(); ++i) stack->model->OnStored(refs[i], (*views)[i]);
  stack->model->EndInput();
}

void CheckState(const char* when) {
  int64_t job_hashes = 0;
  absl::StatusOr<std::vector<std::string>> violations =
      CheckStoredState(stack->redis, kPrefix, &job_hashes);
  if (!violations.ok()) Die(absl::StrCat("state check failed: ", violations.status().ToString()));
  if (violations->empty()) {
    ++stack->checks;
    stack->model->OnStoredJobCount(job_hashes);
    if (stack->model->finding()) DieOnFinding(absl::StrCat("state check ", when));
    return;
  }
  for (const std::string& v : *violations) std::fprintf(stderr, "violation: %s\n", v.c_str());
  Die(absl::StrCat(violations->size(), " invariant violation(s) ", when));
}

void AtExit() {
  if (stack == nullptr) return;
  CheckState("at exit");
  std::fprintf(stderr,
               "request_fuzzer: %lld inputs, %lld reached Redis, %lld state checks passed, "
               "%zu jobs in the model\n",
               static_cast<long long>(stack->inputs), static_cast<long long>(stack->dispatched),
               static_cast<long long>(stack->checks), stack->model->jobs());
  std::string counts;
  for (const auto& [what, n] : stack->model->counts()) absl::StrAppend(&counts, " ", what, "=", n, ";");
  std::fprintf(stderr, "request_fuzzer: oracle observed%s\n", counts.c_str());
}

void Start() {
  stack = new Stack();  // lives until the process ends
  if (absl::Status s = stack->redis.Start(); !s.ok()) Die(s.ToString());
  store::RedisAddress address{"127.0.0.1", stack->redis.port(), "", 0};
  stack->commands = std::make_unique<store::RedisClient>(&stack->loop, address, "commands");
  stack->subscriber = std::make_unique<store::RedisClient>(&stack->loop, address, "pubsub");
  stack->scripts = std::make_unique<store::ScriptRunner>(
      stack->commands.get(), /*check_declared_keys=*/false,
      std::vector<store::LuaSource>{ReadJobsFunction()});
  store::StoreOptions options;  // 24 h retention and dedup window: nothing expires in a run
  options.key_prefix = kPrefix;
  stack->store = std::make_unique<store::JobStore>(stack->commands.get(), stack->scripts.get(),
                                                   options);
  stack->admin_store = std::make_unique<store::AdminStore>(stack->commands.get(),
                                                           stack->scripts.get(), kPrefix);
  stack->dependency_store = std::make_unique<store::DependencyStore>(
      stack->commands.get(), stack->scripts.get(), kPrefix);
  stack->dependency_links =
      std::make_unique<core::DependencyLinks>(stack->dependency_store.get());
  stack->partitions = std::make_unique<core::QueuePartitions>(stack->store.get());
  stack->dispatcher = std::make_unique<core::Dispatcher>(
      &stack->loop, stack->store.get(), stack->subscriber.get(), stack->partitions.get(),
      &stack->metrics);
  stack->lifecycle = std::make_unique<core::JobLifecycle>(
      stack->store.get(), stack->partitions.get(), stack->dispatcher.get(),
      stack->dependency_links.get(), &stack->metrics, core::LifecycleDefaults{});
  stack->admin = std::make_unique<core::QueueAdmin>(stack->store.get(), stack->admin_store.get(),
                                                    stack->partitions.get(),
                                                    stack->dependency_links.get());
  stack->model = std::make_unique<JobModel>(options.completed_retention_ms);
  stack->loop.Start();
  stack->commands->Start();
  for (int i = 0; i < 250; ++i) {
    auto pong = Command({"PING"});
    if (pong.ok()) {
      std::atexit(AtExit);
      return;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  Die("no connection to the fuzzer's redis-server");
}

// Replaces a "_" job id by the job claimed (or enqueued) last in that queue.
template <typename Request>
void ResolveJob(Request& r, bool claimed) {
  if (r.job_id() != kLatestJob) return;
  std::string id = stack->model->LatestJob(r.queue(), claimed);
  if (!id.empty()) r.set_job_id(id);
}

// Replaces a "_" job id (see ResolveJob) and a "*" lease token by the
// latest token claimed for that job.
template <typename Request>
void ResolveToken(Request& r) {
  ResolveJob(r, /*claimed=*/true);
  if (r.lease_token() != kLatestToken) return;
  std::string token = stack->model->LatestToken(r.queue(), r.job_id());
  if (!token.empty()) r.set_lease_token(token);
}

template <typename Message>
bool Parse(const uint8_t* data, size_t size, Message* m) {
  return m->ParseFromArray(data, static_cast<int>(size));
}

const service::Limits kLimits;

// A completed retention below this (but not 0) is raised to it before the
// enqueue: the model does not follow the clock, so no completed job may
// expire within a run (the fuzzer flushes Redis every 5000 inputs). 0
// (deleted on Ack) is kept, and modeled exactly.
constexpr int64_t kMinModeledRetentionMs = 3600 * 1000;

// The job as JobLifecycle::Enqueue stores it (the broker defaults applied).
v1::EnqueueRequest WithDefaults(v1::EnqueueRequest job, const core::LifecycleDefaults& d) {
  if (job.has_completed_retention_ms() && job.completed_retention_ms() > 0 &&
      job.completed_retention_ms() < kMinModeledRetentionMs) {
    job.set_completed_retention_ms(kMinModeledRetentionMs);
  }
  // Run timeouts are not modelled (a claim would cap the lease, and late
  // calls would be refused by the Redis clock): the fuzzer's jobs have none.
  job.clear_timeout_ms();
  if (job.max_attempts() == 0) job.set_max_attempts(d.max_attempts);
  if (job.backoff_base_ms() == 0) job.set_backoff_base_ms(d.backoff_base_ms);
  if (job.backoff_max_ms() == 0) job.set_backoff_max_ms(std::max(d.backoff_max_ms, job.backoff_base_ms()));
  return job;
}

void Enqueue(const std::string& queue, std::vector<v1::EnqueueRequest> jobs) {
  core::JobLifecycle& life = *stack->lifecycle;
  for (v1::EnqueueRequest& job : jobs) job = WithDefaults(std::move(job), life.defaults());
  auto out = Sync<std::vector<store::EnqueueOutcome>>(
      [&](auto cb) { life.Enqueue(queue, jobs, std::move(cb)); });
  if (!out.ok()) return stack->model->OnUnexpected(queue, out.status());
  stack->model->OnEnqueue(queue, jobs, *out);
}

// The model does not follow parents (a child waiting for them, their
// results, a failure travelling down): every parent id `job` names is made
// one the store never issues (its ids start with a digit), and a ref to a
// parent elsewhere ("<queue>/<id>") such an id of the job's own queue, so
// that the model judges the refusal (rule enqueue-dependency). Dependencies
// themselves are covered by tests/dependencies_test.cc and
// tests/remote_dependencies_test.cc.
void NoSuchParents(v1::EnqueueRequest& job) {
  for (std::string& id : *job.mutable_depends_on()) {
    std::replace(id.begin(), id.end(), '/', 'x');
    if (!id.empty() && absl::ascii_isdigit(static_cast<unsigned char>(id[0]))) id[0] = 'x';
  }
}

// Returns whether the request validated (and so reached Redis).
bool RunBroker(RequestKind kind, const uint8_t* data, size_t size) {
  core::JobLifecycle& life = *stack->lifecycle;
  JobModel& model = *stack->model;
  switch (kind) {
    case RequestKind::kEnqueue: {
      v1::EnqueueRequest r;
      if (!Parse(data, size, &r)) return false;
      NoSuchParents(r);
      if (!service::ValidateEnqueue(r, kLimits).ok()) return false;
      Enqueue(r.queue(), {r});
      return true;
    }
    case RequestKind::kEnqueueBatch: {
      v1::EnqueueBatchRequest r;
      if (!Parse(data, size, &r) || !service::ValidateEnqueueBatch(r).ok()) return false;
      for (v1::EnqueueRequest& job : *r.mutable_jobs()) NoSuchParents(job);
      // As BrokerService: the valid jobs, one call per queue.
      std::map<std::string, std::vector<v1::EnqueueRequest>> by_queue;
      for (const v1::EnqueueRequest& job : r.jobs()) {
        if (service::ValidateEnqueue(job, kLimits).ok()) by_queue[job.queue()].push_back(job);
      }
      for (auto& entry : by_queue) Enqueue(entry.first, std::move(entry.second));
      return true;
    }
    case RequestKind::kClaim: {
      v1::ClaimRequest r;
      if (!Parse(data, size, &r) || !service::ValidateClaim(r).ok()) return false;
      int free = r.max_in_flight() == 0 ? 1 : r.max_in_flight();
      int64_t lease_ms = r.lease_ms() == 0 ? life.defaults().lease_ms : r.lease_ms();
      const std::vector<std::string> types(r.types().begin(), r.types().end());
      for (const std::string& queue : r.queues()) {
        if (free <= 0) break;
        TimeWindow window = StartWindow(model.Holds(queue, JobModel::State::kPending));
        auto out = Sync<store::ClaimOutcome>([&](auto cb) {
          stack->store->Claim(queue, free, lease_ms, r.worker_id(), store::JobStore::NewClaimId(),
                              types, std::move(cb));
        });
        if (!out.ok()) {
          model.OnUnexpected(queue, out.status());
          break;
        }
        model.OnClaim(queue, free, lease_ms, r.worker_id(), types, window, out->jobs);
        free -= static_cast<int>(out->jobs.size());
      }
      return true;
    }
    case RequestKind::kAck: {
      v1::AckRequest r;
      if (!Parse(data, size, &r) || !service::ValidateAck(r, kLimits).ok()) return false;
      ResolveToken(r);
      auto out = Sync<std::vector<absl::Status>>(
          [&](auto cb) { life.Ack(r.queue(), {&r}, std::move(cb)); });
      if (!out.ok() || out->size() != 1) {
        model.OnUnexpected(r.queue(), out.ok() ? absl::InternalError("not one answer") : out.status());
      } else {
        model.OnAck(r, (*out)[0]);
      }
      return true;
    }
    case RequestKind::kFail: {
      v1::FailRequest r;
      if (!Parse(data, size, &r) || !service::ValidateFail(r).ok()) return false;
      ResolveToken(r);
      TimeWindow window = StartWindow(model.Holds(r.queue(), r.job_id()));
      auto out = Sync<store::FailOutcome>([&](auto cb) { life.Fail(r, std::move(cb)); });
      EndWindow(window);
      model.OnFail(r, window, out);
      return true;
    }
    case RequestKind::kExtendLease: {
      v1::ExtendLeaseRequest r;
      if (!Parse(data, size, &r) || !service::ValidateExtendLease(r).ok()) return false;
      ResolveToken(r);
      int64_t lease_ms = r.lease_ms() == 0 ? life.defaults().lease_ms : r.lease_ms();
      auto out = Sync<int64_t>([&](auto cb) { life.ExtendLease(r, std::move(cb)); });
      model.OnExtendLease(r, lease_ms, out);
      return true;
    }
    case RequestKind::kGetJob: {
      v1::GetJobRequest r;
      if (!Parse(data, size, &r) || !service::ValidateGetJob(r).ok()) return false;
      ResolveJob(r, /*claimed=*/false);
      auto out = Sync<v1::Job>([&](auto cb) { life.GetJob(r, std::move(cb)); });
      model.OnGetJob(r.queue(), r.job_id(), out);
      return true;
    }
    case RequestKind::kCancel: {
      v1::CancelRequest r;
      if (!Parse(data, size, &r) || !service::ValidateCancel(r).ok()) return false;
      ResolveJob(r, /*claimed=*/false);
      auto out = Sync<bool>([&](auto cb) { life.Cancel(r, std::move(cb)); });
      model.OnCancel(r, out.status());
      return true;
    }
    default:
      return false;
  }
}

// Mirrors broker/service/admin_service.cc: validation, then QueueAdmin.
bool RunAdmin(RequestKind kind, const uint8_t* data, size_t size) {
  const core::QueueAdmin& admin = *stack->admin;
  JobModel& model = *stack->model;
  switch (kind) {
    case RequestKind::kListQueues: {
      v1::ListQueuesRequest r;
      if (!Parse(data, size, &r)) return false;
      auto out = Sync<std::vector<v1::QueueStats>>([&](auto cb) { admin.ListQueues(std::move(cb)); });
      if (!out.ok()) return model.OnUnexpected("", out.status()), true;
      model.OnListQueues(*out);
      return true;
    }
    case RequestKind::kGetQueueStats: {
      v1::GetQueueStatsRequest r;
      if (!Parse(data, size, &r) || !service::ValidateQueueRequest(r.queue()).ok()) return false;
      auto out = Sync<v1::QueueStats>([&](auto cb) { admin.Stats(r.queue(), std::move(cb)); });
      if (!out.ok()) return model.OnUnexpected(r.queue(), out.status()), true;
      model.OnStats(*out);
      return true;
    }
    case RequestKind::kListJobs: {
      v1::ListJobsRequest r;
      if (!Parse(data, size, &r) || !service::ValidateListJobs(r).ok()) return false;
      store::JobPageRequest page;
      page.state = r.state();
      const service::PageToken token = *service::ParsePageToken(r.page_token());
      page.partition = token.partition;
      page.offset = token.offset;
      page.page_size = r.page_size() == 0 ? service::kDefaultPageSize : r.page_size();
      page.newest_first = !r.oldest_first();
      page.type = r.type();
      page.scan_limit = page.type.empty() ? page.page_size : std::min(10 * page.page_size, 10000);
      auto out = Sync<store::JobPage>([&](auto cb) { admin.ListJobs(r.queue(), page, std::move(cb)); });
      if (!out.ok()) return model.OnUnexpected(r.queue(), out.status()), true;
      model.OnListJobs(r.queue(), r.state(), r.type(), out->jobs);
      return true;
    }
    case RequestKind::kRetryDead: {
      v1::RetryDeadRequest r;
      if (!Parse(data, size, &r) || !service::ValidateRetryDead(r).ok()) return false;
      std::vector<std::string> ids(r.job_ids().begin(), r.job_ids().end());
      for (std::string& id : ids) {
        if (id == kLatestJob) id = stack->model->LatestJob(r.queue(), /*claimed=*/true);
        if (id.empty()) id = kLatestJob;
      }
      auto out = Sync<int64_t>(
          [&](auto cb) { admin.RetryDead(r.queue(), ids, r.all(), r.type(), std::move(cb)); });
      model.OnRetryDead(r.queue(), ids, r.all(), r.type(), out);
      return true;
    }
    case RequestKind::kDeleteJob: {
      v1::DeleteJobRequest r;
      if (!Parse(data, size, &r) || !service::ValidateDeleteJob(r).ok()) return false;
      ResolveJob(r, /*claimed=*/false);
      auto out = Sync<bool>([&](auto cb) { admin.DeleteJob(r.queue(), r.job_id(), std::move(cb)); });
      model.OnDeleteJob(r.queue(), r.job_id(), out.status());
      return true;
    }
    case RequestKind::kPurgeDead: {
      v1::PurgeDeadRequest r;
      if (!Parse(data, size, &r) || !service::ValidatePurgeDead(r).ok()) return false;
      TimeWindow window = StartWindow(model.Holds(r.queue(), JobModel::State::kDead));
      auto out = Sync<int64_t>(
          [&](auto cb) { admin.PurgeDead(r.queue(), r.older_than_ms(), std::move(cb)); });
      EndWindow(window);
      model.OnPurgeDead(r.queue(), r.older_than_ms(), window, out);
      return true;
    }
    case RequestKind::kPauseQueue:
    case RequestKind::kResumeQueue: {
      v1::PauseQueueRequest r;  // same shape as ResumeQueueRequest
      if (!Parse(data, size, &r) || !service::ValidateQueueRequest(r.queue()).ok()) return false;
      bool pause = kind == RequestKind::kPauseQueue;
      auto out = Sync<bool>([&](auto cb) { admin.SetPaused(r.queue(), pause, std::move(cb)); });
      model.OnSetPaused(r.queue(), pause, out);
      return true;
    }
    default:
      return false;
  }
}

// Takes expired leases back on every queue seen, as the LeaseReaper does,
// and tells the model what each queue's pass reported.
void Reap() {
  auto queues = Sync<std::vector<std::string>>(
      [](auto cb) { stack->store->ListQueues(std::move(cb)); });
  if (!queues.ok()) return stack->model->OnUnexpected("", queues.status());
  for (const std::string& queue : *queues) {
    TimeWindow window = StartWindow(stack->model->Holds(queue, JobModel::State::kActive));
    store::ReapOutcome total;
    for (;;) {
      auto out = Sync<store::ReapOutcome>(
          [&](auto cb) { stack->store->Reap(queue, kReapBatch, std::move(cb)); });
      if (!out.ok()) return stack->model->OnUnexpected(queue, out.status());
      total.reaped += out->reaped;
      total.dead += out->dead;
      if (out->reaped < kReapBatch) break;
    }
    EndWindow(window);
    stack->model->OnReaped(queue, window, total);
    ReadBack();
    if (stack->model->finding()) {
      DieOnFinding(absl::StrCat("reaper pass after input ", stack->inputs));
    }
  }
}

}  // namespace
}  // namespace jobwire::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  jobwire::fuzz::Start();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace jobwire::fuzz;  // NOLINT
  if (size == 0) return 0;
  stack->since_flush.emplace_back(reinterpret_cast<const char*>(data), size);
  auto kind = static_cast<RequestKind>(data[0] % kRequestKinds);
  bool ran = kind <= RequestKind::kCancel ? RunBroker(kind, data + 1, size - 1)
                                          : RunAdmin(kind, data + 1, size - 1);
  ++stack->inputs;
  if (ran) {
    ++stack->dispatched;
    ReadBack();
    if (stack->model->finding()) {
      DieOnFinding(absl::StrCat(RequestKindName(kind), " input ", stack->inputs));
    }
  }
  if (stack->inputs % kCheckEvery == 0) {
    // Check first: the reaper drops stale members of an active set, one of
    // the violations the checker looks for.
    CheckState(absl::StrCat("after input ", stack->inputs).c_str());
    Reap();
  }
  if (stack->inputs % kFlushEvery == 0) {
    stack->model->Clear();
    stack->since_flush.clear();
    (void)stack->redis.Command("FLUSHALL");
  }
  return 0;
}
