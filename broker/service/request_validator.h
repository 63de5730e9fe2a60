// Validation of every Broker request: the limits documented in
// proto/jobwire/v1/broker.proto. Each function returns OK or
// INVALID_ARGUMENT whose message starts with the field name and states the
// limit, e.g. "priority: must be in -1000..1000, got 1001".
#ifndef JOBWIRE_BROKER_SERVICE_REQUEST_VALIDATOR_H_
#define JOBWIRE_BROKER_SERVICE_REQUEST_VALIDATOR_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::service {

inline constexpr int kMaxQueueNameLength = 128;
inline constexpr int kMaxTypeLength = 256;
inline constexpr int kMaxIdempotencyKeyLength = 256;
inline constexpr int kMaxConcurrencyKeyLength = 128;
inline constexpr int kMaxJobIdLength = 64;
// EnqueueRequest.depends_on: at most this many parents.
inline constexpr int kMaxDependsOn = 20;
inline constexpr int kMaxTokenLength = 128;
inline constexpr int kMaxWorkerIdLength = 256;
inline constexpr int kMaxErrorLength = 64 * 1024;
inline constexpr int kMaxBatchJobs = 1000;
inline constexpr int kMaxBatchAcks = 1000;
inline constexpr int kMaxClaimQueues = 32;
// SubscribeRequest.queues: at most this many.
inline constexpr int kMaxSubscribeQueues = 100;
// WaitJobRequest.timeout_ms: at most 24 h.
inline constexpr int64_t kMaxWaitTimeoutMs = 24LL * 3600 * 1000;
inline constexpr int kMaxClaimTypes = 64;
// ClaimRequest.weights: each 1..kMaxWeight.
inline constexpr int kMaxWeight = 1000;
inline constexpr int kMaxInFlight = 1000;
inline constexpr int kMaxPriority = 1000;
inline constexpr int kMaxAttempts = 1000;
inline constexpr int64_t kMinLeaseMs = 1000;
inline constexpr int64_t kMaxLeaseMs = 12 * 3600 * 1000;
inline constexpr int64_t kMaxDelayMs = 10LL * 365 * 24 * 3600 * 1000;
inline constexpr int64_t kMaxBackoffMs = 7LL * 24 * 3600 * 1000;
// EnqueueRequest.timeout_ms: at most 7 days.
inline constexpr int64_t kMaxJobTimeoutMs = 7LL * 24 * 3600 * 1000;
// EnqueueRequest.headers: entries, key and value bytes, all bytes.
inline constexpr int kMaxHeaders = 64;
inline constexpr size_t kMaxHeaderKeyBytes = 128;
inline constexpr size_t kMaxHeaderValueBytes = 4096;
inline constexpr size_t kMaxHeadersBytes = 16384;
// ReportProgressRequest.data: at most this many bytes.
inline constexpr int64_t kMaxProgressDataBytes = 4096;

struct Limits {
  int64_t max_payload_bytes = 1 << 20;
  // The backoff base a job with backoff_base_ms 0 gets (--backoff_base_ms):
  // its backoff_max_ms must not be below it either.
  int64_t default_backoff_base_ms = 1000;
  // The largest completed_retention_ms an Enqueue may ask for
  // (--completed_retention_max_ms).
  int64_t max_completed_retention_ms = 7LL * 24 * 3600 * 1000;
};

// Checks a queue name: 1..128 characters of [A-Za-z0-9._:-]. `field` names
// the field in the message ("queue", "queues[2]").
absl::Status ValidateQueueName(absl::string_view field, absl::string_view queue);

// Checks a job id: 1..64 characters of [A-Za-z0-9._:-].
absl::Status ValidateJobId(absl::string_view field, absl::string_view job_id);

// `field_prefix` is prepended to field names ("jobs[3]."). Refuses
// depends_on_batch_index, which only EnqueueBatch allows.
absl::Status ValidateEnqueue(const v1::EnqueueRequest& r, const Limits& limits,
                             absl::string_view field_prefix = "");
// Checks the batch size only; each job is checked with ValidateBatchJobs.
absl::Status ValidateEnqueueBatch(const v1::EnqueueBatchRequest& r);
// One status per job of `r` (whose size ValidateEnqueueBatch accepted): as
// ValidateEnqueue, and for depends_on_batch_index: indexes of earlier jobs
// of the same queue, distinct, each accepted itself (else this job is
// refused too), with depends_on at most kMaxDependsOn parents in all, and
// the depends_on ids of the jobs linked this way (through any number of
// batch links) all of one partition.
std::vector<absl::Status> ValidateBatchJobs(const v1::EnqueueBatchRequest& r,
                                            const Limits& limits);
absl::Status ValidateClaim(const v1::ClaimRequest& r);
// `field_prefix` as for ValidateEnqueue ("acks[3].").
absl::Status ValidateAck(const v1::AckRequest& r, const Limits& limits,
                         absl::string_view field_prefix = "");
// Checks the batch size only; each ack is checked with ValidateAck.
absl::Status ValidateAckBatch(const v1::AckBatchRequest& r);
absl::Status ValidateFail(const v1::FailRequest& r);
absl::Status ValidateExtendLease(const v1::ExtendLeaseRequest& r);
absl::Status ValidateGetJob(const v1::GetJobRequest& r);
absl::Status ValidateCancel(const v1::CancelRequest& r);
absl::Status ValidateReportProgress(const v1::ReportProgressRequest& r);
// queue and job_id as GetJob; timeout_ms 0..kMaxWaitTimeoutMs.
absl::Status ValidateWaitJob(const v1::WaitJobRequest& r);
// queues: 1..kMaxSubscribeQueues valid names, no repeats; kinds: known,
// not UNSPECIFIED, no repeats.
absl::Status ValidateSubscribe(const v1::SubscribeRequest& r);

}  // namespace jobwire::service

#endif  // JOBWIRE_BROKER_SERVICE_REQUEST_VALIDATOR_H_
