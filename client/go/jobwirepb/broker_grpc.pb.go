// jobwire broker contract, version 1.
//
// One BrokerService owns every job queue. Producers call Enqueue /
// EnqueueBatch; workers open a Claim stream, receive jobs pushed to them, and
// finish each one with Ack or Fail (renewing its lease with ExtendLease while
// they work). GetJob and Cancel serve "submit and poll" users.
//
// Error model (abseil's decision rule, the same codes on every RPC):
//   INVALID_ARGUMENT    the request breaks a documented limit; the message names
//                       the field and the limit. Nothing was changed. Do not
//                       retry the same request.
//   NOT_FOUND           the job id is unknown in that queue (never existed, or
//                       removed by retention).
//   FAILED_PRECONDITION the job is not in a state that allows the call, or the
//                       lease token is not the job's current one (the lease
//                       expired and the job moved on). Nothing was changed. Do
//                       not retry until the state changes.
//   UNAUTHENTICATED     the broker requires a bearer token (metadata
//                       "authorization: Bearer <token>") and none, or an
//                       unknown one, was sent. Nothing was changed. Do not
//                       retry without a valid token.
//   PERMISSION_DENIED   the token is valid but may not use this queue this
//                       way (enqueue: Enqueue, EnqueueBatch, Cancel; claim:
//                       Claim, Ack, AckBatch, Fail, ExtendLease,
//                       ReportProgress; GetJob and
//                       WaitJob: either). The
//                       message names the token's name, the permission and the
//                       queue. Nothing was changed. Do not retry.
//                       Both are checked after INVALID_ARGUMENT; see
//                       docs/security.md.
//   RESOURCE_EXHAUSTED  Enqueue / EnqueueBatch: Redis is over its maxmemory
//                       limit (noeviction); the message says so. Nothing was
//                       stored. Retry later with backoff, not at once. (Ack,
//                       Fail, ExtendLease and Cancel are never refused for
//                       memory; docs/guarantees.md.)
//   UNAVAILABLE         Redis cannot be reached right now (or the broker is
//                       shutting down). Safe to retry: Ack and Fail repeated
//                       with the same lease token after a success answer OK.
//   INTERNAL            a broker bug or an unexpected Redis reply.
//
// Error details: every error carries, in the standard gRPC binary details
// (trailer "grpc-status-details-bin", a google.rpc.Status), a
// google.rpc.ErrorInfo whose domain is "jobwire.dev" and whose reason is one
// of the stable values below (a reason keeps its meaning once published; new
// ones may be added). An error no row names has the name of its code as its
// reason ("UNAVAILABLE", "INTERNAL", ...). Also attached:
// google.rpc.BadRequest (one field violation: the field path, e.g.
// "jobs[3].priority", and the message) with INVALID_FIELD, and
// google.rpc.RetryInfo where the broker knows how long to wait.
//   INVALID_FIELD           INVALID_ARGUMENT; metadata "field": the field.
//   JOB_NOT_FOUND           NOT_FOUND: no such job in that queue.
//   QUEUE_NOT_FOUND         NOT_FOUND (UpdateQueue): no such queue.
//   DEPENDENCY_NOT_FOUND    NOT_FOUND (Enqueue): an id of depends_on names no
//                           job of the queue, or a ref "<queue>/<id>" no job
//                           of its queue; metadata "job_id": that entry.
//                           EnqueueBatch also: a depends_on_batch_index
//                           names a job of the batch that was not stored
//                           (the result's message names it).
//   LEASE_STALE             FAILED_PRECONDITION: the lease token is not the
//                           job's current lease. Drop the job: another run
//                           owns it.
//   JOB_STATE               FAILED_PRECONDITION: the job's state refuses the
//                           call; metadata "state": the job's state
//                           ("pending", "active", "completed", "dead").
//   JOB_CANCEL_REQUESTED    FAILED_PRECONDITION (ExtendLease,
//                           ReportProgress): Cancel asked this run to stop.
//                           Stop the handler and Fail the job (it becomes
//                           DEAD "cancelled"), or let its lease run out.
//   RUN_TIMED_OUT           FAILED_PRECONDITION (Ack, ExtendLease,
//                           ReportProgress): the run passed its deadline
//                           (Job.timeout_ms). The broker fails the attempt
//                           with error "timeout" when the lease ends; a Fail
//                           does it at once.
//   QUEUE_HAS_ACTIVE_JOBS   FAILED_PRECONDITION (DeleteQueue without force).
//   PARTITIONS_DECREASE     FAILED_PRECONDITION (UpdateQueue).
//   QUEUE_EXISTS            ALREADY_EXISTS (CreateQueue).
//   TOKEN_MISSING           UNAUTHENTICATED: no bearer token was sent.
//   TOKEN_INVALID           UNAUTHENTICATED: the token is malformed or
//                           unknown.
//   TOKEN_NOT_PERMITTED     PERMISSION_DENIED; metadata "queue": the queue
//                           (absent for ListQueues).
//   REDIS_OUT_OF_MEMORY     RESOURCE_EXHAUSTED, with RetryInfo (1 s).
//   TOO_MANY_CLAIM_STREAMS  RESOURCE_EXHAUSTED (Claim), with RetryInfo (1 s).
//   TOO_MANY_WAITS          RESOURCE_EXHAUSTED (WaitJob), with RetryInfo (1 s).
//   WAIT_TIMEOUT            DEADLINE_EXCEEDED (WaitJob): the job did not
//                           finish within the call's timeout_ms.
//   TOO_MANY_SUBSCRIPTIONS  RESOURCE_EXHAUSTED (Subscribe), with RetryInfo
//                           (1 s).
//   SUBSCRIBER_TOO_SLOW     RESOURCE_EXHAUSTED (Subscribe): more events
//                           waited for the client than the broker keeps
//                           (--subscribe_buffer_events); subscribe again.
//   REDIS_UNAVAILABLE       UNAVAILABLE: Redis cannot be reached, or answered
//                           with a transient error (LOADING, READONLY, ...).
//   BROKER_SHUTTING_DOWN    UNAVAILABLE: this replica is draining; reconnect
//                           (to another replica).
//   CLAIM_STREAM_MAX_AGE    UNAVAILABLE (Claim): the stream reached the
//                           broker's --max_stream_age_ms; reconnect at once.
//   JOB_RECORD_CORRUPT      DATA_LOSS: the job's stored record is damaged.
// Batch results (EnqueueResult, AckResult, WorkAcksAnswer) carry the same
// reason in their reason field.
//
// Times are milliseconds since the Unix epoch, measured on the Redis server's
// clock, so broker replicas with skewed clocks agree.

