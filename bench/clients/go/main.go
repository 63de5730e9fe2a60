// jobwire-go-bench: jobwire through its Go client (client/go) in the
// side-by-side benchmark, one program with two roles run as separate
// processes (the protocol: bench/side_protocol.md, the driver
// bench/side_by_side.py).
//
//	jobwire-go-bench --role worker   --addr 127.0.0.1:50051 --jobs 50000 --concurrency 50
//	jobwire-go-bench --role producer --addr 127.0.0.1:50051 --jobs 50000 --chunk 1000
//	jobwire-go-bench --role producer --addr 127.0.0.1:50051 --jobs 5000 --rate 1000
//
// Producer: one Client (one gRPC channel). Bulk mode (--rate 0): EnqueueBatch
// of --chunk jobs, one call in flight at a time, t = when the chunk is sent.
// Rate mode: job i is sent at go + i/R by a goroutine of its own (so a slow
// call never delays the schedule), one Enqueue per job, t = its scheduled
// time. Warm-up before "ready": one GetJob of an id that does not exist
// (answered NOT_FOUND; nothing is enqueued).
//
// Worker: one jobwire.Worker with WithConcurrency(--concurrency) (one Work
// stream), broker-default lease and retention. A job is counted done when the
// Worker's outcome hook reports ack_ok (the broker confirmed the Ack; acks go
// coalesced, on the Work stream). "ready" is printed once the Work stream (or,
// from a broker older than Work, the Claim stream) is open (seen by a stream
// interceptor on the Worker's channel).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	jobwire "github.com/jobwire/jobwire/client/go"
)

const jobType = "bench"

type config struct {
	role        string
	addr        string
	redisURL    string
	queue       string
	jobs        int
	chunk       int
	concurrency int
	rate        float64
}

func main() {
	var c config
	fs := flag.NewFlagSet("jobwire-go-bench", flag.ContinueOnError)
	fs.StringVar(&c.role, "role", "", "producer|worker")
	fs.StringVar(&c.addr, "addr", "127.0.0.1:50051", "jobwire broker host:port")
	fs.StringVar(&c.redisURL, "redis-url", "", "unused (the broker has it); accepted like every program of the benchmark")
	fs.StringVar(&c.queue, "queue", "bench", "queue name")
	fs.IntVar(&c.jobs, "jobs", 0, "producer: jobs to enqueue; worker: completions to wait for")
	fs.IntVar(&c.chunk, "chunk", 1000, "producer: jobs per EnqueueBatch call (bulk mode)")
	fs.IntVar(&c.concurrency, "concurrency", 50, "worker: jobs in flight at once")
	fs.Float64Var(&c.rate, "rate", 0, "producer: 0 = bulk; R > 0 = one Enqueue per job at R jobs/s, open loop")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unexpected arguments: %v\n", fs.Args())
		os.Exit(2)
	}
	if c.jobs <= 0 || c.chunk <= 0 || c.chunk > 1000 || c.concurrency <= 0 || c.rate < 0 {
		fmt.Fprintln(os.Stderr, "need --jobs > 0, 0 < --chunk <= 1000, --concurrency > 0, --rate >= 0")
		os.Exit(2)
	}
	switch c.role {
	case "producer":
		os.Exit(producer(c))
	case "worker":
		os.Exit(worker(c))
	default:
		fmt.Fprintln(os.Stderr, "--role must be producer or worker")
		os.Exit(2)
	}
}

// nowMs is wall-clock ms since the epoch with sub-ms precision.
func nowMs() float64 { return float64(time.Now().UnixNano()) / 1e6 }

func emit(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	os.Stdout.Write(append(b, '\n')) // unbuffered: one write per line
}

// payload is the 64-byte JSON object of the protocol.
func payload(i int, t float64) []byte {
	head := fmt.Sprintf(`{"i":%d,"t":%.3f,"p":"`, i, t)
	pad := 64 - len(head) - 2
	if pad < 0 {
		panic("payload over 64 bytes")
	}
	return []byte(head + strings.Repeat("x", pad) + `"}`)
}

