package jobwire_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jobwire "github.com/jobwire/jobwire/client/go"
)

// recorder is a list of events appended from handlers and middlewares.
type recorder struct {
	mu   sync.Mutex
	list []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, s)
}

func (r *recorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.list)
}

type ctxKey struct{}

// Two middlewares run in the order they were registered, the first
// outermost, around the handler; a context derived by a middleware reaches
// the handler.
func TestMiddlewareOrder(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	rec := &recorder{}
	layer := func(name string) jobwire.Middleware {
		return func(next jobwire.Handler) jobwire.Handler {
			return func(ctx context.Context, job *jobwire.Job) (any, error) {
				rec.add(name + " in " + job.Type)
				v, err := next(context.WithValue(ctx, ctxKey{}, name), job)
				rec.add(name + " out")
				return v, err
			}
		}
	}
	startWorkerUse(t, brokerAddr, []string{q}, []jobwire.Middleware{layer("outer"), layer("inner")},
		map[string]jobwire.Handler{
			"t": func(ctx context.Context, job *jobwire.Job) (any, error) {
				rec.add("handler ctx=" + ctx.Value(ctxKey{}).(string))
				return nil, nil
			},
		})
	id := mustEnqueue(t, c, q, "t", nil)
	waitState(t, c, q, id, jobwire.StateCompleted, 10*time.Second)
	want := []string{"outer in t", "inner in t", "handler ctx=inner", "inner out", "outer out"}
	if got := rec.get(); !slices.Equal(got, want) {
		t.Fatalf("calls = %q, want %q", got, want)
	}
}

// A middleware's result is what the Worker acks: it may replace the
// handler's result or turn its error into a result.
func TestMiddlewareChangesResult(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	rewrite := func(next jobwire.Handler) jobwire.Handler {
		return func(ctx context.Context, job *jobwire.Job) (any, error) {
			v, err := next(ctx, job)
			if err != nil {
				return map[string]string{"rescued": err.Error()}, nil
			}
			return map[string]any{"wrapped": v}, nil
		}
	}
	startWorkerUse(t, brokerAddr, []string{q}, []jobwire.Middleware{rewrite}, map[string]jobwire.Handler{
		"ok":   func(ctx context.Context, job *jobwire.Job) (any, error) { return "inner", nil },
		"fail": func(ctx context.Context, job *jobwire.Job) (any, error) { return nil, errors.New("boom") },
	})
	ctx := context.Background()
	for typ, want := range map[string]string{
		"ok":   `{"wrapped":"inner"}`,
		"fail": `{"rescued":"boom"}`,
	} {
		id := mustEnqueue(t, c, q, typ, nil, jobwire.WithMaxAttempts(1))
		job, err := c.Wait(ctx, q, id, jobwire.WithWaitTimeout(10*time.Second))
		if err != nil {
			t.Fatalf("Wait(%s job): %v", typ, err)
		}
		if got := string(job.GetResult()); got != want {
			t.Errorf("%s job: stored result %s, want %s", typ, got, want)
		}
		if info, err := c.GetJob(ctx, q, id); err != nil || string(info.GetResult()) != want {
			t.Errorf("%s job: GetJob = %s, %v; want result %s", typ, info.GetResult(), err, want)
		}
	}
}

// A middleware's error fails the job with that error, the handler not run;
// a panicking middleware fails it too.
func TestMiddlewareError(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	rec := &recorder{}
	refuse := func(next jobwire.Handler) jobwire.Handler {
		return func(ctx context.Context, job *jobwire.Job) (any, error) {
			if job.Type == "panic" {
				panic("middleware panicked")
			}
			return nil, jobwire.NonRetryable(errors.New("refused by middleware"))
		}
	}
	handler := func(ctx context.Context, job *jobwire.Job) (any, error) {
		rec.add("handler ran")
		return nil, nil
	}
	startWorkerUse(t, brokerAddr, []string{q}, []jobwire.Middleware{refuse},
		map[string]jobwire.Handler{"t": handler, "panic": handler})
	for typ, want := range map[string]string{"t": "refused by middleware", "panic": "panic: middleware panicked"} {
		id := mustEnqueue(t, c, q, typ, nil, jobwire.WithMaxAttempts(1))
		_, err := c.Wait(context.Background(), q, id, jobwire.WithWaitTimeout(10*time.Second))
		var dead *jobwire.JobDeadError
		if !errors.As(err, &dead) {
			t.Fatalf("%s job: Wait = %v, want a *JobDeadError", typ, err)
		}
		if got := dead.Job.GetError(); !strings.Contains(got, want) {
			t.Errorf("%s job: error %q, want it to contain %q", typ, got, want)
		}
	}
	if got := rec.get(); len(got) != 0 {
		t.Errorf("the handler ran behind a refusing middleware: %q", got)
	}
}

// Use is refused once Run has been called (the middlewares stay as they
// were), and for a nil middleware.
func TestUseAfterRunRefused(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	rec := &recorder{}
	late := func(next jobwire.Handler) jobwire.Handler {
		return func(ctx context.Context, job *jobwire.Job) (any, error) {
			rec.add("late middleware ran")
			return next(ctx, job)
		}
	}
	rw := startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"t": func(ctx context.Context, job *jobwire.Job) (any, error) { return nil, nil },
	})
	first := mustEnqueue(t, c, q, "t", nil)
	waitState(t, c, q, first, jobwire.StateCompleted, 10*time.Second) // Run has started
	if err := rw.w.Use(late); err == nil || !strings.Contains(err.Error(), "after Run") {
		t.Fatalf("Use after Run = %v, want an error saying so", err)
	}
	second := mustEnqueue(t, c, q, "t", nil)
	waitState(t, c, q, second, jobwire.StateCompleted, 10*time.Second)
	if got := rec.get(); len(got) != 0 {
		t.Errorf("a middleware refused by Use ran: %q", got)
	}

	w, err := jobwire.NewWorker(brokerAddr, []string{q})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Use(late, nil); err == nil || !strings.Contains(err.Error(), "nil") {
		t.Errorf("Use(mw, nil) = %v, want an error naming the nil middleware", err)
	}
}
