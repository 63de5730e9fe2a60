// Shared by the lifecycle tests (lifecycle_test.cc, retry_lease_test.cc,
// redis_calls_test.cc) and the limits tests (queue_limits_test.cc,
// key_concurrency_test.cc, key_rate_limit_test.cc), and through
// dependency_test_util.h by the dependency tests.
//
// Timing checks have a strict lower bound (a job must never come early) and
// a generous upper bound (the machine is shared). Times on the wire come from
// the Redis clock, which is this machine's clock; 1 ms is allowed for the
// truncation to whole milliseconds.
#ifndef JOBWIRE_TESTS_LIFECYCLE_TEST_UTIL_H_
#define JOBWIRE_TESTS_LIFECYCLE_TEST_UTIL_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/test_harness.h"

namespace jobwire::testing {

// Upper-bound slack for anything timed, on a shared 2-core machine.
inline constexpr int64_t kSlackMs = 300;
// How long "nothing else arrives" is watched for.
inline constexpr absl::Duration kQuiet = absl::Milliseconds(500);
// How long a job that is due now may take to arrive.
inline constexpr absl::Duration kPrompt = absl::Seconds(5);

class LifecycleTest : public BrokerTest {};

// A lifecycle test of queue settings (the limits tests): the Admin API, and
// what Redis holds for a queue.
class QueueSettingsTest : public LifecycleTest {
 protected:
  void SetUp() override {
    LifecycleTest::SetUp();
    admin_ = v1::AdminService::NewStub(broker_->channel());
  }

  // A client context with a deadline 10 s away.
  static std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return context;
  }
  grpc::Status CreateQueue(const v1::CreateQueueRequest& request) {
    v1::CreateQueueResponse response;
    return admin_->CreateQueue(Context().get(), request, &response);
  }
  grpc::Status UpdateQueue(const v1::UpdateQueueRequest& request) {
    v1::UpdateQueueResponse response;
    return admin_->UpdateQueue(Context().get(), request, &response);
  }
  grpc::Status Pause(const std::string& queue, bool paused) {
    if (paused) {
      v1::PauseQueueRequest request;
      request.set_queue(queue);
      v1::PauseQueueResponse response;
      return admin_->PauseQueue(Context().get(), request, &response);
    }
    v1::ResumeQueueRequest request;
    request.set_queue(queue);
    v1::ResumeQueueResponse response;
    return admin_->ResumeQueue(Context().get(), request, &response);
  }
  v1::QueueStats Stats(const std::string& queue) { return MustGetQueueStats(*admin_, queue); }

  static v1::EnqueueRequest Keyed(const std::string& queue, const std::string& key,
                                  const std::string& payload = "") {
    v1::EnqueueRequest job = MakeJob(queue, payload);
    job.set_concurrency_key(key);
    return job;
  }

  // The size of the queue's Redis key `name` (jw:{<queue>}:<name>) by
  // `command` (ZCARD, HLEN); -1 when Redis fails.
  int64_t SizeOf(const std::string& queue, const std::string& name,
                 const std::string& command = "ZCARD") {
    const std::string key = absl::StrCat("jw:{", queue, "}:", name);
    absl::StatusOr<RedisReply> reply = RedisCommandFor(key, {command, key});
    return reply.ok() ? reply->integer : -1;
  }

  std::unique_ptr<v1::AdminService::Stub> admin_;
};

// The field a refusal names: its message's first word.
inline std::string FieldOf(const grpc::Status& status) {
  const std::string& message = status.error_message();
  return message.substr(0, message.find(':'));
}

// A queue rate limit (admin.proto RateLimit; burst 0: count).
inline v1::RateLimit Limit(int32_t count, int64_t interval_ms, int32_t burst = 0) {
  v1::RateLimit limit;
  limit.set_count(count);
  limit.set_interval_ms(interval_ms);
  limit.set_burst(burst);
  return limit;
}

// Takes jobs one at a time from `reader`, acking each, and returns their ids.
inline std::vector<std::string> ClaimAndAckInOrder(v1::BrokerService::Stub& stub,
                                                   ClaimReader& reader, int count) {
  std::vector<std::string> ids;
  for (int i = 0; i < count; ++i) {
    std::optional<v1::ClaimedJob> claimed = reader.Next(kPrompt);
    EXPECT_TRUE(claimed.has_value()) << "job " << i << " of " << count;
    if (!claimed.has_value()) break;
    ids.push_back(claimed->job().id());
    JW_EXPECT_OK(Ack(stub, *claimed));
  }
  return ids;
}

}  // namespace jobwire::testing

#endif  // JOBWIRE_TESTS_LIFECYCLE_TEST_UTIL_H_
