package jobwire

// Errors of this package.
//
// Every failed RPC returns an *Error: the gRPC code, the broker's message and
// what the broker's error details say (broker.proto, "Error details"): the
// stable Reason of its google.rpc.ErrorInfo (domain "jobwire.dev") with its
// Metadata, the Field of a google.rpc.BadRequest (INVALID_FIELD) and the
// RetryDelay of a google.rpc.RetryInfo. A per-job error of EnqueueBatch or
// per-ack error of AckBatch is an *Error too, whose Reason is the result's
// reason field (it has no Metadata, Field or RetryDelay).
//
// There is one sentinel error per reason of broker.proto (ErrJobNotFound,
// ErrLeaseStale, ...): errors.Is(err, jobwire.ErrLeaseStale) is true exactly
// when err is, or wraps, an *Error whose Reason is "LEASE_STALE". The
// sentinels are values of an unexported type: they only name a reason, are
// never returned themselves (but two are the causes of a Worker's handler
// context: ErrJobCancelled and ErrRunTimedOut, see Handler), and
// errors.As(err, &je) finds only real errors.
// A reason without a sentinel (the broker may add reasons; an error no row of
// broker.proto names has its code's name as reason, "INTERNAL", ...) is
// matched by comparing Error.Reason.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errorDomain is the domain of the broker's google.rpc.ErrorInfo; an
// ErrorInfo of another domain is ignored.
const errorDomain = "jobwire.dev"

// Error is the error every failed RPC of this package returns: the gRPC status
// code and the broker's message, unchanged, with the broker's error details.
//
// It works with errors.As, with errors.Is and the Err* reason sentinels, and
// with status.Code / status.FromError (it implements GRPCStatus, which
// returns the status as received, details included).
type Error struct {
	// Code is the gRPC status code (codes.InvalidArgument, codes.NotFound, ...).
	Code codes.Code
	// Message is the broker's message exactly as it was sent.
	Message string
	// Reason is the stable reason of the error (broker.proto, "Error
	// details"): "LEASE_STALE", "JOB_NOT_FOUND", ... It is the ErrorInfo
	// reason of an RPC error and the reason field of a batch result; "" when
	// the error carries none (an error made on the client side, such as a
	// refused connection or an expired deadline, or a broker that sends no
	// details).
	Reason string
	// Metadata is the ErrorInfo metadata ("field" with INVALID_FIELD, "state"
	// with JOB_STATE, "queue" with TOKEN_NOT_PERMITTED, "job_id" with
	// DEPENDENCY_NOT_FOUND); nil when there is none. Do not modify it.
	Metadata map[string]string
	// Field is the field path of the BadRequest field violation that comes
	// with INVALID_FIELD ("priority", "jobs[3].priority"); "" when none.
	Field string
	// RetryDelay is the RetryInfo delay (REDIS_OUT_OF_MEMORY,
	// TOO_MANY_CLAIM_STREAMS, TOO_MANY_WAITS, TOO_MANY_SUBSCRIPTIONS): wait
	// at least this long before retrying; 0 when the broker sent none.
	RetryDelay time.Duration

	st *status.Status
}

// Error implements error: "jobwire: <CODE>: <message>".
func (e *Error) Error() string {
	return fmt.Sprintf("jobwire: %s: %s", CodeName(e.Code), e.Message)
}

// Is reports whether target is the sentinel of e's reason (ErrLeaseStale for
// Reason "LEASE_STALE", ...), so that errors.Is(err, jobwire.ErrLeaseStale)
// holds exactly when err's Reason is LEASE_STALE. An *Error without a Reason
// matches no sentinel.
func (e *Error) Is(target error) bool {
	r, ok := target.(*reasonError)
	return ok && e.Reason != "" && e.Reason == r.reason
}

// GRPCStatus returns the status the error was made from, so that
// status.Code(err) and status.FromError(err) see the broker's code.
func (e *Error) GRPCStatus() *status.Status {
	if e.st != nil {
		return e.st
	}
	return status.New(e.Code, e.Message)
}

// Status is the same as GRPCStatus.
func (e *Error) Status() *status.Status { return e.GRPCStatus() }

// reasonError is the type of the reason sentinels: it matches, through
// (*Error).Is, every *Error of its reason.
type reasonError struct{ reason string }

// Error implements error: "jobwire: <REASON>".
func (e *reasonError) Error() string { return "jobwire: " + e.reason }

