package jobwire_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	jobwire "github.com/jobwire/jobwire/client/go"
)

// Run control against the real broker: progress reports, Cancel of a running
// job (pushed to the worker on its Claim stream), and the run timeout.

// recvWithin is the value of ch, or a test failure after timeout.
func recvWithin[T any](t *testing.T, ch <-chan T, timeout time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(timeout):
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
	var zero T
	return zero
}

// progressOf is a job's progress as "<percent>|<data>" ("-" for no percent).
func progressOf(percent *int32, data []byte) string {
	p := "-"
	if percent != nil {
		p = fmt.Sprintf("%03d", *percent)
	}
	return p + "|" + string(data)
}

// A handler's reports replace the job's progress as a whole: GetJob, a
// PROGRESS event and a Wait update show each while the handler still holds
// the job.
func TestProgressSeenWhileTheHandlerHolds(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	ctx := context.Background()
	sub := subscribe(t, c, []string{q}, jobwire.WithEventKinds(jobwire.EventProgress), jobwire.WithEventDetails())

	reports := []jobwire.Progress{
		{Percent: jobwire.Percent(40), Data: []byte(`{"step":2,"of":5}`)},
		{Data: []byte("almost")}, // no percent: the job's percent is cleared
	}
	reported := make(chan error, len(reports))
	next := make(chan struct{})
	startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"t": func(ctx context.Context, job *jobwire.Job) (any, error) {
			for _, p := range reports {
				reported <- job.ReportProgress(ctx, p)
				select {
				case <-next:
				case <-ctx.Done():
					return nil, context.Cause(ctx)
				}
			}
			return []byte("done"), nil
		},
	})
	id := mustEnqueue(t, c, q, "t", nil)
	var seen updates
	waited := waitInBackground(c, q, id, jobwire.WithWaitTimeout(30*time.Second), jobwire.WithWaitUpdates(seen.add))

	for i, p := range reports {
		if err := recvWithin(t, reported, 10*time.Second, "the handler's report"); err != nil {
			t.Fatalf("report %d: %v", i, err)
		}
		want := progressOf(p.Percent, p.Data)
		j, err := c.GetJob(ctx, q, id)
		if err != nil {
			t.Fatalf("GetJob: %v", err)
		}
		if j.GetState() != jobwire.StateActive || progressOf(j.ProgressPercent, j.GetProgressData()) != want {
			t.Errorf("report %d: GetJob state %v progress %s, want ACTIVE %s", i, j.GetState(),
				progressOf(j.ProgressPercent, j.GetProgressData()), want)
		}
		ev := nextEvent(t, sub, 10*time.Second)
		if ev.Kind != jobwire.EventProgress || progressOf(ev.ProgressPercent, ev.ProgressData) != want {
			t.Errorf("report %d: event %s progress %s, want progress %s", i, ev.Kind,
				progressOf(ev.ProgressPercent, ev.ProgressData), want)
		}
		waitFor(t, 10*time.Second, "a Wait update with progress "+want, func() bool {
			j := seen.last()
			return j != nil && progressOf(j.ProgressPercent, j.GetProgressData()) == want
		})
		select {
		case next <- struct{}{}:
		case <-time.After(10 * time.Second):
			t.Fatalf("the handler did not go on after report %d", i)
		}
	}
	if r := receive(t, waited, 15*time.Second); r.err != nil || r.job.GetState() != jobwire.StateCompleted {
		t.Fatalf("Wait = %v, %v; want COMPLETED", r.job, r.err)
	}
}

