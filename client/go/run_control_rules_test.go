package jobwire

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// The rules of run control on their own: a run's context (deadline, stop
// requests, refusals), its Fail text, the lease capped at the run's deadline,
// and the run control fields of events and enqueue requests.

// testRunner is a runner whose calls go to a fakeStub.
func testRunner() *runner {
	w := &Worker{log: slog.New(slog.DiscardHandler)}
	w.cfg.conn.timeout = 5 * time.Second
	return &runner{w: w, hardCtx: context.Background(), stub: &fakeStub{}}
}

// fakeStub answers ReportProgress with err, or as gRPC does when the call's
// context has ended (the other methods are not implemented).
type fakeStub struct {
	jobwirepb.BrokerServiceClient
	err error
}

func (f *fakeStub) ReportProgress(ctx context.Context, _ *jobwirepb.ReportProgressRequest, _ ...grpc.CallOption) (*jobwirepb.ReportProgressResponse, error) {
	if ctx.Err() != nil {
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	if f.err != nil {
		return nil, f.err
	}
	return &jobwirepb.ReportProgressResponse{}, nil
}

// refusal is a broker error with reason.
func refusal(t *testing.T, code codes.Code, reason string) error {
	t.Helper()
	st, err := status.New(code, reason).WithDetails(&errdetails.ErrorInfo{Domain: "jobwire.dev", Reason: reason})
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

func claimedJob(id, token string, timeoutMs int64) *jobwirepb.ClaimedJob {
	return &jobwirepb.ClaimedJob{
		Job:        &jobwirepb.Job{Id: id, Queue: "q", TimeoutMs: timeoutMs},
		LeaseToken: token,
		LeaseMs:    30000,
	}
}

func TestRunWithoutTimeoutHasNoDeadline(t *testing.T) {
	r := testRunner()
	cj := claimedJob("1", "tok", 0)
	now := time.Now()
	run := r.newRun(cj, now, r.newLease(cj, now))
	defer run.end()
	if d, ok := run.ctx.Deadline(); ok {
		t.Errorf("deadline %v, want none", d)
	}
	if run.lease.atRunDeadline() {
		t.Errorf("a lease without a run deadline is at it")
	}
	if got := run.stoppedText(); got != "" {
		t.Errorf("stoppedText of a running run = %q", got)
	}
}

func TestRunDeadlineIsReceiptPlusTimeout(t *testing.T) {
	r := testRunner()
	cj := claimedJob("1", "tok", 50)
	received := time.Now()
	lease := r.newLease(cj, received)
	run := r.newRun(cj, received, lease)
	defer run.end()
	d, ok := run.ctx.Deadline()
	if !ok || !d.Equal(received.Add(50*time.Millisecond)) {
		t.Fatalf("deadline %v %v, want %v", d, ok, received.Add(50*time.Millisecond))
	}
	// The lease (30 s granted) is never thought to last past the deadline,
	// and is not renewed once it lasts until then.
	if got := lease.expiry(); !got.Equal(d) || !lease.atRunDeadline() {
		t.Errorf("lease end %v (at the run deadline: %v), want the run deadline %v", got, lease.atRunDeadline(), d)
	}
	lease.renewed(time.Now())
	if got := lease.expiry(); !got.Equal(d) {
		t.Errorf("lease end after a renewal %v, want the run deadline %v", got, d)
	}
	select {
	case <-run.ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the run's context did not end at its deadline")
	}
	if cause := context.Cause(run.ctx); cause != ErrRunTimedOut {
		t.Errorf("cause %v, want ErrRunTimedOut", cause)
	}
	if !errors.Is(run.ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("ctx.Err() = %v, want DeadlineExceeded", run.ctx.Err())
	}
	if got := run.stoppedText(); got != "timeout" {
		t.Errorf("stoppedText = %q, want timeout", got)
	}
	// A stop after the deadline does not change the cause.
	r.stop(&jobwirepb.StopRun{JobId: "1", LeaseToken: "tok"})
	if cause := context.Cause(run.ctx); cause != ErrRunTimedOut {
		t.Errorf("cause after a late stop %v, want ErrRunTimedOut", cause)
	}
}

func TestStopRunMatchesJobAndLeaseToken(t *testing.T) {
	r := testRunner()
	now := time.Now()
	cj := claimedJob("7", "tok-2", 0)
	run := r.newRun(cj, now, r.newLease(cj, now))
	other := claimedJob("8", "tok-2", 0)
	otherRun := r.newRun(other, now, r.newLease(other, now))
	defer otherRun.end()

	// A stop for an older run of the same job, or for another job, is not for
	// this run.
	r.stop(&jobwirepb.StopRun{Queue: "q", JobId: "7", LeaseToken: "tok-1", Reason: jobwirepb.StopRun_REASON_CANCEL_REQUESTED})
	r.stop(&jobwirepb.StopRun{Queue: "q", JobId: "9", LeaseToken: "tok-2", Reason: jobwirepb.StopRun_REASON_CANCEL_REQUESTED})
	if run.ctx.Err() != nil {
		t.Fatalf("a stop for another run cancelled this one: %v", context.Cause(run.ctx))
	}
	r.stop(&jobwirepb.StopRun{Queue: "q", JobId: "7", LeaseToken: "tok-2", Reason: jobwirepb.StopRun_REASON_CANCEL_REQUESTED})
	if cause := context.Cause(run.ctx); cause != ErrJobCancelled {
		t.Fatalf("cause %v, want ErrJobCancelled", cause)
	}
	if otherRun.ctx.Err() != nil {
		t.Errorf("the other job's run was cancelled too")
	}
	if got := run.stoppedText(); got != "cancelled" {
		t.Errorf("stoppedText = %q, want cancelled", got)
	}
	run.end()
	if r.runs.find(run.key) != nil {
		t.Errorf("an ended run is still registered")
	}
	// A stop for a run that ended is ignored.
	r.stop(&jobwirepb.StopRun{JobId: "7", LeaseToken: "tok-2"})
}

func TestRefusalsEndTheRunWithTheirCause(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		refused bool
		cause   error
		lost    bool // lease.lost afterwards
	}{
		{"cancel requested", newError(codes.FailedPrecondition, "JOB_CANCEL_REQUESTED", "cancel requested"), true, ErrJobCancelled, false},
		{"run timed out", newError(codes.FailedPrecondition, "RUN_TIMED_OUT", "past deadline"), true, ErrRunTimedOut, false},
		{"stale lease", newError(codes.FailedPrecondition, "LEASE_STALE", "stale"), true, ErrLeaseLost, true},
		{"job state", newError(codes.FailedPrecondition, "JOB_STATE", "dead"), true, ErrLeaseLost, true},
		{"job gone", newError(codes.NotFound, "JOB_NOT_FOUND", "gone"), true, ErrLeaseLost, true},
		{"unavailable", newError(codes.Unavailable, "", "connection refused"), false, nil, false},
		{"invalid argument", newError(codes.InvalidArgument, "INVALID_FIELD", "percent"), false, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testRunner()
			now := time.Now()
			cj := claimedJob("1", "tok", 0)
			run := r.newRun(cj, now, r.newLease(cj, now))
			defer run.end()
			job := &Job{ID: "1", Queue: "q", run: run}
			if got := run.refused("ExtendLease", job, tc.err); got != tc.refused {
				t.Fatalf("refused = %v, want %v", got, tc.refused)
			}
			if cause := context.Cause(run.ctx); cause != tc.cause {
				t.Errorf("cause %v, want %v", cause, tc.cause)
			}
			if got := run.lease.lost.Load(); got != tc.lost {
				t.Errorf("lease lost = %v, want %v", got, tc.lost)
			}
		})
	}
}