// The reason sentinels, one per reason of broker.proto: use them with
// errors.Is (never returned themselves). The codes they come with are in
// broker.proto.
var (
	// ErrInvalidField: INVALID_ARGUMENT; the request breaks a documented
	// limit. Error.Field and Metadata["field"] name the field.
	ErrInvalidField error = &reasonError{"INVALID_FIELD"}
	// ErrJobNotFound: NOT_FOUND; no such job in that queue.
	ErrJobNotFound error = &reasonError{"JOB_NOT_FOUND"}
	// ErrQueueNotFound: NOT_FOUND (UpdateQueue); no such queue.
	ErrQueueNotFound error = &reasonError{"QUEUE_NOT_FOUND"}
	// ErrDependencyNotFound: NOT_FOUND (Enqueue); an id of WithDependsOn
	// names no job of the queue. Metadata["job_id"] is that id. In
	// EnqueueBatch also: an index of WithDependsOnBatchIndex names a job of
	// the batch that was not stored (BatchResult.Err's message names it).
	ErrDependencyNotFound error = &reasonError{"DEPENDENCY_NOT_FOUND"}
	// ErrLeaseStale: FAILED_PRECONDITION; the lease token is not the job's
	// current lease. Drop the job: another run owns it.
	ErrLeaseStale error = &reasonError{"LEASE_STALE"}
	// ErrJobState: FAILED_PRECONDITION; the job's state refuses the call.
	// Metadata["state"] is the state ("pending", "active", "completed",
	// "dead").
	ErrJobState error = &reasonError{"JOB_STATE"}
	// ErrJobCancelled: FAILED_PRECONDITION (ExtendLease, ReportProgress),
	// reason JOB_CANCEL_REQUESTED; Cancel asked this run to stop. Stop the
	// handler and return an error (the job becomes DEAD "cancelled").
	// It is also the cause (context.Cause) of a Worker's handler context
	// cancelled because Cancel asked its run to stop.
	ErrJobCancelled error = &reasonError{"JOB_CANCEL_REQUESTED"}
	// ErrRunTimedOut: FAILED_PRECONDITION (Ack, ExtendLease,
	// ReportProgress), reason RUN_TIMED_OUT; the run passed its deadline
	// (WithRunTimeout): the attempt fails with error "timeout".
	// It is also the cause (context.Cause) of a Worker's handler context
	// whose deadline (receipt + the job's timeout) passed, or whose run the
	// broker found past its deadline.
	ErrRunTimedOut error = &reasonError{"RUN_TIMED_OUT"}
	// ErrQueueHasActiveJobs: FAILED_PRECONDITION (DeleteQueue without force).
	ErrQueueHasActiveJobs error = &reasonError{"QUEUE_HAS_ACTIVE_JOBS"}
	// ErrPartitionsDecrease: FAILED_PRECONDITION (UpdateQueue).
	ErrPartitionsDecrease error = &reasonError{"PARTITIONS_DECREASE"}
	// ErrQueueExists: ALREADY_EXISTS (CreateQueue).
	ErrQueueExists error = &reasonError{"QUEUE_EXISTS"}
	// ErrTokenMissing: UNAUTHENTICATED; no bearer token was sent.
	ErrTokenMissing error = &reasonError{"TOKEN_MISSING"}
	// ErrTokenInvalid: UNAUTHENTICATED; the token is malformed or unknown.
	ErrTokenInvalid error = &reasonError{"TOKEN_INVALID"}
	// ErrTokenNotPermitted: PERMISSION_DENIED; Metadata["queue"] is the queue
	// (absent for ListQueues).
	ErrTokenNotPermitted error = &reasonError{"TOKEN_NOT_PERMITTED"}
	// ErrRedisOutOfMemory: RESOURCE_EXHAUSTED; nothing was stored. Retry
	// after Error.RetryDelay, with backoff.
	ErrRedisOutOfMemory error = &reasonError{"REDIS_OUT_OF_MEMORY"}
	// ErrTooManyClaimStreams: RESOURCE_EXHAUSTED (Claim). Retry after
	// Error.RetryDelay.
	ErrTooManyClaimStreams error = &reasonError{"TOO_MANY_CLAIM_STREAMS"}
	// ErrTooManyWaits: RESOURCE_EXHAUSTED (WaitJob); the broker already
	// follows its --max_wait_streams jobs. Retry after Error.RetryDelay.
	ErrTooManyWaits error = &reasonError{"TOO_MANY_WAITS"}
	// ErrWaitTimeout: DEADLINE_EXCEEDED (WaitJob); the job did not finish
	// within the call's timeout_ms. Client.Wait returns it as a
	// *WaitTimeoutError, which also matches it when the client itself ended
	// the wait (its Err then has no Reason).
	ErrWaitTimeout error = &reasonError{"WAIT_TIMEOUT"}
	// ErrTooManySubscriptions: RESOURCE_EXHAUSTED (Subscribe); the broker
	// already serves its --max_subscriptions streams. Retry after
	// Error.RetryDelay (a running Subscription does so by itself).
	ErrTooManySubscriptions error = &reasonError{"TOO_MANY_SUBSCRIPTIONS"}
	// ErrSubscriberTooSlow: RESOURCE_EXHAUSTED (Subscribe); more events
	// waited for the client than the broker keeps. A running Subscription
	// subscribes again by itself (with an EventEventsMissed).
	ErrSubscriberTooSlow error = &reasonError{"SUBSCRIBER_TOO_SLOW"}
	// ErrRedisUnavailable: UNAVAILABLE; Redis cannot be reached, or answered
	// with a transient error. Safe to retry.
	ErrRedisUnavailable error = &reasonError{"REDIS_UNAVAILABLE"}
	// ErrBrokerShuttingDown: UNAVAILABLE; this broker replica is draining.
	// Reconnect (to another replica).
	ErrBrokerShuttingDown error = &reasonError{"BROKER_SHUTTING_DOWN"}
	// ErrClaimStreamMaxAge: UNAVAILABLE (Claim); the stream reached the
	// broker's --max_stream_age_ms. Reconnect at once.
	ErrClaimStreamMaxAge error = &reasonError{"CLAIM_STREAM_MAX_AGE"}
	// ErrJobRecordCorrupt: DATA_LOSS; the job's stored record is damaged.
	ErrJobRecordCorrupt error = &reasonError{"JOB_RECORD_CORRUPT"}
)

