package jobwire_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	jobwire "github.com/jobwire/jobwire/client/go"
	"github.com/jobwire/jobwire/client/go/internal/testbroker"
)

// Client.Subscribe against the real broker: the events of jobs that
// complete and die, the kinds filter, refused requests, a subscription that
// outlives a broker restart (with EventEventsMissed for the gap), and the
// ways a subscription ends.

func subscribe(t *testing.T, c *jobwire.Client, queues []string, opts ...jobwire.SubscribeOption) *jobwire.Subscription {
	t.Helper()
	sub, err := c.Subscribe(context.Background(), queues, opts...)
	if err != nil {
		t.Fatalf("Subscribe(%v): %v", queues, err)
	}
	t.Cleanup(sub.Close)
	return sub
}

// nextEvent receives one event, failing the test after timeout or when the
// subscription ends.
func nextEvent(t *testing.T, sub *jobwire.Subscription, timeout time.Duration) jobwire.QueueEvent {
	t.Helper()
	select {
	case ev, ok := <-sub.Events():
		if !ok {
			t.Fatalf("the subscription ended: %v", sub.Err())
		}
		return ev
	case <-time.After(timeout):
		t.Fatalf("no event within %s", timeout)
		return jobwire.QueueEvent{}
	}
}

// eventsUntil receives events until done(ev) holds for one, and returns them all.
func eventsUntil(t *testing.T, sub *jobwire.Subscription, timeout time.Duration, done func(jobwire.QueueEvent) bool) []jobwire.QueueEvent {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var got []jobwire.QueueEvent
	for {
		ev := nextEvent(t, sub, time.Until(deadline))
		got = append(got, ev)
		if done(ev) {
			return got
		}
	}
}

// kindsOf is the kinds of the events of job id, in order.
func kindsOf(events []jobwire.QueueEvent, id string) []jobwire.EventKind {
	var out []jobwire.EventKind
	for _, ev := range events {
		if ev.JobID == id {
			out = append(out, ev.Kind)
		}
	}
	return out
}

func TestSubscribeSeesEachJobsEventsInOrder(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	sub := subscribe(t, c, []string{q}, jobwire.WithEventDetails())
	okID := mustEnqueue(t, c, q, "ok", map[string]int{"n": 6})
	badID := mustEnqueue(t, c, q, "bad", nil, jobwire.WithMaxAttempts(1))
	startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"ok": func(ctx context.Context, job *jobwire.Job) (any, error) {
			return []byte(`{"twice":12}`), nil
		},
		"bad": func(ctx context.Context, job *jobwire.Job) (any, error) {
			return nil, errors.New("disk full")
		},
	}, jobwire.WithConcurrency(2))
	finished := map[string]bool{}
	events := eventsUntil(t, sub, 20*time.Second, func(ev jobwire.QueueEvent) bool {
		if ev.Kind == jobwire.EventCompleted || ev.Kind == jobwire.EventDead {
			finished[ev.JobID] = true
		}
		return finished[okID] && finished[badID]
	})
	want := map[string][]jobwire.EventKind{
		okID:  {jobwire.EventEnqueued, jobwire.EventActive, jobwire.EventCompleted},
		badID: {jobwire.EventEnqueued, jobwire.EventActive, jobwire.EventDead},
	}
	for id, kinds := range want {
		if got := kindsOf(events, id); !slices.Equal(got, kinds) {
			t.Errorf("job %s: events %v, want %v", id, got, kinds)
		}
	}
	for _, ev := range events {
		if ev.Queue != q || (ev.JobID != okID && ev.JobID != badID) || ev.AtMs == 0 || ev.At().IsZero() {
			t.Errorf("event %+v", ev)
		}
		wantType, wantAttempts := map[string]string{okID: "ok", badID: "bad"}[ev.JobID], int32(1)
		if ev.Kind == jobwire.EventEnqueued {
			wantAttempts = 0
		}
		if ev.Type != wantType || ev.Attempts != wantAttempts {
			t.Errorf("event %+v: want type %q, attempts %d", ev, wantType, wantAttempts)
		}
		switch ev.Kind {
		case jobwire.EventCompleted:
			if string(ev.Result) != `{"twice":12}` || ev.Error != "" {
				t.Errorf("completed event %+v: want the acked result", ev)
			}
		case jobwire.EventDead:
			if ev.Error != "error: disk full" || len(ev.Result) != 0 {
				t.Errorf("dead event %+v: want the failure", ev)
			}
		default:
			if len(ev.Result) != 0 || ev.Error != "" {
				t.Errorf("event %+v has details", ev)
			}
		}
	}
}

