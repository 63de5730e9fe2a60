// libFuzzer target: arbitrary bytes as each request message of the Broker and
// Admin services (the first byte picks the message, fuzz/request_kind.h),
// through the validators and, when a request validates, through the
// lifecycle / admin layers against a real redis-server started once by this
// process. Every kCheckEvery inputs and at exit the stored state must keep
// the invariant of fuzz/state_checker.h; a violation, a crash, a sanitizer
// report or a Redis call that never answers ends the run.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "broker/base/event_loop.h"
#include "broker/core/dispatcher.h"
#include "broker/core/job_lifecycle.h"
#include "broker/core/metrics.h"
#include "broker/core/queue_admin.h"
#include "broker/service/admin_validator.h"
#include "broker/service/request_validator.h"
#include "broker/store/admin_store.h"
#include "broker/store/job_store.h"
#include "broker/store/redis_client.h"
#include "broker/store/script_runner.h"
#include "fuzz/request_kind.h"
#include "fuzz/state_checker.h"
#include "jobwire/v1/admin.pb.h"
#include "jobwire/v1/broker.pb.h"
#include "tests/test_harness.h"

namespace jobwire::fuzz {
namespace {

constexpr char kPrefix[] = "jw";
constexpr int kCheckEvery = 500;  // inputs between invariant checks
constexpr int kFlushEvery = 5000;  // inputs between FLUSHALLs (keeps checks fast)

// The layers below the gRPC handlers, wired as BrokerServer wires them (no
// reaper or stats loop: the fuzzer reaps itself).
struct Stack {
  testing::RedisServer redis;
  base::EventLoop loop;
  std::unique_ptr<store::RedisClient> commands;
  std::unique_ptr<store::RedisClient> subscriber;
  std::unique_ptr<store::ScriptRunner> scripts;
  std::unique_ptr<store::JobStore> store;
  std::unique_ptr<store::AdminStore> admin_store;
  core::Metrics metrics;
  std::unique_ptr<core::Dispatcher> dispatcher;
  std::unique_ptr<core::JobLifecycle> lifecycle;
  std::unique_ptr<core::QueueAdmin> admin;
  // Latest lease token per "queue\njob_id", from this process's claims.
  absl::flat_hash_map<std::string, std::string> tokens;
  int64_t inputs = 0;
  int64_t dispatched = 0;  // inputs that validated and reached Redis
  int64_t checks = 0;
};

Stack* stack = nullptr;

void Die(const std::string& what) {
  std::fprintf(stderr, "request_fuzzer: %s\n", what.c_str());
  std::abort();
}

// Runs an asynchronous call and waits for its callback (a call that never
// answers is a finding).
template <typename T, typename F>
absl::StatusOr<T> Sync(F call) {
  ++stack->dispatched;
  auto promise = std::make_shared<std::promise<absl::StatusOr<T>>>();
  std::future<absl::StatusOr<T>> future = promise->get_future();
  call([promise](absl::StatusOr<T> result) { promise->set_value(std::move(result)); });
  if (future.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    Die("a store call did not answer within 30 s");
  }
  return future.get();
}

// Sync, when only the call's effect matters (errors are expected: most
// fuzz inputs name jobs that do not exist or carry stale tokens).
template <typename T, typename F>
void Run(F call) {
  (void)Sync<T>(std::move(call));
}

void CheckState(const char* when) {
  absl::StatusOr<std::vector<std::string>> violations =
      CheckStoredState(stack->redis, kPrefix);
  if (!violations.ok()) Die(absl::StrCat("state check failed: ", violations.status().ToString()));
  if (violations->empty()) {
    ++stack->checks;
    return;
  }
  for (const std::string& v : *violations) std::fprintf(stderr, "violation: %s\n", v.c_str());
  Die(absl::StrCat(violations->size(), " invariant violation(s) ", when));
}

void AtExit() {
  if (stack == nullptr) return;
  CheckState("at exit");
  std::fprintf(stderr, "request_fuzzer: %lld inputs, %lld reached Redis, %lld state checks passed\n",
               static_cast<long long>(stack->inputs), static_cast<long long>(stack->dispatched),
               static_cast<long long>(stack->checks + 1));
}

void Start() {
  stack = new Stack();  // lives until the process ends
  if (absl::Status s = stack->redis.Start(); !s.ok()) Die(s.ToString());
  store::RedisAddress address{"127.0.0.1", stack->redis.port(), "", 0};
  stack->commands = std::make_unique<store::RedisClient>(&stack->loop, address, "commands");
  stack->subscriber = std::make_unique<store::RedisClient>(&stack->loop, address, "pubsub");
  stack->scripts = std::make_unique<store::ScriptRunner>(stack->commands.get());
  store::StoreOptions options;
  options.key_prefix = kPrefix;
  stack->store = std::make_unique<store::JobStore>(stack->commands.get(), stack->scripts.get(),
                                                   options);
  stack->admin_store = std::make_unique<store::AdminStore>(stack->commands.get(),
                                                           stack->scripts.get(), kPrefix);
  stack->dispatcher = std::make_unique<core::Dispatcher>(&stack->loop, stack->store.get(),
                                                         stack->subscriber.get(), &stack->metrics);
  stack->lifecycle = std::make_unique<core::JobLifecycle>(
      stack->store.get(), stack->dispatcher.get(), &stack->metrics, core::LifecycleDefaults{});
  stack->admin = std::make_unique<core::QueueAdmin>(stack->store.get(), stack->admin_store.get());
  stack->loop.Start();
  stack->commands->Start();
  for (int i = 0; i < 250; ++i) {
    auto pong = Sync<store::RedisReply>(
        [](auto cb) { stack->commands->Command({"PING"}, std::move(cb)); });
    if (pong.ok()) {
      std::atexit(AtExit);
      return;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  Die("no connection to the fuzzer's redis-server");
}

std::string TokenKey(const std::string& queue, const std::string& job_id) {
  return absl::StrCat(queue, "\n", job_id);
}

// Replaces a "*" lease token by the latest token of that job.
template <typename Request>
void ResolveToken(Request& r) {
  if (r.lease_token() != kLatestToken) return;
  auto it = stack->tokens.find(TokenKey(r.queue(), r.job_id()));
  if (it != stack->tokens.end()) r.set_lease_token(it->second);
}

template <typename Message>
bool Parse(const uint8_t* data, size_t size, Message* m) {
  return m->ParseFromArray(data, static_cast<int>(size));
}

const service::Limits kLimits;

void RunBroker(RequestKind kind, const uint8_t* data, size_t size) {
  core::JobLifecycle& life = *stack->lifecycle;
  switch (kind) {
    case RequestKind::kEnqueue: {
      v1::EnqueueRequest r;
      if (!Parse(data, size, &r) || !service::ValidateEnqueue(r, kLimits).ok()) return;
      Run<std::vector<store::EnqueueOutcome>>(
          [&](auto cb) { life.Enqueue(r.queue(), {r}, std::move(cb)); });
      return;
    }
    case RequestKind::kEnqueueBatch: {
      v1::EnqueueBatchRequest r;
      if (!Parse(data, size, &r) || !service::ValidateEnqueueBatch(r).ok()) return;
      // As BrokerService: the valid jobs, one call per queue.
      std::map<std::string, std::vector<v1::EnqueueRequest>> by_queue;
      for (const v1::EnqueueRequest& job : r.jobs()) {
        if (service::ValidateEnqueue(job, kLimits).ok()) by_queue[job.queue()].push_back(job);
      }
      for (auto& entry : by_queue) {
        Run<std::vector<store::EnqueueOutcome>>(
            [&](auto cb) { life.Enqueue(entry.first, std::move(entry.second), std::move(cb)); });
      }
      return;
    }
    case RequestKind::kClaim: {
      v1::ClaimRequest r;
      if (!Parse(data, size, &r) || !service::ValidateClaim(r).ok()) return;
      int free = r.max_in_flight() == 0 ? 1 : r.max_in_flight();
      int64_t lease_ms = r.lease_ms() == 0 ? life.defaults().lease_ms : r.lease_ms();
      for (const std::string& queue : r.queues()) {
        if (free <= 0) break;
        auto out = Sync<store::ClaimOutcome>([&](auto cb) {
          stack->store->Claim(queue, free, lease_ms, r.worker_id(), std::move(cb));
        });
        if (!out.ok()) continue;
        for (const v1::ClaimedJob& job : out->jobs) {
          stack->tokens[TokenKey(queue, job.job().id())] = job.lease_token();
        }
        free -= static_cast<int>(out->jobs.size());
      }
      return;
    }
    case RequestKind::kAck: {
      v1::AckRequest r;
      if (!Parse(data, size, &r) || !service::ValidateAck(r, kLimits).ok()) return;
      ResolveToken(r);
      Run<std::vector<absl::Status>>([&](auto cb) { life.Ack(r.queue(), {&r}, std::move(cb)); });
      return;
    }
    case RequestKind::kFail: {
      v1::FailRequest r;
      if (!Parse(data, size, &r) || !service::ValidateFail(r).ok()) return;
      ResolveToken(r);
      Run<store::FailOutcome>([&](auto cb) { life.Fail(r, std::move(cb)); });
      return;
    }
    case RequestKind::kExtendLease: {
      v1::ExtendLeaseRequest r;
      if (!Parse(data, size, &r) || !service::ValidateExtendLease(r).ok()) return;
      ResolveToken(r);
      Run<int64_t>([&](auto cb) { life.ExtendLease(r, std::move(cb)); });
      return;
    }
    case RequestKind::kGetJob: {
      v1::GetJobRequest r;
      if (!Parse(data, size, &r) || !service::ValidateGetJob(r).ok()) return;
      Run<v1::Job>([&](auto cb) { life.GetJob(r, std::move(cb)); });
      return;
    }
    case RequestKind::kCancel: {
      v1::CancelRequest r;
      if (!Parse(data, size, &r) || !service::ValidateCancel(r).ok()) return;
      Run<bool>([&](auto cb) { life.Cancel(r, std::move(cb)); });
      return;
    }
    default:
      return;
  }
}

// Mirrors broker/service/admin_service.cc: validation, then QueueAdmin.
void RunAdmin(RequestKind kind, const uint8_t* data, size_t size) {
  const core::QueueAdmin& admin = *stack->admin;
  switch (kind) {
    case RequestKind::kListQueues: {
      v1::ListQueuesRequest r;
      if (!Parse(data, size, &r)) return;
      Run<std::vector<v1::QueueStats>>([&](auto cb) { admin.ListQueues(std::move(cb)); });
      return;
    }
    case RequestKind::kGetQueueStats: {
      v1::GetQueueStatsRequest r;
      if (!Parse(data, size, &r) || !service::ValidateQueueRequest(r.queue()).ok()) return;
      Run<v1::QueueStats>([&](auto cb) { admin.Stats(r.queue(), std::move(cb)); });
      return;
    }
    case RequestKind::kListJobs: {
      v1::ListJobsRequest r;
      if (!Parse(data, size, &r) || !service::ValidateListJobs(r).ok()) return;
      store::JobPageRequest page;
      page.state = r.state();
      page.offset = *service::ParsePageToken(r.page_token());
      page.page_size = r.page_size() == 0 ? service::kDefaultPageSize : r.page_size();
      page.newest_first = !r.oldest_first();
      page.type = r.type();
      page.scan_limit = page.type.empty() ? page.page_size : std::min(10 * page.page_size, 10000);
      Run<store::JobPage>([&](auto cb) { admin.ListJobs(r.queue(), page, std::move(cb)); });
      return;
    }
    case RequestKind::kRetryDead: {
      v1::RetryDeadRequest r;
      if (!Parse(data, size, &r) || !service::ValidateRetryDead(r).ok()) return;
      std::vector<std::string> ids(r.job_ids().begin(), r.job_ids().end());
      Run<int64_t>(
          [&](auto cb) { admin.RetryDead(r.queue(), ids, r.all(), r.type(), std::move(cb)); });
      return;
    }
    case RequestKind::kDeleteJob: {
      v1::DeleteJobRequest r;
      if (!Parse(data, size, &r) || !service::ValidateDeleteJob(r).ok()) return;
      Run<bool>([&](auto cb) { admin.DeleteJob(r.queue(), r.job_id(), std::move(cb)); });
      return;
    }
    case RequestKind::kPurgeDead: {
      v1::PurgeDeadRequest r;
      if (!Parse(data, size, &r) || !service::ValidatePurgeDead(r).ok()) return;
      Run<int64_t>(
          [&](auto cb) { admin.PurgeDead(r.queue(), r.older_than_ms(), std::move(cb)); });
      return;
    }
    case RequestKind::kPauseQueue:
    case RequestKind::kResumeQueue: {
      v1::PauseQueueRequest r;  // same shape as ResumeQueueRequest
      if (!Parse(data, size, &r) || !service::ValidateQueueRequest(r.queue()).ok()) return;
      bool pause = kind == RequestKind::kPauseQueue;
      Run<bool>([&](auto cb) { admin.SetPaused(r.queue(), pause, std::move(cb)); });
      return;
    }
    default:
      return;
  }
}

// Takes expired leases back on every queue seen, as the LeaseReaper does.
void Reap() {
  auto queues = Sync<std::vector<std::string>>(
      [](auto cb) { stack->store->ListQueues(std::move(cb)); });
  if (!queues.ok()) return;
  for (const std::string& queue : *queues) {
    Run<store::ReapOutcome>([&](auto cb) { stack->store->Reap(queue, 1000, std::move(cb)); });
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
  auto kind = static_cast<RequestKind>(data[0] % kRequestKinds);
  if (kind <= RequestKind::kCancel) {
    RunBroker(kind, data + 1, size - 1);
  } else {
    RunAdmin(kind, data + 1, size - 1);
  }
  if (++stack->inputs % kCheckEvery == 0) {
    Reap();
    CheckState(absl::StrCat("after input ", stack->inputs).c_str());
  }
  if (stack->inputs % kFlushEvery == 0) {
    stack->tokens.clear();
    (void)stack->redis.Command("FLUSHALL");
    stack->lifecycle->OnRedisReconnected();  // register queues again
  }
  return 0;
}
