// asynq peer of the jobwire benchmark: the side-by-side benchmark
// (bench/side_by_side.py and bench/side_protocol.md), producer and worker as
// separate processes, JSON event lines on stdout:
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
// --task-check-interval (default 10ms: how long the fetcher sleeps, on
// average, each time it finds the queue empty; asynq's default is 1 s, and
// 10ms was the fastest of 1ms, 10ms, 100ms and 1s in 50,000-job runs),
// go-redis pool Concurrency + 10, default retries, completed tasks not
// retained (Retention 0, deleted on success). asynq confirms nothing to the
// program: a task is counted done when its handler returns (before asynq's
// own completion script runs).
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
	role := flag.String("role", "", "producer or worker")
	flag.String("addr", "", "unused (jobwire broker address); accepted like every program of the benchmark")
	redisURL := flag.String("redis-url", "redis://127.0.0.1:6379", "Redis URL")
	queue := flag.String("queue", "bench", "queue name")
	jobs := flag.Int64("jobs", 0, "producer: tasks to enqueue; worker: completions to wait for")
	chunk := flag.Int("chunk", 1000, "unused: asynq has no bulk enqueue")
	concurrency := flag.Int("concurrency", 50, "Server Concurrency")
	rate := flag.Float64("rate", 0, "offered tasks/s, one Enqueue per task, open loop (0: as fast as it can)")
	producers := flag.Int("producers", 0, fmt.Sprintf("goroutines calling Client.Enqueue in bulk mode (default %d)", roleProducers))
	checkInterval := flag.Duration("task-check-interval", 0, fmt.Sprintf("Server TaskCheckInterval (default %s)", roleCheckInterval))
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unexpected arguments: %v\n", flag.Args())
		os.Exit(2)
	}
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })

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