// Code generated by protoc-gen-go-grpc. DO NOT EDIT.
// versions:
// - protoc-gen-go-grpc v1.6.2
// - protoc             v3.21.12
// source: jobwire/v1/broker.proto

package jobwirepb

import (
	context "context"
	grpc "google.golang.org/grpc"
	codes "google.golang.org/grpc/codes"
	status "google.golang.org/grpc/status"
)

// This is a compile-time assertion to ensure that this generated file
// is compatible with the grpc package it is being compiled against.
// Requires gRPC-Go v1.64.0 or later.
const _ = grpc.SupportPackageIsVersion9

const (
	BrokerService_Enqueue_FullMethodName        = "/jobwire.v1.BrokerService/Enqueue"
	BrokerService_EnqueueBatch_FullMethodName   = "/jobwire.v1.BrokerService/EnqueueBatch"
	BrokerService_Claim_FullMethodName          = "/jobwire.v1.BrokerService/Claim"
	BrokerService_Work_FullMethodName           = "/jobwire.v1.BrokerService/Work"
	BrokerService_Ack_FullMethodName            = "/jobwire.v1.BrokerService/Ack"
	BrokerService_AckBatch_FullMethodName       = "/jobwire.v1.BrokerService/AckBatch"
	BrokerService_Fail_FullMethodName           = "/jobwire.v1.BrokerService/Fail"
	BrokerService_ExtendLease_FullMethodName    = "/jobwire.v1.BrokerService/ExtendLease"
	BrokerService_ReportProgress_FullMethodName = "/jobwire.v1.BrokerService/ReportProgress"
	BrokerService_GetJob_FullMethodName         = "/jobwire.v1.BrokerService/GetJob"
	BrokerService_Cancel_FullMethodName         = "/jobwire.v1.BrokerService/Cancel"
	BrokerService_WaitJob_FullMethodName        = "/jobwire.v1.BrokerService/WaitJob"
	BrokerService_Subscribe_FullMethodName      = "/jobwire.v1.BrokerService/Subscribe"
)