func versions() string {
	v := "go " + runtime.Version()
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			switch dep.Path {
			case "github.com/jobwire/jobwire/client/go":
				v += ", " + dep.Path + " (client/go of this tree)"
			case "google.golang.org/grpc", "google.golang.org/protobuf":
				v += ", " + dep.Path + "@" + dep.Version
			}
		}
	}
	return v
}

func info(settings string) {
	emit(map[string]any{"event": "info", "system": "jobwire-go", "version": versions(), "settings": settings})
}

// ---------------------------------------------------------------- producer

func producer(c config) int {
	var settings string
	if c.rate > 0 {
		settings = fmt.Sprintf("rate %g/s: one Client.Enqueue per job, each sent at its scheduled time "+
			"from a goroutine of its own (open loop); t = scheduled time; 1 gRPC channel", c.rate)
	} else {
		settings = fmt.Sprintf("bulk: Client.EnqueueBatch of %d jobs, one call in flight; "+
			"t = when the chunk is sent; 1 gRPC channel", c.chunk)
	}
	info(settings)

	client, err := jobwire.Dial(c.addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dial:", err)
		return 1
	}
	defer client.Close()

	// Warm-up: one round trip that enqueues nothing.
	_, err = client.GetJob(context.Background(), c.queue, "warmup-no-such-job")
	var je *jobwire.Error
	if err != nil && !(errors.As(err, &je) && je.Code == codes.NotFound) {
		fmt.Fprintln(os.Stderr, "warm-up GetJob:", err)
		return 1
	}
	emit(map[string]any{"event": "ready"})

	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	if strings.TrimSpace(line) != "go" {
		fmt.Fprintf(os.Stderr, "expected \"go\" on stdin, got %q\n", line)
		return 1
	}
	start := time.Now()
	startMs := float64(start.UnixNano()) / 1e6

	var enqueued, failed atomic.Int64
	ctx := context.Background()
	if c.rate > 0 {
		var wg sync.WaitGroup
		for i := 0; i < c.jobs; i++ {
			offset := time.Duration(float64(i) * 1e9 / c.rate)
			if d := time.Until(start.Add(offset)); d > 0 {
				time.Sleep(d)
			}
			t := startMs + float64(offset)/1e6
			wg.Add(1)
			go func(i int, t float64) {
				defer wg.Done()
				if _, err := client.Enqueue(ctx, c.queue, jobType, payload(i, t)); err != nil {
					if failed.Add(1) <= 5 {
						fmt.Fprintln(os.Stderr, "enqueue:", err)
					}
					return
				}
				enqueued.Add(1)
			}(i, t)
		}
		wg.Wait()
	} else {
		batch := make([]jobwire.BatchJob, 0, c.chunk)
		for first := 0; first < c.jobs; first += c.chunk {
			batch = batch[:0]
			t := nowMs()
			for i := first; i < min(first+c.chunk, c.jobs); i++ {
				batch = append(batch, jobwire.BatchJob{Type: jobType, Payload: payload(i, t)})
			}
			results, err := client.EnqueueBatch(ctx, c.queue, batch)
			if err != nil {
				failed.Add(int64(len(batch)))
				fmt.Fprintln(os.Stderr, "enqueue batch:", err)
				continue
			}
			for _, r := range results {
				if r.Err != nil {
					if failed.Add(1) <= 5 {
						fmt.Fprintln(os.Stderr, "enqueue batch job:", r.Err)
					}
					continue
				}
				enqueued.Add(1)
			}
		}
	}
	emit(map[string]any{"event": "done", "enqueued": enqueued.Load(), "start_ms": startMs, "end_ms": nowMs()})
	if failed.Load() > 0 {
		fmt.Fprintf(os.Stderr, "%d enqueues failed\n", failed.Load())
		return 1
	}
	return 0
}

// ---------------------------------------------------------------- worker