// toError turns an error from a gRPC call into an *Error. nil stays nil.
func toError(err error) error {
	if err == nil {
		return nil
	}
	var je *Error
	if errors.As(err, &je) {
		return je
	}
	st, ok := status.FromError(err)
	if !ok {
		// Not a gRPC status (should not happen for RPC errors); map context
		// errors the way gRPC does.
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			st = status.New(codes.DeadlineExceeded, err.Error())
		case errors.Is(err, context.Canceled):
			st = status.New(codes.Canceled, err.Error())
		default:
			st = status.New(codes.Unknown, err.Error())
		}
	}
	e := &Error{Code: st.Code(), Message: st.Message(), st: st}
	e.readDetails(st.Details())
	return e
}

// brokerWentAway reports whether e, the end of a WaitJob or Subscribe call
// or the answer to a Worker's Ack / Fail, says the broker went away
// (stopping, restarting, unreachable), so that the wait or subscription
// calls again after the reconnect backoff, and the Ack / Fail is sent again
// (retryable): UNAVAILABLE, or CANCELLED the client did not cause (gRPC ends
// a call that reached a broker as it stopped with CANCELLED: gRPC core
// zombifies a call that arrives after Server::Shutdown began and before the
// client processed the GOAWAY, grpc/grpc#41785, where gRPC's status codes
// say UNAVAILABLE; no handler saw it). The caller rules out its own
// cancellation first (its ctx ended, or it cancelled the call on purpose):
// that CANCELLED still ends the wait or subscription, and is final for an
// Ack / Fail.
func brokerWentAway(e *Error) bool {
	return e.Code == codes.Unavailable || e.Code == codes.Canceled
}

// readDetails fills Reason and Metadata from the first ErrorInfo of domain
// errorDomain, Field from the first field violation of the first BadRequest
// and RetryDelay from the first RetryInfo among details (as
// status.Status.Details returns them; undecodable entries are errors and are
// skipped).
func (e *Error) readDetails(details []any) {
	var haveInfo, haveBadRequest, haveRetry bool
	for _, d := range details {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			if !haveInfo && d.GetDomain() == errorDomain {
				haveInfo = true
				e.Reason = d.GetReason()
				if len(d.GetMetadata()) > 0 {
					e.Metadata = d.GetMetadata()
				}
			}
		case *errdetails.BadRequest:
			if !haveBadRequest && len(d.GetFieldViolations()) > 0 {
				haveBadRequest = true
				e.Field = d.GetFieldViolations()[0].GetField()
			}
		case *errdetails.RetryInfo:
			if !haveRetry && d.GetRetryDelay() != nil {
				haveRetry = true
				e.RetryDelay = d.GetRetryDelay().AsDuration()
			}
		}
	}
}

// newError builds an *Error from a code, reason and message: a per-job error
// of a batch result (reason is the result's reason field), or an error the
// client detects itself (reason "").
func newError(c codes.Code, reason, msg string) *Error {
	return &Error{Code: c, Message: msg, Reason: reason, st: status.New(c, msg)}
}

