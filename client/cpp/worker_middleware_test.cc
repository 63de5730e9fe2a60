// Worker::Use against a real broker: the order of middlewares around the
// handler, a middleware changing the result or failing the job, and the
// producer's trace context reaching the handler through the job's headers.
#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "client/cpp/trace_context.h"
#include "client/cpp/worker.h"
#include "client/cpp/worker_test_util.h"
#include "gtest/gtest.h"

namespace jobwire::client {
namespace {

using ::jobwire::testing::kCompleted;
using ::jobwire::testing::kDead;

// Appends to a shared list; thread-safe.
class Trail {
 public:
  void Add(std::string step) {
    absl::MutexLock lock(&mu_);
    steps_.push_back(std::move(step));
  }
  std::vector<std::string> steps() {
    absl::MutexLock lock(&mu_);
    return steps_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> steps_ ABSL_GUARDED_BY(mu_);
};

Middleware Recording(Trail* trail, std::string name) {
  return [trail, name](const Job& job, const Handler& next) {
    trail->Add(name + " before");
    absl::StatusOr<std::string> result = next(job);
    trail->Add(name + " after");
    return result;
  };
}

TEST_F(WorkerTest, TheFirstMiddlewareAddedIsTheOutermost) {
  Trail trail;
  std::string id = MustEnqueue("echo");
  RunningWorker worker(Options(),
                       {{"echo",
                         [&](const Job&) -> absl::StatusOr<std::string> {
                           trail.Add("handler");
                           return std::string("done");
                         }}},
                       {Recording(&trail, "outer"), Recording(&trail, "inner")});
  EXPECT_EQ(WaitForState(id, kCompleted).result(), "done");
  EXPECT_EQ(trail.steps(), (std::vector<std::string>{"outer before", "inner before", "handler",
                                                     "inner after", "outer after"}));
}

TEST_F(WorkerTest, AMiddlewareMayChangeTheResultOrFailTheJob) {
  std::string changed = MustEnqueue("echo", R"({"mode":"change"})");
  std::string failed = MustEnqueue("echo", R"({"mode":"fail"})");
  std::string thrown = MustEnqueue("echo", R"({"mode":"throw"})");
  EnqueueOptions once;
  once.max_attempts = 1;
  std::string skipped = MustEnqueue("echo", R"({"mode":"skip"})", once);
  std::atomic<int> handler_runs_for_skip{0};
  RunningWorker worker(
      Options(),
      {{"echo",
        [&](const Job& job) -> absl::StatusOr<std::string> {
          if (job.Json()["mode"] == "skip") ++handler_runs_for_skip;
          return std::string("handler");
        }}},
      {[](const Job& job, const Handler& next) -> absl::StatusOr<std::string> {
        const std::string mode = job.Json()["mode"];
        if (mode == "skip") return NonRetryable(absl::InvalidArgumentError("refused"));
        absl::StatusOr<std::string> result = next(job);
        if (mode == "change") return *result + " wrapped";
        if (mode == "throw") throw std::runtime_error("middleware threw");
        if (mode == "fail") return NonRetryable(absl::InternalError("middleware failed"));
        return result;
      }});
  EXPECT_EQ(WaitForState(changed, kCompleted).result(), "handler wrapped");
  EXPECT_EQ(WaitForState(failed, kDead).error(), "INTERNAL: middleware failed");
  EXPECT_EQ(WaitForState(skipped, kDead).error(), "INVALID_ARGUMENT: refused");
  EXPECT_EQ(handler_runs_for_skip, 0);
  // A thrown exception fails the job (retryable) with its type and text.
  v1::Job job;
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  do {
    absl::StatusOr<v1::Job> got = client_->GetJob("q", thrown);
    ASSERT_TRUE(got.ok()) << got.status();
    job = *got;
    if (!job.error().empty()) break;
    absl::SleepFor(absl::Milliseconds(20));
  } while (absl::Now() < deadline);
  EXPECT_NE(job.error().find("middleware threw"), std::string::npos) << job.DebugString();
}

TEST_F(WorkerTest, TheProducersTraceContextReachesTheHandler) {
  TraceContext producer;
  producer.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  producer.parent_id = "00f067aa0ba902b7";
  producer.flags = 0x01;
  producer.tracestate = "vendor=abc";
  EnqueueOptions options;
  producer.InjectInto(&options.headers);
  std::string traced = MustEnqueue("echo", "{}", options);
  std::string untraced = MustEnqueue("echo", "{}");
  RunningWorker worker(Options(), {{"echo", [](const Job& job) -> absl::StatusOr<std::string> {
                                      std::optional<TraceContext> trace =
                                          TraceContext::FromHeaders(job.headers);
                                      if (!trace) return std::string("none");
                                      return absl::StrCat(trace->trace_id, " ", trace->parent_id,
                                                          " ", trace->sampled(), " ",
                                                          trace->tracestate);
                                    }}});
  EXPECT_EQ(WaitForState(traced, kCompleted).result(),
            "4bf92f3577b34da6a3ce929d0e0e4736 00f067aa0ba902b7 1 vendor=abc");
  EXPECT_EQ(WaitForState(untraced, kCompleted).result(), "none");
}

TEST_F(WorkerTest, TheHandlerSeesTheJobsConcurrencyKey) {
  EnqueueOptions options;
  options.concurrency_key = "customer-7";
  std::string keyed = MustEnqueue("key", "{}", options);
  std::string plain = MustEnqueue("key", "{}");
  RunningWorker worker(Options(), {{"key", [](const Job& job) -> absl::StatusOr<std::string> {
                                      return "[" + job.concurrency_key + "]";
                                    }}});
  EXPECT_EQ(WaitForState(keyed, kCompleted).result(), "[customer-7]");
  EXPECT_EQ(WaitForState(plain, kCompleted).result(), "[]");
}

}  // namespace
}  // namespace jobwire::client
