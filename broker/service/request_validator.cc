#include "broker/service/request_validator.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "broker/base/error_reason.h"
#include "broker/base/status_macros.h"
#include "broker/store/keys.h"

namespace jobwire::service {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == ':' || c == '-';
}

absl::Status Invalid(absl::string_view field, absl::string_view what) {
  return base::WithField(absl::InvalidArgumentError(absl::StrCat(field, ": ", what)), field);
}

// A name made of [A-Za-z0-9._:-], 1..max_length characters.
absl::Status CheckName(absl::string_view field, absl::string_view value, int max_length) {
  bool ok = !value.empty() && static_cast<int>(value.size()) <= max_length;
  for (char c : value) ok = ok && IsNameChar(c);
  if (ok) return absl::OkStatus();
  return Invalid(field, absl::StrFormat("must be 1..%d characters of [A-Za-z0-9._:-], got \"%s\"",
                                        max_length, absl::CHexEscape(value.substr(0, 140))));
}

absl::Status CheckRange(absl::string_view field, int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  return Invalid(field, absl::StrCat("must be in ", lo, "..", hi, ", got ", value));
}

absl::Status CheckMaxBytes(absl::string_view field, absl::string_view value, int64_t max) {
  if (static_cast<int64_t>(value.size()) <= max) return absl::OkStatus();
  return Invalid(field, absl::StrCat("must be at most ", max, " bytes, got ", value.size()));
}

// 0 (the default) or min..max.
absl::Status CheckLease(absl::string_view field, int64_t lease_ms) {
  if (lease_ms == 0) return absl::OkStatus();
  if (lease_ms >= kMinLeaseMs && lease_ms <= kMaxLeaseMs) return absl::OkStatus();
  return Invalid(field, absl::StrCat("must be 0 (default) or in ", kMinLeaseMs, "..", kMaxLeaseMs,
                                     " ms (1 s .. 12 h), got ", lease_ms));
}

// `p` is prepended to field names ("acks[3].").
absl::Status CheckJobRef(absl::string_view queue, absl::string_view job_id,
                         absl::string_view p = "") {
  JW_RETURN_IF_ERROR(ValidateQueueName(absl::StrCat(p, "queue"), queue));
  return CheckName(absl::StrCat(p, "job_id"), job_id, kMaxJobIdLength);
}

absl::Status CheckLeaseToken(absl::string_view token, absl::string_view p = "") {
  if (token.empty()) return Invalid(absl::StrCat(p, "lease_token"), "is required");
  return CheckMaxBytes(absl::StrCat(p, "lease_token"), token, kMaxTokenLength);
}

}  // namespace

absl::Status ValidateQueueName(absl::string_view field, absl::string_view queue) {
  return CheckName(field, queue, kMaxQueueNameLength);
}

