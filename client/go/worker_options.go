package jobwire

import (
	"log/slog"
	"time"
)

// The options of a Worker (WorkerOptions) and their defaults.

// DefaultGrace is how long Stop waits for running handlers by default.
const DefaultGrace = 25 * time.Second

// WorkerOptions configures a Worker. Only Queues is required.
type WorkerOptions struct {
	// Queues to consume, earlier queues first.
	Queues []string
	// Concurrency is the number of handlers running at once (default 1).
	Concurrency int
	// LeaseMs is the lease per job (0: the broker default, 30 s). The lease is
	// renewed every third of the lease the broker granted (ClaimedJob.lease_ms,
	// which is LeaseMs when set) while a handler runs.
	LeaseMs int64
	// WorkerID names the worker on claimed jobs (default go-<host>-<pid>).
	WorkerID string
	// Grace is how long Stop waits for running handlers and their Ack / Fail
	// (default 25 s).
	Grace time.Duration
	// OnOutcome, when set, receives every final outcome. It is called from
	// the job's goroutine; it should not block for long.
	OnOutcome func(Outcome)
	// Timeout is the deadline of each unary call (AckBatch, Fail,
	// ExtendLease); default 10 s. Acks are sent in AckBatch calls, each
	// carrying the acks of the jobs that finished while the previous one was
	// in flight.
	Timeout time.Duration
	// Logger receives the worker's log records (default slog.Default()).
	Logger *slog.Logger
	// ClientOptions configure the connection (WithDialOptions, WithToken,
	// ...). The fields below, when set, are applied after them.
	ClientOptions []Option

	// Token is the bearer token sent on every call (Claim, AckBatch, Fail,
	// ExtendLease); empty means $JOBWIRE_TOKEN (read by NewWorker), else
	// none. The token needs the claim permission on every queue of Queues.
	Token string
	// TLS turns TLS on (with the system roots unless TLSRootCA is set).
	// TLSRootCA, TLSClientCert and TLSClientKey turn it on by themselves.
	TLS bool
	// TLSRootCA is the CA certificate(s) to trust: PEM text (containing
	// "-----BEGIN") or the path of a PEM file.
	TLSRootCA string
	// TLSClientCert and TLSClientKey are a client certificate chain and its
	// key for mutual TLS, each PEM text or a path; both or neither.
	TLSClientCert string
	TLSClientKey  string
}
