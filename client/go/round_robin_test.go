package jobwire_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	jobwire "github.com/jobwire/jobwire/client/go"
	"github.com/jobwire/jobwire/client/go/internal/testbroker"
)

// Every channel of the client balances round_robin by default (client.go,
// defaultServiceConfig): one target that resolves to several brokers (a
// Kubernetes headless Service) spreads calls over all of them. grpc-go has
// no ipv4:a,b scheme, so these tests resolve one target to two brokers
// with a manual resolver.

var resolverSeq atomic.Int64

// multiAddr returns a target and the dial option that resolves it to addrs.
// A manual resolver serves one channel only: call it once per Client / Worker.
func multiAddr(addrs ...string) (string, jobwire.Option) {
	r := manual.NewBuilderWithScheme(fmt.Sprintf("jwtest%d", resolverSeq.Add(1)))
	state := resolver.State{}
	for _, a := range addrs {
		state.Addresses = append(state.Addresses, resolver.Address{Addr: a})
	}
	r.InitialState(state)
	return r.Scheme() + ":///brokers", jobwire.WithDialOptions(grpc.WithResolvers(r))
}

// startStack starts a redis-server and a broker of their own, stopped at the
// end of the test.
func startStack(t *testing.T) *testbroker.Stack {
	t.Helper()
	s, err := testbroker.StartStack(tmpDir, brokerFlags...)
	if err != nil {
		t.Fatalf("start stack: %v", err)
	}
	t.Cleanup(func() { s.Stop(5 * time.Second) })
	return s
}

// holder tells which of the direct clients (one per broker, separate
// Redis) stores the job id with payload: its index, failing the test unless
// exactly one has it (job ids are counted per Redis, so the other broker may
// have a job of that id, with another payload).
func holder(t *testing.T, direct []*jobwire.Client, queue, id, payload string) int {
	t.Helper()
	found := -1
	for i, c := range direct {
		job, err := c.GetJob(context.Background(), queue, id)
		switch {
		case err == nil && string(job.GetPayload()) != payload:
		case err == nil:
			if found >= 0 {
				t.Fatalf("job %s (%s) on broker %d and broker %d", id, payload, found, i)
			}
			found = i
		case !errors.Is(err, jobwire.ErrJobNotFound):
			t.Fatalf("GetJob(%s) on broker %d: %v", id, i, err)
		}
	}
	if found < 0 {
		t.Fatalf("job %s (%s) on no broker", id, payload)
	}
	return found
}

// A Client whose target resolves to two brokers puts its Enqueues on both
// (with pick_first, every one lands on the first address).
func TestRoundRobinEnqueueReachesEveryBroker(t *testing.T) {
	a, b := startStack(t), startStack(t)
	direct := []*jobwire.Client{newClient(t, a.Broker.Addr()), newClient(t, b.Broker.Addr())}
	target, resolve := multiAddr(a.Broker.Addr(), b.Broker.Addr())
	c := newClient(t, target, resolve)
	q := queueName(t)

	var per [2]int
	for i := 0; i < 200 && (per[0] == 0 || per[1] == 0); i++ {
		payload := fmt.Sprintf("job-%d", i)
		id := mustEnqueue(t, c, q, "rr", []byte(payload))
		per[holder(t, direct, q, id, payload)]++
		time.Sleep(3 * time.Millisecond)
	}
	t.Logf("jobs per broker: %v", per)
	if per[0] == 0 || per[1] == 0 {
		t.Fatalf("jobs per broker %v: the client's Enqueues did not reach both brokers", per)
	}
}

// A grpc.WithDefaultServiceConfig of the user's (WithDialOptions) replaces
// the default round_robin: with pick_first every Enqueue goes to the first
// address.
func TestRoundRobinOverriddenByDialOption(t *testing.T) {
	a, b := startStack(t), startStack(t)
	direct := []*jobwire.Client{newClient(t, a.Broker.Addr()), newClient(t, b.Broker.Addr())}
	target, resolve := multiAddr(a.Broker.Addr(), b.Broker.Addr())
	c := newClient(t, target, resolve, jobwire.WithDialOptions(
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig": [{"pick_first": {}}]}`)))
	q := queueName(t)
	for i := 0; i < 20; i++ {
		payload := fmt.Sprintf("job-%d", i)
		if on := holder(t, direct, q, mustEnqueue(t, c, q, "rr", []byte(payload)), payload); on != 0 {
			t.Fatalf("job %d on broker %d, want all on the first address (pick_first)", i, on)
		}
	}
}

// peerLog records the broker each call of a channel went to.
type peerLog struct {
	mu    sync.Mutex
	calls map[string]map[string]int // method -> peer address -> calls
}

func (l *peerLog) add(method string, p *peer.Peer) {
	if p == nil || p.Addr == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.calls == nil {
		l.calls = map[string]map[string]int{}
	}
	if l.calls[method] == nil {
		l.calls[method] = map[string]int{}
	}
	l.calls[method][p.Addr.String()]++
}

// options are the dial options recording every unary call and stream.
func (l *peerLog) options() jobwire.Option {
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		var p peer.Peer
		err := invoker(ctx, method, req, reply, cc, append(opts, grpc.Peer(&p))...)
		l.add(method, &p)
		return err
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		cs, err := streamer(ctx, desc, cc, method, opts...)
		if err == nil {
			p, _ := peer.FromContext(cs.Context())
			l.add(method, p)
		}
		return cs, err
	}
	return jobwire.WithDialOptions(grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream))
}

