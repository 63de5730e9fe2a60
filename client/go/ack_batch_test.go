package jobwire_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	jobwire "github.com/jobwire/jobwire/client/go"
	"github.com/jobwire/jobwire/client/go/internal/testbroker"
	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// claimAll claims n jobs of queues through the raw Claim stream and returns
// their lease tokens by "<queue>/<job id>" (job ids are unique within a
// queue only). The stream is closed afterwards; the leases
// (60 s) stay in Redis.
func claimAll(t *testing.T, c *jobwire.Client, queues []string, n int) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := c.Stub().Claim(ctx, &jobwirepb.ClaimRequest{
		Queues: queues, MaxInFlight: int32(n), LeaseMs: 60000, WorkerId: "go-test-ackbatch",
	})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	tokens := map[string]string{}
	for len(tokens) < n {
		msg, err := stream.Recv()
		if err != nil {
			t.Fatalf("Claim.Recv after %d of %d jobs: %v", len(tokens), n, err)
		}
		// One message carries every job claimed since the previous one.
		for _, cj := range msg.GetJobs() {
			tokens[cj.GetJob().GetQueue()+"/"+cj.GetJob().GetId()] = cj.GetLeaseToken()
		}
	}
	return tokens
}

// A job enqueued with completed retention 0 is deleted by its ack: GetJob
// answers NOT_FOUND, and a repeated ack with the same token still answers OK.
func TestCompletedRetentionZeroDeletesTheJobOnAck(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	ctx := context.Background()
	q := queueName(t)
	id := mustEnqueue(t, c, q, "t", nil, jobwire.WithCompletedRetention(0))
	tokens := claimAll(t, c, []string{q}, 1)
	ack := jobwire.BatchAck{Queue: q, JobID: id, LeaseToken: tokens[q+"/"+id], Result: "done"}
	for i := 0; i < 2; i++ { // the second is a repeat
		res, err := c.AckBatch(ctx, []jobwire.BatchAck{ack})
		if err != nil || len(res) != 1 || res[0].Err != nil {
			t.Fatalf("ack %d: %+v %v", i, res, err)
		}
		if _, err := c.GetJob(ctx, q, id); asError(t, err).Code != codes.NotFound {
			t.Errorf("GetJob after ack %d: %v, want NOT_FOUND", i, err)
		}
	}
}

func TestAckBatchPerAckResultsAcrossQueues(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	ctx := context.Background()
	q1, q2 := queueName(t), queueName(t)
	good1 := mustEnqueue(t, c, q1, "t", nil)
	stale := mustEnqueue(t, c, q1, "t", nil)
	good2 := mustEnqueue(t, c, q2, "t", nil)
	invalid := mustEnqueue(t, c, q2, "t", nil)
	tokens := claimAll(t, c, []string{q1, q2}, 4)

	res, err := c.AckBatch(ctx, []jobwire.BatchAck{
		{Queue: q1, JobID: good1, LeaseToken: tokens[q1+"/"+good1], Result: []byte("raw-1")},
		// A real token, but not this job's lease.
		{Queue: q1, JobID: stale, LeaseToken: tokens[q1+"/"+good1], Result: []byte("never")},
		{Queue: q2, JobID: "no-such-job", LeaseToken: tokens[q2+"/"+good2]},
		{Queue: q2, JobID: good2, LeaseToken: tokens[q2+"/"+good2], Result: map[string]int{"n": 2}},
		{Queue: q2, JobID: invalid, LeaseToken: "", Result: []byte("never")},
	})
	if err != nil {
		t.Fatalf("AckBatch: %v", err)
	}
	if len(res) != 5 {
		t.Fatalf("got %d results, want 5: %+v", len(res), res)
	}
	if res[0].Err != nil || res[3].Err != nil {
		t.Errorf("good acks refused: %v / %v", res[0].Err, res[3].Err)
	}
	if je := asError(t, res[1].Err); je.Code != codes.FailedPrecondition {
		t.Errorf("stale token: %v, want FAILED_PRECONDITION", je)
	}
	if je := asError(t, res[2].Err); je.Code != codes.NotFound {
		t.Errorf("unknown job: %v, want NOT_FOUND", je)
	}
	if je := asError(t, res[4].Err); je.Code != codes.InvalidArgument || !strings.HasPrefix(je.Message, "acks[4].") {
		t.Errorf("invalid ack: %v, want INVALID_ARGUMENT starting with acks[4].", je)
	}

	for _, want := range []struct{ queue, id, result string }{{q1, good1, "raw-1"}, {q2, good2, `{"n":2}`}} {
		j, err := c.GetJob(ctx, want.queue, want.id)
		if err != nil || j.GetState() != jobwire.StateCompleted || string(j.GetResult()) != want.result {
			t.Errorf("acked job %s: %v %v, want COMPLETED with %q", want.id, j, err, want.result)
		}
	}
	// The refused acks changed nothing: the jobs are still ACTIVE under the
	// same leases (their own tokens still ack them), the unknown job absent.
	for _, ref := range []struct{ queue, id string }{{q1, stale}, {q2, invalid}} {
		j, err := c.GetJob(ctx, ref.queue, ref.id)
		if err != nil || j.GetState() != jobwire.StateActive || len(j.GetResult()) != 0 || j.GetAttempts() != 1 {
			t.Errorf("refused job %s: %v %v, want ACTIVE, no result", ref.id, j, err)
		}
	}
	if _, err := c.GetJob(ctx, q2, "no-such-job"); asError(t, err).Code != codes.NotFound {
		t.Errorf("unknown job after AckBatch: %v", err)
	}
	res, err = c.AckBatch(ctx, []jobwire.BatchAck{
		{Queue: q1, JobID: stale, LeaseToken: tokens[q1+"/"+stale], Result: "late"},
		{Queue: q2, JobID: invalid, LeaseToken: tokens[q2+"/"+invalid]},
	})
	if err != nil || len(res) != 2 || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("acking the refused jobs with their own tokens: %+v %v", res, err)
	}
	if j, err := c.GetJob(ctx, q1, stale); err != nil || j.GetState() != jobwire.StateCompleted || string(j.GetResult()) != `"late"` {
		t.Errorf("job %s after its own ack: %v %v", stale, j, err)
	}

	// Call-level errors: an empty batch and one of 1001 acks.
	_, err = c.AckBatch(ctx, nil)
	if je := asError(t, err); je.Code != codes.InvalidArgument {
		t.Errorf("empty batch: %v", err)
	}
	big := make([]jobwire.BatchAck, 1001)
	for i := range big {
		big[i] = jobwire.BatchAck{Queue: q1, JobID: good1, LeaseToken: tokens[q1+"/"+good1]}
	}
	_, err = c.AckBatch(ctx, big)
	if je := asError(t, err); je.Code != codes.InvalidArgument || !strings.Contains(je.Message, "1001") {
		t.Errorf("batch of 1001: %v", err)
	}
}

