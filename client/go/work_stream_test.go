package jobwire_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	jobwire "github.com/jobwire/jobwire/client/go"
	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// The Worker's stream is a Work stream, which also carries its acks
// (broker.proto, Work); against a broker older than Work (UNIMPLEMENTED) it
// uses Claim streams and AckBatch calls for the rest of the run.

const (
	workMethod  = "/jobwire.v1.BrokerService/Work"
	claimMethod = "/jobwire.v1.BrokerService/Claim"
)

// streamJobs are the jobs of a message received on a Claim stream
// (ClaimResponse) or a Work stream (WorkResponse); ok is false for any
// other message.
func streamJobs(m any) (jobs []*jobwirepb.ClaimedJob, ok bool) {
	switch msg := m.(type) {
	case *jobwirepb.ClaimResponse:
		return msg.GetJobs(), true
	case *jobwirepb.WorkResponse:
		return msg.GetJobs(), true
	}
	return nil, false
}

// sentClaim is the ClaimRequest a message sent on a stream carries: a Claim
// stream's request, or a Work stream's first message; nil for any other.
func sentClaim(m any) *jobwirepb.ClaimRequest {
	switch msg := m.(type) {
	case *jobwirepb.ClaimRequest:
		return msg
	case *jobwirepb.WorkRequest:
		return msg.GetClaim()
	}
	return nil
}

// olderBroker makes the brokers of a channel look older than Work: each
// Work stream is opened under a method name the broker does not have, which
// it answers UNIMPLEMENTED, as a broker older than Work does. opened counts
// the Work streams tried.
type olderBroker struct{ opened atomic.Int64 }

func (o *olderBroker) option() jobwire.Option {
	return jobwire.WithDialOptions(grpc.WithChainStreamInterceptor(
		func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
			streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			if method == workMethod {
				o.opened.Add(1)
				method = "/jobwire.v1.BrokerService/NoSuchWork"
			}
			return streamer(ctx, desc, cc, method, opts...)
		}))
}

// Against a broker that answers Work UNIMPLEMENTED, the Worker tries Work
// once, then opens Claim streams and sends its acks as
// AckBatch calls: every job completes, acked on its first attempt.
func TestWorkerFallsBackToClaimWhenWorkIsUnimplemented(t *testing.T) {
	t.Parallel()
	const jobs = 30
	c := newClient(t, brokerAddr)
	q := queueName(t)
	old := &olderBroker{}
	log := &peerLog{}
	rw := startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"old": func(ctx context.Context, job *jobwire.Job) (any, error) { return job.Payload, nil },
	}, jobwire.WithConcurrency(4), old.option(), log.options())
	ids := enqueueN(t, c, q, "old", jobs)
	for i, id := range ids {
		j := waitState(t, c, q, id, jobwire.StateCompleted, 15*time.Second)
		if want := fmt.Sprint(i); string(j.GetResult()) != want || j.GetAttempts() != 1 {
			t.Errorf("job %d: result %q attempts %d, want %q on attempt 1", i, j.GetResult(), j.GetAttempts(), want)
		}
		waitFor(t, 5*time.Second, "the outcome of job "+id, func() bool { return len(rw.out.forJob(id)) > 0 })
		if o := rw.out.forJob(id); len(o) != 1 || o[0].Kind != jobwire.OutcomeAckOK {
			t.Errorf("job %d: outcomes %+v, want one ack_ok", i, o)
		}
	}
	if n := old.opened.Load(); n != 1 {
		t.Errorf("%d Work streams tried, want 1 (Claim streams after the first UNIMPLEMENTED)", n)
	}
	if claims := log.peers(claimMethod); len(claims) == 0 {
		t.Error("no Claim stream opened after Work was answered UNIMPLEMENTED")
	}
	if acks := log.peers(ackBatchMethod); len(acks) == 0 {
		t.Error("no AckBatch call: where did the acks go?")
	}
}
