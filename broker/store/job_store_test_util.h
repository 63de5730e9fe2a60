// The fixture shared by the store tests (job_store_test.cc,
// script_safety_test.cc): a real redis-server, a RedisClient on its own
// event loop, the scripts, a JobStore and an AdminStore, and small helpers
// that run one store call and wait for its answer.
#ifndef JOBWIRE_BROKER_STORE_JOB_STORE_TEST_UTIL_H_
#define JOBWIRE_BROKER_STORE_JOB_STORE_TEST_UTIL_H_

#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "broker/base/event_loop.h"
#include "broker/store/admin_store.h"
#include "broker/store/job_store.h"
#include "broker/store/keys.h"
#include "broker/store/redis_client.h"
#include "broker/store/script_runner.h"
#include "gtest/gtest.h"
#include "tests/job_record.h"
#include "tests/test_harness.h"

namespace jobwire::store {

// Runs an asynchronous store call and waits for its callback.
template <typename T, typename F>
absl::StatusOr<T> Sync(F call) {
  std::promise<absl::StatusOr<T>> promise;
  call([&promise](absl::StatusOr<T> result) { promise.set_value(std::move(result)); });
  return promise.get_future().get();
}

class JobStoreTest : public ::testing::Test {
 public:
  explicit JobStoreTest(StoreOptions options = {}) : options_(std::move(options)) {}

  void SetUp() override {
    ASSERT_TRUE(redis_.Start().ok());
    client_ = std::make_unique<RedisClient>(&loop_, RedisAddress{"127.0.0.1", redis_.port(), "", 0}, "test");
    // Every script the store tests run fails on a key it did not declare.
    scripts_ = std::make_unique<ScriptRunner>(client_.get(), /*check_declared_keys=*/true);
    store_ = std::make_unique<JobStore>(client_.get(), scripts_.get(), options_);
    admin_ = std::make_unique<AdminStore>(client_.get(), scripts_.get(), options_.key_prefix);
    loop_.Start();
    client_->Start();
    // Wait for the connection.
    for (int i = 0; i < 100; ++i) {
      if (Sync<RedisReply>([&](auto cb) { client_->Command({"PING"}, cb); }).ok()) return;
      absl::SleepFor(absl::Milliseconds(20));
    }
    FAIL() << "no redis connection";
  }

  void TearDown() override { loop_.Stop(); }

  std::string Enqueue(const std::string& queue, const std::string& type, int priority,
                      int64_t delay_ms, int max_attempts = 3, int64_t base = 1000,
                      int64_t cap = 3600000, const std::string& payload = "") {
    v1::EnqueueRequest r;
    r.set_queue(queue);
    r.set_type(type);
    r.set_payload(payload);
    r.set_priority(priority);
    r.set_delay_ms(delay_ms);
    r.set_max_attempts(max_attempts);
    r.set_backoff_base_ms(base);
    r.set_backoff_max_ms(cap);
    auto out = Sync<std::vector<EnqueueOutcome>>([&](auto cb) { store_->Enqueue(queue, {r}, cb); });
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? out->at(0).job_id : "";
  }

  // Claims up to `n` jobs of `types` (empty: every type).
  absl::StatusOr<ClaimOutcome> Claim(const std::string& queue, int n, int64_t lease_ms = 30000,
                                     const std::vector<std::string>& types = {}) {
    return Sync<ClaimOutcome>(
        [&](auto cb) { store_->Claim(queue, n, lease_ms, "w", JobStore::NewClaimId(), types, cb); });
  }

  // Claims up to `n` jobs one call at a time; returns their types in order.
  std::vector<std::string> ClaimTypes(const std::string& queue, int n) {
    std::vector<std::string> types;
    auto out = Claim(queue, n);
    EXPECT_TRUE(out.ok()) << out.status();
    if (out.ok()) {
      for (const auto& job : out->jobs) types.push_back(job.job().type());
    }
    return types;
  }

  absl::StatusOr<FailOutcome> Fail(const v1::ClaimedJob& job, bool non_retryable = false) {
    v1::FailRequest f;
    f.set_queue(job.job().queue());
    f.set_job_id(job.job().id());
    f.set_lease_token(job.lease_token());
    f.set_error("boom");
    f.set_non_retryable(non_retryable);
    return Sync<FailOutcome>([&](auto cb) { store_->Fail(f, cb); });
  }

  absl::StatusOr<AckOutcome> Ack(const v1::ClaimedJob& job) {
    v1::AckRequest ack;
    ack.set_queue(job.job().queue());
    ack.set_job_id(job.job().id());
    ack.set_lease_token(job.lease_token());
    auto out = Sync<std::vector<AckOutcome>>(
        [&](auto cb) { store_->Ack(job.job().queue(), {&ack}, cb); });
    if (!out.ok()) return out.status();
    return out->at(0);
  }

  Keys KeysOf(const std::string& queue) const { return Keys(options_.key_prefix, queue); }

  // Field `field` of job `id`'s record, read straight from Redis ("" when
  // the record lacks it or there is no record).
  std::string JobField(const std::string& queue, const std::string& id, const std::string& field) {
    auto r = redis_.CommandArgv(testing::ReadJobFieldArgv(KeysOf(queue).Jobs(), id, field));
    return r.ok() && !r->is_error() ? r->str : "";
  }
  // Whether job `id` has a record.
  bool HasJobRecord(const std::string& queue, const std::string& id) {
    auto r = redis_.Command("HEXISTS", KeysOf(queue).Jobs(), id);
    return r.ok() && r->integer == 1;
  }
  // Damage by hand: rewrites job `id`'s record without field `field`, or
  // with it set to `value`.
  void WriteJobField(const std::string& queue, const std::string& id, const std::string& field,
                     const std::optional<std::string>& value) {
    auto r = redis_.CommandArgv(testing::WriteJobFieldArgv(KeysOf(queue).Jobs(), id, field, value));
    ASSERT_TRUE(r.ok() && !r->is_error() && r->integer == 1) << field;
  }

  StoreOptions options_;  // read by SetUp: a derived fixture may change it first
  testing::RedisServer redis_;
  base::EventLoop loop_;
  std::unique_ptr<RedisClient> client_;
  std::unique_ptr<ScriptRunner> scripts_;
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<AdminStore> admin_;
};

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_JOB_STORE_TEST_UTIL_H_
