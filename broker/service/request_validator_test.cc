#include "broker/service/request_validator.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jobwire::service {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

v1::EnqueueRequest ValidEnqueue() {
  v1::EnqueueRequest r;
  r.set_queue("emails.high:eu-1_x");
  r.set_type("send");
  r.set_payload("{}");
  return r;
}

struct EnqueueCase {
  std::string name;
  void (*mutate)(v1::EnqueueRequest*);
  std::string field;  // empty: valid
  std::string limit;  // substring of the message
};

class EnqueueValidationTest : public ::testing::TestWithParam<EnqueueCase> {};

TEST_P(EnqueueValidationTest, NamesFieldAndLimit) {
  const EnqueueCase& c = GetParam();
  v1::EnqueueRequest r = ValidEnqueue();
  c.mutate(&r);
  absl::Status s = ValidateEnqueue(r, Limits{1024});
  if (c.field.empty()) {
    EXPECT_TRUE(s.ok()) << s;
    return;
  }
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), StartsWith(c.field + ":"));
  EXPECT_THAT(std::string(s.message()), HasSubstr(c.limit));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, EnqueueValidationTest,
    ::testing::Values(
        EnqueueCase{"valid", [](v1::EnqueueRequest*) {}, "", ""},
        EnqueueCase{"empty_queue", [](v1::EnqueueRequest* r) { r->set_queue(""); }, "queue", "1..128"},
        EnqueueCase{"queue_space", [](v1::EnqueueRequest* r) { r->set_queue("a b"); }, "queue", "[A-Za-z0-9._:-]"},
        EnqueueCase{"queue_brace", [](v1::EnqueueRequest* r) { r->set_queue("a{b}"); }, "queue", "[A-Za-z0-9._:-]"},
        EnqueueCase{"queue_128", [](v1::EnqueueRequest* r) { r->set_queue(std::string(128, 'q')); }, "", ""},
        EnqueueCase{"queue_129", [](v1::EnqueueRequest* r) { r->set_queue(std::string(129, 'q')); }, "queue", "1..128"},
        EnqueueCase{"empty_type", [](v1::EnqueueRequest* r) { r->set_type(""); }, "type", "required"},
        EnqueueCase{"type_257", [](v1::EnqueueRequest* r) { r->set_type(std::string(257, 't')); }, "type", "256"},
        EnqueueCase{"priority_1000", [](v1::EnqueueRequest* r) { r->set_priority(1000); }, "", ""},
        EnqueueCase{"priority_1001", [](v1::EnqueueRequest* r) { r->set_priority(1001); }, "priority", "-1000..1000"},
        EnqueueCase{"priority_-1001", [](v1::EnqueueRequest* r) { r->set_priority(-1001); }, "priority", "-1000..1000"},
        EnqueueCase{"negative_delay", [](v1::EnqueueRequest* r) { r->set_delay_ms(-1); }, "delay_ms", "0.."},
        EnqueueCase{"negative_run_at", [](v1::EnqueueRequest* r) { r->set_run_at_ms(-5); }, "run_at_ms", "0.."},
        EnqueueCase{"delay_and_run_at", [](v1::EnqueueRequest* r) { r->set_delay_ms(1); r->set_run_at_ms(2); }, "delay_ms", "mutually exclusive"},
        EnqueueCase{"max_attempts_0_default", [](v1::EnqueueRequest* r) { r->set_max_attempts(0); }, "", ""},
        EnqueueCase{"max_attempts_1001", [](v1::EnqueueRequest* r) { r->set_max_attempts(1001); }, "max_attempts", "1..1000"},
        EnqueueCase{"max_attempts_neg", [](v1::EnqueueRequest* r) { r->set_max_attempts(-1); }, "max_attempts", "1..1000"},
        EnqueueCase{"payload_at_limit", [](v1::EnqueueRequest* r) { r->set_payload(std::string(1024, 'p')); }, "", ""},
        EnqueueCase{"payload_over", [](v1::EnqueueRequest* r) { r->set_payload(std::string(1025, 'p')); }, "payload", "at most 1024 bytes"},
        EnqueueCase{"idem_256", [](v1::EnqueueRequest* r) { r->set_idempotency_key(std::string(256, 'k')); }, "", ""},
        EnqueueCase{"idem_257", [](v1::EnqueueRequest* r) { r->set_idempotency_key(std::string(257, 'k')); }, "idempotency_key", "at most 256 bytes"},
        EnqueueCase{"backoff_neg", [](v1::EnqueueRequest* r) { r->set_backoff_base_ms(-1); }, "backoff_base_ms", "0.."},
        EnqueueCase{"backoff_max_below_base", [](v1::EnqueueRequest* r) { r->set_backoff_base_ms(500); r->set_backoff_max_ms(100); }, "backoff_max_ms", "below backoff_base_ms"},
        EnqueueCase{"backoff_max_below_default_base", [](v1::EnqueueRequest* r) { r->set_backoff_max_ms(500); }, "backoff_max_ms", "below backoff_base_ms (1000, the broker default)"},
        EnqueueCase{"backoff_max_at_default_base", [](v1::EnqueueRequest* r) { r->set_backoff_max_ms(1000); }, "", ""},
        EnqueueCase{"retention_0_delete_on_ack", [](v1::EnqueueRequest* r) { r->set_completed_retention_ms(0); }, "", ""},
        EnqueueCase{"retention_at_max", [](v1::EnqueueRequest* r) { r->set_completed_retention_ms(7LL * 24 * 3600 * 1000); }, "", ""},
        EnqueueCase{"retention_above_max", [](v1::EnqueueRequest* r) { r->set_completed_retention_ms(7LL * 24 * 3600 * 1000 + 1); }, "completed_retention_ms", "0..604800000 ms (the broker's --completed_retention_max_ms), got 604800001"},
        EnqueueCase{"retention_neg", [](v1::EnqueueRequest* r) { r->set_completed_retention_ms(-1); }, "completed_retention_ms", "0..604800000"},
        EnqueueCase{"timeout_at_max", [](v1::EnqueueRequest* r) { r->set_timeout_ms(7LL * 24 * 3600 * 1000); }, "", ""},
        EnqueueCase{"timeout_above_max", [](v1::EnqueueRequest* r) { r->set_timeout_ms(7LL * 24 * 3600 * 1000 + 1); }, "timeout_ms", "0..604800000, got 604800001"},
        EnqueueCase{"timeout_neg", [](v1::EnqueueRequest* r) { r->set_timeout_ms(-5); }, "timeout_ms", "0..604800000, got -5"}),
    [](const ::testing::TestParamInfo<EnqueueCase>& info) {
      std::string name = info.param.name;
      for (char& c : name) if (c == '-') c = 'm';
      return name;
    });