// BrokerServiceClient is the client API for BrokerService service.
//
// For semantics around ctx use and closing/ending streaming RPCs, please refer to https://pkg.go.dev/google.golang.org/grpc/?tab=doc#ClientConn.NewStream.
type BrokerServiceClient interface {
	// Stores one job. With an idempotency key already seen inside the dedup
	// window, stores nothing and returns the original job id with
	// duplicate = true.
	// Errors: INVALID_ARGUMENT (queue, type, payload, priority, delay_ms,
	// run_at_ms, max_attempts, idempotency_key, backoff_*,
	// completed_retention_ms, timeout_ms, headers, concurrency_key,
	// depends_on), NOT_FOUND (a depends_on id names no job: nothing stored),
	// RESOURCE_EXHAUSTED (Redis is over its maxmemory; nothing stored),
	// UNAVAILABLE.
	Enqueue(ctx context.Context, in *EnqueueRequest, opts ...grpc.CallOption) (*EnqueueResponse, error)
	// Stores up to 1000 jobs (the jobs of one queue share one Redis script
	// call). Each job is atomic on its own (stored whole or not at all, with
	// its idempotency key; a later job of the batch repeating an earlier one's
	// key is a duplicate of it); the batch is NOT atomic: one result per job,
	// in request order, and a failed job does not stop the others. A graph of
	// jobs linked by depends_on_batch_index is stored by that one call: no
	// worker sees a child before its batch parents exist.
	// Errors of the call itself: INVALID_ARGUMENT when jobs is empty or holds
	// more than 1000 entries (nothing stored); UNAUTHENTICATED, and
	// PERMISSION_DENIED when the token may not enqueue to one of the jobs'
	// queues (nothing stored). Per-job errors are reported in
	// EnqueueBatchResponse.results.
	EnqueueBatch(ctx context.Context, in *EnqueueBatchRequest, opts ...grpc.CallOption) (*EnqueueBatchResponse, error)
	// Opens a stream on which the broker pushes jobs as soon as one is due and
	// the stream has a free slot. The worker never polls. At most max_in_flight
	// jobs delivered on this stream are unfinished at any time; a slot frees when
	// the job is Acked or Failed, or when its lease expires. The Acks, Fails and
	// ExtendLeases of the stream's jobs may go to any replica on the same Redis
	// (a round_robin channel): one that did not grant the lease tells the one
	// that did (best effort; else the slot frees when the lease expires).
	// Jobs delivered on a stream keep their leases after the stream ends and may
	// still be Acked / Failed with their tokens.
	// Errors: INVALID_ARGUMENT (queues, max_in_flight, lease_ms, worker_id, types,
	// weights), UNAUTHENTICATED, PERMISSION_DENIED (the token may not claim
	// from one of the queues) before the first message. RESOURCE_EXHAUSTED before the first
	// message when the broker already has --max_claim_streams streams open, or
	// this client connection --max_claim_streams_per_peer (the message names
	// the limit; retry with backoff, or on another replica). While Redis is
	// unreachable, or over its maxmemory, the stream stays open and resumes
	// delivery when Redis is back (or below its limit).
	// CANCELLED / UNAVAILABLE when the broker shuts down.
	// Each message carries the jobs claimed for the stream since the previous
	// message was written (at least one; several when jobs arrive faster than
	// the client reads; at most about 1 MiB of jobs unless one job alone is
	// larger), in claim order.
	Claim(ctx context.Context, in *ClaimRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[ClaimResponse], error)
	// A Claim stream that also carries the worker's acks, so that a job costs
	// one stream message each way instead of a stream message plus an
	// AckBatch call. The first request message must hold `claim` and opens
	// the stream exactly as Claim does (same validation, authorization,
	// limits, delivery and ending); every later one holds `acks`, settled
	// exactly as AckBatch would settle them, and is answered once, in
	// WorkResponse.ack_answers, under its id. Answers come in the order the
	// batches finish, not necessarily the order they were sent. The broker
	// settles up to 16 batches of a stream at a time and reads no further
	// messages until one of them is answered.
	// An acks message that AckBatch would refuse as a whole (empty, more than
	// 1000 acks, PERMISSION_DENIED, UNAVAILABLE) gets that error in its
	// answer; the stream goes on.
	// Errors of the stream: those of Claim, and INVALID_ARGUMENT when the
	// first message holds no claim or a later one holds a claim. When the
	// client half-closes or cancels, the stream ends at once (OK or
	// CANCELLED): acks whose answers had not arrived may or may not have been
	// stored, and are repeated with AckBatch (a repeated ack answers OK).
	// An acks message has no deadline of its own: one the broker reads late
	// (say, after a pause of its process) is settled then, even when the
	// client has stopped waiting for its answer.
	// A broker older than Work answers UNIMPLEMENTED: use Claim and AckBatch.
	Work(ctx context.Context, opts ...grpc.CallOption) (grpc.BidiStreamingClient[WorkRequest, WorkResponse], error)
	// Marks an active job completed and stores its result (or deletes the job
	// when its completed_retention_ms is 0). Repeating a successful Ack with
	// the same token answers OK and changes nothing (for a job deleted on Ack:
	// until its lease would have ended, plus a minute).
	// Errors: INVALID_ARGUMENT (queue, job_id, lease_token, result size),
	// NOT_FOUND, FAILED_PRECONDITION (token is not the current lease, or the
	// job is not active; reason RUN_TIMED_OUT when the run passed its
	// deadline: the attempt fails with "timeout" instead), UNAVAILABLE.
	Ack(ctx context.Context, in *AckRequest, opts ...grpc.CallOption) (*AckResponse, error)
	// Acks up to 1000 jobs in one call, each exactly as Ack would (the acks
	// of one queue share one Redis script call). Workers send the acks that
	// finish while an earlier AckBatch is in flight together, which cuts the
	// calls per job. Each ack is settled on its own; the batch is NOT atomic:
	// one result per ack, in request order.
	// Errors of the call itself: INVALID_ARGUMENT when acks is empty or holds
	// more than 1000 entries (nothing changed); UNAUTHENTICATED, and
	// PERMISSION_DENIED when the token may not claim from one of the acks'
	// queues (nothing changed); UNAVAILABLE when Redis cannot be reached (some
	// acks may have been stored: repeat them all with the same tokens).
	// Per-ack errors (INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION, as for
	// Ack) are reported in AckBatchResponse.results.
	AckBatch(ctx context.Context, in *AckBatchRequest, opts ...grpc.CallOption) (*AckBatchResponse, error)
	// Reports a failed attempt. The job is retried after a backoff
	// (min(base * 2^(attempts-1), max) plus up to 10% jitter; retry_after_ms
	// overrides it) or becomes DEAD when its attempts are used up or
	// non_retryable is set. Repeating a successful Fail with the same token
	// answers the same outcome (and next_attempt_at_ms) and changes nothing,
	// even after the retry was claimed again or the job was cancelled; once a
	// later run has failed too, the earlier token is refused
	// (FAILED_PRECONDITION). A run that Cancel asked to stop becomes DEAD
	// with error "cancelled", and one past its deadline fails with error
	// "timeout" (retried or DEAD as usual), whatever error the worker sent.
	// With keep_attempt, the run is not counted (FailRequest.keep_attempt).
	// Errors: INVALID_ARGUMENT (queue, job_id, lease_token, error,
	// retry_after_ms, keep_attempt), NOT_FOUND, FAILED_PRECONDITION (stale
	// token / not active), UNAVAILABLE.
	Fail(ctx context.Context, in *FailRequest, opts ...grpc.CallOption) (*FailResponse, error)
	// Renews the lease of an active job: its new expiry is now + lease_ms, but
	// never past the run's deadline (Job.run_deadline_ms). The worker's
	// heartbeat.
	// Errors: INVALID_ARGUMENT (queue, job_id, lease_token, lease_ms),
	// NOT_FOUND, FAILED_PRECONDITION (stale token / not active; reason
	// JOB_CANCEL_REQUESTED when Cancel asked the run to stop, RUN_TIMED_OUT
	// past the run's deadline: the lease is not renewed), UNAVAILABLE.
	ExtendLease(ctx context.Context, in *ExtendLeaseRequest, opts ...grpc.CallOption) (*ExtendLeaseResponse, error)
	// Records the progress of an active job's run: a percentage and/or a
	// small opaque value (both replace what the job held), shown by GetJob,
	// ListJobs, WaitJob and Subscribe (a PROGRESS event). Does not renew the
	// lease. A retry starts with the progress of the failed run until it
	// reports its own.
	// Errors: INVALID_ARGUMENT (queue, job_id, lease_token, percent, data;
	// neither percent nor data given), NOT_FOUND, FAILED_PRECONDITION (stale
	// token / not active; JOB_CANCEL_REQUESTED, RUN_TIMED_OUT as for
	// ExtendLease: nothing stored), UNAVAILABLE.
	ReportProgress(ctx context.Context, in *ReportProgressRequest, opts ...grpc.CallOption) (*ReportProgressResponse, error)
	// Reads one job in whatever state it is, by its id or by the idempotency
	// key it was enqueued with (GetJobRequest).
	// Errors: INVALID_ARGUMENT (queue, job_id, idempotency_key), NOT_FOUND
	// (also once a completed job's retention has passed, at once for
	// retention 0; by key: also once the key's dedup window has ended),
	// UNAVAILABLE.
	GetJob(ctx context.Context, in *GetJobRequest, opts ...grpc.CallOption) (*GetJobResponse, error)
	// Cancels a job. A PENDING job becomes DEAD with error "cancelled" at
	// once. An ACTIVE job is marked cancel-requested (Job.cancel_requested_at_ms,
	// CancelResponse.cancel_requested): the worker holding it is told at once
	// on its Claim stream (ClaimResponse.stops) when that stream is still
	// open, and in any case its next ExtendLease or ReportProgress is refused
	// (JOB_CANCEL_REQUESTED); the job becomes DEAD with error "cancelled" when
	// the worker Fails it (whatever its error and attempts left) or its lease
	// runs out. An Ack that comes first still completes it: the run finished.
	// Cancelling a cancel-requested job again answers OK and changes nothing.
	// Errors: INVALID_ARGUMENT (queue, job_id), NOT_FOUND,
	// FAILED_PRECONDITION (the job is completed or dead), UNAVAILABLE.
	Cancel(ctx context.Context, in *CancelRequest, opts ...grpc.CallOption) (*CancelResponse, error)
	// Follows one job until it finishes: the first message is the job as it
	// is when the call arrives; then one message each time its state or
	// attempts change (PENDING -> ACTIVE -> PENDING for a retry, ...); the
	// stream ends with OK right after a message whose job is COMPLETED or
	// DEAD. A job that finished before the call gets that one message. No
	// polling: the broker learns of changes from the queue's events channel
	// (docs/redis-layout.md, "Events"), whichever replica made them, and
	// reads the job again. Intermediate changes may be merged (a job that
	// went ACTIVE and back to PENDING between two reads is sent once); the
	// final state is never missed. A job deleted on Ack (completed retention
	// 0) while followed is sent COMPLETED, without its result, which was not
	// kept; a call that arrives after such a job is gone answers NOT_FOUND.
	// A queue whose jobs nobody waits for pays no Redis command for this: the
	// scripts publish only while a broker following the queue keeps its
	// listen mark, which they read with the job records they read anyway
	// (docs/redis-layout.md, "Events"; an enqueue call asks one HGET).
	// Errors: INVALID_ARGUMENT (queue, job_id, timeout_ms), UNAUTHENTICATED,
	// PERMISSION_DENIED (as GetJob), NOT_FOUND before the first message (no
	// such job) or after one (the job was deleted meanwhile),
	// DEADLINE_EXCEEDED with reason WAIT_TIMEOUT when timeout_ms passed and
	// the job has not finished (the last message holds its latest state),
	// RESOURCE_EXHAUSTED (reason TOO_MANY_WAITS, with RetryInfo) when the
	// broker already follows --max_wait_streams jobs, UNAVAILABLE (Redis
	// cannot be reached, or the broker is shutting down: call again).
	WaitJob(ctx context.Context, in *WaitJobRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[WaitJobResponse], error)
	// Follows what happens in one or more queues: a stream of their events
	// (QueueEvent: a job enqueued, claimed, completed, failed, ...), from
	// every broker replica, as the scripts that change state publish them
	// (docs/redis-layout.md, "Events"). The first message has subscribed set
	// and no events: from then on every queue's events reach the stream.
	// Events of one queue partition arrive in the order they happened; events
	// of different queues or partitions are not ordered with each other.
	// Best effort, not a log: a stream sees only what happens while it is
	// open, and when the broker lost its Redis subscription for a while (a
	// reconnect, a failover) or found the queue's listen mark lapsed
	// (docs/redis-layout.md, "Events") the next message has events_missed
	// set: events of that gap are gone (read the jobs with GetJob / ListJobs
	// if they matter). Jobs removed by PurgeDead or by the dead retention trim
	// are not reported one by one. A partitioned queue's events come from all its
	// partitions, including partitions added while the stream is open once
	// this broker learns of them (docs/semantics.md).
	// A client that does not read fast enough is cut off rather than buffered
	// without bound: more than --subscribe_buffer_events events waiting end
	// the stream with RESOURCE_EXHAUSTED (reason SUBSCRIBER_TOO_SLOW).
	// A queue with no subscriber and no waiter pays no Redis command for
	// this (as for WaitJob).
	// Errors: INVALID_ARGUMENT (queues, kinds), UNAUTHENTICATED,
	// PERMISSION_DENIED (each queue needs read access, as GetJob),
	// RESOURCE_EXHAUSTED (reason TOO_MANY_SUBSCRIPTIONS, with RetryInfo, when
	// the broker already serves --max_subscriptions streams; reason
	// SUBSCRIBER_TOO_SLOW as above), UNAVAILABLE (Redis cannot be reached
	// when the stream starts, or the broker is shutting down: subscribe
	// again).
	Subscribe(ctx context.Context, in *SubscribeRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[SubscribeResponse], error)
}