func TestJobReportProgress(t *testing.T) {
	newJob := func(r *runner) (*Job, *jobRun) {
		now := time.Now()
		cj := claimedJob("1", "tok", 0)
		run := r.newRun(cj, now, r.newLease(cj, now))
		return &Job{ID: "1", Queue: "q", leaseToken: "tok", run: run}, run
	}
	t.Run("accepted", func(t *testing.T) {
		r := testRunner()
		job, run := newJob(r)
		defer run.end()
		if err := job.ReportProgress(context.Background(), Progress{Percent: Percent(1)}); err != nil || run.ctx.Err() != nil {
			t.Errorf("ReportProgress = %v; run ctx %v", err, run.ctx.Err())
		}
	})
	t.Run("refused RUN_TIMED_OUT", func(t *testing.T) {
		r := testRunner()
		r.stub = &fakeStub{err: refusal(t, codes.FailedPrecondition, "RUN_TIMED_OUT")}
		job, run := newJob(r)
		defer run.end()
		err := job.ReportProgress(run.ctx, Progress{Percent: Percent(1)})
		var e *Error
		if !errors.Is(err, ErrRunTimedOut) || !errors.As(err, &e) || e.Code != codes.FailedPrecondition {
			t.Errorf("ReportProgress = %v, want FAILED_PRECONDITION RUN_TIMED_OUT", err)
		}
		if cause := context.Cause(run.ctx); cause != ErrRunTimedOut {
			t.Errorf("cause %v, want ErrRunTimedOut", cause)
		}
	})
	t.Run("invalid argument ends nothing", func(t *testing.T) {
		r := testRunner()
		r.stub = &fakeStub{err: refusal(t, codes.InvalidArgument, "INVALID_FIELD")}
		job, run := newJob(r)
		defer run.end()
		if err := job.ReportProgress(run.ctx, Progress{Percent: Percent(101)}); !errors.Is(err, ErrInvalidField) || run.ctx.Err() != nil {
			t.Errorf("ReportProgress = %v; run ctx %v", err, run.ctx.Err())
		}
	})
	t.Run("handler context already stopped", func(t *testing.T) {
		r := testRunner()
		job, run := newJob(r)
		defer run.end()
		r.stop(&jobwirepb.StopRun{JobId: "1", LeaseToken: "tok"})
		err := job.ReportProgress(run.ctx, Progress{Percent: Percent(1)})
		var e *Error
		if !errors.Is(err, ErrJobCancelled) || !errors.As(err, &e) || e.Code != codes.Canceled {
			t.Errorf("ReportProgress under the stopped ctx = %v, want CANCELLED matching ErrJobCancelled", err)
		}
		// Under a live context it is sent (and here accepted).
		if err := job.ReportProgress(context.Background(), Progress{Percent: Percent(1)}); err != nil {
			t.Errorf("ReportProgress under a live ctx = %v", err)
		}
	})
}