// Cancel of a running job reaches its handler over the Claim stream at once
// (the lease is 30 s, so the next renewal would come only after 10 s): its
// context ends with cause ErrJobCancelled, its reports are refused, and the
// job ends DEAD "cancelled" when the handler returns an error.
func TestCancelStopsTheRunningHandler(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	ctx := context.Background()
	sub := subscribe(t, c, []string{q}, jobwire.WithEventKinds(jobwire.EventCancelRequested, jobwire.EventCancelled), jobwire.WithEventDetails())

	type stopped struct {
		cause, reportErr error
		at               time.Time
	}
	started := make(chan struct{}, 1)
	stops := make(chan stopped, 1)
	release := make(chan struct{})
	rw := startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"t": func(ctx context.Context, job *jobwire.Job) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			s := stopped{cause: context.Cause(ctx), at: time.Now()}
			// The handler's ctx is done: report under a context of its own.
			s.reportErr = job.ReportProgress(context.Background(), jobwire.Progress{Percent: jobwire.Percent(99)})
			stops <- s
			select {
			case <-release:
			case <-time.After(30 * time.Second): // the test failed
			}
			return nil, context.Cause(ctx)
		},
	}, jobwire.WithLease(30*time.Second))
	id := mustEnqueue(t, c, q, "t", nil)
	recvWithin(t, started, 10*time.Second, "the handler to start")

	asked := time.Now()
	requested, err := c.Cancel(ctx, q, id)
	if err != nil || !requested {
		t.Fatalf("Cancel of the running job = %v, %v; want true, nil", requested, err)
	}
	s := recvWithin(t, stops, 3*time.Second, "the handler's context to end (Claim stream push)")
	if s.cause != jobwire.ErrJobCancelled {
		t.Errorf("context.Cause = %v, want ErrJobCancelled", s.cause)
	}
	t.Logf("handler told %s after Cancel", s.at.Sub(asked).Round(time.Millisecond))
	if !errors.Is(s.reportErr, jobwire.ErrJobCancelled) || asError(t, s.reportErr).Code != codes.FailedPrecondition {
		t.Errorf("ReportProgress after Cancel: %v, want FAILED_PRECONDITION JOB_CANCEL_REQUESTED", s.reportErr)
	}
	// Until the handler returns, the job is ACTIVE and marked.
	j, err := c.GetJob(ctx, q, id)
	if err != nil || j.GetState() != jobwire.StateActive || j.GetCancelRequestedAtMs() == 0 {
		t.Errorf("GetJob while the handler holds: %v, %v; want ACTIVE with cancel_requested_at_ms", j, err)
	}
	if ev := nextEvent(t, sub, 10*time.Second); ev.Kind != jobwire.EventCancelRequested {
		t.Errorf("first event %s, want %s", ev.Kind, jobwire.EventCancelRequested)
	}
	close(release)

	j = waitState(t, c, q, id, jobwire.StateDead, 10*time.Second)
	if j.GetError() != "cancelled" {
		t.Errorf("dead job error %q, want cancelled", j.GetError())
	}
	if ev := nextEvent(t, sub, 10*time.Second); ev.Kind != jobwire.EventCancelled {
		t.Errorf("second event %s, want %s", ev.Kind, jobwire.EventCancelled)
	}
	waitFor(t, 10*time.Second, "the Fail's outcome", func() bool { return len(rw.out.forJob(id)) > 0 })
	o := rw.out.forJob(id)[0]
	if o.Kind != jobwire.OutcomeFailOK || o.ErrorText != "cancelled" || o.FailOutcome != "DEAD" {
		t.Errorf("outcome %s %q %s (%v), want fail_ok \"cancelled\" DEAD", o.Kind, o.ErrorText, o.FailOutcome, o.Err)
	}
}

