package jobwire

import "google.golang.org/grpc/codes"

// The final outcomes of a job run, as the Worker reports them to
// the hook of WithOutcomeHook.

// OutcomeKind names a final outcome of a job run.
type OutcomeKind string

// The final outcomes reported to the hook of WithOutcomeHook. *Error: the broker
// refused the Ack / Fail. *Unknown: it was still answered UNAVAILABLE /
// DEADLINE_EXCEEDED, or CANCELLED the client did not cause (a broker
// stopping, grpc/grpc#41785), when the lease ended, so it may or may not
// have been stored. ExpiredDropped: the delivery's lease had ended before its handler
// could start; no handler ran and nothing was sent (the broker delivers the
// job again).
const (
	OutcomeAckOK          OutcomeKind = "ack_ok"
	OutcomeAckError       OutcomeKind = "ack_error"
	OutcomeAckUnknown     OutcomeKind = "ack_unknown"
	OutcomeFailOK         OutcomeKind = "fail_ok"
	OutcomeFailError      OutcomeKind = "fail_error"
	OutcomeFailUnknown    OutcomeKind = "fail_unknown"
	OutcomeExpiredDropped OutcomeKind = "expired_dropped"
)

// Outcome is one final outcome of a job run, given to the hook of WithOutcomeHook.
type Outcome struct {
	Kind OutcomeKind
	Job  *Job
	// Code is the gRPC code of the last answer to the Ack / Fail (ack_error,
	// fail_error, ack_unknown, fail_unknown); OK otherwise.
	Code codes.Code
	// Err is the *Error of that answer (ack_error, fail_error, ack_unknown,
	// fail_unknown).
	Err error
	// FailOutcome is "RETRY_SCHEDULED" or "DEAD" (fail_ok).
	FailOutcome string
	// NextAttemptAtMs is when the retry is due (fail_ok with RETRY_SCHEDULED).
	NextAttemptAtMs int64
	// HandlerErr is the error the job was failed with (fail_ok, fail_error).
	HandlerErr error
	// ErrorText is the text sent with Fail (fail_ok, fail_error, fail_unknown).
	ErrorText string
	// Result is the bytes sent with Ack (ack_ok, ack_error, ack_unknown).
	Result []byte
}

func (r *runner) outcome(o Outcome) {
	if f := r.w.cfg.onOutcome; f != nil {
		f(o)
	}
}
