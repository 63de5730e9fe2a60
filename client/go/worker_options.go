package jobwire

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"time"
)

// The options of a Worker (WorkerOption), their defaults and their limits.

// DefaultGrace is how long Stop waits for running handlers by default.
const DefaultGrace = 25 * time.Second

// The limits of the Claim request (proto/jobwire/v1/broker.proto,
// ClaimRequest), checked by NewWorker so that a bad value is an error there
// rather than an INVALID_ARGUMENT from Run.
const (
	maxQueues       = 32   // ClaimRequest.queues
	maxConcurrency  = 1000 // ClaimRequest.max_in_flight (the free slots)
	maxWorkerIDSize = 256  // ClaimRequest.worker_id, in bytes
	maxWeight       = 1000 // ClaimRequest.weights, each (1..maxWeight)
)

// WorkerOption configures a Worker. The worker's own options are
// WithConcurrency, WithWeights, WithLease, WithWorkerID, WithGrace,
// WithLogger and WithOutcomeHook. Every Client Option is a WorkerOption too
// and configures the worker's connection as it does a Client's: WithTimeout
// (the deadline of each AckBatch / Fail / ExtendLease call), WithToken,
// WithTLS, WithTLSRootCA, WithTLSClientCert and WithDialOptions. When an
// option is given twice, the last one wins.
type WorkerOption interface {
	applyWorker(*workerConfig)
}

// workerOption is a worker-only WorkerOption.
type workerOption func(*workerConfig)

func (f workerOption) applyWorker(c *workerConfig) { f(c) }

// applyWorker makes a Client Option a WorkerOption: it configures the
// worker's connection.
func (o Option) applyWorker(c *workerConfig) { o(&c.conn) }

// workerConfig is the configuration of a Worker, built by NewWorker from its
// arguments and options.
type workerConfig struct {
	queues      []string
	concurrency int
	weights     map[string]int // queue -> weight (WithWeights); empty: strict order
	lease       time.Duration  // 0: the broker default
	workerID    string
	grace       time.Duration
	onOutcome   func(Outcome)
	logger      *slog.Logger
	conn        clientConfig // connection: timeout, token, TLS, dial options

	// claimWeights is ClaimRequest.weights, set by resolve from weights: one
	// per queue, in the order of queues; nil for strict order.
	claimWeights []int32
}

// defaultWorkerConfig is the configuration of a Worker given no options.
func defaultWorkerConfig(queues []string) workerConfig {
	return workerConfig{
		queues:      queues,
		concurrency: 1,
		grace:       DefaultGrace,
		logger:      slog.Default(),
		conn:        clientConfig{timeout: DefaultTimeout},
	}
}

// WithConcurrency sets the number of handlers running at once, 1..1000
// (default 1). It is the Claim stream's max_in_flight when all are free.
func WithConcurrency(n int) WorkerOption {
	return workerOption(func(c *workerConfig) { c.concurrency = n })
}

// WithWeights makes the worker claim fairly: weights maps each of the
// worker's queues to its weight, 1..1000, and while several queues have due
// jobs the free handler slots are split between them in proportion to their
// weights (with {"heavy": 3, "light": 1} heavy gets about three jobs for each
// one of light); a queue without due jobs leaves its share to the others
// (ClaimRequest.weights). Every queue must have a weight and the map may name
// no other queue; nil or empty (the default) is strict order: every free slot
// goes to the first queue (in the order given to NewWorker) with due jobs.
func WithWeights(weights map[string]int) WorkerOption {
	weights = maps.Clone(weights)
	return workerOption(func(c *workerConfig) { c.weights = weights })
}

// WithLease sets the lease of each claimed job, 1 s .. 12 h at millisecond
// precision; 0 (the default) takes the broker default, 30 s. While a handler
// runs, the lease is renewed every third of the lease the broker granted
// (Job.LeaseMs, which is d when set).
func WithLease(d time.Duration) WorkerOption {
	return workerOption(func(c *workerConfig) { c.lease = d })
}