// A run past its timeout is ended: the handler's context has the deadline
// receipt + timeout and ends with cause ErrRunTimedOut; a handler that
// ignores it and returns a result late is not completed (its Ack is refused,
// dropped without retries), and the job's only attempt fails with "timeout".
func TestRunTimeoutEndsTheRun(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	ctx := context.Background()
	sub := subscribe(t, c, []string{q}, jobwire.WithEventKinds(jobwire.EventTimedOut, jobwire.EventDead, jobwire.EventCompleted), jobwire.WithEventDetails())

	type seen struct {
		start, deadline time.Time
		hasDeadline     bool
		err, cause      error
		timeoutMs       int64
	}
	runs := make(chan seen, 2)
	rw := startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"t": func(ctx context.Context, job *jobwire.Job) (any, error) {
			s := seen{start: time.Now(), timeoutMs: job.Info.GetTimeoutMs()}
			s.deadline, s.hasDeadline = ctx.Deadline()
			time.Sleep(2500 * time.Millisecond) // ignores ctx
			s.err, s.cause = ctx.Err(), context.Cause(ctx)
			runs <- s
			return []byte("late"), nil
		},
	})
	id := mustEnqueue(t, c, q, "t", nil, jobwire.WithRunTimeout(time.Second), jobwire.WithMaxAttempts(1))

	s := recvWithin(t, runs, 15*time.Second, "the handler's run")
	if s.timeoutMs != 1000 {
		t.Errorf("Job.Info.TimeoutMs = %d, want 1000", s.timeoutMs)
	}
	if !s.hasDeadline {
		t.Errorf("the handler's context has no deadline")
	} else if left := s.deadline.Sub(s.start); left <= 0 || left > time.Second {
		t.Errorf("the handler's deadline is %s after its start, want within (0, 1s]", left)
	}
	if s.cause != jobwire.ErrRunTimedOut || !errors.Is(s.err, context.DeadlineExceeded) {
		t.Errorf("after 2.5 s: ctx.Err() %v, context.Cause %v; want DeadlineExceeded, ErrRunTimedOut", s.err, s.cause)
	}

	waitFor(t, 10*time.Second, "the Ack's outcome", func() bool { return len(rw.out.forJob(id)) > 0 })
	j := waitState(t, c, q, id, jobwire.StateDead, 10*time.Second)
	if j.GetError() != "timeout" || len(j.GetResult()) != 0 {
		t.Errorf("dead job error %q result %q, want \"timeout\" and no result", j.GetError(), j.GetResult())
	}
	var kinds []jobwire.EventKind
	for len(kinds) < 2 {
		ev := nextEvent(t, sub, 10*time.Second)
		kinds = append(kinds, ev.Kind)
		if ev.Kind == jobwire.EventDead && ev.Error != "timeout" {
			t.Errorf("DEAD event error %q, want timeout", ev.Error)
		}
	}
	if !slices.Equal(kinds, []jobwire.EventKind{jobwire.EventTimedOut, jobwire.EventDead}) {
		t.Errorf("events %v, want [timed_out dead]", kinds)
	}

	// The late Ack was refused once and dropped: no retry, no second run.
	time.Sleep(500 * time.Millisecond)
	outs := rw.out.forJob(id)
	if len(outs) != 1 || outs[0].Kind != jobwire.OutcomeAckError || asError(t, outs[0].Err).Code != codes.FailedPrecondition {
		t.Fatalf("outcomes %+v, want one ack_error FAILED_PRECONDITION", outs)
	}
	t.Logf("late Ack refused: %v (reason %s)", outs[0].Err, asError(t, outs[0].Err).Reason)
	if len(runs) != 0 {
		t.Errorf("the job ran again")
	}
	if j, err := c.GetJob(ctx, q, id); err != nil || j.GetState() != jobwire.StateDead {
		t.Errorf("after the late Ack: %v, %v; want DEAD", j, err)
	}
}

