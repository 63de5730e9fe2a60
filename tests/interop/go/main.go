// Command interop-worker is the Go interop worker of tests/interop/README.md,
// built on jobwire.Worker. tests/interop/go/worker execs the built binary.
package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	jobwire "github.com/jobwire/jobwire/client/go"
)

type payload struct {
	N          int  `json:"n"`
	FailFirst  bool `json:"fail_first"`
	Crash      bool `json:"crash"`
	AlwaysFail bool `json:"always_fail"`
	WorkMs     int  `json:"work_ms"`
	// HoldIn names the language whose first attempt sleeps HoldMs after
	// logging "hold" (run_interop.py freezes the process meanwhile).
	HoldIn string `json:"hold_in"`
	HoldMs int    `json:"hold_ms"`
}

// behaviourPayload is the payload of a "behaviour" job (README.md, "The
// behaviour handler"): the scenario and its parameters.
type behaviourPayload struct {
	Scenario string `json:"scenario"`
	SleepMs  int    `json:"sleep_ms"`
	Unit     string `json:"unit"`
	Count    int    `json:"count"`
	DelayMs  int    `json:"delay_ms"`
	WaitMs   int    `json:"wait_ms"`
	Times    int    `json:"times"`
}

type result struct {
	N    int    `json:"n"`
	Lang string `json:"lang"`
}

// lineLog appends whole lines to the interop log: one write(2) per line on an
// O_APPEND descriptor, no buffering, so a crash right after never loses or
// tears a line.
type lineLog struct {
	mu sync.Mutex
	f  *os.File
}

func (l *lineLog) line(fields ...any) {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = fmt.Sprint(f)
	}
	data := []byte(strings.Join(parts, " ") + "\n")
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(data); err != nil {
		fmt.Fprintf(os.Stderr, "go-worker: write %s: %v\n", l.f.Name(), err)
	}
}

func envInt(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: %w", name, v, err)
	}
	return n, nil
}

// queuesAndWeights reads the queues to consume (INTEROP_QUEUES,
// comma-separated, else the one INTEROP_QUEUE) and their weights
// (INTEROP_WEIGHTS, comma-separated ints in the order of the queues; unset or
// empty: nil, strict order).
func queuesAndWeights() ([]string, map[string]int, error) {
	var queues []string
	if names := os.Getenv("INTEROP_QUEUES"); names != "" {
		queues = strings.Split(names, ",")
	} else if q := os.Getenv("INTEROP_QUEUE"); q != "" {
		queues = []string{q}
	} else {
		return nil, nil, errors.New("INTEROP_QUEUES or INTEROP_QUEUE must be set")
	}
	text := os.Getenv("INTEROP_WEIGHTS")
	if text == "" {
		return queues, nil, nil
	}
	values := strings.Split(text, ",")
	if len(values) != len(queues) {
		return nil, nil, fmt.Errorf("INTEROP_WEIGHTS has %d weights for %d queues", len(values), len(queues))
	}
	weights := make(map[string]int, len(queues))
	for i, v := range values {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, nil, fmt.Errorf("INTEROP_WEIGHTS=%q: %w", text, err)
		}
		weights[queues[i]] = n
	}
	return queues, weights, nil
}

