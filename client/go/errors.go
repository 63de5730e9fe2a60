package jobwire

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Error is the error every failed RPC of this package returns: the gRPC status
// code and the broker's message, unchanged.
//
// It works with errors.As and with status.Code / status.FromError (it
// implements GRPCStatus).
type Error struct {
	// Code is the gRPC status code (codes.InvalidArgument, codes.NotFound, ...).
	Code codes.Code
	// Message is the broker's message exactly as it was sent.
	Message string

	st *status.Status
}

// Error implements error: "jobwire: <CODE>: <message>".
func (e *Error) Error() string {
	return fmt.Sprintf("jobwire: %s: %s", CodeName(e.Code), e.Message)
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
	return &Error{Code: st.Code(), Message: st.Message(), st: st}
}

// newError builds an *Error from a code and message (per-job batch errors).
func newError(c codes.Code, msg string) *Error {
	return &Error{Code: c, Message: msg, st: status.New(c, msg)}
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
// any failure). Make it with RetryAfter; find it with errors.As.
type RetryAfterError struct {
	// Err is the handler's error; its text is the Fail error text.
	Err error
	// Delay is the wait before the next attempt.
	Delay time.Duration
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
// both becomes DEAD at once. RetryAfter(nil, d) is nil.
//
//	return nil, jobwire.RetryAfter(fmt.Errorf("rate limited: %w", err), 30*time.Second)
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &RetryAfterError{Err: err, Delay: d}
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
