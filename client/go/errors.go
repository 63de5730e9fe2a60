package jobwire

import (
	"context"
	"errors"
	"fmt"

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