TEST(EnqueueValidation, FieldPrefixNamesTheBatchEntry) {
  v1::EnqueueRequest r = ValidEnqueue();
  r.set_priority(2000);
  absl::Status s = ValidateEnqueue(r, Limits{}, "jobs[7].");
  EXPECT_THAT(std::string(s.message()), StartsWith("jobs[7].priority:"));
}

TEST(BatchValidation, SizeLimits) {
  v1::EnqueueBatchRequest batch;
  EXPECT_THAT(std::string(ValidateEnqueueBatch(batch).message()), HasSubstr("1..1000"));
  for (int i = 0; i < 1000; ++i) *batch.add_jobs() = ValidEnqueue();
  EXPECT_TRUE(ValidateEnqueueBatch(batch).ok());
  *batch.add_jobs() = ValidEnqueue();
  absl::Status s = ValidateEnqueueBatch(batch);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), StartsWith("jobs: must hold 1..1000 jobs, got 1001"));
}

struct ClaimCase {
  std::string name;
  void (*mutate)(v1::ClaimRequest*);
  std::string field;
};

class ClaimValidationTest : public ::testing::TestWithParam<ClaimCase> {};

TEST_P(ClaimValidationTest, NamesField) {
  v1::ClaimRequest r;
  r.add_queues("a");
  GetParam().mutate(&r);
  absl::Status s = ValidateClaim(r);
  if (GetParam().field.empty()) {
    EXPECT_TRUE(s.ok()) << s;
  } else {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), StartsWith(GetParam().field + ":"));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ClaimValidationTest,
    ::testing::Values(
        ClaimCase{"valid_defaults", [](v1::ClaimRequest*) {}, ""},
        ClaimCase{"no_queues", [](v1::ClaimRequest* r) { r->clear_queues(); }, "queues"},
        ClaimCase{"bad_second_queue", [](v1::ClaimRequest* r) { r->add_queues("b c"); }, "queues[1]"},
        ClaimCase{"repeated_queue", [](v1::ClaimRequest* r) { r->add_queues("a"); }, "queues[1]"},
        ClaimCase{"in_flight_1000", [](v1::ClaimRequest* r) { r->set_max_in_flight(1000); }, ""},
        ClaimCase{"in_flight_1001", [](v1::ClaimRequest* r) { r->set_max_in_flight(1001); }, "max_in_flight"},
        ClaimCase{"in_flight_negative", [](v1::ClaimRequest* r) { r->set_max_in_flight(-1); }, "max_in_flight"},
        ClaimCase{"lease_1000", [](v1::ClaimRequest* r) { r->set_lease_ms(1000); }, ""},
        ClaimCase{"lease_999", [](v1::ClaimRequest* r) { r->set_lease_ms(999); }, "lease_ms"},
        ClaimCase{"lease_negative", [](v1::ClaimRequest* r) { r->set_lease_ms(-1); }, "lease_ms"},
        ClaimCase{"lease_over_12h", [](v1::ClaimRequest* r) { r->set_lease_ms(43200001); }, "lease_ms"},
        ClaimCase{"worker_id_long", [](v1::ClaimRequest* r) { r->set_worker_id(std::string(257, 'w')); }, "worker_id"},
        ClaimCase{"types_64", [](v1::ClaimRequest* r) { for (int i = 0; i < 64; ++i) r->add_types(std::to_string(i)); }, ""},
        ClaimCase{"types_65", [](v1::ClaimRequest* r) { for (int i = 0; i < 65; ++i) r->add_types(std::to_string(i)); }, "types"},
        ClaimCase{"type_repeated", [](v1::ClaimRequest* r) { r->add_types("a"); r->add_types("b"); r->add_types("a"); }, "types[2]"},
        ClaimCase{"type_empty", [](v1::ClaimRequest* r) { r->add_types("a"); r->add_types(""); }, "types[1]"},
        ClaimCase{"type_256", [](v1::ClaimRequest* r) { r->add_types(std::string(256, 't')); }, ""},
        ClaimCase{"type_257", [](v1::ClaimRequest* r) { r->add_types(std::string(257, 't')); }, "types[0]"}),
    [](const ::testing::TestParamInfo<ClaimCase>& info) { return info.param.name; });

