package jobwire_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	jobwire "github.com/jobwire/jobwire/client/go"
	"github.com/jobwire/jobwire/client/go/internal/testbroker"
	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// The Worker's lease (docs/clients.md, Worker): its length comes from the
// broker (ClaimedJob.lease_ms), and a lease lost while the handler runs is
// told to the handler at once (its ctx, cause ErrLeaseLost).

// rewriteClaims is a stream interceptor that lets edit change every job the
// Claim stream delivers before the Worker sees it.
func rewriteClaims(edit func(*jobwirepb.ClaimedJob)) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
		streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, err
		}
		return &rewrittenStream{ClientStream: s, edit: edit}, nil
	}
}

type rewrittenStream struct {
	grpc.ClientStream
	edit func(*jobwirepb.ClaimedJob)
}

func (s *rewrittenStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if jobs, ok := streamJobs(m); ok && err == nil {
		for _, cj := range jobs {
			s.edit(cj)
		}
	}
	return err
}

func TestLeaseLengthFromBroker(t *testing.T) {
	t.Parallel()
	// A broker whose default lease is 1.5 s; the worker asks for none (0), so
	// the lease it must renew is the one the broker says it granted. Each
	// handler runs 2.5 leases. "skewed": the Redis clock is a minute ahead of
	// the worker's (lease_expires_at_ms minus the local clock reads 61.5 s,
	// the old guess, which renewed far too late). "old_broker": no lease_ms
	// (a broker older than the field), and also the skewed clock: a second
	// worker, which asks for 1.5 s, must use the lease it asked for, not a
	// guess from the clock. (Asking for none, such a worker assumes the
	// broker's 30 s default: leaseLength's table.)
	const defaultLease = 1500
	b, err := testbroker.StartBroker(tmpDir, redisProc.Port, 0,
		append([]string{"--default_lease_ms=1500"}, brokerFlags...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Stop(5 * time.Second) })
	edit := func(cj *jobwirepb.ClaimedJob) {
		switch cj.GetJob().GetType() {
		case "skewed":
			cj.LeaseExpiresAtMs += 60000
		case "old_broker":
			cj.LeaseMs = 0
			cj.LeaseExpiresAtMs += 60000
		}
	}
	c := newClient(t, brokerAddr) // the suite's broker, same Redis
	q := queueName(t)
	var mu sync.Mutex
	seen := map[string]int64{} // job type -> job.LeaseMs
	slow := func(ctx context.Context, job *jobwire.Job) (any, error) {
		mu.Lock()
		seen[job.Type] = job.LeaseMs
		mu.Unlock()
		select {
		case <-time.After(defaultLease * 5 / 2 * time.Millisecond):
			return "slept", nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	rewrite := jobwire.WithDialOptions(grpc.WithStreamInterceptor(rewriteClaims(edit)))
	rw := startWorker(t, b.Addr(), []string{q}, map[string]jobwire.Handler{"plain": slow, "skewed": slow},
		jobwire.WithConcurrency(2), rewrite)
	qOld := q + ".asked"
	rwOld := startWorker(t, b.Addr(), []string{qOld}, map[string]jobwire.Handler{"old_broker": slow},
		jobwire.WithLease(defaultLease*time.Millisecond), rewrite)
	queueOf := map[string]string{"plain": q, "skewed": q, "old_broker": qOld}
	workerOf := map[string]*runningWorker{"plain": rw, "skewed": rw, "old_broker": rwOld}
	cases := []struct {
		typ         string
		wantLeaseMs int64
	}{
		{"plain", defaultLease},
		{"skewed", defaultLease},
		{"old_broker", 0},
	}
	ids := map[string]string{}
	for _, tc := range cases {
		ids[tc.typ] = mustEnqueue(t, c, queueOf[tc.typ], tc.typ, nil, jobwire.WithMaxAttempts(3))
	}
	for _, tc := range cases {
		id := ids[tc.typ]
		j := waitState(t, c, queueOf[tc.typ], id, jobwire.StateCompleted, 20*time.Second)
		if j.GetAttempts() != 1 || string(j.GetResult()) != `"slept"` {
			t.Errorf("%s: attempts %d result %q, want 1 and \"slept\"", tc.typ, j.GetAttempts(), j.GetResult())
		}
		waitFor(t, 5*time.Second, tc.typ+" outcome", func() bool { return len(workerOf[tc.typ].out.forJob(id)) >= 1 })
		if got, want := kinds(workerOf[tc.typ], id), []string{"ack_ok 1"}; !slices.Equal(got, want) {
			t.Errorf("%s: outcomes %v, want %v", tc.typ, got, want)
		}
		mu.Lock()
		if got := seen[tc.typ]; got != tc.wantLeaseMs {
			t.Errorf("%s: handler saw job.LeaseMs %d, want %d", tc.typ, got, tc.wantLeaseMs)
		}
		mu.Unlock()
	}
}

// adminClient is an Admin stub on the suite's broker.
func adminClient(t *testing.T) jobwirepb.AdminServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(brokerAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return jobwirepb.NewAdminServiceClient(conn)
}

func TestLeaseLostIsToldToTheHandlerAtOnce(t *testing.T) {
	t.Parallel()
	// The job is deleted (Admin DeleteJob) while its handler runs: the next
	// renewal (every 0.5 s with a 1.5 s lease) is answered NOT_FOUND, and the
	// handler's ctx must end then, with cause ErrLeaseLost, long before the
	// handler would return by itself (10 s) and within the lease.
	c := newClient(t, brokerAddr)
	admin := adminClient(t)
	q := queueName(t)
	started := make(chan struct{}, 1)
	type notice struct {
		cause error
		at    time.Time
	}
	told := make(chan notice, 1)
	rw := startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"long": func(ctx context.Context, job *jobwire.Job) (any, error) {
			started <- struct{}{}
			select {
			case <-ctx.Done():
				told <- notice{context.Cause(ctx), time.Now()}
				return nil, context.Cause(ctx)
			case <-time.After(10 * time.Second):
				told <- notice{nil, time.Now()}
				return "not told", nil
			}
		},
	}, jobwire.WithLease(1500*time.Millisecond))
	id := mustEnqueue(t, c, q, "long", nil, jobwire.WithMaxAttempts(3))
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("job never started")
	}
	deleted := time.Now()
	if _, err := admin.DeleteJob(context.Background(), &jobwirepb.DeleteJobRequest{Queue: q, JobId: id}); err != nil {
		t.Fatalf("DeleteJob: %v", err)
	}
	n := <-told
	if !errors.Is(n.cause, jobwire.ErrLeaseLost) {
		t.Fatalf("handler ctx cause %v, want ErrLeaseLost", n.cause)
	}
	// One renewal period (0.5 s) plus the call, with a margin for a loaded
	// machine; the lease itself is 1.5 s.
	if after := n.at.Sub(deleted); after > 2000*time.Millisecond {
		t.Errorf("handler told %s after the job was deleted, want within a renewal period", after)
	}
	// The Worker still sent the Fail; the broker refused it (the job is gone)
	// and that refusal is the outcome.
	waitFor(t, 10*time.Second, "fail outcome", func() bool { return len(rw.out.forJob(id)) == 1 })
	if o := rw.out.forJob(id)[0]; o.Kind != jobwire.OutcomeFailError || o.Code != codes.NotFound ||
		o.ErrorText != "error: jobwire: lease lost" {
		t.Errorf("outcome %+v, want fail_error NOT_FOUND with text \"error: jobwire: lease lost\"", o)
	}
	if _, err := c.GetJob(context.Background(), q, id); status.Code(err) != codes.NotFound {
		t.Errorf("GetJob after the refused Fail: %v, want NOT_FOUND", err)
	}
}
