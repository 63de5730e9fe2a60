// asynq peer of the jobwire benchmark (bench/README.md): end to end, producers
// and a Server at once in this process, from the first Enqueue to the last
// handled task; prints one JSON line.
//
//	asynq-bench --redis-url redis://127.0.0.1:6379 --jobs 20000
//
// Settings: asynq has no bulk enqueue, so --producers goroutines (8) share one
// Client and call Enqueue one task each; one Server with --concurrency (64)
// on one queue; MaxRetry(0) is not set (defaults kept) and completed tasks
// are not retained (asynq's default Retention 0 deletes them on success).
// TaskCheckInterval (how long the fetcher sleeps when the queue is empty) is
// asynq's default, 1 s, unless --task-check-interval says otherwise.
// Completion is counted in the handler (no Redis command); the task is done
// for asynq only once the handler returns and the server has deleted it, so
// the clock stops at the last handler return, a few hundred microseconds
// before its ack, like the C++ benchmark stops at the last ack callback.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
)

func main() {
	redisURL := flag.String("redis-url", "redis://127.0.0.1:6379", "Redis URL")
	jobs := flag.Int64("jobs", 20000, "tasks to run")
	producers := flag.Int("producers", 8, "goroutines calling Client.Enqueue")
	concurrency := flag.Int("concurrency", 64, "Server Concurrency")
	checkInterval := flag.Duration("task-check-interval", 0, "Server TaskCheckInterval (0: asynq default, 1s)")
	queue := flag.String("queue", "default", "queue name")
	rate := flag.Float64("rate", 0, "latency mode: offered tasks/s, one Enqueue per task, open loop")
	offerSeconds := flag.Float64("seconds", 5, "latency mode: how long to offer load")
	flag.Parse()
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
