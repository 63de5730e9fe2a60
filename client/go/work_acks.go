package jobwire

import (
	"sync"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// workAcks carries the Worker's ack batches on its open Work stream
// (broker.proto, Work): each batch is one WorkAcks message under an id of
// its own, answered once in WorkResponse.ack_answers, in any order. When
// the stream ends, the batches it had not answered may or may not have been
// stored: their senders are told so, and send them again as AckBatch calls
// (a repeated ack answers OK).
//
// It is safe for concurrent use: send from any goroutine, open / answered /
// end from the stream's reader.
type workAcks struct {
	// writeMu is held while writing on the stream: grpc-go allows one
	// SendMsg at a time. It is taken before mu.
	writeMu sync.Mutex

	mu      sync.Mutex
	stream  jobwirepb.BrokerService_WorkClient // guarded by mu; nil when no Work stream is open
	nextID  uint64                             // guarded by mu
	pending map[uint64]*pendingAcks            // guarded by mu; the batches sent and not answered
}

// pendingAcks is one batch sent on the Work stream, waiting for its answer.
type pendingAcks struct {
	acks int
	done chan struct{} // closed once answered, or once the stream ended first
	// answer is set before done is closed; nil when the stream ended first.
	answer *ackAnswer
}

// ackAnswer is the answer to one batch of acks: one error per ack, in order
// (nil for an ack stored), or err, the error of the batch as a whole.
type ackAnswer struct {
	errs []error
	err  error
}

// open makes stream, on which the claim has been written, the one send
// writes on. REQUIRES: no stream open (end was called after the last open).
func (a *workAcks) open(stream jobwirepb.BrokerService_WorkClient) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stream = stream
	a.pending = map[uint64]*pendingAcks{}
}

// send writes acks (1..maxAckBatch) on the open Work stream and waits for
// their answer, at most timeout (the unary calls' deadline): then the
// answer is DEADLINE_EXCEEDED for the batch as a whole, as for an AckBatch
// call, and a late answer is ignored. It returns nil, sending nothing, when
// no Work stream is open, and nil too when the stream ended before
// answering (the acks may or may not have been stored).
func (a *workAcks) send(acks []*jobwirepb.AckRequest, timeout time.Duration) *ackAnswer {
	p := &pendingAcks{acks: len(acks), done: make(chan struct{})}
	a.writeMu.Lock()
	a.mu.Lock()
	stream, id := a.stream, a.nextID
	if stream == nil {
		a.mu.Unlock()
		a.writeMu.Unlock()
		return nil
	}
	a.nextID++
	a.pending[id] = p
	a.mu.Unlock()
	// A failed write means the stream is ending: end resolves p.
	_ = stream.Send(&jobwirepb.WorkRequest{Kind: &jobwirepb.WorkRequest_Acks{
		Acks: &jobwirepb.WorkAcks{Id: id, Acks: acks},
	}})
	a.writeMu.Unlock()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return p.answer
	case <-timer.C:
	}
	a.mu.Lock()
	waiting := a.pending[id] == p
	if waiting {
		delete(a.pending, id)
	}
	a.mu.Unlock()
	if !waiting { // answered or ended meanwhile
		<-p.done
		return p.answer
	}
	return &ackAnswer{err: newError(codes.DeadlineExceeded, "", "Work: the acks were not answered within the call deadline")}
}

// answered resolves the batches that answers (one stream message's
// ack_answers) answer; an id not waiting is ignored.
func (a *workAcks) answered(answers []*jobwirepb.WorkAcksAnswer) {
	for _, ans := range answers {
		a.mu.Lock()
		p := a.pending[ans.GetId()]
		delete(a.pending, ans.GetId())
		a.mu.Unlock()
		if p == nil {
			continue
		}
		p.answer = answerOf(ans, p.acks)
		close(p.done)
	}
}

// answerOf is the answer to a batch of n acks that ans carries.
func answerOf(ans *jobwirepb.WorkAcksAnswer, n int) *ackAnswer {
	if code := codes.Code(ans.GetCode()); code != codes.OK {
		return &ackAnswer{err: newError(code, ans.GetReason(), ans.GetMessage())}
	}
	errs, err := ackResults("Work", ans.GetResults(), n)
	return &ackAnswer{errs: errs, err: err}
}

// end is called once the open Work stream has ended: send writes on it no
// more, and every batch still waiting is resolved unanswered.
func (a *workAcks) end() {
	a.mu.Lock()
	unanswered := a.pending
	a.stream, a.pending = nil, nil
	a.mu.Unlock()
	for _, p := range unanswered {
		close(p.done)
	}
}
