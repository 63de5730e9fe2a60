// The error details of a failed call (proto/jobwire/v1/broker.proto, "Error
// details"), read from the absl::Status a Client or Worker call returned.
//
// FromGrpc (client.h) keeps each google.rpc detail the broker sent as a
// payload of the absl::Status, under the detail's type URL
// ("type.googleapis.com/google.rpc.ErrorInfo", ".../google.rpc.BadRequest",
// ".../google.rpc.RetryInfo") holding the serialized message: code that has
// googleapis' generated C++ types can parse them itself. The functions below
// read them without those types. Per-item errors of EnqueueBatch and
// AckBatch carry an ErrorInfo with the item's reason too.
//
//   absl::Status s = client.Ack(queue, id, token, result);
//   if (jobwire::client::ErrorReason(s) == jobwire::client::reason::kLeaseStale) {
//     // another run owns the job: drop it
//   }
#ifndef JOBWIRE_CLIENT_CPP_ERROR_DETAILS_H_
#define JOBWIRE_CLIENT_CPP_ERROR_DETAILS_H_

#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace jobwire::client {

// The reasons of broker.proto's "Error details" (ErrorInfo.reason in the
// domain "jobwire.dev"). An error no reason names has its code's name.
namespace reason {
inline constexpr absl::string_view kInvalidField = "INVALID_FIELD";
inline constexpr absl::string_view kJobNotFound = "JOB_NOT_FOUND";
inline constexpr absl::string_view kQueueNotFound = "QUEUE_NOT_FOUND";
inline constexpr absl::string_view kDependencyNotFound = "DEPENDENCY_NOT_FOUND";
inline constexpr absl::string_view kLeaseStale = "LEASE_STALE";
inline constexpr absl::string_view kJobState = "JOB_STATE";
inline constexpr absl::string_view kJobCancelRequested = "JOB_CANCEL_REQUESTED";
inline constexpr absl::string_view kRunTimedOut = "RUN_TIMED_OUT";
inline constexpr absl::string_view kQueueHasActiveJobs = "QUEUE_HAS_ACTIVE_JOBS";
inline constexpr absl::string_view kPartitionsDecrease = "PARTITIONS_DECREASE";
inline constexpr absl::string_view kQueueExists = "QUEUE_EXISTS";
inline constexpr absl::string_view kTokenMissing = "TOKEN_MISSING";
inline constexpr absl::string_view kTokenInvalid = "TOKEN_INVALID";
inline constexpr absl::string_view kTokenNotPermitted = "TOKEN_NOT_PERMITTED";
inline constexpr absl::string_view kRedisOutOfMemory = "REDIS_OUT_OF_MEMORY";
inline constexpr absl::string_view kTooManyClaimStreams = "TOO_MANY_CLAIM_STREAMS";
inline constexpr absl::string_view kTooManyWaits = "TOO_MANY_WAITS";
inline constexpr absl::string_view kWaitTimeout = "WAIT_TIMEOUT";
inline constexpr absl::string_view kTooManySubscriptions = "TOO_MANY_SUBSCRIPTIONS";
inline constexpr absl::string_view kSubscriberTooSlow = "SUBSCRIBER_TOO_SLOW";
inline constexpr absl::string_view kRedisUnavailable = "REDIS_UNAVAILABLE";
inline constexpr absl::string_view kBrokerShuttingDown = "BROKER_SHUTTING_DOWN";
inline constexpr absl::string_view kClaimStreamMaxAge = "CLAIM_STREAM_MAX_AGE";
inline constexpr absl::string_view kJobRecordCorrupt = "JOB_RECORD_CORRUPT";
}  // namespace reason

// Payload type URLs of the details (google.protobuf.Any type URLs).
inline constexpr absl::string_view kErrorInfoUrl = "type.googleapis.com/google.rpc.ErrorInfo";
inline constexpr absl::string_view kBadRequestUrl = "type.googleapis.com/google.rpc.BadRequest";
inline constexpr absl::string_view kRetryInfoUrl = "type.googleapis.com/google.rpc.RetryInfo";

// ErrorInfo.reason; "" when the status has no ErrorInfo (OK, or an error
// made by the client itself, such as a deadline).
std::string ErrorReason(const absl::Status& status);
// ErrorInfo.domain ("jobwire.dev"); "" without an ErrorInfo.
std::string ErrorDomain(const absl::Status& status);
// ErrorInfo.metadata (e.g. "field", "state", "queue", "job_id").
std::map<std::string, std::string> ErrorMetadata(const absl::Status& status);
// The field of the BadRequest's first field violation (INVALID_FIELD).
std::optional<std::string> ErrorField(const absl::Status& status);
// RetryInfo.retry_delay: how long to wait before retrying.
std::optional<absl::Duration> ErrorRetryDelay(const absl::Status& status);

// Copies the google.rpc.Status details of a gRPC error (its binary
// error_details) onto `status` as payloads (see above). Used by FromGrpc.
void AttachErrorDetails(absl::string_view rpc_status_bytes, absl::Status* status);
// Attaches an ErrorInfo with `reason` in the jobwire.dev domain (the batch
// results' reason field). Nothing for an empty reason or an OK status.
void AttachReason(absl::string_view reason, absl::Status* status);

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_ERROR_DETAILS_H_