func run() error {
	addr := os.Getenv("JOBWIRE_ADDR")
	logPath := os.Getenv("INTEROP_LOG")
	lang := os.Getenv("INTEROP_LANG")
	if lang == "" {
		lang = "go"
	}
	if addr == "" || logPath == "" {
		return errors.New("JOBWIRE_ADDR and INTEROP_LOG must be set")
	}
	queues, weights, err := queuesAndWeights()
	if err != nil {
		return err
	}
	concurrency, err := envInt("INTEROP_CONCURRENCY", 4)
	if err != nil {
		return err
	}
	leaseMs, err := envInt("INTEROP_LEASE_MS", 0)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	log := &lineLog{f: f}

	logger := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("prog", "go-worker")
	w, err := jobwire.NewWorker(addr, queues,
		jobwire.WithConcurrency(concurrency),
		jobwire.WithWeights(weights), // nil: strict order
		jobwire.WithLease(time.Duration(leaseMs)*time.Millisecond),
		jobwire.WithWorkerID(fmt.Sprintf("%s-interop-%d", lang, os.Getpid())),
		jobwire.WithLogger(logger),
		// Every kind the client reports, with its detail when it has one: the
		// Fail's outcome, or the code of the last answer (ack_error,
		// fail_error, ack_unknown, fail_unknown); expired_dropped and ack_ok
		// have none.
		jobwire.WithOutcomeHook(func(o jobwire.Outcome) {
			switch {
			case o.Kind == jobwire.OutcomeFailOK:
				log.line(string(o.Kind), o.Job.ID, o.Job.Attempt, lang, o.FailOutcome)
			case o.Err != nil:
				log.line(string(o.Kind), o.Job.ID, o.Job.Attempt, lang, jobwire.CodeName(o.Code))
			default:
				log.line(string(o.Kind), o.Job.ID, o.Job.Attempt, lang)
			}
		}))
	if err != nil {
		return err
	}
	// Every handler runs in the tracing middleware's span, recorded by an SDK
	// provider (no exporter: the "span" line reads it in the handler).
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	if err := w.Use(jobwire.TracingMiddleware(jobwire.WithTracerProvider(tp))); err != nil {
		return err
	}
	w.Handle("interop", func(ctx context.Context, job *jobwire.Job) (any, error) {
		log.line("start", job.ID, job.Attempt, lang)
		if _, ok := job.Headers["traceparent"]; ok {
			logSpan(ctx, job, log, lang)
		}
		var p payload
		if err := job.JSON(&p); err != nil {
			return nil, jobwire.NonRetryable(err)
		}
		if p.Crash && job.Attempt == 1 {
			log.line("crash", job.ID, job.Attempt, lang)
			os.Exit(3)
		}
		if p.HoldIn == lang && job.Attempt == 1 {
			log.line("hold", job.ID, job.Attempt, lang)
			time.Sleep(time.Duration(p.HoldMs) * time.Millisecond)
		}
		if p.WorkMs > 0 { // simulated work
			time.Sleep(time.Duration(p.WorkMs) * time.Millisecond)
		}
		if p.AlwaysFail {
			return nil, errors.New("always fails")
		}
		if p.FailFirst && job.Attempt == 1 {
			return nil, errors.New("planned first-attempt failure")
		}
		return result{N: p.N, Lang: lang}, nil
	})
	// Scenario turned_away: how many times this process ran each job (by
	// queue and job id). Runs turned away with KeepAttempt do not advance
	// job.Attempt, so the handler counts them itself, in memory.
	runs := &runCounter{n: map[[2]string]int{}}
	w.Handle("behaviour", func(ctx context.Context, job *jobwire.Job) (any, error) {
		return behaviour(ctx, job, log, lang, runs)
	})
	logger.Info("interop worker starting", "addr", addr, "queues", queues, "weights", weights,
		"concurrency", concurrency, "lease_ms", leaseMs)
	// Returns after SIGTERM / SIGINT, once running handlers are acked.
	return w.RunUntilSignal()
}

// logSpan appends "span <job_id> <attempt> <lang> <trace_id> <parent_span_id>":
// the trace id and the parent's span id of the handler's current span (the
// CONSUMER span of jobwire.TracingMiddleware) as the SDK recorded it, or
// zeros when ctx holds no SDK span.
func logSpan(ctx context.Context, job *jobwire.Job, log *lineLog, lang string) {
	var traceID trace.TraceID
	var parentID trace.SpanID
	if s, ok := trace.SpanFromContext(ctx).(sdktrace.ReadOnlySpan); ok {
		traceID, parentID = s.SpanContext().TraceID(), s.Parent().SpanID()
	}
	log.line("span", job.ID, job.Attempt, lang, traceID, parentID)
}

