package jobwire

import (
	"slices"
	"sync"

	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// maxAckBatch is the most acks sent in one batch (the broker's limit of an
// AckBatch call and of a Work stream's acks message).
const maxAckBatch = 1000

// maxAckBatchBytes is the most result bytes sent in one batch, unless
// one result alone is larger: well under the broker's 64 MiB request limit.
const maxAckBatchBytes = 8 << 20

// ackCoalescer turns the Acks of a Worker's concurrent job goroutines into
// batches, each sent by send (the Worker's: on its Work stream when one is
// open, else an AckBatch call; the design of client/cpp/ack_coalescer.h). A
// goroutine whose ack finds no batch in flight sends every queued ack (up to
// maxAckBatch) in one batch and hands the answers out; acks queued while
// that batch is in flight go in the next one, sent by one of their
// goroutines. An ack alone is sent at once, so coalescing adds no delay;
// under load the batches per job drop to about 1 / (acks finishing during
// one round trip).
//
// It is safe for concurrent use.
type ackCoalescer struct {
	// send sends one batch of acks (1..maxAckBatch) and waits for its
	// answer (bounded by the end of the stream or the deadline of the call
	// carrying it): one error per ack, in order, or the error of the batch
	// as a whole.
	send func(acks []*jobwirepb.AckRequest) ([]error, error)

	mu      sync.Mutex
	done    *sync.Cond  // broadcast when a batch is answered; uses mu
	queued  []*ackEntry // guarded by mu; acks waiting for a batch, oldest first
	sending bool        // guarded by mu; a batch is in flight
}

// ackEntry is one ack waiting for, or carried by, a batch.
type ackEntry struct {
	req      *jobwirepb.AckRequest
	err      error // guarded by ackCoalescer.mu; valid once answered
	answered bool  // guarded by ackCoalescer.mu; err is the outcome
}

func newAckCoalescer(send func(acks []*jobwirepb.AckRequest) ([]error, error)) *ackCoalescer {
	c := &ackCoalescer{send: send}
	c.done = sync.NewCond(&c.mu)
	return c
}

// ack acks one job, as a unary Ack would, and returns its own outcome: nil,
// the per-ack *Error, or the error of the whole batch that carried it
// (UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED, ...: the caller, the Worker's
// callWithRetry, decides which it sends again). It blocks until that batch
// has been answered.
func (c *ackCoalescer) ack(req *jobwirepb.AckRequest) error {
	e := &ackEntry{req: req}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queued = append(c.queued, e)
	for !e.answered {
		if c.sending {
			c.done.Wait()
			continue
		}
		// No batch in flight: this goroutine sends what is queued, its own
		// ack among them unless more than maxAckBatch wait ahead of it.
		c.sending = true
		batch := c.take()
		c.mu.Unlock()
		acks := make([]*jobwirepb.AckRequest, len(batch))
		for i, b := range batch {
			acks[i] = b.req
		}
		errs, err := c.send(acks)
		c.mu.Lock()
		for i, b := range batch {
			if err != nil {
				b.err = err
			} else {
				b.err = errs[i]
			}
			b.answered = true
		}
		c.sending = false
		c.done.Broadcast()
	}
	return e.err
}

// take removes and returns the oldest queued acks that fit one batch: at most
// maxAckBatch acks and maxAckBatchBytes of results (always at least one).
// REQUIRES: c.mu held.
func (c *ackCoalescer) take() []*ackEntry {
	n, size := 0, 0
	for _, e := range c.queued {
		if n == maxAckBatch || (n > 0 && size+len(e.req.GetResult()) > maxAckBatchBytes) {
			break
		}
		n, size = n+1, size+len(e.req.GetResult())
	}
	batch := slices.Clone(c.queued[:n])
	left := copy(c.queued, c.queued[n:])
	clear(c.queued[left:])
	c.queued = c.queued[:left]
	return batch
}
