package jobwire_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jobwire "github.com/jobwire/jobwire/client/go"
	"github.com/jobwire/jobwire/client/go/internal/testbroker"
)

// The shared redis-server and broker of the suite (tests that kill a broker
// start their own against the same Redis).
var (
	tmpDir     string
	redisProc  *testbroker.Process
	brokerProc *testbroker.Process
	brokerAddr string
)

// brokerFlags are the flags of every broker the tests start.
var brokerFlags = []string{"--shutdown_grace_ms=2000", "--log_level=warning"}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	tmpDir, err = os.MkdirTemp("", "jobwire-go-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir:", err)
		return 1
	}
	redisProc, err = testbroker.StartRedis(tmpDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start redis:", err)
		return 1
	}
	defer redisProc.Stop(5 * time.Second)
	brokerProc, err = testbroker.StartBroker(tmpDir, redisProc.Port, 0, brokerFlags...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start broker:", err)
		return 1
	}
	defer brokerProc.Stop(5 * time.Second)
	brokerAddr = brokerProc.Addr()
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "logs kept in %s; broker log tail:\n%s\n", tmpDir, testbroker.Tail(brokerProc.LogPath, 30))
	} else {
		defer os.RemoveAll(tmpDir)
	}
	return code
}

var queueSeq atomic.Int64

// queueName is a queue of its own for one test.
func queueName(t *testing.T) string {
	name := strings.NewReplacer("/", ".", " ", "_").Replace(t.Name())
	return fmt.Sprintf("go.%s.%d.%d", name, time.Now().UnixNano()%1e9, queueSeq.Add(1))
}

func newClient(t *testing.T, addr string, opts ...jobwire.Option) *jobwire.Client {
	t.Helper()
	c, err := jobwire.Dial(addr, opts...)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// outcomes collects what a worker's outcome hook receives.
type outcomes struct {
	mu      sync.Mutex
	list    []jobwire.Outcome
	firstAt time.Time // when the first outcome came
}

func (o *outcomes) add(x jobwire.Outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.list == nil {
		o.firstAt = time.Now()
	}
	o.list = append(o.list, x)
}

// first is when the first outcome came (zero before).
func (o *outcomes) first() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.firstAt
}

func (o *outcomes) forJob(id string) []jobwire.Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []jobwire.Outcome
	for _, x := range o.list {
		if x.Job.ID == id {
			out = append(out, x)
		}
	}
	return out
}

// runningWorker is a worker started by startWorker.
type runningWorker struct {
	w      *jobwire.Worker
	out    *outcomes
	runErr chan error
}

// startWorker builds a worker of queues with the handlers, runs it in the
// background and stops it at the end of the test (checking that Run returned
// nil). The worker logs warnings to stderr, has a grace of 5 s and records
// its outcomes in runningWorker.out; opts come after these and may replace
// them (except the outcome hook, which the recording needs).
func startWorker(t *testing.T, addr string, queues []string, handlers map[string]jobwire.Handler, opts ...jobwire.WorkerOption) *runningWorker {
	t.Helper()
	return startWorkerUse(t, addr, queues, nil, handlers, opts...)
}

// startWorkerUse is startWorker with middlewares (Worker.Use) registered
// before Run.
func startWorkerUse(t *testing.T, addr string, queues []string, mws []jobwire.Middleware, handlers map[string]jobwire.Handler, opts ...jobwire.WorkerOption) *runningWorker {
	t.Helper()
	rw := &runningWorker{out: &outcomes{}, runErr: make(chan error, 1)}
	all := append([]jobwire.WorkerOption{jobwire.WithLogger(testLogger()), jobwire.WithGrace(5 * time.Second)}, opts...)
	all = append(all, jobwire.WithOutcomeHook(rw.out.add))
	w, err := jobwire.NewWorker(addr, queues, all...)
	if err != nil {
		t.Fatalf("NewWorker: %v", err)
	}
	for typ, h := range handlers {
		w.Handle(typ, h)
	}
	if err := w.Use(mws...); err != nil {
		t.Fatalf("Use: %v", err)
	}
	rw.w = w
	go func() { rw.runErr <- w.Run(context.Background()) }()
	t.Cleanup(func() {
		w.Stop()
		select {
		case err := <-rw.runErr:
			if err != nil {
				t.Errorf("Run returned %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return after Stop")
		}
	})
	return rw
}

// waitFor polls cond every 20 ms until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitState polls GetJob until the job is in state, and returns it.
func waitState(t *testing.T, c *jobwire.Client, queue, id string, state jobwire.JobState, timeout time.Duration) *jobwire.JobInfo {
	t.Helper()
	var last *jobwire.JobInfo
	var lastErr error
	deadline := time.Now().Add(timeout)
	for {
		last, lastErr = c.GetJob(context.Background(), queue, id)
		if lastErr == nil && last.GetState() == state {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s not %v after %s: last %v, err %v", id, state, timeout, last, lastErr)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func mustEnqueue(t *testing.T, c *jobwire.Client, queue, typ string, payload any, opts ...jobwire.EnqueueOption) string {
	t.Helper()
	res, err := c.Enqueue(context.Background(), queue, typ, payload, opts...)
	if err != nil {
		t.Fatalf("Enqueue(%s, %s): %v", queue, typ, err)
	}
	if res.JobID == "" || res.Duplicate {
		t.Fatalf("Enqueue(%s, %s) = %+v", queue, typ, res)
	}
	return res.JobID
}

func asError(t *testing.T, err error) *jobwire.Error {
	t.Helper()
	var je *jobwire.Error
	if !errors.As(err, &je) {
		t.Fatalf("error %v (%T) is not a *jobwire.Error", err, err)
	}
	return je
}