func TestSubscribeWithEventKindsSeesOnlyThose(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	sub := subscribe(t, c, []string{q}, jobwire.WithEventKinds(jobwire.EventCompleted))
	startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"ok":  func(ctx context.Context, job *jobwire.Job) (any, error) { return nil, nil },
		"bad": func(ctx context.Context, job *jobwire.Job) (any, error) { return nil, errors.New("no") },
	})
	first := mustEnqueue(t, c, q, "ok", nil)
	bad := mustEnqueue(t, c, q, "bad", nil, jobwire.WithMaxAttempts(1))
	ev := nextEvent(t, sub, 20*time.Second)
	waitState(t, c, q, bad, jobwire.StateDead, 20*time.Second)
	// Events of one queue come in order: had the dead job's events been
	// sent, they would come before this job's completion.
	last := mustEnqueue(t, c, q, "ok", nil)
	ev2 := nextEvent(t, sub, 20*time.Second)
	got := []string{fmt.Sprint(ev.Kind, " ", ev.JobID), fmt.Sprint(ev2.Kind, " ", ev2.JobID)}
	want := []string{"completed " + first, "completed " + last}
	if !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

func TestSubscribeRefusesBadRequests(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	for _, tc := range []struct {
		name   string
		queues []string
		opts   []jobwire.SubscribeOption
		reason string // "" for the client's own check
		field  string
	}{
		{"no queues", nil, nil, "INVALID_FIELD", "queues"},
		{"an invalid queue name", []string{"bad queue!"}, nil, "INVALID_FIELD", "queues[0]"},
		{"an unknown kind", []string{"q"}, []jobwire.SubscribeOption{jobwire.WithEventKinds("finished")}, "", ""},
		{"events_missed requested", []string{"q"}, []jobwire.SubscribeOption{jobwire.WithEventKinds(jobwire.EventEventsMissed)}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub, err := c.Subscribe(context.Background(), tc.queues, tc.opts...)
			if sub != nil {
				sub.Close()
				t.Fatalf("Subscribe returned a subscription")
			}
			je := asError(t, err)
			if je.Code != codes.InvalidArgument || je.Reason != tc.reason || je.Field != tc.field {
				t.Fatalf("error %+v: want INVALID_ARGUMENT, reason %q, field %q", je, tc.reason, tc.field)
			}
		})
	}
}

func TestSubscribeBeyondMaxSubscriptions(t *testing.T) {
	t.Parallel()
	b, err := testbroker.StartBroker(tmpDir, redisProc.Port, 0, append(brokerFlags, "--max_subscriptions=1")...)
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() { b.Stop(5 * time.Second) })
	c := newClient(t, b.Addr())
	subscribe(t, c, []string{queueName(t)})
	_, err = c.Subscribe(context.Background(), []string{queueName(t)})
	je := asError(t, err)
	if je.Code != codes.ResourceExhausted || !errors.Is(err, jobwire.ErrTooManySubscriptions) || je.RetryDelay != time.Second {
		t.Fatalf("second Subscribe: %+v, want RESOURCE_EXHAUSTED, TOO_MANY_SUBSCRIPTIONS, RetryDelay 1s", je)
	}
}