func worker(c config) int {
	info(fmt.Sprintf("1 jobwire.Worker, Concurrency %d (one Work stream, carrying its acks), broker-default lease and retention; "+
		"done counted at OnOutcome ack_ok (broker-confirmed Ack, acks coalesced on the Work stream); "+
		"no-op handler (json.Unmarshal of the payload)", c.concurrency))

	ready := make(chan struct{})
	var readyOnce sync.Once
	claimOpened := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
		streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err == nil && (strings.HasSuffix(method, "/Work") || strings.HasSuffix(method, "/Claim")) {
			readyOnce.Do(func() { close(ready) })
		}
		return s, err
	}

	var (
		mu        sync.Mutex
		started   = make(map[string]float64, c.concurrency*2) // job id -> handler_start_ms - t
		latencies = make([]float64, 0, c.jobs)
		completed int
		firstDone float64
		lastDone  float64
		other     atomic.Int64
	)
	finished := make(chan struct{})
	w, err := jobwire.NewWorker(c.addr, []string{c.queue},
		jobwire.WithConcurrency(c.concurrency),
		jobwire.WithWorkerID(fmt.Sprintf("bench-go-%d", os.Getpid())),
		jobwire.WithGrace(4*time.Second),
		jobwire.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
		jobwire.WithDialOptions(grpc.WithChainStreamInterceptor(claimOpened)),
		jobwire.WithOutcomeHook(func(o jobwire.Outcome) {
			now := nowMs()
			if o.Kind != jobwire.OutcomeAckOK {
				if other.Add(1) <= 5 {
					fmt.Fprintf(os.Stderr, "outcome %s for job %s: %v\n", o.Kind, o.Job.ID, o.Err)
				}
				return
			}
			mu.Lock()
			defer mu.Unlock()
			lat, ok := started[o.Job.ID]
			delete(started, o.Job.ID)
			if completed >= c.jobs {
				return
			}
			if ok {
				latencies = append(latencies, lat)
			}
			completed++
			if completed == 1 {
				firstDone = now
			}
			lastDone = now
			if completed == c.jobs {
				close(finished)
			}
		}))
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	w.Handle(jobType, func(ctx context.Context, job *jobwire.Job) (any, error) {
		start := nowMs()
		var p struct {
			I int     `json:"i"`
			T float64 `json:"t"`
			P string  `json:"p"`
		}
		if err := json.Unmarshal(job.Payload, &p); err != nil {
			return nil, jobwire.NonRetryable(err)
		}
		mu.Lock()
		started[job.ID] = start - p.T
		mu.Unlock()
		return nil, nil
	})

	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(context.Background()) }()
	select {
	case <-ready:
	case err := <-runErr:
		fmt.Fprintln(os.Stderr, "worker run:", err)
		return 1
	}
	emit(map[string]any{"event": "ready"})

	select {
	case <-finished:
	case err := <-runErr:
		fmt.Fprintln(os.Stderr, "worker run ended early:", err)
		return 1
	}
	mu.Lock()
	lat := latencySummary(latencies)
	emit(map[string]any{"event": "done", "completed": completed, "first_done_ms": firstDone,
		"last_done_ms": lastDone, "latency_ms": lat})
	mu.Unlock()

	stopped := make(chan struct{})
	go func() { w.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		fmt.Fprintln(os.Stderr, "worker: graceful stop took over 5 s, exiting")
	}
	if n := other.Load(); n > 0 {
		fmt.Fprintf(os.Stderr, "worker: %d outcomes other than ack_ok\n", n)
	}
	return 0
}

// latencySummary: n, mean and nearest-rank percentiles of v (ms).
func latencySummary(v []float64) map[string]any {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	out := map[string]any{"n": len(s)}
	if len(s) == 0 {
		for _, k := range []string{"mean", "p50", "p90", "p99", "max"} {
			out[k] = nil
		}
		return out
	}
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	pct := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(0, min(len(s)-1, i))]
	}
	out["mean"] = sum / float64(len(s))
	out["p50"] = pct(0.50)
	out["p90"] = pct(0.90)
	out["p99"] = pct(0.99)
	out["max"] = s[len(s)-1]
	return out
}