// peers is how many calls of method went to each broker.
func (l *peerLog) peers(method string) map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for a, n := range l.calls[method] {
		out[a] = n
	}
	return out
}

const (
	ackMethod      = "/jobwire.v1.BrokerService/Ack"
	ackBatchMethod = "/jobwire.v1.BrokerService/AckBatch"
)

// only is the one key of m (failing the test when there are more or none).
func only(t *testing.T, what string, m map[string]int) string {
	t.Helper()
	if len(m) != 1 {
		t.Fatalf("%s per broker %v: want one broker", what, m)
	}
	for k := range m {
		return k
	}
	return ""
}

var nopHandler = map[string]jobwire.Handler{
	"rr": func(ctx context.Context, job *jobwire.Job) (any, error) {
		time.Sleep(5 * time.Millisecond)
		return nil, nil
	},
}

// Two brokers of one deployment (one Redis, as the replicas behind a
// headless Service): a Worker on both processes the jobs enqueued through
// either on its one Work stream, which also carries its acks, so it makes
// no Ack or AckBatch call at all. With a 30 s lease, a slot freed only at
// the lease's end would stall the second job for 30 s.
func TestWorkerOverTwoBrokersOfOneRedis(t *testing.T) {
	log := &peerLog{}
	runOverTwoBrokers(t, log)
	only(t, "Work streams", log.peers(workMethod))
	if claims := log.peers(claimMethod); len(claims) != 0 {
		t.Errorf("Claim streams per broker %v: want none (a Work stream)", claims)
	}
	for _, method := range []string{ackMethod, ackBatchMethod} {
		if acks := log.peers(method); len(acks) != 0 {
			t.Errorf("%s calls per broker %v: want none (the acks went on the Work stream)", method, acks)
		}
	}
}

// The same against brokers older than Work: the Worker's one Claim stream
// is on one broker, and its AckBatch calls go to both brokers (round_robin).
// The broker that settles a job of the other's stream tells it, so the
// stream's one slot frees at once.
func TestWorkerOverTwoBrokersOfOneRedisWithoutWork(t *testing.T) {
	log := &peerLog{}
	runOverTwoBrokers(t, log, (&olderBroker{}).option())
	only(t, "Claim streams", log.peers(claimMethod))
	if acks := log.peers(ackBatchMethod); len(acks) != 2 {
		t.Errorf("AckBatch calls per broker %v: want calls to both", acks)
	}
}

// runOverTwoBrokers starts a second broker on the suite's Redis, enqueues
// 20 jobs through the two brokers in turn and runs them on a Worker of
// concurrency 1 (lease 30 s) on both brokers, logging its calls to log;
// each job must be acked (ack_ok) within 15 s of the start.
func runOverTwoBrokers(t *testing.T, log *peerLog, opts ...jobwire.WorkerOption) {
	t.Helper()
	other, err := testbroker.StartBroker(tmpDir, redisProc.Port, 0, brokerFlags...)
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() { other.Stop(5 * time.Second) })
	direct := []*jobwire.Client{newClient(t, brokerAddr), newClient(t, other.Addr())}
	q := queueName(t)
	var ids []string
	for i := 0; i < 20; i++ {
		ids = append(ids, mustEnqueue(t, direct[i%2], q, "rr", []byte("x")))
	}
	target, resolve := multiAddr(brokerAddr, other.Addr())
	opts = append([]jobwire.WorkerOption{resolve, log.options(),
		jobwire.WithConcurrency(1), jobwire.WithLease(30 * time.Second)}, opts...)
	rw := startWorker(t, target, []string{q}, nopHandler, opts...)

	deadline := time.Now().Add(15 * time.Second)
	for _, id := range ids {
		waitState(t, direct[0], q, id, jobwire.StateCompleted, time.Until(deadline))
		waitFor(t, 5*time.Second, "the outcome of job "+id, func() bool { return len(rw.out.forJob(id)) > 0 })
		if o := rw.out.forJob(id); len(o) != 1 || o[0].Kind != jobwire.OutcomeAckOK {
			t.Errorf("job %s: outcomes %+v, want one ack_ok", id, o)
		}
	}
}

// Workers on a target of two brokers spread over both: round_robin starts
// each channel's picks at a random address (20 workers' Work streams all on
// one broker: chance 2^-19).
func TestWorkersSpreadOverBrokers(t *testing.T) {
	a, b := startStack(t), startStack(t)
	q := queueName(t)
	per := map[string]int{}
	for i := 0; i < 20; i++ {
		log := &peerLog{}
		target, resolve := multiAddr(a.Broker.Addr(), b.Broker.Addr())
		w, err := jobwire.NewWorker(target, []string{q}, jobwire.WithLogger(testLogger()), resolve, log.options())
		if err != nil {
			t.Fatalf("NewWorker: %v", err)
		}
		w.Handle("rr", nopHandler["rr"])
		runErr := make(chan error, 1)
		go func() { runErr <- w.Run(context.Background()) }()
		waitFor(t, 10*time.Second, "the Work stream", func() bool { return len(log.peers(workMethod)) > 0 })
		w.Stop()
		if err := <-runErr; err != nil {
			t.Fatalf("Run: %v", err)
		}
		per[only(t, "Work streams", log.peers(workMethod))]++
	}
	t.Logf("workers per broker: %v", per)
	if per[a.Broker.Addr()] == 0 || per[b.Broker.Addr()] == 0 {
		t.Errorf("workers per broker %v: want some on each of %s and %s", per, a.Broker.Addr(), b.Broker.Addr())
	}
}