// rpcCounts scrapes a broker's /metrics and returns the calls handled per
// method (jobwire_rpc_requests_total summed over the codes) and the codes
// seen per method.
func rpcCounts(t *testing.T, metricsAddr string) (calls map[string]float64, codesSeen map[string][]string) {
	t.Helper()
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatalf("scrape metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape metrics: HTTP %d", resp.StatusCode)
	}
	label := regexp.MustCompile(`(\w+)="([^"]*)"`)
	calls, codesSeen = map[string]float64{}, map[string][]string{}
	found := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "jobwire_rpc_requests_total{") {
			continue
		}
		found = true
		end := strings.LastIndex(line, "}")
		labels := map[string]string{}
		for _, m := range label.FindAllStringSubmatch(line[:end], -1) {
			labels[m[1]] = m[2]
		}
		v, err := strconv.ParseFloat(strings.Fields(line[end+1:])[0], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		calls[labels["method"]] += v
		codesSeen[labels["method"]] = append(codesSeen[labels["method"]], labels["code"])
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read metrics: %v", err)
	}
	if !found {
		t.Fatal("no jobwire_rpc_requests_total in /metrics")
	}
	return calls, codesSeen
}

// A Worker's acks go on its Work stream: 300 quick jobs at concurrency 16
// are each acked (ack_ok, COMPLETED on attempt 1) without a single Ack or
// AckBatch call. (ack_coalescer_test.go checks that they are coalesced.)
func TestWorkerSendsAcksOnTheWorkStream(t *testing.T) {
	t.Parallel()
	// A broker of its own (same Redis), so that its RPC counts are the
	// worker's alone.
	metricsPort, err := testbroker.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", metricsPort)
	b, err := testbroker.StartBroker(tmpDir, redisProc.Port, 0, append(brokerFlags, "--metrics_listen="+metricsAddr)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Stop(5 * time.Second) })
	if err := testbroker.WaitPort(metricsPort, 10*time.Second, nil); err != nil {
		t.Fatalf("metrics endpoint: %v", err)
	}

	const jobs = 300
	// Through the same broker, so that its /metrics has RPCs to count.
	producer := newClient(t, b.Addr())
	q := queueName(t)
	batch := make([]jobwire.BatchJob, jobs)
	for i := range batch {
		batch[i] = jobwire.BatchJob{Type: "quick", Payload: i}
	}
	res, err := producer.EnqueueBatch(context.Background(), q, batch)
	if err != nil {
		t.Fatalf("EnqueueBatch: %v", err)
	}
	var ran atomic.Int64
	rw := startWorker(t, b.Addr(), []string{q}, map[string]jobwire.Handler{
		"quick": func(ctx context.Context, job *jobwire.Job) (any, error) {
			ran.Add(1)
			return append([]byte("r:"), job.Payload...), nil
		},
	}, jobwire.WithConcurrency(16))
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("job %d not enqueued: %v", i, r.Err)
		}
		j := waitState(t, producer, q, r.JobID, jobwire.StateCompleted, 30*time.Second)
		if want := "r:" + strconv.Itoa(i); string(j.GetResult()) != want || j.GetAttempts() != 1 {
			t.Errorf("job %d: result %q attempts %d, want %q on attempt 1", i, j.GetResult(), j.GetAttempts(), want)
		}
	}
	// Each job got its own ack_ok outcome.
	for i, r := range res {
		waitFor(t, 5*time.Second, fmt.Sprintf("outcome of job %d", i), func() bool { return len(rw.out.forJob(r.JobID)) == 1 })
		if o := rw.out.forJob(r.JobID)[0]; o.Kind != jobwire.OutcomeAckOK || string(o.Result) != "r:"+strconv.Itoa(i) {
			t.Errorf("job %d outcome %+v", i, o)
		}
	}
	if n := ran.Load(); n != jobs {
		t.Errorf("handlers ran %d times, want %d", n, jobs)
	}

	calls, seen := rpcCounts(t, metricsAddr)
	t.Logf("broker RPC counts: %v", calls)
	if calls["Ack"] != 0 {
		t.Errorf("the worker made %v unary Ack calls, want none", calls["Ack"])
	}
	if calls["AckBatch"] != 0 {
		t.Errorf("the worker made %v AckBatch calls, want none (the acks go on the Work stream)", calls["AckBatch"])
	}
	t.Logf("broker RPC status codes: %v", seen)
}