TEST(JobRefValidation, AckFailExtendGetCancel) {
  v1::AckRequest ack;
  ack.set_queue("q");
  ack.set_job_id("000000000001");
  EXPECT_THAT(std::string(ValidateAck(ack, Limits{}).message()), StartsWith("lease_token:"));
  ack.set_lease_token("t");
  EXPECT_TRUE(ValidateAck(ack, Limits{}).ok());
  ack.set_result(std::string(11, 'r'));
  EXPECT_THAT(std::string(ValidateAck(ack, Limits{10}).message()), StartsWith("result:"));

  v1::FailRequest fail;
  fail.set_queue("q");
  fail.set_job_id("");
  fail.set_lease_token("t");
  EXPECT_THAT(std::string(ValidateFail(fail).message()), StartsWith("job_id:"));
  fail.set_job_id("1");
  fail.set_retry_after_ms(-1);
  EXPECT_THAT(std::string(ValidateFail(fail).message()), StartsWith("retry_after_ms:"));
  fail.set_retry_after_ms(0);
  fail.set_keep_attempt(true);
  EXPECT_THAT(std::string(ValidateFail(fail).message()),
              StartsWith("keep_attempt: needs retry_after_ms > 0"));
  fail.set_retry_after_ms(1000);
  fail.set_non_retryable(true);
  EXPECT_THAT(std::string(ValidateFail(fail).message()),
              StartsWith("keep_attempt: cannot be set with non_retryable"));
  fail.set_non_retryable(false);
  EXPECT_TRUE(ValidateFail(fail).ok());

  v1::ExtendLeaseRequest extend;
  extend.set_queue("q");
  extend.set_job_id("1");
  extend.set_lease_token("t");
  extend.set_lease_ms(500);
  EXPECT_THAT(std::string(ValidateExtendLease(extend).message()), StartsWith("lease_ms:"));

  v1::GetJobRequest get;
  get.set_queue("bad queue");
  get.set_job_id("1");
  EXPECT_THAT(std::string(ValidateGetJob(get).message()), StartsWith("queue:"));

  v1::CancelRequest cancel;
  cancel.set_queue("q");
  cancel.set_job_id("x}y");
  EXPECT_THAT(std::string(ValidateCancel(cancel).message()), StartsWith("job_id:"));
}

}  // namespace
}  // namespace jobwire::service