func TestReportProgressNeedsAWorkerJob(t *testing.T) {
	j := &Job{ID: "1", Queue: "q"}
	if err := j.ReportProgress(context.Background(), Progress{Percent: Percent(1)}); err == nil {
		t.Error("ReportProgress of a Job not made by a Worker succeeded")
	}
}

func TestRunTimeoutOption(t *testing.T) {
	for _, tc := range []struct {
		opt  EnqueueOption
		want int64
	}{
		{WithRunTimeout(1500 * time.Millisecond), 1500},
		{WithRunTimeout(1500*time.Millisecond + time.Microsecond), 1501},
		{WithRunTimeout(time.Microsecond), 1},
		{WithRunTimeout(0), 0},
		{WithRunTimeout(-time.Second), 0},
		{WithRunTimeoutMs(604800000), 604800000},
	} {
		req, err := buildRequest("q", "t", nil, []EnqueueOption{tc.opt})
		if err != nil || req.GetTimeoutMs() != tc.want {
			t.Errorf("timeout_ms %d (%v), want %d", req.GetTimeoutMs(), err, tc.want)
		}
	}
}

func TestRunControlEvents(t *testing.T) {
	pct := int32(0)
	for _, tc := range []struct {
		ev      *jobwirepb.QueueEvent
		kind    EventKind
		percent *int32
		data    string
	}{
		{&jobwirepb.QueueEvent{Kind: jobwirepb.EventKind_EVENT_KIND_PROGRESS, ProgressPercent: &pct, ProgressData: []byte("d")}, EventProgress, Percent(0), "d"},
		{&jobwirepb.QueueEvent{Kind: jobwirepb.EventKind_EVENT_KIND_PROGRESS, ProgressData: []byte("only data")}, EventProgress, nil, "only data"},
		{&jobwirepb.QueueEvent{Kind: jobwirepb.EventKind_EVENT_KIND_CANCEL_REQUESTED}, EventCancelRequested, nil, ""},
		{&jobwirepb.QueueEvent{Kind: jobwirepb.EventKind_EVENT_KIND_TIMED_OUT}, EventTimedOut, nil, ""},
	} {
		got := eventFromProto(tc.ev)
		if got.Kind != tc.kind || string(got.ProgressData) != tc.data ||
			(got.ProgressPercent == nil) != (tc.percent == nil) ||
			(got.ProgressPercent != nil && *got.ProgressPercent != *tc.percent) {
			t.Errorf("eventFromProto(%v) = %+v", tc.ev, got)
		}
	}
	// The new kinds can be requested, and the refusal of an unknown kind
	// names them.
	req, err := subscribeRequest([]string{"q"}, subscribeConfig{kinds: []EventKind{EventProgress, EventCancelRequested, EventTimedOut}})
	if err != nil || len(req.GetKinds()) != 3 || req.GetKinds()[2] != jobwirepb.EventKind_EVENT_KIND_TIMED_OUT {
		t.Errorf("subscribeRequest = %v, %v", req, err)
	}
	_, err = subscribeRequest([]string{"q"}, subscribeConfig{kinds: []EventKind{"nope"}})
	want := `unknown event kind "nope" (requestable: enqueued, active, completed, retry, dead, cancelled, ` +
		`lease_expired, released, redriven, deleted, progress, cancel_requested, timed_out)`
	var e *Error
	if !errors.As(err, &e) || e.Code != codes.InvalidArgument || e.Message != want {
		t.Errorf("unknown kind: %v, want INVALID_ARGUMENT %q", err, want)
	}
}