func TestSubscribeOutlivesABrokerRestart(t *testing.T) {
	for _, how := range []string{"kill", "drain"} {
		t.Run(how, func(t *testing.T) {
			b, err := testbroker.StartBroker(tmpDir, redisProc.Port, 0, brokerFlags...)
			if err != nil {
				t.Fatalf("start broker: %v", err)
			}
			t.Cleanup(func() { b.Stop(5 * time.Second) })
			c := newClient(t, b.Addr(), jobwire.WithTimeout(3*time.Second))
			q := queueName(t)
			sub := subscribe(t, c, []string{q})
			before := mustEnqueue(t, c, q, "t", nil)
			if ev := nextEvent(t, sub, 10*time.Second); ev.Kind != jobwire.EventEnqueued || ev.JobID != before {
				t.Fatalf("event %+v, want the enqueue of %s", ev, before)
			}
			port := b.Port
			if how == "kill" {
				b.Kill()
			} else {
				b.Stop(10 * time.Second) // SIGTERM: the broker drains
			}
			select {
			case ev, ok := <-sub.Events():
				t.Fatalf("while the broker was down: event %+v (open %v), err %v", ev, ok, sub.Err())
			case <-time.After(time.Second):
			}
			b2, err := testbroker.StartBroker(tmpDir, redisProc.Port, port, brokerFlags...)
			if err != nil {
				t.Fatalf("restart broker: %v", err)
			}
			t.Cleanup(func() { b2.Stop(5 * time.Second) })
			if ev := nextEvent(t, sub, 15*time.Second); fmt.Sprintf("%+v", ev) != fmt.Sprintf("%+v", jobwire.QueueEvent{Kind: jobwire.EventEventsMissed}) {
				t.Fatalf("first event after the restart %+v, want only EventEventsMissed", ev)
			}
			after := mustEnqueue(t, c, q, "t", nil)
			if ev := nextEvent(t, sub, 10*time.Second); ev.Kind != jobwire.EventEnqueued || ev.JobID != after || ev.Queue != q {
				t.Fatalf("event %+v, want the enqueue of %s", ev, after)
			}
		})
	}
}

// A Subscribe stream ended with a CANCELLED the client did not cause (a
// broker stopping, grpc/grpc#41785) is subscribed again, as after
// UNAVAILABLE: the first stream ends so once live (after its confirmation),
// the call made again ends so before any message; the subscription goes on,
// tells of the gap with one EventEventsMissed and delivers a later event.
// Close (the caller's own cancellation) still ends it with Err nil.
func TestSubscribeGoesOnAfterACancelledItDidNotCause(t *testing.T) {
	t.Parallel()
	cancels := &brokerCancels{method: subscribeMethod, pass: []int{1, 0}}
	c := newClient(t, brokerAddr, cancels.option())
	q := queueName(t)
	sub := subscribe(t, c, []string{q})
	if ev := nextEvent(t, sub, 10*time.Second); fmt.Sprintf("%+v", ev) != fmt.Sprintf("%+v", jobwire.QueueEvent{Kind: jobwire.EventEventsMissed}) {
		t.Fatalf("first event %+v, want only EventEventsMissed", ev)
	}
	if n := cancels.calls.Load(); n < 3 {
		t.Fatalf("%d Subscribe calls, want 3 or more", n)
	}
	after := mustEnqueue(t, c, q, "t", nil)
	if ev := nextEvent(t, sub, 10*time.Second); ev.Kind != jobwire.EventEnqueued || ev.JobID != after || ev.Queue != q {
		t.Fatalf("event %+v, want the enqueue of %s", ev, after)
	}
	sub.Close()
	ended(t, sub)
}