// runCounter counts the runs of each job (queue, job id) in this process.
type runCounter struct {
	mu sync.Mutex
	n  map[[2]string]int
}

func (c *runCounter) next(queue, jobID string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := [2]string{queue, jobID}
	c.n[key]++
	return c.n[key]
}

// behaviour is the "behaviour" handler (README.md, "The behaviour handler"):
// one scenario per job, for tests/behaviours/run_behaviours.py.
func behaviour(ctx context.Context, job *jobwire.Job, log *lineLog, lang string,
	runs *runCounter) (any, error) {
	log.line("start", job.ID, job.Attempt, lang, job.Queue)
	var p behaviourPayload
	if err := job.JSON(&p); err != nil {
		return nil, jobwire.NonRetryable(err)
	}
	switch p.Scenario {
	case "lease_ms":
		time.Sleep(time.Duration(p.SleepMs) * time.Millisecond)
		return map[string]any{"lang": lang, "lease_ms": job.LeaseMs}, nil
	case "long_error":
		return nil, errors.New(strings.Repeat(p.Unit, p.Count))
	case "retry_after":
		if job.Attempt == 1 {
			return nil, jobwire.RetryAfter(errors.New("retry later"),
				time.Duration(p.DelayMs)*time.Millisecond)
		}
		return map[string]any{"lang": lang}, nil
	case "turned_away":
		run := runs.next(job.Queue, job.ID)
		log.line("run", job.ID, job.Attempt, lang, run, time.Now().UnixMilli())
		if run <= p.Times {
			return nil, jobwire.RetryAfter(errors.New("turned away"),
				time.Duration(p.DelayMs)*time.Millisecond, jobwire.KeepAttempt())
		}
		return map[string]any{"lang": lang, "runs": run}, nil
	case "non_retryable":
		return nil, jobwire.NonRetryable(errors.New("bad input"))
	case "wait_lease_lost":
		lost := waitLeaseLost(ctx, time.Duration(p.WaitMs)*time.Millisecond)
		kind := "lease_kept"
		if lost {
			kind = "lease_lost"
		}
		log.line(kind, job.ID, job.Attempt, lang)
		return map[string]any{"lang": lang, "lease_lost": lost}, nil
	case "sleep":
		time.Sleep(time.Duration(p.SleepMs) * time.Millisecond)
		return map[string]any{"lang": lang}, nil
	case "keyed":
		log.line("key_start", job.ID, job.Attempt, lang, job.ConcurrencyKey)
		time.Sleep(time.Duration(p.SleepMs) * time.Millisecond)
		log.line("key_end", job.ID, job.Attempt, lang, job.ConcurrencyKey)
		return map[string]any{"lang": lang, "key": job.ConcurrencyKey}, nil
	case "deps":
		log.line("deps", job.ID, job.Attempt, lang, len(job.DependencyResults))
		for parent, result := range job.DependencyResults {
			log.line("dep", job.ID, job.Attempt, lang, parent, hex.EncodeToString(result))
		}
		return map[string]any{"lang": lang, "job": job.ID}, nil
	default:
		return nil, fmt.Errorf("unknown scenario %s", p.Scenario)
	}
}

// waitLeaseLost reports whether the handler's context was cancelled with
// cause jobwire.ErrLeaseLost within d. A cancellation for another cause (the
// drain's grace ran out: ErrWorkerAbandoned) is no lost lease: the wait goes
// on until d.
func waitLeaseLost(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		if errors.Is(context.Cause(ctx), jobwire.ErrLeaseLost) {
			return true
		}
		<-timer.C
		return false
	case <-timer.C:
		return false
	}
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "go-worker: %v\n", err)
		os.Exit(1)
	}
}
