// asynq peer of the jobwire benchmark, two ways:
//
// With --role producer|worker: the side-by-side benchmark
// (bench/side_by_side.py and its protocol), producer and worker as separate
// processes, JSON event lines on stdout:
//
//	asynq-bench --role worker   --redis-url redis://127.0.0.1:6379 --jobs 50000 --concurrency 50
//	asynq-bench --role producer --redis-url redis://127.0.0.1:6379 --jobs 50000 --chunk 1000
//	asynq-bench --role producer --redis-url redis://127.0.0.1:6379 --jobs 5000 --rate 1000
//
// asynq has no bulk enqueue: in bulk mode (--rate 0) --producers goroutines
// (default 16) share one Client (go-redis pool of as many connections) and
// call Client.Enqueue one task each, t = when that call is sent; --chunk is
// accepted and unused. Rate mode: task i is sent at go + i/R from a goroutine
// of its own (open loop), one Enqueue per task, t = its scheduled time.
// Warm-up before "ready": Client.Ping. The worker is one Server with
// Concurrency = --concurrency on the one queue, TaskCheckInterval
// --task-check-interval (default 10ms in this mode: how long the fetcher
// sleeps, on average, each time it finds the queue empty; asynq's default is
// 1 s), go-redis pool Concurrency + 10, default retries, completed tasks not
// retained (Retention 0, deleted on success). asynq confirms nothing to the
// program: a task is counted done when its handler returns (before asynq's
// own completion script runs).
//
// Without --role: the end-to-end program of bench/run_bench.py, producers
// and a Server at once in this process, from the first Enqueue to the last
// handled task; prints one JSON line.
//
//	asynq-bench --redis-url redis://127.0.0.1:6379 --jobs 20000
//
// Settings: asynq has no bulk enqueue, so --producers goroutines (8) share one
// Client and call Enqueue one task each; one Server with --concurrency (64)
// on one queue (--queue "default"); MaxRetry(0) is not set (defaults kept) and completed tasks
// are not retained (asynq's default Retention 0 deletes them on success).
// TaskCheckInterval (how long the fetcher sleeps when the queue is empty) is
// asynq's default, 1 s, unless --task-check-interval says otherwise.
// Completion is counted in the handler (no Redis command); the task is done
// for asynq only once the handler returns and the server has deleted it, so
// the clock stops at the last handler return, a few hundred microseconds
// before its ack, like the C++ benchmark stops at the last ack callback.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
)

// Role-mode defaults (see the package comment).
const (
	roleProducers     = 16
	roleCheckInterval = 10 * time.Millisecond
	taskType          = "bench"
)

func main() {
	role := flag.String("role", "", "producer|worker (side-by-side benchmark); none: the end-to-end program")
	flag.String("addr", "", "unused (jobwire broker address); accepted like every program of the benchmark")
	redisURL := flag.String("redis-url", "redis://127.0.0.1:6379", "Redis URL")
	queue := flag.String("queue", "bench", `queue name (without --role: "default")`)
	jobs := flag.Int64("jobs", 0, "producer: tasks to enqueue; worker: completions to wait for (without --role: 20000)")
	chunk := flag.Int("chunk", 1000, "unused: asynq has no bulk enqueue")
	concurrency := flag.Int("concurrency", 50, "Server Concurrency (without --role: 64)")
	rate := flag.Float64("rate", 0, "offered tasks/s, one Enqueue per task, open loop (0: as fast as it can)")
	producers := flag.Int("producers", 0, fmt.Sprintf("goroutines calling Client.Enqueue in bulk mode (default %d; without --role: 8)", roleProducers))
	checkInterval := flag.Duration("task-check-interval", 0, fmt.Sprintf("Server TaskCheckInterval (default %s; without --role: asynq's, 1s)", roleCheckInterval))
	offerSeconds := flag.Float64("seconds", 5, "without --role, rate mode: how long to offer load (--jobs = rate * seconds)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unexpected arguments: %v\n", flag.Args())
		os.Exit(2)
	}
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })

	if *role == "" {
		if !set["queue"] {
			*queue = "default"
		}
		if !set["jobs"] {
			*jobs = 20000
		}
		if !set["concurrency"] {
			*concurrency = 64
		}
		if !set["producers"] {
			*producers = 8
		}
		legacyMain(redisURL, jobs, producers, concurrency, checkInterval, queue, rate, offerSeconds)
		return
	}

	if !set["producers"] {
		*producers = roleProducers
	}
	if !set["task-check-interval"] {
		*checkInterval = roleCheckInterval
	}
	if *jobs <= 0 || *concurrency <= 0 || *rate < 0 || *producers <= 0 || *checkInterval <= 0 || *chunk <= 0 {
		fmt.Fprintln(os.Stderr, "need --jobs > 0, --concurrency > 0, --rate >= 0, --producers > 0, --task-check-interval > 0")
		os.Exit(2)
	}
	opt, err := asynq.ParseRedisURI(*redisURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	switch *role {
	case "producer":
		os.Exit(producer(opt, *queue, int(*jobs), *producers, *rate))
	case "worker":
		os.Exit(worker(opt, *queue, int(*jobs), *concurrency, *checkInterval))
	default:
		fmt.Fprintln(os.Stderr, "--role must be producer or worker")
		os.Exit(2)
	}
}