namespace {

// The partition of the first job id of `ids` that is not a ref to a
// parent elsewhere ("<queue>/<id>"); -1 when none is.
int FirstIdPartition(const google::protobuf::RepeatedPtrField<std::string>& ids) {
  for (const std::string& id : ids) {
    if (id.find('/') == std::string::npos) return store::PartitionOfJobId(id);
  }
  return -1;
}

// depends_on: 0..kMaxDependsOn distinct entries: job ids of the job's queue,
// all of one partition, and refs "<queue>/<id>" to parents elsewhere.
absl::Status CheckDependsOn(absl::string_view field,
                            const google::protobuf::RepeatedPtrField<std::string>& ids) {
  if (ids.size() > kMaxDependsOn) {
    return Invalid(field, absl::StrCat("must name at most ", kMaxDependsOn, " jobs, got ", ids.size()));
  }
  int first = -1;  // the partition of the first job id, and its index
  int first_at = -1;
  for (int i = 0; i < ids.size(); ++i) {
    const std::string at = absl::StrCat(field, "[", i, "]");
    const size_t slash = ids[i].find('/');
    if (slash != std::string::npos) {
      const absl::string_view ref = ids[i];
      // A ref to a parent elsewhere: "<queue>/<job id>", each checked.
      JW_RETURN_IF_ERROR(CheckName(at, ref.substr(0, slash), kMaxQueueNameLength));
      JW_RETURN_IF_ERROR(CheckName(at, ref.substr(slash + 1), kMaxJobIdLength));
    } else {
      JW_RETURN_IF_ERROR(CheckName(at, ids[i], kMaxJobIdLength));
    }
    for (int j = 0; j < i; ++j) {
      if (ids[j] == ids[i]) return Invalid(at, absl::StrCat("repeats \"", ids[i], "\""));
    }
    if (slash != std::string::npos) continue;
    const int partition = store::PartitionOfJobId(ids[i]);
    if (first < 0) {
      first = partition;
      first_at = i;
    } else if (partition != first) {
      return Invalid(at, absl::StrCat("is of partition ", partition, " and ", field, "[",
                                      first_at, "] of ", first,
                                      ": a job's parents given by id must share one partition "
                                      "(name a parent of another partition as "
                                      "\"<queue>/<id>\")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateJobId(absl::string_view field, absl::string_view job_id) {
  return CheckName(field, job_id, kMaxJobIdLength);
}

namespace {

// EnqueueRequest.headers (`field`): the limits of broker.proto. Keys are
// checked in sorted order, so that the error names the same key whatever
// the map's iteration order.
absl::Status CheckHeaders(const std::string& field,
                          const google::protobuf::Map<std::string, std::string>& headers) {
  if (headers.size() > static_cast<size_t>(kMaxHeaders)) {
    return Invalid(field, absl::StrCat("must hold at most ", kMaxHeaders, " entries, got ",
                                       headers.size()));
  }
  std::vector<const std::string*> keys;
  keys.reserve(headers.size());
  for (const auto& [key, value] : headers) keys.push_back(&key);
  std::sort(keys.begin(), keys.end(), [](auto* a, auto* b) { return *a < *b; });
  size_t total = 0;
  for (const std::string* key : keys) {
    const std::string& value = headers.at(*key);
    const bool valid_key =
        !key->empty() && key->size() <= kMaxHeaderKeyBytes &&
        std::all_of(key->begin(), key->end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                 c == '-';
        });
    if (!valid_key) {
      return Invalid(field, absl::StrFormat("keys must be 1..%d bytes of [a-z0-9._-], got \"%s\"",
                                            kMaxHeaderKeyBytes, absl::CHexEscape(*key)));
    }
    if (value.size() > kMaxHeaderValueBytes) {
      return Invalid(field, absl::StrCat("value of \"", *key, "\" must be at most ",
                                         kMaxHeaderValueBytes, " bytes, got ", value.size()));
    }
    total += key->size() + value.size();
  }
  if (total > kMaxHeadersBytes) {
    return Invalid(field, absl::StrCat("keys and values must be at most ", kMaxHeadersBytes,
                                       " bytes in all, got ", total));
  }
  return absl::OkStatus();
}

// ValidateEnqueue but for depends_on_batch_index.
absl::Status CheckEnqueue(const v1::EnqueueRequest& r, const Limits& limits, absl::string_view p) {
  JW_RETURN_IF_ERROR(ValidateQueueName(absl::StrCat(p, "queue"), r.queue()));
  if (r.type().empty()) return Invalid(absl::StrCat(p, "type"), "is required (1..256 bytes)");
  JW_RETURN_IF_ERROR(CheckMaxBytes(absl::StrCat(p, "type"), r.type(), kMaxTypeLength));
  JW_RETURN_IF_ERROR(CheckMaxBytes(absl::StrCat(p, "payload"), r.payload(), limits.max_payload_bytes));
  JW_RETURN_IF_ERROR(CheckRange(absl::StrCat(p, "priority"), r.priority(), -kMaxPriority, kMaxPriority));
  JW_RETURN_IF_ERROR(CheckRange(absl::StrCat(p, "delay_ms"), r.delay_ms(), 0, kMaxDelayMs));
  JW_RETURN_IF_ERROR(CheckRange(absl::StrCat(p, "run_at_ms"), r.run_at_ms(), 0, INT64_MAX / 2));
  if (r.delay_ms() > 0 && r.run_at_ms() > 0) {
    return Invalid(absl::StrCat(p, "delay_ms"), "and run_at_ms are mutually exclusive; set one");
  }
  if (r.max_attempts() != 0) {  // 0 takes the broker default
    JW_RETURN_IF_ERROR(CheckRange(absl::StrCat(p, "max_attempts"), r.max_attempts(), 1, kMaxAttempts));
  }
  JW_RETURN_IF_ERROR(CheckMaxBytes(absl::StrCat(p, "idempotency_key"), r.idempotency_key(),
                                   kMaxIdempotencyKeyLength));
  JW_RETURN_IF_ERROR(CheckMaxBytes(absl::StrCat(p, "concurrency_key"), r.concurrency_key(),
                                   kMaxConcurrencyKeyLength));
  JW_RETURN_IF_ERROR(CheckRange(absl::StrCat(p, "backoff_base_ms"), r.backoff_base_ms(), 0, kMaxBackoffMs));
  JW_RETURN_IF_ERROR(CheckRange(absl::StrCat(p, "backoff_max_ms"), r.backoff_max_ms(), 0, kMaxBackoffMs));
  const int64_t base =
      r.backoff_base_ms() != 0 ? r.backoff_base_ms() : limits.default_backoff_base_ms;
  if (r.backoff_max_ms() != 0 && r.backoff_max_ms() < base) {
    return Invalid(absl::StrCat(p, "backoff_max_ms"),
                   absl::StrCat("must not be below backoff_base_ms (", base,
                                r.backoff_base_ms() == 0 ? ", the broker default" : "",
                                "), got ", r.backoff_max_ms()));
  }
  // Unset takes the broker default; 0 deletes the job on Ack.
  if (r.has_completed_retention_ms() &&
      (r.completed_retention_ms() < 0 ||
       r.completed_retention_ms() > limits.max_completed_retention_ms)) {
    return Invalid(absl::StrCat(p, "completed_retention_ms"),
                   absl::StrCat("must be in 0..", limits.max_completed_retention_ms,
                                " ms (the broker's --completed_retention_max_ms), got ",
                                r.completed_retention_ms()));
  }
  JW_RETURN_IF_ERROR(CheckRange(absl::StrCat(p, "timeout_ms"), r.timeout_ms(), 0, kMaxJobTimeoutMs));
  JW_RETURN_IF_ERROR(CheckHeaders(absl::StrCat(p, "headers"), r.headers()));
  return CheckDependsOn(absl::StrCat(p, "depends_on"), r.depends_on());
}

}  // namespace

absl::Status ValidateEnqueue(const v1::EnqueueRequest& r, const Limits& limits,
                             absl::string_view p) {
  if (!r.depends_on_batch_index().empty()) {
    return Invalid(absl::StrCat(p, "depends_on_batch_index"),
                   "is for EnqueueBatch only (use depends_on with job ids)");
  }
  return CheckEnqueue(r, limits, p);
}

absl::Status ValidateEnqueueBatch(const v1::EnqueueBatchRequest& r) {
  if (r.jobs_size() >= 1 && r.jobs_size() <= kMaxBatchJobs) return absl::OkStatus();
  return Invalid("jobs", absl::StrCat("must hold 1..", kMaxBatchJobs, " jobs, got ", r.jobs_size()));
}

std::vector<absl::Status> ValidateBatchJobs(const v1::EnqueueBatchRequest& r,
                                            const Limits& limits) {
  std::vector<absl::Status> out;
  out.reserve(r.jobs_size());
  // The partition the depends_on ids of each accepted job's linked jobs
  // name; -1 while none does.
  std::vector<int> bound(r.jobs_size(), -1);
  for (int i = 0; i < r.jobs_size(); ++i) {
    const v1::EnqueueRequest& job = r.jobs(i);
    const std::string p = absl::StrCat("jobs[", i, "].");
    absl::Status status = CheckEnqueue(job, limits, p);
    bound[i] = FirstIdPartition(job.depends_on());
    const int parents = job.depends_on_size() + job.depends_on_batch_index_size();
    if (status.ok() && parents > kMaxDependsOn) {
      status = Invalid(absl::StrCat(p, "depends_on_batch_index"),
                       absl::StrCat("with depends_on must name at most ", kMaxDependsOn,
                                    " parents, got ", parents));
    }
    const auto& indexes = job.depends_on_batch_index();
    for (int k = 0; status.ok() && k < indexes.size(); ++k) {
      const std::string at = absl::StrCat(p, "depends_on_batch_index[", k, "]");
      const int parent = indexes[k];
      if (parent < 0 || parent >= i) {
        status = Invalid(at, absl::StrCat("must name an earlier job of the batch (0..", i - 1,
                                          "), got ", parent));
      } else if (std::find(indexes.begin(), indexes.begin() + k, parent) !=
                 indexes.begin() + k) {
        status = Invalid(at, absl::StrCat("repeats ", parent));
      } else if (r.jobs(parent).queue() != job.queue()) {
        status = Invalid(at, absl::StrCat("names jobs[", parent, "] of queue \"",
                                          r.jobs(parent).queue(), "\": a batch parent must be of ",
                                          "the job's queue"));
      } else if (!out[parent].ok()) {
        status = Invalid(at, absl::StrCat("names jobs[", parent, "], which was refused"));
      } else if (bound[parent] >= 0 && bound[i] >= 0 && bound[parent] != bound[i]) {
        status = Invalid(at, absl::StrCat("links jobs of partitions ", bound[i], " and ",
                                          bound[parent], ": linked jobs must share one partition"));
      } else if (bound[parent] >= 0) {
        bound[i] = bound[parent];
      }
    }
    out.push_back(std::move(status));
  }
  return out;
}

namespace {

// `queues`: 1..`max` valid names, no repeats.
absl::Status CheckQueueList(const google::protobuf::RepeatedPtrField<std::string>& queues, int max) {
  if (queues.size() < 1 || queues.size() > max) {
    return Invalid("queues", absl::StrCat("must name 1..", max, " queues, got ", queues.size()));
  }
  for (int i = 0; i < queues.size(); ++i) {
    JW_RETURN_IF_ERROR(ValidateQueueName(absl::StrCat("queues[", i, "]"), queues[i]));
    for (int j = 0; j < i; ++j) {
      if (queues[j] == queues[i]) {
        return Invalid(absl::StrCat("queues[", i, "]"), absl::StrCat("repeats \"", queues[i], "\""));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateClaim(const v1::ClaimRequest& r) {
  JW_RETURN_IF_ERROR(CheckQueueList(r.queues(), kMaxClaimQueues));
  if (r.max_in_flight() != 0) {
    JW_RETURN_IF_ERROR(CheckRange("max_in_flight", r.max_in_flight(), 1, kMaxInFlight));
  }
  JW_RETURN_IF_ERROR(CheckLease("lease_ms", r.lease_ms()));
  if (r.types_size() > kMaxClaimTypes) {
    return Invalid("types", absl::StrCat("must name at most ", kMaxClaimTypes, " types, got ",
                                         r.types_size()));
  }
  for (int i = 0; i < r.types_size(); ++i) {
    const std::string field = absl::StrCat("types[", i, "]");
    if (r.types(i).empty()) return Invalid(field, "must not be empty (1..256 bytes)");
    JW_RETURN_IF_ERROR(CheckMaxBytes(field, r.types(i), kMaxTypeLength));
    for (int j = 0; j < i; ++j) {
      if (r.types(j) == r.types(i)) {
        return Invalid(field, absl::StrCat("repeats \"", absl::CHexEscape(r.types(i)), "\""));
      }
    }
  }
  if (r.weights_size() != 0 && r.weights_size() != r.queues_size()) {
    return Invalid("weights", absl::StrCat("must be empty (strict order) or give one weight per "
                                           "queue (", r.queues_size(), "), got ", r.weights_size()));
  }
  for (int i = 0; i < r.weights_size(); ++i) {
    JW_RETURN_IF_ERROR(CheckRange(absl::StrCat("weights[", i, "]"), r.weights(i), 1, kMaxWeight));
  }
  return CheckMaxBytes("worker_id", r.worker_id(), kMaxWorkerIdLength);
}

absl::Status ValidateAck(const v1::AckRequest& r, const Limits& limits, absl::string_view p) {
  JW_RETURN_IF_ERROR(CheckJobRef(r.queue(), r.job_id(), p));
  JW_RETURN_IF_ERROR(CheckLeaseToken(r.lease_token(), p));
  return CheckMaxBytes(absl::StrCat(p, "result"), r.result(), limits.max_payload_bytes);
}

absl::Status ValidateAckBatch(const v1::AckBatchRequest& r) {
  if (r.acks_size() >= 1 && r.acks_size() <= kMaxBatchAcks) return absl::OkStatus();
  return Invalid("acks", absl::StrCat("must hold 1..", kMaxBatchAcks, " acks, got ", r.acks_size()));
}

absl::Status ValidateFail(const v1::FailRequest& r) {
  JW_RETURN_IF_ERROR(CheckJobRef(r.queue(), r.job_id()));
  JW_RETURN_IF_ERROR(CheckLeaseToken(r.lease_token()));
  JW_RETURN_IF_ERROR(CheckMaxBytes("error", r.error(), kMaxErrorLength));
  JW_RETURN_IF_ERROR(CheckRange("retry_after_ms", r.retry_after_ms(), 0, kMaxBackoffMs));
  if (r.keep_attempt() && r.retry_after_ms() == 0) {
    return Invalid("keep_attempt", "needs retry_after_ms > 0 (when to run again)");
  }
  if (r.keep_attempt() && r.non_retryable()) {
    return Invalid("keep_attempt", "cannot be set with non_retryable");
  }
  return absl::OkStatus();
}

absl::Status ValidateExtendLease(const v1::ExtendLeaseRequest& r) {
  JW_RETURN_IF_ERROR(CheckJobRef(r.queue(), r.job_id()));
  JW_RETURN_IF_ERROR(CheckLeaseToken(r.lease_token()));
  return CheckLease("lease_ms", r.lease_ms());
}

absl::Status ValidateGetJob(const v1::GetJobRequest& r) {
  if (r.idempotency_key().empty()) return CheckJobRef(r.queue(), r.job_id());
  JW_RETURN_IF_ERROR(ValidateQueueName("queue", r.queue()));
  if (!r.job_id().empty()) {
    return Invalid("job_id", "must be empty when idempotency_key is given (exactly one of the two)");
  }
  return CheckMaxBytes("idempotency_key", r.idempotency_key(), kMaxIdempotencyKeyLength);
}

absl::Status ValidateCancel(const v1::CancelRequest& r) { return CheckJobRef(r.queue(), r.job_id()); }

absl::Status ValidateReportProgress(const v1::ReportProgressRequest& r) {
  JW_RETURN_IF_ERROR(CheckJobRef(r.queue(), r.job_id()));
  JW_RETURN_IF_ERROR(CheckLeaseToken(r.lease_token()));
  if (r.has_percent()) JW_RETURN_IF_ERROR(CheckRange("percent", r.percent(), 0, 100));
  JW_RETURN_IF_ERROR(CheckMaxBytes("data", r.data(), kMaxProgressDataBytes));
  if (!r.has_percent() && r.data().empty()) {
    return Invalid("percent", "a progress report needs percent (0..100) or data");
  }
  return absl::OkStatus();
}

absl::Status ValidateWaitJob(const v1::WaitJobRequest& r) {
  JW_RETURN_IF_ERROR(CheckJobRef(r.queue(), r.job_id()));
  return CheckRange("timeout_ms", r.timeout_ms(), 0, kMaxWaitTimeoutMs);
}

absl::Status ValidateSubscribe(const v1::SubscribeRequest& r) {
  JW_RETURN_IF_ERROR(CheckQueueList(r.queues(), kMaxSubscribeQueues));
  for (int i = 0; i < r.kinds_size(); ++i) {
    const std::string field = absl::StrCat("kinds[", i, "]");
    const int kind = r.kinds(i);
    if (kind == v1::EVENT_KIND_UNSPECIFIED || !v1::EventKind_IsValid(kind)) {
      return Invalid(field, absl::StrCat("must be a known event kind (1..", v1::EventKind_MAX,
                                         "), got ", kind));
    }
    for (int j = 0; j < i; ++j) {
      if (r.kinds(j) == kind) {
        return Invalid(field, absl::StrCat("repeats ", v1::EventKind_Name(r.kinds(i))));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace jobwire::service
