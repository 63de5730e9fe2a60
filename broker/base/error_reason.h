// Error reasons: the stable, machine-readable cause of a failed call, sent to
// clients as google.rpc.ErrorInfo.reason in the domain "jobwire.dev" (the
// gRPC layer's ToGrpcStatus, broker/service/grpc_status.h). The layer that
// knows the cause attaches it to its absl::Status as a payload; the status
// then travels unchanged through the layers above. A status without a reason
// is sent with the name of its code ("UNAVAILABLE", "INTERNAL", ...).
//
// Also carried the same way: the request field an INVALID_ARGUMENT is about
// (google.rpc.BadRequest), and the delay after which a retry may succeed
// (google.rpc.RetryInfo).
//
// Every reason is documented in proto/jobwire/v1/broker.proto ("Error
// model"); a reason, once sent, keeps its meaning.
#ifndef JOBWIRE_BROKER_BASE_ERROR_REASON_H_
#define JOBWIRE_BROKER_BASE_ERROR_REASON_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace jobwire::base {

// google.rpc.ErrorInfo.domain of every jobwire error.
inline constexpr absl::string_view kErrorDomain = "jobwire.dev";

namespace reason {
// INVALID_ARGUMENT: a request field breaks a documented limit (the field is
// named in ErrorInfo.metadata["field"] and google.rpc.BadRequest).
inline constexpr absl::string_view kInvalidField = "INVALID_FIELD";
// NOT_FOUND.
inline constexpr absl::string_view kJobNotFound = "JOB_NOT_FOUND";
inline constexpr absl::string_view kQueueNotFound = "QUEUE_NOT_FOUND";
inline constexpr absl::string_view kDependencyNotFound = "DEPENDENCY_NOT_FOUND";  // ["job_id"]
// FAILED_PRECONDITION.
inline constexpr absl::string_view kLeaseStale = "LEASE_STALE";
inline constexpr absl::string_view kJobState = "JOB_STATE";  // metadata["state"]
inline constexpr absl::string_view kJobCancelRequested = "JOB_CANCEL_REQUESTED";
inline constexpr absl::string_view kRunTimedOut = "RUN_TIMED_OUT";
inline constexpr absl::string_view kQueueHasActiveJobs = "QUEUE_HAS_ACTIVE_JOBS";
inline constexpr absl::string_view kPartitionsDecrease = "PARTITIONS_DECREASE";
// ALREADY_EXISTS.
inline constexpr absl::string_view kQueueExists = "QUEUE_EXISTS";
// UNAUTHENTICATED.
inline constexpr absl::string_view kTokenMissing = "TOKEN_MISSING";
inline constexpr absl::string_view kTokenInvalid = "TOKEN_INVALID";
// PERMISSION_DENIED.
inline constexpr absl::string_view kTokenNotPermitted = "TOKEN_NOT_PERMITTED";
// RESOURCE_EXHAUSTED.
inline constexpr absl::string_view kRedisOutOfMemory = "REDIS_OUT_OF_MEMORY";
inline constexpr absl::string_view kTooManyClaimStreams = "TOO_MANY_CLAIM_STREAMS";
inline constexpr absl::string_view kTooManyWaits = "TOO_MANY_WAITS";
inline constexpr absl::string_view kTooManySubscriptions = "TOO_MANY_SUBSCRIPTIONS";
inline constexpr absl::string_view kSubscriberTooSlow = "SUBSCRIBER_TOO_SLOW";
inline constexpr absl::string_view kWaitTimeout = "WAIT_TIMEOUT";  // DEADLINE_EXCEEDED (WaitJob)
// UNAVAILABLE.
inline constexpr absl::string_view kRedisUnavailable = "REDIS_UNAVAILABLE";
inline constexpr absl::string_view kBrokerShuttingDown = "BROKER_SHUTTING_DOWN";
inline constexpr absl::string_view kClaimStreamMaxAge = "CLAIM_STREAM_MAX_AGE";
// DATA_LOSS.
inline constexpr absl::string_view kJobRecordCorrupt = "JOB_RECORD_CORRUPT";
}  // namespace reason

// `status` with `reason` attached (replacing any earlier one). OK stays OK.
absl::Status WithReason(absl::Status status, absl::string_view reason);
// `status` with a metadata entry for its ErrorInfo (key [a-zA-Z0-9_-]).
absl::Status WithMetadata(absl::Status status, absl::string_view key, absl::string_view value);
// `status` naming the request field it is about (reason INVALID_FIELD,
// metadata "field", and a google.rpc.BadRequest violation).
absl::Status WithField(absl::Status status, absl::string_view field);
// `status` with the delay after which retrying may succeed (RetryInfo).
absl::Status WithRetryDelay(absl::Status status, absl::Duration delay);

// RESOURCE_EXHAUSTED with `reason` and a retry delay of 1 s: a limit of
// streams open at once on this broker (TOO_MANY_CLAIM_STREAMS,
// TOO_MANY_WAITS, TOO_MANY_SUBSCRIPTIONS).
absl::Status TooManyStreamsError(absl::string_view message, absl::string_view reason);

// UNAVAILABLE with reason REDIS_UNAVAILABLE: Redis cannot be reached or
// answered with a transient error.
absl::Status RedisUnavailableError(absl::string_view message);

// The attached reason, else the name of the status code ("UNAVAILABLE").
std::string ReasonOf(const absl::Status& status);
// The attached metadata as key/value pairs, in the order attached.
std::vector<std::pair<std::string, std::string>> MetadataOf(const absl::Status& status);
std::optional<std::string> FieldOf(const absl::Status& status);
std::optional<absl::Duration> RetryDelayOf(const absl::Status& status);

}  // namespace jobwire::base

#endif  // JOBWIRE_BROKER_BASE_ERROR_REASON_H_