// withPool sets the go-redis connection pool size of a redis:// option.
func withPool(opt asynq.RedisConnOpt, n int) asynq.RedisConnOpt {
	if o, ok := opt.(asynq.RedisClientOpt); ok {
		o.PoolSize = n
		return o
	}
	return opt
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
			if dep.Path == "github.com/hibiken/asynq" || dep.Path == "github.com/redis/go-redis/v9" {
				v += ", " + dep.Path + "@" + dep.Version
			}
		}
	}
	return v
}

func info(settings string) {
	emit(map[string]any{"event": "info", "system": "asynq", "version": versions(), "settings": settings})
}

func producer(opt asynq.RedisConnOpt, queue string, jobs, producers int, rate float64) int {
	pool := producers
	if rate > 0 {
		pool = 0 // go-redis default, 10 per GOMAXPROCS
		info(fmt.Sprintf("rate %g/s: one Client.Enqueue per task, each sent at its scheduled time from a goroutine "+
			"of its own (open loop), t = scheduled time; 1 Client, go-redis pool default (%d)", rate, 10*runtime.GOMAXPROCS(0)))
	} else {
		info(fmt.Sprintf("no bulk enqueue in asynq: Client.Enqueue one task per call from %d goroutines, "+
			"t = when each call is sent (--chunk unused); 1 Client, go-redis pool %d", producers, pool))
	}
	if pool > 0 {
		opt = withPool(opt, pool)
	}
	client := asynq.NewClient(opt)
	defer client.Close()
	if err := client.Ping(); err != nil {
		fmt.Fprintln(os.Stderr, "ping:", err)
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
	send := func(i int, t float64) {
		if _, err := client.Enqueue(asynq.NewTask(taskType, payload(i, t)), asynq.Queue(queue)); err != nil {
			if failed.Add(1) <= 5 {
				fmt.Fprintln(os.Stderr, "enqueue:", err)
			}
			return
		}
		enqueued.Add(1)
	}
	var wg sync.WaitGroup
	if rate > 0 {
		for i := 0; i < jobs; i++ {
			offset := time.Duration(float64(i) * 1e9 / rate)
			if d := time.Until(start.Add(offset)); d > 0 {
				time.Sleep(d)
			}
			wg.Add(1)
			go func(i int, t float64) {
				defer wg.Done()
				send(i, t)
			}(i, startMs+float64(offset)/1e6)
		}
	} else {
		var next atomic.Int64
		for p := 0; p < producers; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= jobs {
						return
					}
					send(i, nowMs())
				}
			}()
		}
	}
	wg.Wait()
	emit(map[string]any{"event": "done", "enqueued": enqueued.Load(), "start_ms": startMs, "end_ms": nowMs()})
	if failed.Load() > 0 {
		fmt.Fprintf(os.Stderr, "%d enqueues failed\n", failed.Load())
		return 1
	}
	return 0
}