// Subscribing again after a restart, the broker refuses the token: Events
// is closed and Err returns the refusal.
func TestAnErrorThatIsNotAGapEndsTheSubscription(t *testing.T) {
	t.Parallel()
	const token = "subscriber-token"
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	sum := sha256.Sum256([]byte(token))
	allow := func(pattern string) {
		t.Helper()
		text := fmt.Sprintf(`{"tokens": [{"name": "s", "sha256": %q, "enqueue": [%q]}]}`, hex.EncodeToString(sum[:]), pattern)
		if err := os.WriteFile(tokens, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	allow("*")
	flags := append(slices.Clone(brokerFlags), "--auth_tokens_file="+tokens)
	b, err := testbroker.StartBroker(tmpDir, redisProc.Port, 0, flags...)
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() { b.Stop(5 * time.Second) })
	c := newClient(t, b.Addr(), jobwire.WithTimeout(3*time.Second), jobwire.WithToken(token))
	sub := subscribe(t, c, []string{queueName(t)})
	allow("other.*")
	b.Kill()
	b2, err := testbroker.StartBroker(tmpDir, redisProc.Port, b.Port, flags...)
	if err != nil {
		t.Fatalf("restart broker: %v", err)
	}
	t.Cleanup(func() { b2.Stop(5 * time.Second) })
	select {
	case ev, ok := <-sub.Events():
		if ok {
			t.Fatalf("event %+v, want the end of the subscription", ev)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the subscription did not end within 15s")
	}
	if je := asError(t, sub.Err()); je.Code != codes.PermissionDenied || !errors.Is(je, jobwire.ErrTokenNotPermitted) {
		t.Fatalf("Err() = %+v, want PERMISSION_DENIED, TOKEN_NOT_PERMITTED", je)
	}
}

// A broker that never answers (a port that accepts and says nothing): the
// broker has the client's WithTimeout to confirm, then DEADLINE_EXCEEDED.
func TestSubscribeNotConfirmedInTime(t *testing.T) {
	t.Parallel()
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mute.Close() })
	c := newClient(t, mute.Addr().String(), jobwire.WithTimeout(300*time.Millisecond))
	start := time.Now()
	sub, err := c.Subscribe(context.Background(), []string{"q"})
	took := time.Since(start)
	if sub != nil {
		sub.Close()
		t.Fatal("Subscribe returned a subscription")
	}
	if je := asError(t, err); je.Code != codes.DeadlineExceeded || je.Reason != "" {
		t.Fatalf("error %+v, want DEADLINE_EXCEEDED made by the client", je)
	}
	if took < 250*time.Millisecond || took > 3*time.Second {
		t.Fatalf("Subscribe took %s, want about 300ms", took)
	}
}

// ended fails unless Events is closed within a second, with Err nil.
func ended(t *testing.T, sub *jobwire.Subscription) {
	t.Helper()
	deadline := time.After(time.Second)
	for {
		select {
		case _, ok := <-sub.Events():
			if !ok {
				if err := sub.Err(); err != nil {
					t.Fatalf("Err() = %v, want nil", err)
				}
				return
			}
		case <-deadline:
			t.Fatal("Events not closed within 1s")
		}
	}
}

func TestSubscriptionEndsWithCloseOrItsContext(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)

	sub := subscribe(t, c, []string{q})
	mustEnqueue(t, c, q, "t", nil) // an event nobody receives
	mustEnqueue(t, c, q, "t", nil)
	start := time.Now()
	sub.Close()
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Close took %s", took)
	}
	ended(t, sub)
	sub.Close() // again: no-op

	ctx, cancel := context.WithCancel(context.Background())
	sub, err := c.Subscribe(ctx, []string{q})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	got := make(chan struct{})
	go func() {
		for range sub.Events() { // a reader blocked on the channel
		}
		close(got)
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case <-got:
	case <-time.After(time.Second):
		t.Fatal("Events not closed within 1s of the cancellation")
	}
	if err := sub.Err(); err != nil {
		t.Fatalf("Err() after the cancellation = %v, want nil", err)
	}

	done, stop := context.WithCancel(context.Background())
	stop()
	if _, err := c.Subscribe(done, []string{q}); asError(t, err).Code != codes.Canceled {
		t.Fatalf("Subscribe with an ended context: %v, want CANCELLED", err)
	}
}