type brokerServiceClient struct {
	cc grpc.ClientConnInterface
}

func NewBrokerServiceClient(cc grpc.ClientConnInterface) BrokerServiceClient {
	return &brokerServiceClient{cc}
}

func (c *brokerServiceClient) Enqueue(ctx context.Context, in *EnqueueRequest, opts ...grpc.CallOption) (*EnqueueResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(EnqueueResponse)
	err := c.cc.Invoke(ctx, BrokerService_Enqueue_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *brokerServiceClient) EnqueueBatch(ctx context.Context, in *EnqueueBatchRequest, opts ...grpc.CallOption) (*EnqueueBatchResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(EnqueueBatchResponse)
	err := c.cc.Invoke(ctx, BrokerService_EnqueueBatch_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *brokerServiceClient) Claim(ctx context.Context, in *ClaimRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[ClaimResponse], error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	stream, err := c.cc.NewStream(ctx, &BrokerService_ServiceDesc.Streams[0], BrokerService_Claim_FullMethodName, cOpts...)
	if err != nil {
		return nil, err
	}
	x := &grpc.GenericClientStream[ClaimRequest, ClaimResponse]{ClientStream: stream}
	if err := x.ClientStream.SendMsg(in); err != nil {
		return nil, err
	}
	if err := x.ClientStream.CloseSend(); err != nil {
		return nil, err
	}
	return x, nil
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type BrokerService_ClaimClient = grpc.ServerStreamingClient[ClaimResponse]

func (c *brokerServiceClient) Work(ctx context.Context, opts ...grpc.CallOption) (grpc.BidiStreamingClient[WorkRequest, WorkResponse], error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	stream, err := c.cc.NewStream(ctx, &BrokerService_ServiceDesc.Streams[1], BrokerService_Work_FullMethodName, cOpts...)
	if err != nil {
		return nil, err
	}
	x := &grpc.GenericClientStream[WorkRequest, WorkResponse]{ClientStream: stream}
	return x, nil
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type BrokerService_WorkClient = grpc.BidiStreamingClient[WorkRequest, WorkResponse]

func (c *brokerServiceClient) Ack(ctx context.Context, in *AckRequest, opts ...grpc.CallOption) (*AckResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(AckResponse)
	err := c.cc.Invoke(ctx, BrokerService_Ack_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *brokerServiceClient) AckBatch(ctx context.Context, in *AckBatchRequest, opts ...grpc.CallOption) (*AckBatchResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(AckBatchResponse)
	err := c.cc.Invoke(ctx, BrokerService_AckBatch_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *brokerServiceClient) Fail(ctx context.Context, in *FailRequest, opts ...grpc.CallOption) (*FailResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(FailResponse)
	err := c.cc.Invoke(ctx, BrokerService_Fail_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *brokerServiceClient) ExtendLease(ctx context.Context, in *ExtendLeaseRequest, opts ...grpc.CallOption) (*ExtendLeaseResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(ExtendLeaseResponse)
	err := c.cc.Invoke(ctx, BrokerService_ExtendLease_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *brokerServiceClient) ReportProgress(ctx context.Context, in *ReportProgressRequest, opts ...grpc.CallOption) (*ReportProgressResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(ReportProgressResponse)
	err := c.cc.Invoke(ctx, BrokerService_ReportProgress_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *brokerServiceClient) GetJob(ctx context.Context, in *GetJobRequest, opts ...grpc.CallOption) (*GetJobResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(GetJobResponse)
	err := c.cc.Invoke(ctx, BrokerService_GetJob_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *brokerServiceClient) Cancel(ctx context.Context, in *CancelRequest, opts ...grpc.CallOption) (*CancelResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(CancelResponse)
	err := c.cc.Invoke(ctx, BrokerService_Cancel_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *brokerServiceClient) WaitJob(ctx context.Context, in *WaitJobRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[WaitJobResponse], error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	stream, err := c.cc.NewStream(ctx, &BrokerService_ServiceDesc.Streams[2], BrokerService_WaitJob_FullMethodName, cOpts...)
	if err != nil {
		return nil, err
	}
	x := &grpc.GenericClientStream[WaitJobRequest, WaitJobResponse]{ClientStream: stream}
	if err := x.ClientStream.SendMsg(in); err != nil {
		return nil, err
	}
	if err := x.ClientStream.CloseSend(); err != nil {
		return nil, err
	}
	return x, nil
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type BrokerService_WaitJobClient = grpc.ServerStreamingClient[WaitJobResponse]

func (c *brokerServiceClient) Subscribe(ctx context.Context, in *SubscribeRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[SubscribeResponse], error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	stream, err := c.cc.NewStream(ctx, &BrokerService_ServiceDesc.Streams[3], BrokerService_Subscribe_FullMethodName, cOpts...)
	if err != nil {
		return nil, err
	}
	x := &grpc.GenericClientStream[SubscribeRequest, SubscribeResponse]{ClientStream: stream}
	if err := x.ClientStream.SendMsg(in); err != nil {
		return nil, err
	}
	if err := x.ClientStream.CloseSend(); err != nil {
		return nil, err
	}
	return x, nil
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type BrokerService_SubscribeClient = grpc.ServerStreamingClient[SubscribeResponse]

// BrokerServiceServer is the server API for BrokerService service.
// All implementations must embed UnimplementedBrokerServiceServer
// for forward compatibility.
type BrokerServiceServer interface {
	// Stores one job. With an idempotency key already seen inside the dedup
	// window, stores nothing and returns the original job id with
	// duplicate = true.
	// Errors: INVALID_ARGUMENT (queue, type, payload, priority, delay_ms,
	// run_at_ms, max_attempts, idempotency_key, backoff_*,
	// completed_retention_ms, timeout_ms, headers, concurrency_key,
	// depends_on), NOT_FOUND (a depends_on id names no job: nothing stored),
	// RESOURCE_EXHAUSTED (Redis is over its maxmemory; nothing stored),
	// UNAVAILABLE.
	Enqueue(context.Context, *EnqueueRequest) (*EnqueueResponse, error)
	// Stores up to 1000 jobs (the jobs of one queue share one Redis script
	// call). Each job is atomic on its own (stored whole or not at all, with
	// its idempotency key; a later job of the batch repeating an earlier one's
	// key is a duplicate of it); the batch is NOT atomic: one result per job,
	// in request order, and a failed job does not stop the others. A graph of
	// jobs linked by depends_on_batch_index is stored by that one call: no
	// worker sees a child before its batch parents exist.
	// Errors of the call itself: INVALID_ARGUMENT when jobs is empty or holds
	// more than 1000 entries (nothing stored); UNAUTHENTICATED, and
	// PERMISSION_DENIED when the token may not enqueue to one of the jobs'
	// queues (nothing stored). Per-job errors are reported in
	// EnqueueBatchResponse.results.
	EnqueueBatch(context.Context, *EnqueueBatchRequest) (*EnqueueBatchResponse, error)
	// Opens a stream on which the broker pushes jobs as soon as one is due and
	// the stream has a free slot. The worker never polls. At most max_in_flight
	// jobs delivered on this stream are unfinished at any time; a slot frees when
	// the job is Acked or Failed, or when its lease expires. The Acks, Fails and
	// ExtendLeases of the stream's jobs may go to any replica on the same Redis
	// (a round_robin channel): one that did not grant the lease tells the one
	// that did (best effort; else the slot frees when the lease expires).
	// Jobs delivered on a stream keep their leases after the stream ends and may
	// still be Acked / Failed with their tokens.
	// Errors: INVALID_ARGUMENT (queues, max_in_flight, lease_ms, worker_id, types,
	// weights), UNAUTHENTICATED, PERMISSION_DENIED (the token may not claim
	// from one of the queues) before the first message. RESOURCE_EXHAUSTED before the first
	// message when the broker already has --max_claim_streams streams open, or
	// this client connection --max_claim_streams_per_peer (the message names
	// the limit; retry with backoff, or on another replica). While Redis is
	// unreachable, or over its maxmemory, the stream stays open and resumes
	// delivery when Redis is back (or below its limit).
	// CANCELLED / UNAVAILABLE when the broker shuts down.
	// Each message carries the jobs claimed for the stream since the previous
	// message was written (at least one; several when jobs arrive faster than
	// the client reads; at most about 1 MiB of jobs unless one job alone is
	// larger), in claim order.
	Claim(*ClaimRequest, grpc.ServerStreamingServer[ClaimResponse]) error
	// A Claim stream that also carries the worker's acks, so that a job costs
	// one stream message each way instead of a stream message plus an
	// AckBatch call. The first request message must hold `claim` and opens
	// the stream exactly as Claim does (same validation, authorization,
	// limits, delivery and ending); every later one holds `acks`, settled
	// exactly as AckBatch would settle them, and is answered once, in
	// WorkResponse.ack_answers, under its id. Answers come in the order the
	// batches finish, not necessarily the order they were sent. The broker
	// settles up to 16 batches of a stream at a time and reads no further
	// messages until one of them is answered.
	// An acks message that AckBatch would refuse as a whole (empty, more than
	// 1000 acks, PERMISSION_DENIED, UNAVAILABLE) gets that error in its
	// answer; the stream goes on.
	// Errors of the stream: those of Claim, and INVALID_ARGUMENT when the
	// first message holds no claim or a later one holds a claim. When the
	// client half-closes or cancels, the stream ends at once (OK or
	// CANCELLED): acks whose answers had not arrived may or may not have been
	// stored, and are repeated with AckBatch (a repeated ack answers OK).
	// An acks message has no deadline of its own: one the broker reads late
	// (say, after a pause of its process) is settled then, even when the
	// client has stopped waiting for its answer.
	// A broker older than Work answers UNIMPLEMENTED: use Claim and AckBatch.
	Work(grpc.BidiStreamingServer[WorkRequest, WorkResponse]) error
	// Marks an active job completed and stores its result (or deletes the job
	// when its completed_retention_ms is 0). Repeating a successful Ack with
	// the same token answers OK and changes nothing (for a job deleted on Ack:
	// until its lease would have ended, plus a minute).
	// Errors: INVALID_ARGUMENT (queue, job_id, lease_token, result size),
	// NOT_FOUND, FAILED_PRECONDITION (token is not the current lease, or the
	// job is not active; reason RUN_TIMED_OUT when the run passed its
	// deadline: the attempt fails with "timeout" instead), UNAVAILABLE.
	Ack(context.Context, *AckRequest) (*AckResponse, error)
	// Acks up to 1000 jobs in one call, each exactly as Ack would (the acks
	// of one queue share one Redis script call). Workers send the acks that
	// finish while an earlier AckBatch is in flight together, which cuts the
	// calls per job. Each ack is settled on its own; the batch is NOT atomic:
	// one result per ack, in request order.
	// Errors of the call itself: INVALID_ARGUMENT when acks is empty or holds
	// more than 1000 entries (nothing changed); UNAUTHENTICATED, and
	// PERMISSION_DENIED when the token may not claim from one of the acks'
	// queues (nothing changed); UNAVAILABLE when Redis cannot be reached (some
	// acks may have been stored: repeat them all with the same tokens).
	// Per-ack errors (INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION, as for
	// Ack) are reported in AckBatchResponse.results.
	AckBatch(context.Context, *AckBatchRequest) (*AckBatchResponse, error)
	// Reports a failed attempt. The job is retried after a backoff
	// (min(base * 2^(attempts-1), max) plus up to 10% jitter; retry_after_ms
	// overrides it) or becomes DEAD when its attempts are used up or
	// non_retryable is set. Repeating a successful Fail with the same token
	// answers the same outcome (and next_attempt_at_ms) and changes nothing,
	// even after the retry was claimed again or the job was cancelled; once a
	// later run has failed too, the earlier token is refused
	// (FAILED_PRECONDITION). A run that Cancel asked to stop becomes DEAD
	// with error "cancelled", and one past its deadline fails with error
	// "timeout" (retried or DEAD as usual), whatever error the worker sent.
	// With keep_attempt, the run is not counted (FailRequest.keep_attempt).
	// Errors: INVALID_ARGUMENT (queue, job_id, lease_token, error,
	// retry_after_ms, keep_attempt), NOT_FOUND, FAILED_PRECONDITION (stale
	// token / not active), UNAVAILABLE.
	Fail(context.Context, *FailRequest) (*FailResponse, error)
	// Renews the lease of an active job: its new expiry is now + lease_ms, but
	// never past the run's deadline (Job.run_deadline_ms). The worker's
	// heartbeat.
	// Errors: INVALID_ARGUMENT (queue, job_id, lease_token, lease_ms),
	// NOT_FOUND, FAILED_PRECONDITION (stale token / not active; reason
	// JOB_CANCEL_REQUESTED when Cancel asked the run to stop, RUN_TIMED_OUT
	// past the run's deadline: the lease is not renewed), UNAVAILABLE.
	ExtendLease(context.Context, *ExtendLeaseRequest) (*ExtendLeaseResponse, error)
	// Records the progress of an active job's run: a percentage and/or a
	// small opaque value (both replace what the job held), shown by GetJob,
	// ListJobs, WaitJob and Subscribe (a PROGRESS event). Does not renew the
	// lease. A retry starts with the progress of the failed run until it
	// reports its own.
	// Errors: INVALID_ARGUMENT (queue, job_id, lease_token, percent, data;
	// neither percent nor data given), NOT_FOUND, FAILED_PRECONDITION (stale
	// token / not active; JOB_CANCEL_REQUESTED, RUN_TIMED_OUT as for
	// ExtendLease: nothing stored), UNAVAILABLE.
	ReportProgress(context.Context, *ReportProgressRequest) (*ReportProgressResponse, error)
	// Reads one job in whatever state it is, by its id or by the idempotency
	// key it was enqueued with (GetJobRequest).
	// Errors: INVALID_ARGUMENT (queue, job_id, idempotency_key), NOT_FOUND
	// (also once a completed job's retention has passed, at once for
	// retention 0; by key: also once the key's dedup window has ended),
	// UNAVAILABLE.
	GetJob(context.Context, *GetJobRequest) (*GetJobResponse, error)
	// Cancels a job. A PENDING job becomes DEAD with error "cancelled" at
	// once. An ACTIVE job is marked cancel-requested (Job.cancel_requested_at_ms,
	// CancelResponse.cancel_requested): the worker holding it is told at once
	// on its Claim stream (ClaimResponse.stops) when that stream is still
	// open, and in any case its next ExtendLease or ReportProgress is refused
	// (JOB_CANCEL_REQUESTED); the job becomes DEAD with error "cancelled" when
	// the worker Fails it (whatever its error and attempts left) or its lease
	// runs out. An Ack that comes first still completes it: the run finished.
	// Cancelling a cancel-requested job again answers OK and changes nothing.
	// Errors: INVALID_ARGUMENT (queue, job_id), NOT_FOUND,
	// FAILED_PRECONDITION (the job is completed or dead), UNAVAILABLE.
	Cancel(context.Context, *CancelRequest) (*CancelResponse, error)
	// Follows one job until it finishes: the first message is the job as it
	// is when the call arrives; then one message each time its state or
	// attempts change (PENDING -> ACTIVE -> PENDING for a retry, ...); the
	// stream ends with OK right after a message whose job is COMPLETED or
	// DEAD. A job that finished before the call gets that one message. No
	// polling: the broker learns of changes from the queue's events channel
	// (docs/redis-layout.md, "Events"), whichever replica made them, and
	// reads the job again. Intermediate changes may be merged (a job that
	// went ACTIVE and back to PENDING between two reads is sent once); the
	// final state is never missed. A job deleted on Ack (completed retention
	// 0) while followed is sent COMPLETED, without its result, which was not
	// kept; a call that arrives after such a job is gone answers NOT_FOUND.
	// A queue whose jobs nobody waits for pays no Redis command for this: the
	// scripts publish only while a broker following the queue keeps its
	// listen mark, which they read with the job records they read anyway
	// (docs/redis-layout.md, "Events"; an enqueue call asks one HGET).
	// Errors: INVALID_ARGUMENT (queue, job_id, timeout_ms), UNAUTHENTICATED,
	// PERMISSION_DENIED (as GetJob), NOT_FOUND before the first message (no
	// such job) or after one (the job was deleted meanwhile),
	// DEADLINE_EXCEEDED with reason WAIT_TIMEOUT when timeout_ms passed and
	// the job has not finished (the last message holds its latest state),
	// RESOURCE_EXHAUSTED (reason TOO_MANY_WAITS, with RetryInfo) when the
	// broker already follows --max_wait_streams jobs, UNAVAILABLE (Redis
	// cannot be reached, or the broker is shutting down: call again).
	WaitJob(*WaitJobRequest, grpc.ServerStreamingServer[WaitJobResponse]) error
	// Follows what happens in one or more queues: a stream of their events
	// (QueueEvent: a job enqueued, claimed, completed, failed, ...), from
	// every broker replica, as the scripts that change state publish them
	// (docs/redis-layout.md, "Events"). The first message has subscribed set
	// and no events: from then on every queue's events reach the stream.
	// Events of one queue partition arrive in the order they happened; events
	// of different queues or partitions are not ordered with each other.
	// Best effort, not a log: a stream sees only what happens while it is
	// open, and when the broker lost its Redis subscription for a while (a
	// reconnect, a failover) or found the queue's listen mark lapsed
	// (docs/redis-layout.md, "Events") the next message has events_missed
	// set: events of that gap are gone (read the jobs with GetJob / ListJobs
	// if they matter). Jobs removed by PurgeDead or by the dead retention trim
	// are not reported one by one. A partitioned queue's events come from all its
	// partitions, including partitions added while the stream is open once
	// this broker learns of them (docs/semantics.md).
	// A client that does not read fast enough is cut off rather than buffered
	// without bound: more than --subscribe_buffer_events events waiting end
	// the stream with RESOURCE_EXHAUSTED (reason SUBSCRIBER_TOO_SLOW).
	// A queue with no subscriber and no waiter pays no Redis command for
	// this (as for WaitJob).
	// Errors: INVALID_ARGUMENT (queues, kinds), UNAUTHENTICATED,
	// PERMISSION_DENIED (each queue needs read access, as GetJob),
	// RESOURCE_EXHAUSTED (reason TOO_MANY_SUBSCRIPTIONS, with RetryInfo, when
	// the broker already serves --max_subscriptions streams; reason
	// SUBSCRIBER_TOO_SLOW as above), UNAVAILABLE (Redis cannot be reached
	// when the stream starts, or the broker is shutting down: subscribe
	// again).
	Subscribe(*SubscribeRequest, grpc.ServerStreamingServer[SubscribeResponse]) error
	mustEmbedUnimplementedBrokerServiceServer()
}

// UnimplementedBrokerServiceServer must be embedded to have
// forward compatible implementations.
//
// NOTE: this should be embedded by value instead of pointer to avoid a nil
// pointer dereference when methods are called.
type UnimplementedBrokerServiceServer struct{}

func (UnimplementedBrokerServiceServer) Enqueue(context.Context, *EnqueueRequest) (*EnqueueResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method Enqueue not implemented")
}
func (UnimplementedBrokerServiceServer) EnqueueBatch(context.Context, *EnqueueBatchRequest) (*EnqueueBatchResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method EnqueueBatch not implemented")
}
func (UnimplementedBrokerServiceServer) Claim(*ClaimRequest, grpc.ServerStreamingServer[ClaimResponse]) error {
	return status.Error(codes.Unimplemented, "method Claim not implemented")
}
func (UnimplementedBrokerServiceServer) Work(grpc.BidiStreamingServer[WorkRequest, WorkResponse]) error {
	return status.Error(codes.Unimplemented, "method Work not implemented")
}
func (UnimplementedBrokerServiceServer) Ack(context.Context, *AckRequest) (*AckResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method Ack not implemented")
}
func (UnimplementedBrokerServiceServer) AckBatch(context.Context, *AckBatchRequest) (*AckBatchResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method AckBatch not implemented")
}
func (UnimplementedBrokerServiceServer) Fail(context.Context, *FailRequest) (*FailResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method Fail not implemented")
}
func (UnimplementedBrokerServiceServer) ExtendLease(context.Context, *ExtendLeaseRequest) (*ExtendLeaseResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method ExtendLease not implemented")
}
func (UnimplementedBrokerServiceServer) ReportProgress(context.Context, *ReportProgressRequest) (*ReportProgressResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method ReportProgress not implemented")
}
func (UnimplementedBrokerServiceServer) GetJob(context.Context, *GetJobRequest) (*GetJobResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method GetJob not implemented")
}
func (UnimplementedBrokerServiceServer) Cancel(context.Context, *CancelRequest) (*CancelResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method Cancel not implemented")
}
func (UnimplementedBrokerServiceServer) WaitJob(*WaitJobRequest, grpc.ServerStreamingServer[WaitJobResponse]) error {
	return status.Error(codes.Unimplemented, "method WaitJob not implemented")
}
func (UnimplementedBrokerServiceServer) Subscribe(*SubscribeRequest, grpc.ServerStreamingServer[SubscribeResponse]) error {
	return status.Error(codes.Unimplemented, "method Subscribe not implemented")
}
func (UnimplementedBrokerServiceServer) mustEmbedUnimplementedBrokerServiceServer() {}
func (UnimplementedBrokerServiceServer) testEmbeddedByValue()                       {}

// UnsafeBrokerServiceServer may be embedded to opt out of forward compatibility for this service.
// Use of this interface is not recommended, as added methods to BrokerServiceServer will
// result in compilation errors.
type UnsafeBrokerServiceServer interface {
	mustEmbedUnimplementedBrokerServiceServer()
}

func RegisterBrokerServiceServer(s grpc.ServiceRegistrar, srv BrokerServiceServer) {
	// If the following call panics, it indicates UnimplementedBrokerServiceServer was
	// embedded by pointer and is nil.  This will cause panics if an
	// unimplemented method is ever invoked, so we test this at initialization
	// time to prevent it from happening at runtime later due to I/O.
	if t, ok := srv.(interface{ testEmbeddedByValue() }); ok {
		t.testEmbeddedByValue()
	}
	s.RegisterService(&BrokerService_ServiceDesc, srv)
}

func _BrokerService_Enqueue_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(EnqueueRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(BrokerServiceServer).Enqueue(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: BrokerService_Enqueue_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(BrokerServiceServer).Enqueue(ctx, req.(*EnqueueRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _BrokerService_EnqueueBatch_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(EnqueueBatchRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(BrokerServiceServer).EnqueueBatch(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: BrokerService_EnqueueBatch_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(BrokerServiceServer).EnqueueBatch(ctx, req.(*EnqueueBatchRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _BrokerService_Claim_Handler(srv interface{}, stream grpc.ServerStream) error {
	m := new(ClaimRequest)
	if err := stream.RecvMsg(m); err != nil {
		return err
	}
	return srv.(BrokerServiceServer).Claim(m, &grpc.GenericServerStream[ClaimRequest, ClaimResponse]{ServerStream: stream})
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type BrokerService_ClaimServer = grpc.ServerStreamingServer[ClaimResponse]

func _BrokerService_Work_Handler(srv interface{}, stream grpc.ServerStream) error {
	return srv.(BrokerServiceServer).Work(&grpc.GenericServerStream[WorkRequest, WorkResponse]{ServerStream: stream})
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type BrokerService_WorkServer = grpc.BidiStreamingServer[WorkRequest, WorkResponse]

func _BrokerService_Ack_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(AckRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(BrokerServiceServer).Ack(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: BrokerService_Ack_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(BrokerServiceServer).Ack(ctx, req.(*AckRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _BrokerService_AckBatch_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(AckBatchRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(BrokerServiceServer).AckBatch(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: BrokerService_AckBatch_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(BrokerServiceServer).AckBatch(ctx, req.(*AckBatchRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _BrokerService_Fail_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(FailRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(BrokerServiceServer).Fail(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: BrokerService_Fail_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(BrokerServiceServer).Fail(ctx, req.(*FailRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _BrokerService_ExtendLease_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(ExtendLeaseRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(BrokerServiceServer).ExtendLease(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: BrokerService_ExtendLease_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(BrokerServiceServer).ExtendLease(ctx, req.(*ExtendLeaseRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _BrokerService_ReportProgress_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(ReportProgressRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(BrokerServiceServer).ReportProgress(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: BrokerService_ReportProgress_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(BrokerServiceServer).ReportProgress(ctx, req.(*ReportProgressRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _BrokerService_GetJob_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(GetJobRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(BrokerServiceServer).GetJob(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: BrokerService_GetJob_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(BrokerServiceServer).GetJob(ctx, req.(*GetJobRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _BrokerService_Cancel_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(CancelRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(BrokerServiceServer).Cancel(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: BrokerService_Cancel_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(BrokerServiceServer).Cancel(ctx, req.(*CancelRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _BrokerService_WaitJob_Handler(srv interface{}, stream grpc.ServerStream) error {
	m := new(WaitJobRequest)
	if err := stream.RecvMsg(m); err != nil {
		return err
	}
	return srv.(BrokerServiceServer).WaitJob(m, &grpc.GenericServerStream[WaitJobRequest, WaitJobResponse]{ServerStream: stream})
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type BrokerService_WaitJobServer = grpc.ServerStreamingServer[WaitJobResponse]

func _BrokerService_Subscribe_Handler(srv interface{}, stream grpc.ServerStream) error {
	m := new(SubscribeRequest)
	if err := stream.RecvMsg(m); err != nil {
		return err
	}
	return srv.(BrokerServiceServer).Subscribe(m, &grpc.GenericServerStream[SubscribeRequest, SubscribeResponse]{ServerStream: stream})
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type BrokerService_SubscribeServer = grpc.ServerStreamingServer[SubscribeResponse]

// BrokerService_ServiceDesc is the grpc.ServiceDesc for BrokerService service.
// It's only intended for direct use with grpc.RegisterService,
// and not to be introspected or modified (even as a copy)
var BrokerService_ServiceDesc = grpc.ServiceDesc{
	ServiceName: "jobwire.v1.BrokerService",
	HandlerType: (*BrokerServiceServer)(nil),
	Methods: []grpc.MethodDesc{
		{
			MethodName: "Enqueue",
			Handler:    _BrokerService_Enqueue_Handler,
		},
		{
			MethodName: "EnqueueBatch",
			Handler:    _BrokerService_EnqueueBatch_Handler,
		},
		{
			MethodName: "Ack",
			Handler:    _BrokerService_Ack_Handler,
		},
		{
			MethodName: "AckBatch",
			Handler:    _BrokerService_AckBatch_Handler,
		},
		{
			MethodName: "Fail",
			Handler:    _BrokerService_Fail_Handler,
		},
		{
			MethodName: "ExtendLease",
			Handler:    _BrokerService_ExtendLease_Handler,
		},
		{
			MethodName: "ReportProgress",
			Handler:    _BrokerService_ReportProgress_Handler,
		},
		{
			MethodName: "GetJob",
			Handler:    _BrokerService_GetJob_Handler,
		},
		{
			MethodName: "Cancel",
			Handler:    _BrokerService_Cancel_Handler,
		},
	},
	Streams: []grpc.StreamDesc{
		{
			StreamName:    "Claim",
			Handler:       _BrokerService_Claim_Handler,
			ServerStreams: true,
		},
		{
			StreamName:    "Work",
			Handler:       _BrokerService_Work_Handler,
			ServerStreams: true,
			ClientStreams: true,
		},
		{
			StreamName:    "WaitJob",
			Handler:       _BrokerService_WaitJob_Handler,
			ServerStreams: true,
		},
		{
			StreamName:    "Subscribe",
			Handler:       _BrokerService_Subscribe_Handler,
			ServerStreams: true,
		},
	},
	Metadata: "jobwire/v1/broker.proto",
}