var codeNames = map[codes.Code]string{
	codes.OK:                 "OK",
	codes.Canceled:           "CANCELLED",
	codes.Unknown:            "UNKNOWN",
	codes.InvalidArgument:    "INVALID_ARGUMENT",
	codes.DeadlineExceeded:   "DEADLINE_EXCEEDED",
	codes.NotFound:           "NOT_FOUND",
	codes.AlreadyExists:      "ALREADY_EXISTS",
	codes.PermissionDenied:   "PERMISSION_DENIED",
	codes.ResourceExhausted:  "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION",
	codes.Aborted:            "ABORTED",
	codes.OutOfRange:         "OUT_OF_RANGE",
	codes.Unimplemented:      "UNIMPLEMENTED",
	codes.Internal:           "INTERNAL",
	codes.Unavailable:        "UNAVAILABLE",
	codes.DataLoss:           "DATA_LOSS",
	codes.Unauthenticated:    "UNAUTHENTICATED",
}

// CodeName returns the canonical upper-case name of a gRPC code
// ("INVALID_ARGUMENT", "UNAVAILABLE", ...), as the other jobwire clients and
// the proto comments spell it.
func CodeName(c codes.Code) string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("CODE(%d)", uint32(c))
}

// nonRetryableError marks a handler error as non-retryable.
type nonRetryableError struct{ err error }

func (e *nonRetryableError) Error() string { return e.err.Error() }
func (e *nonRetryableError) Unwrap() error { return e.err }

// NonRetryable wraps a handler error so that the job is failed with
// non_retryable set: it becomes DEAD at once, whatever attempts remain.
// NonRetryable(nil) is nil.
func NonRetryable(err error) error {
	if err == nil {
		return nil
	}
	return &nonRetryableError{err: err}
}

// IsNonRetryable reports whether err (or an error it wraps) was made by
// NonRetryable.
func IsNonRetryable(err error) bool {
	var nr *nonRetryableError
	return errors.As(err, &nr)
}

// maxRetryAfter is the broker's limit on Fail.retry_after_ms (7 days).
const maxRetryAfter = 7 * 24 * time.Hour

// RetryAfterError marks a handler error as "retry after Delay": the job is
// failed with retry_after_ms set, so the broker schedules its next attempt
// Delay from now instead of after its backoff (attempts are counted as for
// any failure, unless KeepAttempt). Make it with RetryAfter; find it with
// errors.As.
type RetryAfterError struct {
	// Err is the handler's error; its text is the Fail error text.
	Err error
	// Delay is the wait before the next attempt.
	Delay time.Duration
	// KeepAttempt: the run was turned away rather than failed, and does not
	// count as an attempt (Fail.keep_attempt; option KeepAttempt).
	KeepAttempt bool
}

func (e *RetryAfterError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("retry after %s", e.Delay)
	}
	return e.Err.Error()
}

// Unwrap returns Err.
func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter wraps a handler error so that the job is retried after d: the
// Worker sends Fail with retry_after_ms = d rounded up to a whole ms, at least
// 1 ms and at most the broker's 7 days. It is found through any wrapping
// (errors.As), and composes with NonRetryable, which wins: a job failed with
// both becomes DEAD at once, and neither the delay nor keep_attempt is sent.
// RetryAfter(nil, d) is nil.
//
//	return nil, jobwire.RetryAfter(fmt.Errorf("rate limited: %w", err), 30*time.Second)
//
// With the option KeepAttempt the run does not count as an attempt:
//
//	return nil, jobwire.RetryAfter(err, 30*time.Second, jobwire.KeepAttempt())
func RetryAfter(err error, d time.Duration, opts ...RetryAfterOption) error {
	if err == nil {
		return nil
	}
	e := &RetryAfterError{Err: err, Delay: d}
	for _, o := range opts {
		o(e)
	}
	return e
}

// RetryAfterOption is an option of RetryAfter.
type RetryAfterOption func(*RetryAfterError)

// KeepAttempt says the run was turned away rather than failed (a downstream
// answered "rate limited, retry after X"): the Worker's Fail also carries
// keep_attempt, so this run does not count as an attempt and never uses up
// the job's max attempts (docs/semantics.md, "Retries and backoff"). A run
// that Cancel asked to stop, or past its deadline, counts anyway.
func KeepAttempt() RetryAfterOption {
	return func(e *RetryAfterError) { e.KeepAttempt = true }
}

// retryAfterMs is the Fail.retry_after_ms of a handler error: 0 when it
// carries no RetryAfter or is non-retryable, else its delay rounded up to a
// whole ms and clamped to 1 ms .. 7 days.
func retryAfterMs(err error) int64 {
	var ra *RetryAfterError
	if IsNonRetryable(err) || !errors.As(err, &ra) {
		return 0
	}
	d := min(ra.Delay, maxRetryAfter)
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond > 0 {
		ms++
	}
	return max(ms, 1)
}

// keepAttempt is the Fail.keep_attempt of a handler error: whether the
// RetryAfter that retryAfterMs reads (none when non-retryable) has
// KeepAttempt.
func keepAttempt(err error) bool {
	var ra *RetryAfterError
	return retryAfterMs(err) > 0 && errors.As(err, &ra) && ra.KeepAttempt
}