// WithWorkerID names the worker on the jobs it claims, at most 256 bytes
// (default go-<host>-<pid>; empty means the default).
func WithWorkerID(id string) WorkerOption {
	return workerOption(func(c *workerConfig) { c.workerID = id })
}

// WithGrace sets how long Stop waits for running handlers and their Ack /
// Fail before abandoning them (default 25 s; 0: abandon them at once).
func WithGrace(d time.Duration) WorkerOption {
	return workerOption(func(c *workerConfig) { c.grace = d })
}

// WithLogger sets where the worker logs: reconnects, unknown job types,
// refusals (default slog.Default(); slog.New(slog.DiscardHandler) for none).
func WithLogger(l *slog.Logger) WorkerOption {
	return workerOption(func(c *workerConfig) { c.logger = l })
}

// WithOutcomeHook sets a function that receives every final outcome of a job
// run (see Outcome). It is called from the job's goroutine and should not
// block for long.
func WithOutcomeHook(f func(Outcome)) WorkerOption {
	return workerOption(func(c *workerConfig) { c.onOutcome = f })
}

// resolve checks the configuration against the limits above and fills in the
// defaults that need the environment: the worker id, and the token and TLS
// material of the connection. Each error names the option and its limit.
func (c *workerConfig) resolve() error {
	if len(c.queues) == 0 || len(c.queues) > maxQueues {
		return fmt.Errorf("jobwire: NewWorker: %d queues; give 1..%d", len(c.queues), maxQueues)
	}
	if c.concurrency < 1 || c.concurrency > maxConcurrency {
		return fmt.Errorf("jobwire: WithConcurrency(%d): must be 1..%d", c.concurrency, maxConcurrency)
	}
	if err := c.resolveWeights(); err != nil {
		return err
	}
	if ms := c.lease.Milliseconds(); c.lease != 0 && (ms < minLeaseMs || ms > maxLeaseMs) {
		return fmt.Errorf("jobwire: WithLease(%v): must be 1s..12h (or 0: the broker default)", c.lease)
	}
	if len(c.workerID) > maxWorkerIDSize {
		return fmt.Errorf("jobwire: WithWorkerID: %d bytes; at most %d", len(c.workerID), maxWorkerIDSize)
	}
	if c.workerID == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "unknown"
		}
		c.workerID = fmt.Sprintf("go-%s-%d", host, os.Getpid())
	}
	if c.grace < 0 {
		return fmt.Errorf("jobwire: WithGrace(%v): must be 0 or more", c.grace)
	}
	if c.logger == nil {
		return errors.New("jobwire: WithLogger(nil): give a logger (slog.New(slog.DiscardHandler) for none)")
	}
	if c.conn.timeout <= 0 {
		c.conn.timeout = DefaultTimeout
	}
	return c.conn.resolveSecurity()
}

// resolveWeights checks WithWeights against the queues and sets
// claimWeights: one weight per queue, in the order of the queues, each
// 1..maxWeight; none when no weight is given (strict order).
func (c *workerConfig) resolveWeights() error {
	c.claimWeights = nil
	if len(c.weights) == 0 {
		return nil
	}
	weights := make([]int32, len(c.queues))
	for i, q := range c.queues {
		w, ok := c.weights[q]
		if !ok {
			return fmt.Errorf("jobwire: WithWeights: no weight for queue %q; give one for each queue (or none: strict order)", q)
		}
		if w < 1 || w > maxWeight {
			return fmt.Errorf("jobwire: WithWeights: queue %q has weight %d; must be 1..%d", q, w, maxWeight)
		}
		weights[i] = int32(w)
	}
	for _, q := range slices.Sorted(maps.Keys(c.weights)) {
		if !slices.Contains(c.queues, q) {
			return fmt.Errorf("jobwire: WithWeights: queue %q is not one of the worker's queues", q)
		}
	}
	c.claimWeights = weights
	return nil
}

// leaseMs is the ClaimRequest.lease_ms of the configuration (0: the broker
// default).
func (c *workerConfig) leaseMs() int64 { return c.lease.Milliseconds() }
