package jobwire

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The settle rule on its own: which answers to an Ack / Fail leave its
// outcome unknown, so that it is sent again (retryable). A CANCELLED counts
// as UNAVAILABLE (grpc/grpc#41785) unless the client caused it: the
// attempt's context, or the worker's hard context, had ended.
func TestSettleRetryable(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	live := context.Background()
	for _, tc := range []struct {
		name          string
		err           error
		attempt, hard context.Context
		want          bool
	}{
		{"unavailable", status.Error(codes.Unavailable, "connection refused"), live, live, true},
		{"deadline exceeded", status.Error(codes.DeadlineExceeded, "deadline"), live, live, true},
		{"cancelled by the broker", status.Error(codes.Canceled, "CANCELLED"), live, live, true},
		{"cancelled per ack", newError(codes.Canceled, "", "cancelled"), live, live, true},
		{"cancelled, attempt ended", status.Error(codes.Canceled, "context canceled"), ended, live, false},
		{"cancelled, worker abandoned", status.Error(codes.Canceled, "context canceled"), live, ended, false},
		{"cancelled, not a status", context.Canceled, ended, live, false},
		{"unavailable, worker abandoned", status.Error(codes.Unavailable, "connection refused"), live, ended, true},
		{"refused", newError(codes.FailedPrecondition, "LEASE_STALE", "stale"), live, live, false},
		{"not found", newError(codes.NotFound, "JOB_NOT_FOUND", "gone"), live, live, false},
		{"internal", errors.New("boom"), live, live, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testRunner()
			r.hardCtx = tc.hard
			if got := r.retryable(tc.attempt, tc.err); got != tc.want {
				t.Errorf("retryable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