func worker(opt asynq.RedisConnOpt, queue string, jobs, concurrency int, checkInterval time.Duration) int {
	pool := concurrency + 10
	info(fmt.Sprintf("1 Server, Concurrency %d, TaskCheckInterval %s (asynq default 1s), go-redis pool %d; "+
		"default retries, completed tasks not retained; asynq gives no completion confirmation: "+
		"done counted when the handler returns; no-op handler (json.Unmarshal of the payload)",
		concurrency, checkInterval, pool))
	opt = withPool(opt, pool)

	var (
		mu        sync.Mutex
		latencies = make([]float64, 0, jobs)
		completed int
		firstDone float64
		lastDone  float64
	)
	finished := make(chan struct{})
	mux := asynq.NewServeMux()
	mux.HandleFunc(taskType, func(ctx context.Context, t *asynq.Task) error {
		start := nowMs()
		var p struct {
			I int     `json:"i"`
			T float64 `json:"t"`
			P string  `json:"p"`
		}
		if err := json.Unmarshal(t.Payload(), &p); err != nil {
			return fmt.Errorf("%v: %w", err, asynq.SkipRetry)
		}
		mu.Lock()
		defer mu.Unlock()
		if completed >= jobs {
			return nil
		}
		latencies = append(latencies, start-p.T)
		completed++
		now := nowMs()
		if completed == 1 {
			firstDone = now
		}
		lastDone = now
		if completed == jobs {
			close(finished)
		}
		return nil
	})
	srv := asynq.NewServer(opt, asynq.Config{
		Concurrency:       concurrency,
		Queues:            map[string]int{queue: 1},
		TaskCheckInterval: checkInterval,
		ShutdownTimeout:   3 * time.Second,
		LogLevel:          asynq.WarnLevel,
	})
	if err := srv.Ping(); err != nil {
		fmt.Fprintln(os.Stderr, "ping:", err)
		return 1
	}
	if err := srv.Start(mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	emit(map[string]any{"event": "ready"})

	<-finished
	mu.Lock()
	emit(map[string]any{"event": "done", "completed": completed, "first_done_ms": firstDone,
		"last_done_ms": lastDone, "latency_ms": latencySummary(latencies)})
	mu.Unlock()

	stopped := make(chan struct{})
	go func() { srv.Shutdown(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		fmt.Fprintln(os.Stderr, "worker: graceful shutdown took over 5 s, exiting")
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

// legacyMain is the end-to-end program of bench/run_bench.py (no --role):
// producers and a Server in this process, one JSON line at the end.
func legacyMain(redisURL *string, jobs *int64, producers, concurrency *int, checkInterval *time.Duration,
	queue *string, rate, offerSeconds *float64) {
	latencyMode := *rate > 0
	if latencyMode {
		*jobs = int64(*rate * *offerSeconds)
	}
	base := time.Now() // sent_ns and latencies are monotonic offsets from it
	var latMu sync.Mutex
	var latencies []int64

	opt, err := asynq.ParseRedisURI(*redisURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}

	var done atomic.Int64
	finished := make(chan time.Time, 1)
	target := *jobs
	mux := asynq.NewServeMux()
	mux.HandleFunc("noop", func(ctx context.Context, t *asynq.Task) error {
		if latencyMode {
			now := time.Since(base).Nanoseconds()
			var p struct {
				SentNs int64 `json:"sent_ns"`
			}
			if json.Unmarshal(t.Payload(), &p) == nil {
				latMu.Lock()
				latencies = append(latencies, now-p.SentNs)
				latMu.Unlock()
			}
		}
		if done.Add(1) == target {
			finished <- time.Now()
		}
		return nil
	})
	srv := asynq.NewServer(opt, asynq.Config{
		Concurrency:       *concurrency,
		Queues:            map[string]int{*queue: 1},
		TaskCheckInterval: *checkInterval,
		LogLevel:          asynq.WarnLevel,
	})
	if err := srv.Start(mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	client := asynq.NewClient(opt)
	time.Sleep(300 * time.Millisecond) // server polling its queue, like jobwire_bench

	start := time.Now()
	var failed atomic.Int64
	var wg sync.WaitGroup
	if latencyMode {
		// Open loop: task n is sent at start + n / rate, whatever came before.
		for n := int64(0); n < target; n++ {
			time.Sleep(time.Until(start.Add(time.Duration(float64(n) * 1e9 / *rate))))
			payload := fmt.Sprintf(`{"n":%d,"sent_ns":%d,"pad":"jobwire-bench"}`, n, time.Since(base).Nanoseconds())
			if _, err := client.Enqueue(asynq.NewTask("noop", []byte(payload)), asynq.Queue(*queue)); err != nil {
				failed.Add(1)
			}
		}
	}
	for p := 0; p < *producers && !latencyMode; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for n := int64(p); n < target; n += int64(*producers) {
				payload := fmt.Sprintf(`{"n":%d,"sent_ns":%d,"pad":"jobwire-bench"}`, n, time.Since(base).Nanoseconds())
				if _, err := client.Enqueue(asynq.NewTask("noop", []byte(payload)), asynq.Queue(*queue)); err != nil {
					failed.Add(1)
				}
			}
		}(p)
	}
	wg.Wait()
	var end time.Time
	select {
	case end = <-finished:
	case <-time.After(5 * time.Minute):
		fmt.Fprintln(os.Stderr, "timed out")
		os.Exit(1)
	}
	seconds := end.Sub(start).Seconds()
	srv.Shutdown()
	client.Close()

	if latencyMode {
		latMu.Lock()
		sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
		pct := func(p float64) float64 {
			if len(latencies) == 0 {
				return 0
			}
			i := min(len(latencies)-1, int(p*float64(len(latencies))))
			return float64(latencies[i]) / 1e6
		}
		out, _ := json.Marshal(map[string]any{
			"system": "asynq", "jobs": target, "failed": failed.Load(), "offered_per_s": *rate,
			"p50_ms": pct(0.5), "p99_ms": pct(0.99), "p999_ms": pct(0.999), "max_ms": pct(1),
			"instrumentation_commands": 0,
		})
		fmt.Println(string(out))
		return
	}
	version := "asynq"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/hibiken/asynq" || dep.Path == "github.com/redis/go-redis/v9" {
				version += " " + dep.Path + "@" + dep.Version
			}
		}
	}
	interval := "1s (default)"
	if *checkInterval > 0 {
		interval = checkInterval.String()
	}
	out, _ := json.Marshal(map[string]any{
		"system":     "asynq",
		"version":    version,
		"jobs":       target,
		"failed":     failed.Load(),
		"seconds":    seconds,
		"jobs_per_s": float64(target) / seconds,
		"settings": fmt.Sprintf("no bulk enqueue in asynq: Client.Enqueue one task per call from %d goroutines; "+
			"1 Server, Concurrency %d, TaskCheckInterval %s; completed tasks not retained; "+
			"completion counted in the handler", *producers, *concurrency, interval),
		"instrumentation_commands": 0,
	})
	fmt.Println(string(out))
	if failed.Load() > 0 {
		os.Exit(1)
	}
}