// A report out of range is INVALID_ARGUMENT naming the field, and changes
// nothing; the limits themselves are accepted.
func TestReportProgressOutOfRangeChangesNothing(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	ctx := context.Background()
	id, token := claimOne(t, c, q)

	if err := c.ReportProgress(ctx, q, id, token, jobwire.Progress{Percent: jobwire.Percent(50), Data: []byte("half")}); err != nil {
		t.Fatalf("ReportProgress(50, half): %v", err)
	}
	for _, tc := range []struct {
		name  string
		p     jobwire.Progress
		field string // "" when the broker names none
	}{
		{"percent 101", jobwire.Progress{Percent: jobwire.Percent(101)}, "percent"},
		{"percent -1", jobwire.Progress{Percent: jobwire.Percent(-1), Data: []byte("x")}, "percent"},
		{"4097 bytes of data", jobwire.Progress{Percent: jobwire.Percent(60), Data: bytes.Repeat([]byte("d"), 4097)}, "data"},
		{"neither", jobwire.Progress{}, ""},
	} {
		err := c.ReportProgress(ctx, q, id, token, tc.p)
		je := asError(t, err)
		if je.Code != codes.InvalidArgument || !errors.Is(err, jobwire.ErrInvalidField) || (tc.field != "" && je.Field != tc.field) {
			t.Errorf("%s: %v (reason %q, field %q), want INVALID_ARGUMENT INVALID_FIELD naming %q", tc.name, err, je.Reason, je.Field, tc.field)
		}
	}
	j, err := c.GetJob(ctx, q, id)
	if err != nil || j.GetState() != jobwire.StateActive || progressOf(j.ProgressPercent, j.GetProgressData()) != "050|half" {
		t.Errorf("after the refused reports: %v, %v; want ACTIVE with progress 050|half", j, err)
	}

	limits := jobwire.Progress{Percent: jobwire.Percent(100), Data: bytes.Repeat([]byte("d"), 4096)}
	if err := c.ReportProgress(ctx, q, id, token, limits); err != nil {
		t.Fatalf("ReportProgress(100, 4096 bytes): %v", err)
	}
	j, err = c.GetJob(ctx, q, id)
	if err != nil || j.GetProgressPercent() != 100 || len(j.GetProgressData()) != 4096 {
		t.Errorf("after the report at the limits: %v, %v", j, err)
	}
	// A wrong lease token changes nothing either.
	err = c.ReportProgress(ctx, q, id, token+"x", jobwire.Progress{Percent: jobwire.Percent(1)})
	if !errors.Is(err, jobwire.ErrLeaseStale) {
		t.Errorf("report with a stale token: %v, want LEASE_STALE", err)
	}
}

// The run timeout is stored with the job, from Enqueue and from EnqueueBatch,
// and checked by the broker.
func TestRunTimeoutIsStored(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	ctx := context.Background()

	id := mustEnqueue(t, c, q, "t", nil, jobwire.WithRunTimeout(90*time.Second), jobwire.WithDelay(time.Hour))
	res, err := c.EnqueueBatch(ctx, q, []jobwire.BatchJob{
		{Type: "t", Options: []jobwire.EnqueueOption{jobwire.WithRunTimeoutMs(2500), jobwire.WithDelay(time.Hour)}},
		{Type: "t", Options: []jobwire.EnqueueOption{jobwire.WithDelay(time.Hour)}},
	})
	if err != nil || len(res) != 2 || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("EnqueueBatch: %+v, %v", res, err)
	}
	for _, tc := range []struct {
		id   string
		want int64
	}{{id, 90000}, {res[0].JobID, 2500}, {res[1].JobID, 0}} {
		j, err := c.GetJob(ctx, q, tc.id)
		if err != nil || j.GetTimeoutMs() != tc.want || j.GetRunDeadlineMs() != 0 || j.ProgressPercent != nil {
			t.Errorf("job %s: %v, %v; want timeout_ms %d, no run deadline, no progress", tc.id, j, err, tc.want)
		}
	}
	_, err = c.Enqueue(ctx, q, "t", nil, jobwire.WithRunTimeoutMs(604800001))
	if je := asError(t, err); je.Code != codes.InvalidArgument || je.Field != "timeout_ms" {
		t.Errorf("timeout 7 days + 1 ms: %v (field %q), want INVALID_ARGUMENT naming timeout_ms", err, je.Field)
	}
}
