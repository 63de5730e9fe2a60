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

// Code generated by protoc-gen-go. DO NOT EDIT.
// versions:
// 	protoc-gen-go v1.36.12
// 	protoc        v3.21.12
// source: jobwire/v1/broker.proto

package jobwirepb

import (
	protoreflect "google.golang.org/protobuf/reflect/protoreflect"
	protoimpl "google.golang.org/protobuf/runtime/protoimpl"
	reflect "reflect"
	sync "sync"
	unsafe "unsafe"
)

const (
	// Verify that this generated code is sufficiently up-to-date.
	_ = protoimpl.EnforceVersion(20 - protoimpl.MinVersion)
	// Verify that runtime/protoimpl is sufficiently up-to-date.
	_ = protoimpl.EnforceVersion(protoimpl.MaxVersion - 20)
)

// The four states of a job. A retry is a PENDING job whose available_at_ms
// lies in the future and whose attempts count the runs so far.
type JobState int32

const (
	JobState_JOB_STATE_UNSPECIFIED JobState = 0
	// Waiting to be claimed: due now, or scheduled for available_at_ms.
	JobState_JOB_STATE_PENDING JobState = 1
	// Held by a worker under a lease until lease_expires_at_ms.
	JobState_JOB_STATE_ACTIVE JobState = 2
	// Acked; kept with its result for the job's completed retention
	// (EnqueueRequest.completed_retention_ms, else the broker's).
	JobState_JOB_STATE_COMPLETED JobState = 3
	// Out of attempts, failed non-retryable, or cancelled; kept until an
	// operator acts.
	JobState_JOB_STATE_DEAD JobState = 4
)

// Enum value maps for JobState.
var (
	JobState_name = map[int32]string{
		0: "JOB_STATE_UNSPECIFIED",
		1: "JOB_STATE_PENDING",
		2: "JOB_STATE_ACTIVE",
		3: "JOB_STATE_COMPLETED",
		4: "JOB_STATE_DEAD",
	}
	JobState_value = map[string]int32{
		"JOB_STATE_UNSPECIFIED": 0,
		"JOB_STATE_PENDING":     1,
		"JOB_STATE_ACTIVE":      2,
		"JOB_STATE_COMPLETED":   3,
		"JOB_STATE_DEAD":        4,
	}
)

func (x JobState) Enum() *JobState {
	p := new(JobState)
	*p = x
	return p
}

func (x JobState) String() string {
	return protoimpl.X.EnumStringOf(x.Descriptor(), protoreflect.EnumNumber(x))
}

func (JobState) Descriptor() protoreflect.EnumDescriptor {
	return file_jobwire_v1_broker_proto_enumTypes[0].Descriptor()
}

func (JobState) Type() protoreflect.EnumType {
	return &file_jobwire_v1_broker_proto_enumTypes[0]
}

func (x JobState) Number() protoreflect.EnumNumber {
	return protoreflect.EnumNumber(x)
}

// Deprecated: Use JobState.Descriptor instead.
func (JobState) EnumDescriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{0}
}

// What happened to a job.
type EventKind int32

const (
	EventKind_EVENT_KIND_UNSPECIFIED EventKind = 0
	// Stored by Enqueue / EnqueueBatch (PENDING, due now or later). A
	// duplicate (same idempotency key) is not an event.
	EventKind_EVENT_KIND_ENQUEUED EventKind = 1
	// Claimed: a worker holds it under a new lease (attempts counts this run).
	EventKind_EVENT_KIND_ACTIVE EventKind = 2
	// Acked: COMPLETED.
	EventKind_EVENT_KIND_COMPLETED EventKind = 3
	// Failed (by Fail, or its lease expired) and scheduled to run again:
	// PENDING until its backoff passes. error: the failure.
	EventKind_EVENT_KIND_RETRY EventKind = 4
	// Failed for good: DEAD (out of attempts, non-retryable, or an expired
	// lease on its last attempt). error: the failure.
	EventKind_EVENT_KIND_DEAD EventKind = 5
	// DEAD with error "cancelled": cancelled while PENDING, or a run asked
	// to stop (CANCEL_REQUESTED) that was failed or whose lease ran out.
	EventKind_EVENT_KIND_CANCELLED EventKind = 6
	// Its lease expired with no Ack or Fail (the worker died or hung); a
	// RETRY or DEAD event for the same job follows.
	EventKind_EVENT_KIND_LEASE_EXPIRED EventKind = 7
	// Given back unrun (its Claim stream ended before the job was handed to
	// the worker, or the worker released it): PENDING again, the attempt
	// undone.
	EventKind_EVENT_KIND_RELEASED EventKind = 8
	// Moved from DEAD back to PENDING by RetryDead.
	EventKind_EVENT_KIND_REDRIVEN EventKind = 9
	// Deleted (DeleteJob; DeleteQueue sends one event with an empty job_id).
	EventKind_EVENT_KIND_DELETED EventKind = 10
	// Its run reported progress (ReportProgress); QueueEvent.progress_percent
	// holds the percentage (absent when the report had none).
	EventKind_EVENT_KIND_PROGRESS EventKind = 11
	// Cancel asked its run to stop (the job was ACTIVE); a CANCELLED event
	// follows when the run stops, or a COMPLETED one when its Ack came first.
	EventKind_EVENT_KIND_CANCEL_REQUESTED EventKind = 12
	// Its run passed its deadline (Job.timeout_ms); a RETRY or DEAD event for
	// the same job follows, with error "timeout".
	EventKind_EVENT_KIND_TIMED_OUT EventKind = 13
)

// Enum value maps for EventKind.
var (
	EventKind_name = map[int32]string{
		0:  "EVENT_KIND_UNSPECIFIED",
		1:  "EVENT_KIND_ENQUEUED",
		2:  "EVENT_KIND_ACTIVE",
		3:  "EVENT_KIND_COMPLETED",
		4:  "EVENT_KIND_RETRY",
		5:  "EVENT_KIND_DEAD",
		6:  "EVENT_KIND_CANCELLED",
		7:  "EVENT_KIND_LEASE_EXPIRED",
		8:  "EVENT_KIND_RELEASED",
		9:  "EVENT_KIND_REDRIVEN",
		10: "EVENT_KIND_DELETED",
		11: "EVENT_KIND_PROGRESS",
		12: "EVENT_KIND_CANCEL_REQUESTED",
		13: "EVENT_KIND_TIMED_OUT",
	}
	EventKind_value = map[string]int32{
		"EVENT_KIND_UNSPECIFIED":      0,
		"EVENT_KIND_ENQUEUED":         1,
		"EVENT_KIND_ACTIVE":           2,
		"EVENT_KIND_COMPLETED":        3,
		"EVENT_KIND_RETRY":            4,
		"EVENT_KIND_DEAD":             5,
		"EVENT_KIND_CANCELLED":        6,
		"EVENT_KIND_LEASE_EXPIRED":    7,
		"EVENT_KIND_RELEASED":         8,
		"EVENT_KIND_REDRIVEN":         9,
		"EVENT_KIND_DELETED":          10,
		"EVENT_KIND_PROGRESS":         11,
		"EVENT_KIND_CANCEL_REQUESTED": 12,
		"EVENT_KIND_TIMED_OUT":        13,
	}
)

func (x EventKind) Enum() *EventKind {
	p := new(EventKind)
	*p = x
	return p
}

func (x EventKind) String() string {
	return protoimpl.X.EnumStringOf(x.Descriptor(), protoreflect.EnumNumber(x))
}

func (EventKind) Descriptor() protoreflect.EnumDescriptor {
	return file_jobwire_v1_broker_proto_enumTypes[1].Descriptor()
}

func (EventKind) Type() protoreflect.EnumType {
	return &file_jobwire_v1_broker_proto_enumTypes[1]
}

func (x EventKind) Number() protoreflect.EnumNumber {
	return protoreflect.EnumNumber(x)
}

// Deprecated: Use EventKind.Descriptor instead.
func (EventKind) EnumDescriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{1}
}

type StopRun_Reason int32

const (
	StopRun_REASON_UNSPECIFIED StopRun_Reason = 0
	// Cancel asked the run to stop.
	StopRun_REASON_CANCEL_REQUESTED StopRun_Reason = 1
)

// Enum value maps for StopRun_Reason.
var (
	StopRun_Reason_name = map[int32]string{
		0: "REASON_UNSPECIFIED",
		1: "REASON_CANCEL_REQUESTED",
	}
	StopRun_Reason_value = map[string]int32{
		"REASON_UNSPECIFIED":      0,
		"REASON_CANCEL_REQUESTED": 1,
	}
)

func (x StopRun_Reason) Enum() *StopRun_Reason {
	p := new(StopRun_Reason)
	*p = x
	return p
}

func (x StopRun_Reason) String() string {
	return protoimpl.X.EnumStringOf(x.Descriptor(), protoreflect.EnumNumber(x))
}

func (StopRun_Reason) Descriptor() protoreflect.EnumDescriptor {
	return file_jobwire_v1_broker_proto_enumTypes[2].Descriptor()
}

func (StopRun_Reason) Type() protoreflect.EnumType {
	return &file_jobwire_v1_broker_proto_enumTypes[2]
}

func (x StopRun_Reason) Number() protoreflect.EnumNumber {
	return protoreflect.EnumNumber(x)
}

// Deprecated: Use StopRun_Reason.Descriptor instead.
func (StopRun_Reason) EnumDescriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{13, 0}
}

type FailResponse_Outcome int32

const (
	FailResponse_OUTCOME_UNSPECIFIED FailResponse_Outcome = 0
	// The job is PENDING again, due at next_attempt_at_ms.
	FailResponse_OUTCOME_RETRY_SCHEDULED FailResponse_Outcome = 1
	// The job is DEAD.
	FailResponse_OUTCOME_DEAD FailResponse_Outcome = 2
)

// Enum value maps for FailResponse_Outcome.
var (
	FailResponse_Outcome_name = map[int32]string{
		0: "OUTCOME_UNSPECIFIED",
		1: "OUTCOME_RETRY_SCHEDULED",
		2: "OUTCOME_DEAD",
	}
	FailResponse_Outcome_value = map[string]int32{
		"OUTCOME_UNSPECIFIED":     0,
		"OUTCOME_RETRY_SCHEDULED": 1,
		"OUTCOME_DEAD":            2,
	}
)

func (x FailResponse_Outcome) Enum() *FailResponse_Outcome {
	p := new(FailResponse_Outcome)
	*p = x
	return p
}

func (x FailResponse_Outcome) String() string {
	return protoimpl.X.EnumStringOf(x.Descriptor(), protoreflect.EnumNumber(x))
}

func (FailResponse_Outcome) Descriptor() protoreflect.EnumDescriptor {
	return file_jobwire_v1_broker_proto_enumTypes[3].Descriptor()
}

func (FailResponse_Outcome) Type() protoreflect.EnumType {
	return &file_jobwire_v1_broker_proto_enumTypes[3]
}

func (x FailResponse_Outcome) Number() protoreflect.EnumNumber {
	return protoreflect.EnumNumber(x)
}

// Deprecated: Use FailResponse_Outcome.Descriptor instead.
func (FailResponse_Outcome) EnumDescriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{21, 0}
}

type Job struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// Broker-assigned id, unique within its queue.
	Id string `protobuf:"bytes,1,opt,name=id,proto3" json:"id,omitempty"`
	// The queue the job lives in.
	Queue string `protobuf:"bytes,2,opt,name=queue,proto3" json:"queue,omitempty"`
	// Handler name chosen by the producer.
	Type string `protobuf:"bytes,3,opt,name=type,proto3" json:"type,omitempty"`
	// Opaque bytes chosen by the producer.
	Payload []byte `protobuf:"bytes,4,opt,name=payload,proto3" json:"payload,omitempty"`
	// -1000..1000; higher is claimed first.
	Priority int32    `protobuf:"varint,5,opt,name=priority,proto3" json:"priority,omitempty"`
	State    JobState `protobuf:"varint,6,opt,name=state,proto3,enum=jobwire.v1.JobState" json:"state,omitempty"`
	// How many times the job has been claimed (the current run included).
	Attempts int32 `protobuf:"varint,7,opt,name=attempts,proto3" json:"attempts,omitempty"`
	// Runs allowed before the job becomes DEAD.
	MaxAttempts int32 `protobuf:"varint,8,opt,name=max_attempts,json=maxAttempts,proto3" json:"max_attempts,omitempty"`
	// When the job is (or was) due to run.
	AvailableAtMs int64 `protobuf:"varint,9,opt,name=available_at_ms,json=availableAtMs,proto3" json:"available_at_ms,omitempty"`
	// Lease expiry while ACTIVE; 0 otherwise.
	LeaseExpiresAtMs int64 `protobuf:"varint,10,opt,name=lease_expires_at_ms,json=leaseExpiresAtMs,proto3" json:"lease_expires_at_ms,omitempty"`
	// The worker's result, once COMPLETED.
	Result []byte `protobuf:"bytes,11,opt,name=result,proto3" json:"result,omitempty"`
	// The last error reported (by Fail, the reaper's "lease expired", or
	// "cancelled").
	Error string `protobuf:"bytes,12,opt,name=error,proto3" json:"error,omitempty"`
	// The idempotency key given at enqueue, if any.
	IdempotencyKey string `protobuf:"bytes,13,opt,name=idempotency_key,json=idempotencyKey,proto3" json:"idempotency_key,omitempty"`
	CreatedAtMs    int64  `protobuf:"varint,14,opt,name=created_at_ms,json=createdAtMs,proto3" json:"created_at_ms,omitempty"`
	// When the job became COMPLETED or DEAD; 0 otherwise.
	FinishedAtMs int64 `protobuf:"varint,15,opt,name=finished_at_ms,json=finishedAtMs,proto3" json:"finished_at_ms,omitempty"`
	// Per-job backoff in effect (the broker defaults when not overridden).
	BackoffBaseMs int64 `protobuf:"varint,16,opt,name=backoff_base_ms,json=backoffBaseMs,proto3" json:"backoff_base_ms,omitempty"`
	BackoffMaxMs  int64 `protobuf:"varint,17,opt,name=backoff_max_ms,json=backoffMaxMs,proto3" json:"backoff_max_ms,omitempty"`
	// worker_id of the stream that claimed the latest attempt.
	WorkerId string `protobuf:"bytes,18,opt,name=worker_id,json=workerId,proto3" json:"worker_id,omitempty"`
	// Longest a run may take, in ms (EnqueueRequest.timeout_ms, else the
	// queue's default job timeout (AdminService.UpdateQueue), else the
	// broker's --default_job_timeout_ms), fixed at Enqueue; 0: no limit.
	TimeoutMs int64 `protobuf:"varint,19,opt,name=timeout_ms,json=timeoutMs,proto3" json:"timeout_ms,omitempty"`
	// The current run's deadline (claim time + timeout_ms, Redis clock) while
	// ACTIVE with a timeout; 0 otherwise. The lease never extends past it.
	RunDeadlineMs int64 `protobuf:"varint,20,opt,name=run_deadline_ms,json=runDeadlineMs,proto3" json:"run_deadline_ms,omitempty"`
	// When Cancel asked the current run to stop; 0 when it did not.
	CancelRequestedAtMs int64 `protobuf:"varint,21,opt,name=cancel_requested_at_ms,json=cancelRequestedAtMs,proto3" json:"cancel_requested_at_ms,omitempty"`
	// The latest progress a run reported (ReportProgress): a percentage
	// 0..100 (absent when none was reported) and an opaque value.
	ProgressPercent *int32 `protobuf:"varint,22,opt,name=progress_percent,json=progressPercent,proto3,oneof" json:"progress_percent,omitempty"`
	ProgressData    []byte `protobuf:"bytes,23,opt,name=progress_data,json=progressData,proto3" json:"progress_data,omitempty"`
	// The producer's headers (EnqueueRequest.headers), unchanged.
	Headers map[string]string `protobuf:"bytes,24,rep,name=headers,proto3" json:"headers,omitempty" protobuf_key:"bytes,1,opt,name=key" protobuf_val:"bytes,2,opt,name=value"`
	// EnqueueRequest.concurrency_key; "" when none.
	ConcurrencyKey string `protobuf:"bytes,25,opt,name=concurrency_key,json=concurrencyKey,proto3" json:"concurrency_key,omitempty"`
	// The error history: the last 10 failed runs (Fail, a lease that ran
	// out, a run past its timeout) and a Cancel that made the job DEAD,
	// oldest first. `error` above keeps the latest error whole; each entry's
	// is cut to at most 512 bytes, at a character boundary. Kept across
	// RetryDead.
	Errors []*JobError `protobuf:"bytes,26,rep,name=errors,proto3" json:"errors,omitempty"`
	// EnqueueRequest.depends_on, as given.
	DependsOn []string `protobuf:"bytes,27,rep,name=depends_on,json=dependsOn,proto3" json:"depends_on,omitempty"`
	// Parents in depends_on that have not ended yet; 0 once the job is due
	// (or when it has none).
	DependenciesLeft int32 `protobuf:"varint,28,opt,name=dependencies_left,json=dependenciesLeft,proto3" json:"dependencies_left,omitempty"`
	// Each parent's result by parent id, copied when the parent completed (a
	// parent that completed without a result, or failed under
	// run_after_failed_dependency, is absent). Counts toward a Claim's byte
	// bound with the payload.
	DependencyResults map[string][]byte `protobuf:"bytes,29,rep,name=dependency_results,json=dependencyResults,proto3" json:"dependency_results,omitempty" protobuf_key:"bytes,1,opt,name=key" protobuf_val:"bytes,2,opt,name=value"`
	// EnqueueRequest.run_after_failed_dependency, as given with depends_on
	// (false for a job without parents: the flag has nothing to act on).
	RunAfterFailedDependency bool `protobuf:"varint,30,opt,name=run_after_failed_dependency,json=runAfterFailedDependency,proto3" json:"run_after_failed_dependency,omitempty"`
	unknownFields            protoimpl.UnknownFields
	sizeCache                protoimpl.SizeCache
}

func (x *Job) Reset() {
	*x = Job{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[0]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Job) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Job) ProtoMessage() {}

func (x *Job) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[0]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Job.ProtoReflect.Descriptor instead.
func (*Job) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{0}
}

func (x *Job) GetId() string {
	if x != nil {
		return x.Id
	}
	return ""
}

func (x *Job) GetQueue() string {
	if x != nil {
		return x.Queue
	}
	return ""
}

func (x *Job) GetType() string {
	if x != nil {
		return x.Type
	}
	return ""
}

func (x *Job) GetPayload() []byte {
	if x != nil {
		return x.Payload
	}
	return nil
}

func (x *Job) GetPriority() int32 {
	if x != nil {
		return x.Priority
	}
	return 0
}

func (x *Job) GetState() JobState {
	if x != nil {
		return x.State
	}
	return JobState_JOB_STATE_UNSPECIFIED
}

func (x *Job) GetAttempts() int32 {
	if x != nil {
		return x.Attempts
	}
	return 0
}

func (x *Job) GetMaxAttempts() int32 {
	if x != nil {
		return x.MaxAttempts
	}
	return 0
}

func (x *Job) GetAvailableAtMs() int64 {
	if x != nil {
		return x.AvailableAtMs
	}
	return 0
}

func (x *Job) GetLeaseExpiresAtMs() int64 {
	if x != nil {
		return x.LeaseExpiresAtMs
	}
	return 0
}

func (x *Job) GetResult() []byte {
	if x != nil {
		return x.Result
	}
	return nil
}

func (x *Job) GetError() string {
	if x != nil {
		return x.Error
	}
	return ""
}

func (x *Job) GetIdempotencyKey() string {
	if x != nil {
		return x.IdempotencyKey
	}
	return ""
}

func (x *Job) GetCreatedAtMs() int64 {
	if x != nil {
		return x.CreatedAtMs
	}
	return 0
}

func (x *Job) GetFinishedAtMs() int64 {
	if x != nil {
		return x.FinishedAtMs
	}
	return 0
}

func (x *Job) GetBackoffBaseMs() int64 {
	if x != nil {
		return x.BackoffBaseMs
	}
	return 0
}

func (x *Job) GetBackoffMaxMs() int64 {
	if x != nil {
		return x.BackoffMaxMs
	}
	return 0
}

func (x *Job) GetWorkerId() string {
	if x != nil {
		return x.WorkerId
	}
	return ""
}

func (x *Job) GetTimeoutMs() int64 {
	if x != nil {
		return x.TimeoutMs
	}
	return 0
}

func (x *Job) GetRunDeadlineMs() int64 {
	if x != nil {
		return x.RunDeadlineMs
	}
	return 0
}

func (x *Job) GetCancelRequestedAtMs() int64 {
	if x != nil {
		return x.CancelRequestedAtMs
	}
	return 0
}

func (x *Job) GetProgressPercent() int32 {
	if x != nil && x.ProgressPercent != nil {
		return *x.ProgressPercent
	}
	return 0
}

func (x *Job) GetProgressData() []byte {
	if x != nil {
		return x.ProgressData
	}
	return nil
}

func (x *Job) GetHeaders() map[string]string {
	if x != nil {
		return x.Headers
	}
	return nil
}

func (x *Job) GetConcurrencyKey() string {
	if x != nil {
		return x.ConcurrencyKey
	}
	return ""
}

func (x *Job) GetErrors() []*JobError {
	if x != nil {
		return x.Errors
	}
	return nil
}

func (x *Job) GetDependsOn() []string {
	if x != nil {
		return x.DependsOn
	}
	return nil
}

func (x *Job) GetDependenciesLeft() int32 {
	if x != nil {
		return x.DependenciesLeft
	}
	return 0
}

func (x *Job) GetDependencyResults() map[string][]byte {
	if x != nil {
		return x.DependencyResults
	}
	return nil
}

func (x *Job) GetRunAfterFailedDependency() bool {
	if x != nil {
		return x.RunAfterFailedDependency
	}
	return false
}

// One entry of Job.errors.
type JobError struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The run that failed (Job.attempts then; 0 for a job cancelled before
	// its first run).
	Attempt int32 `protobuf:"varint,1,opt,name=attempt,proto3" json:"attempt,omitempty"`
	// When, by the Redis clock, ms since the epoch.
	AtMs int64 `protobuf:"varint,2,opt,name=at_ms,json=atMs,proto3" json:"at_ms,omitempty"`
	// Its error, at most 512 bytes (cut at a UTF-8 character boundary).
	Error         string `protobuf:"bytes,3,opt,name=error,proto3" json:"error,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *JobError) Reset() {
	*x = JobError{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[1]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *JobError) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*JobError) ProtoMessage() {}

func (x *JobError) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[1]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use JobError.ProtoReflect.Descriptor instead.
func (*JobError) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{1}
}

func (x *JobError) GetAttempt() int32 {
	if x != nil {
		return x.Attempt
	}
	return 0
}

func (x *JobError) GetAtMs() int64 {
	if x != nil {
		return x.AtMs
	}
	return 0
}

func (x *JobError) GetError() string {
	if x != nil {
		return x.Error
	}
	return ""
}

type EnqueueRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// 1..128 characters of [A-Za-z0-9._:-].
	Queue string `protobuf:"bytes,1,opt,name=queue,proto3" json:"queue,omitempty"`
	// Handler name, 1..256 bytes, required.
	Type string `protobuf:"bytes,2,opt,name=type,proto3" json:"type,omitempty"`
	// At most the broker's max payload (1 MiB by default).
	Payload []byte `protobuf:"bytes,3,opt,name=payload,proto3" json:"payload,omitempty"`
	// -1000..1000, default 0. Higher is claimed first.
	Priority int32 `protobuf:"varint,4,opt,name=priority,proto3" json:"priority,omitempty"`
	// Run no earlier than now + delay_ms (>= 0, at most 10 years).
	// Mutually exclusive with run_at_ms.
	DelayMs int64 `protobuf:"varint,5,opt,name=delay_ms,json=delayMs,proto3" json:"delay_ms,omitempty"`
	// Run no earlier than this absolute time (epoch ms, >= 0; a time in the
	// past means now). Mutually exclusive with delay_ms.
	RunAtMs int64 `protobuf:"varint,6,opt,name=run_at_ms,json=runAtMs,proto3" json:"run_at_ms,omitempty"`
	// 1..1000; 0 means the broker default (3 out of the box).
	MaxAttempts int32 `protobuf:"varint,7,opt,name=max_attempts,json=maxAttempts,proto3" json:"max_attempts,omitempty"`
	// At most 256 bytes. A second enqueue with the same key in the same queue
	// inside the dedup window (24 h by default) stores nothing and returns the
	// first job's id with duplicate = true.
	IdempotencyKey string `protobuf:"bytes,8,opt,name=idempotency_key,json=idempotencyKey,proto3" json:"idempotency_key,omitempty"`
	// Backoff base for retries, 0 = broker default (1 s); at most 7 days.
	BackoffBaseMs int64 `protobuf:"varint,9,opt,name=backoff_base_ms,json=backoffBaseMs,proto3" json:"backoff_base_ms,omitempty"`
	// Backoff cap for retries, 0 = broker default (1 h); at most 7 days and
	// not below the base (the broker default base when backoff_base_ms is 0).
	BackoffMaxMs int64 `protobuf:"varint,10,opt,name=backoff_max_ms,json=backoffMaxMs,proto3" json:"backoff_max_ms,omitempty"`
	// How long the job is kept once COMPLETED (with its result), in ms from
	// its Ack. Unset: the broker's --completed_retention_ms (24 h out of the
	// box). 0: deleted on Ack (like BullMQ's removeOnComplete): GetJob then
	// answers NOT_FOUND, while a repeated Ack with the same lease token still
	// answers OK until the job's lease would have ended plus a minute. At most
	// the broker's --completed_retention_max_ms (7 days out of the box); a
	// negative value or one above that maximum is INVALID_ARGUMENT naming
	// completed_retention_ms and the limit, and nothing is stored.
	CompletedRetentionMs *int64 `protobuf:"varint,11,opt,name=completed_retention_ms,json=completedRetentionMs,proto3,oneof" json:"completed_retention_ms,omitempty"`
	// Longest a run may take, in ms, 0..604800000 (7 days); 0: the queue's
	// default job timeout when it has one (AdminService.CreateQueue /
	// UpdateQueue), else the broker's --default_job_timeout_ms (0 out of the
	// box: no limit). The job keeps the value it got here. A run still
	// going at its deadline is ended by the broker: its lease is not renewed
	// past it, its Ack is refused (RUN_TIMED_OUT), the worker's Claim stream
	// and Worker helper stop its handler, and the attempt fails with error
	// "timeout" (retried or DEAD as any failure).
	TimeoutMs int64 `protobuf:"varint,12,opt,name=timeout_ms,json=timeoutMs,proto3" json:"timeout_ms,omitempty"`
	// Metadata that travels with the job to its handler (Job.headers), such
	// as W3C trace context (traceparent, tracestate). At most 64 entries;
	// each key 1..128 bytes of [a-z0-9._-] (lower case, as HTTP/2 and gRPC
	// metadata keys), each value at most 4096 bytes; keys and values at most
	// 16384 bytes in all. The broker stores them with the job and never
	// interprets them.
	Headers map[string]string `protobuf:"bytes,13,rep,name=headers,proto3" json:"headers,omitempty" protobuf_key:"bytes,1,opt,name=key" protobuf_val:"bytes,2,opt,name=value"`
	// Groups jobs for the queue's per-key concurrency limit
	// (AdminService.CreateQueue / UpdateQueue max_active_per_key;
	// docs/semantics.md, "Concurrency per key"), such as a customer id: at
	// most that many jobs with the same key run at once, across every broker
	// replica and worker, and jobs of a key at its limit wait without holding
	// back other keys' jobs. Under the queue's key_rate_limit
	// (docs/semantics.md, "Rate limits per key") each key's jobs also start
	// at most at that rate, with the same rule. 0..128 bytes; "" for none. A
	// job's key counts while it runs whether or not the queue has a limit.
	ConcurrencyKey string `protobuf:"bytes,14,opt,name=concurrency_key,json=concurrencyKey,proto3" json:"concurrency_key,omitempty"`
	// Jobs that must COMPLETE before this job is due (docs/semantics.md,
	// "Dependencies"): 0..20 distinct entries, each a job id this queue gave
	// out, or a ref "<queue>/<id>" to a job of another queue, or of another
	// partition of this one ("Parents in other queues": a ref's result and
	// error are keyed by the ref; the call answers once the job is linked to
	// its parents). The ids (not the refs) of a partitioned queue must all
	// be of one partition, which then holds this job too (its
	// idempotency_key is then deduplicated in that partition: a retry of the
	// same request finds it). Until then the job is PENDING with dependencies_left > 0 and
	// no worker gets it. Each parent's result is copied into this job's
	// dependency_results when the parent completes. A parent that ends DEAD
	// (or is deleted) makes this job DEAD with error "dependency failed: <id>",
	// which in turn fails its own dependents, unless
	// run_after_failed_dependency. A parent that already completed counts as
	// done (its result copied if it is still kept); one that is already DEAD
	// counts as failed. An id or ref that names no job (or one whose
	// retention ended) refuses this job with NOT_FOUND naming it; nothing is
	// stored.
	DependsOn []string `protobuf:"bytes,15,rep,name=depends_on,json=dependsOn,proto3" json:"depends_on,omitempty"`
	// A parent that ends DEAD or is deleted counts as done (no result) instead
	// of failing this job.
	RunAfterFailedDependency bool `protobuf:"varint,16,opt,name=run_after_failed_dependency,json=runAfterFailedDependency,proto3" json:"run_after_failed_dependency,omitempty"`
	// Only in EnqueueBatch (an Enqueue with it is INVALID_ARGUMENT): parents
	// among the same request's earlier jobs, by index in
	// EnqueueBatchRequest.jobs, each of this job's queue; distinct, and with
	// depends_on at most 20 parents in all. They act as depends_on ids, so a
	// batch can store a small graph (fan-out, fan-in, chains) whose ids are
	// not known before; Job.depends_on then lists the ids they got. A batch
	// parent that was refused refuses this job too (INVALID_ARGUMENT when the
	// parent was invalid; NOT_FOUND, reason DEPENDENCY_NOT_FOUND, when it was
	// not stored); one that is a duplicate (idempotency_key) stands for the
	// job it duplicates. In a partitioned queue the jobs a batch links this
	// way share one partition (depends_on ids among them must name one).
	DependsOnBatchIndex []int32 `protobuf:"varint,17,rep,packed,name=depends_on_batch_index,json=dependsOnBatchIndex,proto3" json:"depends_on_batch_index,omitempty"`
	unknownFields       protoimpl.UnknownFields
	sizeCache           protoimpl.SizeCache
}

func (x *EnqueueRequest) Reset() {
	*x = EnqueueRequest{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[2]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *EnqueueRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*EnqueueRequest) ProtoMessage() {}

func (x *EnqueueRequest) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[2]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use EnqueueRequest.ProtoReflect.Descriptor instead.
func (*EnqueueRequest) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{2}
}

func (x *EnqueueRequest) GetQueue() string {
	if x != nil {
		return x.Queue
	}
	return ""
}

func (x *EnqueueRequest) GetType() string {
	if x != nil {
		return x.Type
	}
	return ""
}

func (x *EnqueueRequest) GetPayload() []byte {
	if x != nil {
		return x.Payload
	}
	return nil
}

func (x *EnqueueRequest) GetPriority() int32 {
	if x != nil {
		return x.Priority
	}
	return 0
}

func (x *EnqueueRequest) GetDelayMs() int64 {
	if x != nil {
		return x.DelayMs
	}
	return 0
}

func (x *EnqueueRequest) GetRunAtMs() int64 {
	if x != nil {
		return x.RunAtMs
	}
	return 0
}

func (x *EnqueueRequest) GetMaxAttempts() int32 {
	if x != nil {
		return x.MaxAttempts
	}
	return 0
}

func (x *EnqueueRequest) GetIdempotencyKey() string {
	if x != nil {
		return x.IdempotencyKey
	}
	return ""
}

func (x *EnqueueRequest) GetBackoffBaseMs() int64 {
	if x != nil {
		return x.BackoffBaseMs
	}
	return 0
}

func (x *EnqueueRequest) GetBackoffMaxMs() int64 {
	if x != nil {
		return x.BackoffMaxMs
	}
	return 0
}

func (x *EnqueueRequest) GetCompletedRetentionMs() int64 {
	if x != nil && x.CompletedRetentionMs != nil {
		return *x.CompletedRetentionMs
	}
	return 0
}

func (x *EnqueueRequest) GetTimeoutMs() int64 {
	if x != nil {
		return x.TimeoutMs
	}
	return 0
}

func (x *EnqueueRequest) GetHeaders() map[string]string {
	if x != nil {
		return x.Headers
	}
	return nil
}

func (x *EnqueueRequest) GetConcurrencyKey() string {
	if x != nil {
		return x.ConcurrencyKey
	}
	return ""
}

func (x *EnqueueRequest) GetDependsOn() []string {
	if x != nil {
		return x.DependsOn
	}
	return nil
}

func (x *EnqueueRequest) GetRunAfterFailedDependency() bool {
	if x != nil {
		return x.RunAfterFailedDependency
	}
	return false
}

func (x *EnqueueRequest) GetDependsOnBatchIndex() []int32 {
	if x != nil {
		return x.DependsOnBatchIndex
	}
	return nil
}

type EnqueueResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	JobId string                 `protobuf:"bytes,1,opt,name=job_id,json=jobId,proto3" json:"job_id,omitempty"`
	// True when the idempotency key matched an existing job: job_id is that
	// job's id and nothing new was stored.
	Duplicate     bool `protobuf:"varint,2,opt,name=duplicate,proto3" json:"duplicate,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *EnqueueResponse) Reset() {
	*x = EnqueueResponse{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[3]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *EnqueueResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*EnqueueResponse) ProtoMessage() {}

func (x *EnqueueResponse) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[3]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use EnqueueResponse.ProtoReflect.Descriptor instead.
func (*EnqueueResponse) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{3}
}

func (x *EnqueueResponse) GetJobId() string {
	if x != nil {
		return x.JobId
	}
	return ""
}

func (x *EnqueueResponse) GetDuplicate() bool {
	if x != nil {
		return x.Duplicate
	}
	return false
}

type EnqueueBatchRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// 1..1000 jobs.
	Jobs          []*EnqueueRequest `protobuf:"bytes,1,rep,name=jobs,proto3" json:"jobs,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *EnqueueBatchRequest) Reset() {
	*x = EnqueueBatchRequest{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[4]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *EnqueueBatchRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*EnqueueBatchRequest) ProtoMessage() {}

func (x *EnqueueBatchRequest) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[4]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use EnqueueBatchRequest.ProtoReflect.Descriptor instead.
func (*EnqueueBatchRequest) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{4}
}

func (x *EnqueueBatchRequest) GetJobs() []*EnqueueRequest {
	if x != nil {
		return x.Jobs
	}
	return nil
}

type EnqueueResult struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// OK with job_id / duplicate, or the error that job got (same codes as
	// Enqueue).
	Code      int32  `protobuf:"varint,1,opt,name=code,proto3" json:"code,omitempty"` // a google.rpc.Code value
	Message   string `protobuf:"bytes,2,opt,name=message,proto3" json:"message,omitempty"`
	JobId     string `protobuf:"bytes,3,opt,name=job_id,json=jobId,proto3" json:"job_id,omitempty"`
	Duplicate bool   `protobuf:"varint,4,opt,name=duplicate,proto3" json:"duplicate,omitempty"`
	// The error's reason (see "Error details" above); empty when code is OK.
	Reason        string `protobuf:"bytes,5,opt,name=reason,proto3" json:"reason,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *EnqueueResult) Reset() {
	*x = EnqueueResult{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[5]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *EnqueueResult) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*EnqueueResult) ProtoMessage() {}

func (x *EnqueueResult) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[5]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use EnqueueResult.ProtoReflect.Descriptor instead.
func (*EnqueueResult) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{5}
}

func (x *EnqueueResult) GetCode() int32 {
	if x != nil {
		return x.Code
	}
	return 0
}

func (x *EnqueueResult) GetMessage() string {
	if x != nil {
		return x.Message
	}
	return ""
}

func (x *EnqueueResult) GetJobId() string {
	if x != nil {
		return x.JobId
	}
	return ""
}

func (x *EnqueueResult) GetDuplicate() bool {
	if x != nil {
		return x.Duplicate
	}
	return false
}

func (x *EnqueueResult) GetReason() string {
	if x != nil {
		return x.Reason
	}
	return ""
}

type EnqueueBatchResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// One entry per request job, in request order.
	Results       []*EnqueueResult `protobuf:"bytes,1,rep,name=results,proto3" json:"results,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *EnqueueBatchResponse) Reset() {
	*x = EnqueueBatchResponse{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[6]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *EnqueueBatchResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*EnqueueBatchResponse) ProtoMessage() {}

func (x *EnqueueBatchResponse) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[6]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use EnqueueBatchResponse.ProtoReflect.Descriptor instead.
func (*EnqueueBatchResponse) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{6}
}

func (x *EnqueueBatchResponse) GetResults() []*EnqueueResult {
	if x != nil {
		return x.Results
	}
	return nil
}

type ClaimRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// 1..32 queue names; earlier queues are served first (unless `weights`).
	Queues []string `protobuf:"bytes,1,rep,name=queues,proto3" json:"queues,omitempty"`
	// 1..1000; 0 means 1.
	MaxInFlight int32 `protobuf:"varint,2,opt,name=max_in_flight,json=maxInFlight,proto3" json:"max_in_flight,omitempty"`
	// Lease per delivered job, 1000..43200000 (1 s .. 12 h); 0 means the
	// broker default (30 s).
	LeaseMs int64 `protobuf:"varint,3,opt,name=lease_ms,json=leaseMs,proto3" json:"lease_ms,omitempty"`
	// Free-form worker name stored on claimed jobs, at most 256 bytes.
	WorkerId string `protobuf:"bytes,4,opt,name=worker_id,json=workerId,proto3" json:"worker_id,omitempty"`
	// The job types this stream takes: 0..64 distinct types, each 1..256
	// bytes (a job's type limit). Empty: every type. A stream is delivered only jobs
	// of its types; jobs of other types wait, without using an attempt, for a
	// stream that takes them, and never hide this stream's types behind them
	// (jobs of the wanted types are found by an index, not by skipping over
	// others). Each Worker helper sends the types it has handlers for.
	Types []string `protobuf:"bytes,5,rep,name=types,proto3" json:"types,omitempty"`
	// Weighted fair claiming. Empty (the default): strict order, every free
	// slot goes to the first of `queues` with due jobs. Else one weight per
	// queue, in the order of `queues`, each 1..1000: while several queues have
	// due jobs, the stream's free slots are split between them in proportion
	// to their weights, with fractions carried over from one claim to the
	// next (a queue of weight 3 gets about three times the jobs of a queue of
	// weight 1), and a queue without due jobs leaves its share to the others
	// (a lone busy queue gets every slot; an idle queue saves up no credit).
	// A partitioned queue's weight is shared by its partitions.
	Weights       []int32 `protobuf:"varint,6,rep,packed,name=weights,proto3" json:"weights,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ClaimRequest) Reset() {
	*x = ClaimRequest{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[7]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ClaimRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ClaimRequest) ProtoMessage() {}

func (x *ClaimRequest) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[7]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ClaimRequest.ProtoReflect.Descriptor instead.
func (*ClaimRequest) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{7}
}

func (x *ClaimRequest) GetQueues() []string {
	if x != nil {
		return x.Queues
	}
	return nil
}

func (x *ClaimRequest) GetMaxInFlight() int32 {
	if x != nil {
		return x.MaxInFlight
	}
	return 0
}

func (x *ClaimRequest) GetLeaseMs() int64 {
	if x != nil {
		return x.LeaseMs
	}
	return 0
}

func (x *ClaimRequest) GetWorkerId() string {
	if x != nil {
		return x.WorkerId
	}
	return ""
}

func (x *ClaimRequest) GetTypes() []string {
	if x != nil {
		return x.Types
	}
	return nil
}

func (x *ClaimRequest) GetWeights() []int32 {
	if x != nil {
		return x.Weights
	}
	return nil
}

// One message of a Claim stream: jobs, stop requests, or both.
type ClaimResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// 0..max_in_flight jobs, in claim order.
	Jobs []*ClaimedJob `protobuf:"bytes,1,rep,name=jobs,proto3" json:"jobs,omitempty"`
	// Runs delivered on this stream that should stop now (their handlers
	// told to give up). Best effort: a run whose stream has ended learns it
	// from its next ExtendLease instead.
	Stops         []*StopRun `protobuf:"bytes,2,rep,name=stops,proto3" json:"stops,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ClaimResponse) Reset() {
	*x = ClaimResponse{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[8]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ClaimResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ClaimResponse) ProtoMessage() {}

func (x *ClaimResponse) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[8]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ClaimResponse.ProtoReflect.Descriptor instead.
func (*ClaimResponse) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{8}
}

func (x *ClaimResponse) GetJobs() []*ClaimedJob {
	if x != nil {
		return x.Jobs
	}
	return nil
}

func (x *ClaimResponse) GetStops() []*StopRun {
	if x != nil {
		return x.Stops
	}
	return nil
}

// One message of a Work stream: a ClaimResponse (same field numbers, so the
// same bytes when no answer is carried), plus answers to acks.
type WorkResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// As ClaimResponse.jobs.
	Jobs []*ClaimedJob `protobuf:"bytes,1,rep,name=jobs,proto3" json:"jobs,omitempty"`
	// As ClaimResponse.stops.
	Stops []*StopRun `protobuf:"bytes,2,rep,name=stops,proto3" json:"stops,omitempty"`
	// The answers to acks messages settled since the previous message, each
	// answered once.
	AckAnswers    []*WorkAcksAnswer `protobuf:"bytes,3,rep,name=ack_answers,json=ackAnswers,proto3" json:"ack_answers,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *WorkResponse) Reset() {
	*x = WorkResponse{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[9]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *WorkResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*WorkResponse) ProtoMessage() {}

func (x *WorkResponse) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[9]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use WorkResponse.ProtoReflect.Descriptor instead.
func (*WorkResponse) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{9}
}

func (x *WorkResponse) GetJobs() []*ClaimedJob {
	if x != nil {
		return x.Jobs
	}
	return nil
}

func (x *WorkResponse) GetStops() []*StopRun {
	if x != nil {
		return x.Stops
	}
	return nil
}

func (x *WorkResponse) GetAckAnswers() []*WorkAcksAnswer {
	if x != nil {
		return x.AckAnswers
	}
	return nil
}

// One message from the worker on a Work stream.
type WorkRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// Types that are valid to be assigned to Kind:
	//
	//	*WorkRequest_Claim
	//	*WorkRequest_Acks
	Kind          isWorkRequest_Kind `protobuf_oneof:"kind"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *WorkRequest) Reset() {
	*x = WorkRequest{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[10]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *WorkRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*WorkRequest) ProtoMessage() {}

func (x *WorkRequest) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[10]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use WorkRequest.ProtoReflect.Descriptor instead.
func (*WorkRequest) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{10}
}

func (x *WorkRequest) GetKind() isWorkRequest_Kind {
	if x != nil {
		return x.Kind
	}
	return nil
}

func (x *WorkRequest) GetClaim() *ClaimRequest {
	if x != nil {
		if x, ok := x.Kind.(*WorkRequest_Claim); ok {
			return x.Claim
		}
	}
	return nil
}

func (x *WorkRequest) GetAcks() *WorkAcks {
	if x != nil {
		if x, ok := x.Kind.(*WorkRequest_Acks); ok {
			return x.Acks
		}
	}
	return nil
}

type isWorkRequest_Kind interface {
	isWorkRequest_Kind()
}

type WorkRequest_Claim struct {
	// The first message, and only the first.
	Claim *ClaimRequest `protobuf:"bytes,1,opt,name=claim,proto3,oneof"`
}

type WorkRequest_Acks struct {
	// Every later message.
	Acks *WorkAcks `protobuf:"bytes,2,opt,name=acks,proto3,oneof"`
}

func (*WorkRequest_Claim) isWorkRequest_Kind() {}

func (*WorkRequest_Acks) isWorkRequest_Kind() {}

type WorkAcks struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// Chosen by the client, echoed in the answer (ids may repeat; the broker
	// does not look at them).
	Id uint64 `protobuf:"varint,1,opt,name=id,proto3" json:"id,omitempty"`
	// 1..1000 acks, of one or several queues (AckBatchRequest.acks).
	Acks          []*AckRequest `protobuf:"bytes,2,rep,name=acks,proto3" json:"acks,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *WorkAcks) Reset() {
	*x = WorkAcks{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[11]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *WorkAcks) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*WorkAcks) ProtoMessage() {}

func (x *WorkAcks) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[11]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use WorkAcks.ProtoReflect.Descriptor instead.
func (*WorkAcks) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{11}
}

func (x *WorkAcks) GetId() uint64 {
	if x != nil {
		return x.Id
	}
	return 0
}

func (x *WorkAcks) GetAcks() []*AckRequest {
	if x != nil {
		return x.Acks
	}
	return nil
}

type WorkAcksAnswer struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// WorkAcks.id.
	Id uint64 `protobuf:"varint,1,opt,name=id,proto3" json:"id,omitempty"`
	// OK, or the error of the batch as a whole (the status an AckBatch call
	// with these acks would have ended with; results is then empty).
	Code    int32  `protobuf:"varint,2,opt,name=code,proto3" json:"code,omitempty"` // a google.rpc.Code value
	Message string `protobuf:"bytes,3,opt,name=message,proto3" json:"message,omitempty"`
	// One entry per ack, in request order, when code is OK
	// (AckBatchResponse.results).
	Results []*AckResult `protobuf:"bytes,4,rep,name=results,proto3" json:"results,omitempty"`
	// The batch error's reason; empty when code is OK.
	Reason        string `protobuf:"bytes,5,opt,name=reason,proto3" json:"reason,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *WorkAcksAnswer) Reset() {
	*x = WorkAcksAnswer{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[12]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *WorkAcksAnswer) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*WorkAcksAnswer) ProtoMessage() {}

func (x *WorkAcksAnswer) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[12]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use WorkAcksAnswer.ProtoReflect.Descriptor instead.
func (*WorkAcksAnswer) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{12}
}

func (x *WorkAcksAnswer) GetId() uint64 {
	if x != nil {
		return x.Id
	}
	return 0
}

func (x *WorkAcksAnswer) GetCode() int32 {
	if x != nil {
		return x.Code
	}
	return 0
}

func (x *WorkAcksAnswer) GetMessage() string {
	if x != nil {
		return x.Message
	}
	return ""
}

func (x *WorkAcksAnswer) GetResults() []*AckResult {
	if x != nil {
		return x.Results
	}
	return nil
}

func (x *WorkAcksAnswer) GetReason() string {
	if x != nil {
		return x.Reason
	}
	return ""
}

type StopRun struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The queue as the Claim named it.
	Queue string `protobuf:"bytes,1,opt,name=queue,proto3" json:"queue,omitempty"`
	JobId string `protobuf:"bytes,2,opt,name=job_id,json=jobId,proto3" json:"job_id,omitempty"`
	// The run's lease token: a stop for an older run of the same job is not
	// for this one.
	LeaseToken    string         `protobuf:"bytes,3,opt,name=lease_token,json=leaseToken,proto3" json:"lease_token,omitempty"`
	Reason        StopRun_Reason `protobuf:"varint,4,opt,name=reason,proto3,enum=jobwire.v1.StopRun_Reason" json:"reason,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *StopRun) Reset() {
	*x = StopRun{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[13]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *StopRun) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*StopRun) ProtoMessage() {}

func (x *StopRun) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[13]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use StopRun.ProtoReflect.Descriptor instead.
func (*StopRun) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{13}
}

func (x *StopRun) GetQueue() string {
	if x != nil {
		return x.Queue
	}
	return ""
}

func (x *StopRun) GetJobId() string {
	if x != nil {
		return x.JobId
	}
	return ""
}

func (x *StopRun) GetLeaseToken() string {
	if x != nil {
		return x.LeaseToken
	}
	return ""
}

func (x *StopRun) GetReason() StopRun_Reason {
	if x != nil {
		return x.Reason
	}
	return StopRun_REASON_UNSPECIFIED
}

type ClaimedJob struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The job, ACTIVE, with attempts counting this run.
	Job *Job `protobuf:"bytes,1,opt,name=job,proto3" json:"job,omitempty"`
	// Present this token to Ack, Fail and ExtendLease. A new token is issued
	// on every claim, so a worker whose lease was superseded is refused.
	LeaseToken string `protobuf:"bytes,2,opt,name=lease_token,json=leaseToken,proto3" json:"lease_token,omitempty"`
	// When the lease ends, in Redis' clock (not this worker's).
	LeaseExpiresAtMs int64 `protobuf:"varint,3,opt,name=lease_expires_at_ms,json=leaseExpiresAtMs,proto3" json:"lease_expires_at_ms,omitempty"`
	// The lease granted, in ms: the Claim's lease_ms, or the broker default
	// when it gave 0. Renew within this many ms of receiving the job; a client
	// never needs to subtract clocks to learn it.
	LeaseMs       int64 `protobuf:"varint,4,opt,name=lease_ms,json=leaseMs,proto3" json:"lease_ms,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ClaimedJob) Reset() {
	*x = ClaimedJob{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[14]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ClaimedJob) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ClaimedJob) ProtoMessage() {}

func (x *ClaimedJob) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[14]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ClaimedJob.ProtoReflect.Descriptor instead.
func (*ClaimedJob) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{14}
}

func (x *ClaimedJob) GetJob() *Job {
	if x != nil {
		return x.Job
	}
	return nil
}

func (x *ClaimedJob) GetLeaseToken() string {
	if x != nil {
		return x.LeaseToken
	}
	return ""
}

func (x *ClaimedJob) GetLeaseExpiresAtMs() int64 {
	if x != nil {
		return x.LeaseExpiresAtMs
	}
	return 0
}

func (x *ClaimedJob) GetLeaseMs() int64 {
	if x != nil {
		return x.LeaseMs
	}
	return 0
}

type AckRequest struct {
	state      protoimpl.MessageState `protogen:"open.v1"`
	Queue      string                 `protobuf:"bytes,1,opt,name=queue,proto3" json:"queue,omitempty"`
	JobId      string                 `protobuf:"bytes,2,opt,name=job_id,json=jobId,proto3" json:"job_id,omitempty"`
	LeaseToken string                 `protobuf:"bytes,3,opt,name=lease_token,json=leaseToken,proto3" json:"lease_token,omitempty"`
	// At most the broker's max payload.
	Result        []byte `protobuf:"bytes,4,opt,name=result,proto3" json:"result,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *AckRequest) Reset() {
	*x = AckRequest{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[15]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *AckRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*AckRequest) ProtoMessage() {}

func (x *AckRequest) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[15]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use AckRequest.ProtoReflect.Descriptor instead.
func (*AckRequest) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{15}
}

func (x *AckRequest) GetQueue() string {
	if x != nil {
		return x.Queue
	}
	return ""
}

func (x *AckRequest) GetJobId() string {
	if x != nil {
		return x.JobId
	}
	return ""
}

func (x *AckRequest) GetLeaseToken() string {
	if x != nil {
		return x.LeaseToken
	}
	return ""
}

func (x *AckRequest) GetResult() []byte {
	if x != nil {
		return x.Result
	}
	return nil
}

type AckResponse struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *AckResponse) Reset() {
	*x = AckResponse{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[16]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *AckResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*AckResponse) ProtoMessage() {}

func (x *AckResponse) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[16]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use AckResponse.ProtoReflect.Descriptor instead.
func (*AckResponse) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{16}
}

type AckBatchRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// 1..1000 acks, of one or several queues.
	Acks          []*AckRequest `protobuf:"bytes,1,rep,name=acks,proto3" json:"acks,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *AckBatchRequest) Reset() {
	*x = AckBatchRequest{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[17]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *AckBatchRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*AckBatchRequest) ProtoMessage() {}

func (x *AckBatchRequest) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[17]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use AckBatchRequest.ProtoReflect.Descriptor instead.
func (*AckBatchRequest) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{17}
}

func (x *AckBatchRequest) GetAcks() []*AckRequest {
	if x != nil {
		return x.Acks
	}
	return nil
}

type AckResult struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// OK, or the error that ack got (same codes as Ack).
	Code    int32  `protobuf:"varint,1,opt,name=code,proto3" json:"code,omitempty"` // a google.rpc.Code value
	Message string `protobuf:"bytes,2,opt,name=message,proto3" json:"message,omitempty"`
	// The error's reason (see "Error details" above); empty when code is OK.
	Reason        string `protobuf:"bytes,3,opt,name=reason,proto3" json:"reason,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *AckResult) Reset() {
	*x = AckResult{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[18]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *AckResult) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*AckResult) ProtoMessage() {}

func (x *AckResult) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[18]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use AckResult.ProtoReflect.Descriptor instead.
func (*AckResult) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{18}
}

func (x *AckResult) GetCode() int32 {
	if x != nil {
		return x.Code
	}
	return 0
}

func (x *AckResult) GetMessage() string {
	if x != nil {
		return x.Message
	}
	return ""
}

func (x *AckResult) GetReason() string {
	if x != nil {
		return x.Reason
	}
	return ""
}

type AckBatchResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// One entry per request ack, in request order.
	Results       []*AckResult `protobuf:"bytes,1,rep,name=results,proto3" json:"results,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *AckBatchResponse) Reset() {
	*x = AckBatchResponse{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[19]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *AckBatchResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*AckBatchResponse) ProtoMessage() {}

func (x *AckBatchResponse) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[19]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use AckBatchResponse.ProtoReflect.Descriptor instead.
func (*AckBatchResponse) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{19}
}

func (x *AckBatchResponse) GetResults() []*AckResult {
	if x != nil {
		return x.Results
	}
	return nil
}

type FailRequest struct {
	state      protoimpl.MessageState `protogen:"open.v1"`
	Queue      string                 `protobuf:"bytes,1,opt,name=queue,proto3" json:"queue,omitempty"`
	JobId      string                 `protobuf:"bytes,2,opt,name=job_id,json=jobId,proto3" json:"job_id,omitempty"`
	LeaseToken string                 `protobuf:"bytes,3,opt,name=lease_token,json=leaseToken,proto3" json:"lease_token,omitempty"`
	// The error text, at most 64 KiB; stored as the job's last error.
	Error string `protobuf:"bytes,4,opt,name=error,proto3" json:"error,omitempty"`
	// Straight to DEAD, whatever attempts remain.
	NonRetryable bool `protobuf:"varint,5,opt,name=non_retryable,json=nonRetryable,proto3" json:"non_retryable,omitempty"`
	// When > 0, retry after exactly this many ms instead of the backoff
	// (at most 7 days).
	RetryAfterMs int64 `protobuf:"varint,6,opt,name=retry_after_ms,json=retryAfterMs,proto3" json:"retry_after_ms,omitempty"`
	// This run does not count as an attempt: the job is retried after
	// retry_after_ms with the attempts it had before the run, so a run that a
	// downstream rate limit turned away ("retry after X") never uses up
	// max_attempts. Needs retry_after_ms > 0; not with non_retryable. A run
	// that Cancel asked to stop, or past its deadline, counts anyway.
	KeepAttempt   bool `protobuf:"varint,7,opt,name=keep_attempt,json=keepAttempt,proto3" json:"keep_attempt,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *FailRequest) Reset() {
	*x = FailRequest{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[20]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *FailRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*FailRequest) ProtoMessage() {}

func (x *FailRequest) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[20]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use FailRequest.ProtoReflect.Descriptor instead.
func (*FailRequest) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{20}
}

func (x *FailRequest) GetQueue() string {
	if x != nil {
		return x.Queue
	}
	return ""
}

func (x *FailRequest) GetJobId() string {
	if x != nil {
		return x.JobId
	}
	return ""
}

func (x *FailRequest) GetLeaseToken() string {
	if x != nil {
		return x.LeaseToken
	}
	return ""
}

func (x *FailRequest) GetError() string {
	if x != nil {
		return x.Error
	}
	return ""
}

func (x *FailRequest) GetNonRetryable() bool {
	if x != nil {
		return x.NonRetryable
	}
	return false
}

func (x *FailRequest) GetRetryAfterMs() int64 {
	if x != nil {
		return x.RetryAfterMs
	}
	return 0
}

func (x *FailRequest) GetKeepAttempt() bool {
	if x != nil {
		return x.KeepAttempt
	}
	return false
}

type FailResponse struct {
	state   protoimpl.MessageState `protogen:"open.v1"`
	Outcome FailResponse_Outcome   `protobuf:"varint,1,opt,name=outcome,proto3,enum=jobwire.v1.FailResponse_Outcome" json:"outcome,omitempty"`
	// When the retry is due; 0 when DEAD.
	NextAttemptAtMs int64 `protobuf:"varint,2,opt,name=next_attempt_at_ms,json=nextAttemptAtMs,proto3" json:"next_attempt_at_ms,omitempty"`
	unknownFields   protoimpl.UnknownFields
	sizeCache       protoimpl.SizeCache
}

func (x *FailResponse) Reset() {
	*x = FailResponse{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[21]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *FailResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*FailResponse) ProtoMessage() {}

func (x *FailResponse) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[21]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use FailResponse.ProtoReflect.Descriptor instead.
func (*FailResponse) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{21}
}

func (x *FailResponse) GetOutcome() FailResponse_Outcome {
	if x != nil {
		return x.Outcome
	}
	return FailResponse_OUTCOME_UNSPECIFIED
}

func (x *FailResponse) GetNextAttemptAtMs() int64 {
	if x != nil {
		return x.NextAttemptAtMs
	}
	return 0
}

type ExtendLeaseRequest struct {
	state      protoimpl.MessageState `protogen:"open.v1"`
	Queue      string                 `protobuf:"bytes,1,opt,name=queue,proto3" json:"queue,omitempty"`
	JobId      string                 `protobuf:"bytes,2,opt,name=job_id,json=jobId,proto3" json:"job_id,omitempty"`
	LeaseToken string                 `protobuf:"bytes,3,opt,name=lease_token,json=leaseToken,proto3" json:"lease_token,omitempty"`
	// New lease from now, 1000..43200000 (1 s .. 12 h); 0 means the broker
	// default.
	LeaseMs       int64 `protobuf:"varint,4,opt,name=lease_ms,json=leaseMs,proto3" json:"lease_ms,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ExtendLeaseRequest) Reset() {
	*x = ExtendLeaseRequest{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[22]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ExtendLeaseRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ExtendLeaseRequest) ProtoMessage() {}

func (x *ExtendLeaseRequest) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[22]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ExtendLeaseRequest.ProtoReflect.Descriptor instead.
func (*ExtendLeaseRequest) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{22}
}

func (x *ExtendLeaseRequest) GetQueue() string {
	if x != nil {
		return x.Queue
	}
	return ""
}

func (x *ExtendLeaseRequest) GetJobId() string {
	if x != nil {
		return x.JobId
	}
	return ""
}

func (x *ExtendLeaseRequest) GetLeaseToken() string {
	if x != nil {
		return x.LeaseToken
	}
	return ""
}

func (x *ExtendLeaseRequest) GetLeaseMs() int64 {
	if x != nil {
		return x.LeaseMs
	}
	return 0
}

type ExtendLeaseResponse struct {
	state            protoimpl.MessageState `protogen:"open.v1"`
	LeaseExpiresAtMs int64                  `protobuf:"varint,1,opt,name=lease_expires_at_ms,json=leaseExpiresAtMs,proto3" json:"lease_expires_at_ms,omitempty"`
	unknownFields    protoimpl.UnknownFields
	sizeCache        protoimpl.SizeCache
}

func (x *ExtendLeaseResponse) Reset() {
	*x = ExtendLeaseResponse{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[23]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ExtendLeaseResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ExtendLeaseResponse) ProtoMessage() {}

func (x *ExtendLeaseResponse) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[23]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ExtendLeaseResponse.ProtoReflect.Descriptor instead.
func (*ExtendLeaseResponse) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{23}
}

func (x *ExtendLeaseResponse) GetLeaseExpiresAtMs() int64 {
	if x != nil {
		return x.LeaseExpiresAtMs
	}
	return 0
}

type ReportProgressRequest struct {
	state      protoimpl.MessageState `protogen:"open.v1"`
	Queue      string                 `protobuf:"bytes,1,opt,name=queue,proto3" json:"queue,omitempty"`
	JobId      string                 `protobuf:"bytes,2,opt,name=job_id,json=jobId,proto3" json:"job_id,omitempty"`
	LeaseToken string                 `protobuf:"bytes,3,opt,name=lease_token,json=leaseToken,proto3" json:"lease_token,omitempty"`
	// A report replaces the job's progress as a whole: percent (0..100;
	// absent: none) and data (at most 4096 bytes; empty: none). At least one
	// of them is required.
	Percent       *int32 `protobuf:"varint,4,opt,name=percent,proto3,oneof" json:"percent,omitempty"`
	Data          []byte `protobuf:"bytes,5,opt,name=data,proto3" json:"data,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ReportProgressRequest) Reset() {
	*x = ReportProgressRequest{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[24]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ReportProgressRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ReportProgressRequest) ProtoMessage() {}

func (x *ReportProgressRequest) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[24]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ReportProgressRequest.ProtoReflect.Descriptor instead.
func (*ReportProgressRequest) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{24}
}

func (x *ReportProgressRequest) GetQueue() string {
	if x != nil {
		return x.Queue
	}
	return ""
}

func (x *ReportProgressRequest) GetJobId() string {
	if x != nil {
		return x.JobId
	}
	return ""
}

func (x *ReportProgressRequest) GetLeaseToken() string {
	if x != nil {
		return x.LeaseToken
	}
	return ""
}

func (x *ReportProgressRequest) GetPercent() int32 {
	if x != nil && x.Percent != nil {
		return *x.Percent
	}
	return 0
}

func (x *ReportProgressRequest) GetData() []byte {
	if x != nil {
		return x.Data
	}
	return nil
}

type ReportProgressResponse struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ReportProgressResponse) Reset() {
	*x = ReportProgressResponse{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[25]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ReportProgressResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ReportProgressResponse) ProtoMessage() {}

func (x *ReportProgressResponse) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[25]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ReportProgressResponse.ProtoReflect.Descriptor instead.
func (*ReportProgressResponse) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{25}
}

type GetJobRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	Queue string                 `protobuf:"bytes,1,opt,name=queue,proto3" json:"queue,omitempty"`
	// Exactly one of job_id and idempotency_key.
	JobId string `protobuf:"bytes,2,opt,name=job_id,json=jobId,proto3" json:"job_id,omitempty"`
	// The job enqueued with this idempotency key (1..256 bytes), while the
	// key's dedup window lasts (EnqueueRequest.idempotency_key; a deleted
	// job's key is gone with it). In a partitioned queue the key is looked up
	// in the partition it maps to now: after a change of the partition count
	// a job stored before may not be found this way.
	IdempotencyKey string `protobuf:"bytes,3,opt,name=idempotency_key,json=idempotencyKey,proto3" json:"idempotency_key,omitempty"`
	unknownFields  protoimpl.UnknownFields
	sizeCache      protoimpl.SizeCache
}

func (x *GetJobRequest) Reset() {
	*x = GetJobRequest{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[26]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *GetJobRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*GetJobRequest) ProtoMessage() {}

func (x *GetJobRequest) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[26]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use GetJobRequest.ProtoReflect.Descriptor instead.
func (*GetJobRequest) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{26}
}

func (x *GetJobRequest) GetQueue() string {
	if x != nil {
		return x.Queue
	}
	return ""
}

func (x *GetJobRequest) GetJobId() string {
	if x != nil {
		return x.JobId
	}
	return ""
}

func (x *GetJobRequest) GetIdempotencyKey() string {
	if x != nil {
		return x.IdempotencyKey
	}
	return ""
}

type GetJobResponse struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Job           *Job                   `protobuf:"bytes,1,opt,name=job,proto3" json:"job,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *GetJobResponse) Reset() {
	*x = GetJobResponse{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[27]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *GetJobResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*GetJobResponse) ProtoMessage() {}

func (x *GetJobResponse) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[27]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use GetJobResponse.ProtoReflect.Descriptor instead.
func (*GetJobResponse) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{27}
}

func (x *GetJobResponse) GetJob() *Job {
	if x != nil {
		return x.Job
	}
	return nil
}

type CancelRequest struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Queue         string                 `protobuf:"bytes,1,opt,name=queue,proto3" json:"queue,omitempty"`
	JobId         string                 `protobuf:"bytes,2,opt,name=job_id,json=jobId,proto3" json:"job_id,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *CancelRequest) Reset() {
	*x = CancelRequest{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[28]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *CancelRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*CancelRequest) ProtoMessage() {}

func (x *CancelRequest) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[28]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use CancelRequest.ProtoReflect.Descriptor instead.
func (*CancelRequest) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{28}
}

func (x *CancelRequest) GetQueue() string {
	if x != nil {
		return x.Queue
	}
	return ""
}

func (x *CancelRequest) GetJobId() string {
	if x != nil {
		return x.JobId
	}
	return ""
}

type CancelResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// True when the job was ACTIVE: its run was asked to stop and the job
	// becomes DEAD "cancelled" when it does (see Cancel). False: the job was
	// PENDING and is DEAD now.
	CancelRequested bool `protobuf:"varint,1,opt,name=cancel_requested,json=cancelRequested,proto3" json:"cancel_requested,omitempty"`
	unknownFields   protoimpl.UnknownFields
	sizeCache       protoimpl.SizeCache
}

func (x *CancelResponse) Reset() {
	*x = CancelResponse{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[29]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *CancelResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*CancelResponse) ProtoMessage() {}

func (x *CancelResponse) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[29]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use CancelResponse.ProtoReflect.Descriptor instead.
func (*CancelResponse) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{29}
}

func (x *CancelResponse) GetCancelRequested() bool {
	if x != nil {
		return x.CancelRequested
	}
	return false
}

type WaitJobRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	Queue string                 `protobuf:"bytes,1,opt,name=queue,proto3" json:"queue,omitempty"`
	JobId string                 `protobuf:"bytes,2,opt,name=job_id,json=jobId,proto3" json:"job_id,omitempty"`
	// End the stream with DEADLINE_EXCEEDED (reason WAIT_TIMEOUT) when the job
	// has not finished this many ms after the call arrived: 0..86400000 (24 h);
	// 0: no limit of the broker's own (a gRPC deadline still applies).
	TimeoutMs     int64 `protobuf:"varint,3,opt,name=timeout_ms,json=timeoutMs,proto3" json:"timeout_ms,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *WaitJobRequest) Reset() {
	*x = WaitJobRequest{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[30]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *WaitJobRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*WaitJobRequest) ProtoMessage() {}

func (x *WaitJobRequest) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[30]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use WaitJobRequest.ProtoReflect.Descriptor instead.
func (*WaitJobRequest) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{30}
}

func (x *WaitJobRequest) GetQueue() string {
	if x != nil {
		return x.Queue
	}
	return ""
}

func (x *WaitJobRequest) GetJobId() string {
	if x != nil {
		return x.JobId
	}
	return ""
}

func (x *WaitJobRequest) GetTimeoutMs() int64 {
	if x != nil {
		return x.TimeoutMs
	}
	return 0
}

type WaitJobResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The job as it is now.
	Job           *Job `protobuf:"bytes,1,opt,name=job,proto3" json:"job,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *WaitJobResponse) Reset() {
	*x = WaitJobResponse{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[31]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *WaitJobResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*WaitJobResponse) ProtoMessage() {}

func (x *WaitJobResponse) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[31]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use WaitJobResponse.ProtoReflect.Descriptor instead.
func (*WaitJobResponse) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{31}
}

func (x *WaitJobResponse) GetJob() *Job {
	if x != nil {
		return x.Job
	}
	return nil
}

type QueueEvent struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	Kind  EventKind              `protobuf:"varint,1,opt,name=kind,proto3,enum=jobwire.v1.EventKind" json:"kind,omitempty"`
	// The queue as the request named it (never a partition's store name).
	Queue string `protobuf:"bytes,2,opt,name=queue,proto3" json:"queue,omitempty"`
	// Empty only for the queue-wide DELETED of DeleteQueue.
	JobId string `protobuf:"bytes,3,opt,name=job_id,json=jobId,proto3" json:"job_id,omitempty"`
	Type  string `protobuf:"bytes,4,opt,name=type,proto3" json:"type,omitempty"`
	// The job's attempts after the event (runs started so far).
	Attempts int32 `protobuf:"varint,5,opt,name=attempts,proto3" json:"attempts,omitempty"`
	// When it happened, Redis time, ms since the Unix epoch.
	AtMs int64 `protobuf:"varint,6,opt,name=at_ms,json=atMs,proto3" json:"at_ms,omitempty"`
	// With include_details: the job's result for COMPLETED, and its error for
	// RETRY and DEAD, as read from the job just after the event (empty when
	// the job is gone by then, e.g. completed retention 0).
	Result []byte `protobuf:"bytes,7,opt,name=result,proto3" json:"result,omitempty"`
	Error  string `protobuf:"bytes,8,opt,name=error,proto3" json:"error,omitempty"`
	// PROGRESS: the percentage reported, if any.
	ProgressPercent *int32 `protobuf:"varint,9,opt,name=progress_percent,json=progressPercent,proto3,oneof" json:"progress_percent,omitempty"`
	// With include_details, PROGRESS: the job's progress_data just after.
	ProgressData  []byte `protobuf:"bytes,10,opt,name=progress_data,json=progressData,proto3" json:"progress_data,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *QueueEvent) Reset() {
	*x = QueueEvent{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[32]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *QueueEvent) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*QueueEvent) ProtoMessage() {}

func (x *QueueEvent) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[32]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use QueueEvent.ProtoReflect.Descriptor instead.
func (*QueueEvent) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{32}
}

func (x *QueueEvent) GetKind() EventKind {
	if x != nil {
		return x.Kind
	}
	return EventKind_EVENT_KIND_UNSPECIFIED
}

func (x *QueueEvent) GetQueue() string {
	if x != nil {
		return x.Queue
	}
	return ""
}

func (x *QueueEvent) GetJobId() string {
	if x != nil {
		return x.JobId
	}
	return ""
}

func (x *QueueEvent) GetType() string {
	if x != nil {
		return x.Type
	}
	return ""
}

func (x *QueueEvent) GetAttempts() int32 {
	if x != nil {
		return x.Attempts
	}
	return 0
}

func (x *QueueEvent) GetAtMs() int64 {
	if x != nil {
		return x.AtMs
	}
	return 0
}

func (x *QueueEvent) GetResult() []byte {
	if x != nil {
		return x.Result
	}
	return nil
}

func (x *QueueEvent) GetError() string {
	if x != nil {
		return x.Error
	}
	return ""
}

func (x *QueueEvent) GetProgressPercent() int32 {
	if x != nil && x.ProgressPercent != nil {
		return *x.ProgressPercent
	}
	return 0
}

func (x *QueueEvent) GetProgressData() []byte {
	if x != nil {
		return x.ProgressData
	}
	return nil
}

type SubscribeRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The queues to follow: 1..100 names, each a valid queue name, no
	// repeats.
	Queues []string `protobuf:"bytes,1,rep,name=queues,proto3" json:"queues,omitempty"`
	// The kinds to send; empty: all of them. No repeats, no UNSPECIFIED.
	Kinds []EventKind `protobuf:"varint,2,rep,packed,name=kinds,proto3,enum=jobwire.v1.EventKind" json:"kinds,omitempty"`
	// Fill QueueEvent.result / error (one read of the job per such event;
	// off by default).
	IncludeDetails bool `protobuf:"varint,3,opt,name=include_details,json=includeDetails,proto3" json:"include_details,omitempty"`
	unknownFields  protoimpl.UnknownFields
	sizeCache      protoimpl.SizeCache
}

func (x *SubscribeRequest) Reset() {
	*x = SubscribeRequest{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[33]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *SubscribeRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*SubscribeRequest) ProtoMessage() {}

func (x *SubscribeRequest) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[33]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use SubscribeRequest.ProtoReflect.Descriptor instead.
func (*SubscribeRequest) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{33}
}

func (x *SubscribeRequest) GetQueues() []string {
	if x != nil {
		return x.Queues
	}
	return nil
}

func (x *SubscribeRequest) GetKinds() []EventKind {
	if x != nil {
		return x.Kinds
	}
	return nil
}

func (x *SubscribeRequest) GetIncludeDetails() bool {
	if x != nil {
		return x.IncludeDetails
	}
	return false
}

type SubscribeResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// Events in the order they happened per queue partition (several per
	// message when one call changed several jobs, e.g. EnqueueBatch).
	Events []*QueueEvent `protobuf:"bytes,1,rep,name=events,proto3" json:"events,omitempty"`
	// Set on the first message only, which has no events: the stream now
	// receives every event of the queues.
	Subscribed bool `protobuf:"varint,2,opt,name=subscribed,proto3" json:"subscribed,omitempty"`
	// Events may have been lost just before this message (the broker
	// re-subscribed after losing Redis, or renewed a lapsed listen mark); the
	// message may have no events.
	EventsMissed  bool `protobuf:"varint,3,opt,name=events_missed,json=eventsMissed,proto3" json:"events_missed,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *SubscribeResponse) Reset() {
	*x = SubscribeResponse{}
	mi := &file_jobwire_v1_broker_proto_msgTypes[34]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *SubscribeResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*SubscribeResponse) ProtoMessage() {}

func (x *SubscribeResponse) ProtoReflect() protoreflect.Message {
	mi := &file_jobwire_v1_broker_proto_msgTypes[34]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use SubscribeResponse.ProtoReflect.Descriptor instead.
func (*SubscribeResponse) Descriptor() ([]byte, []int) {
	return file_jobwire_v1_broker_proto_rawDescGZIP(), []int{34}
}

func (x *SubscribeResponse) GetEvents() []*QueueEvent {
	if x != nil {
		return x.Events
	}
	return nil
}

func (x *SubscribeResponse) GetSubscribed() bool {
	if x != nil {
		return x.Subscribed
	}
	return false
}

func (x *SubscribeResponse) GetEventsMissed() bool {
	if x != nil {
		return x.EventsMissed
	}
	return false
}

var File_jobwire_v1_broker_proto protoreflect.FileDescriptor

const file_jobwire_v1_broker_proto_rawDesc = "" +
	"\n" +
	"\x17jobwire/v1/broker.proto\x12\n" +
	"jobwire.v1\"\x9c\n" +
	"\n" +
	"\x03Job\x12\x0e\n" +
	"\x02id\x18\x01 \x01(\tR\x02id\x12\x14\n" +
	"\x05queue\x18\x02 \x01(\tR\x05queue\x12\x12\n" +
	"\x04type\x18\x03 \x01(\tR\x04type\x12\x18\n" +
	"\apayload\x18\x04 \x01(\fR\apayload\x12\x1a\n" +
	"\bpriority\x18\x05 \x01(\x05R\bpriority\x12*\n" +
	"\x05state\x18\x06 \x01(\x0e2\x14.jobwire.v1.JobStateR\x05state\x12\x1a\n" +
	"\battempts\x18\a \x01(\x05R\battempts\x12!\n" +
	"\fmax_attempts\x18\b \x01(\x05R\vmaxAttempts\x12&\n" +
	"\x0favailable_at_ms\x18\t \x01(\x03R\ravailableAtMs\x12-\n" +
	"\x13lease_expires_at_ms\x18\n" +
	" \x01(\x03R\x10leaseExpiresAtMs\x12\x16\n" +
	"\x06result\x18\v \x01(\fR\x06result\x12\x14\n" +
	"\x05error\x18\f \x01(\tR\x05error\x12'\n" +
	"\x0fidempotency_key\x18\r \x01(\tR\x0eidempotencyKey\x12\"\n" +
	"\rcreated_at_ms\x18\x0e \x01(\x03R\vcreatedAtMs\x12$\n" +
	"\x0efinished_at_ms\x18\x0f \x01(\x03R\ffinishedAtMs\x12&\n" +
	"\x0fbackoff_base_ms\x18\x10 \x01(\x03R\rbackoffBaseMs\x12$\n" +
	"\x0ebackoff_max_ms\x18\x11 \x01(\x03R\fbackoffMaxMs\x12\x1b\n" +
	"\tworker_id\x18\x12 \x01(\tR\bworkerId\x12\x1d\n" +
	"\n" +
	"timeout_ms\x18\x13 \x01(\x03R\ttimeoutMs\x12&\n" +
	"\x0frun_deadline_ms\x18\x14 \x01(\x03R\rrunDeadlineMs\x123\n" +
	"\x16cancel_requested_at_ms\x18\x15 \x01(\x03R\x13cancelRequestedAtMs\x12.\n" +
	"\x10progress_percent\x18\x16 \x01(\x05H\x00R\x0fprogressPercent\x88\x01\x01\x12#\n" +
	"\rprogress_data\x18\x17 \x01(\fR\fprogressData\x126\n" +
	"\aheaders\x18\x18 \x03(\v2\x1c.jobwire.v1.Job.HeadersEntryR\aheaders\x12'\n" +
	"\x0fconcurrency_key\x18\x19 \x01(\tR\x0econcurrencyKey\x12,\n" +
	"\x06errors\x18\x1a \x03(\v2\x14.jobwire.v1.JobErrorR\x06errors\x12\x1d\n" +
	"\n" +
	"depends_on\x18\x1b \x03(\tR\tdependsOn\x12+\n" +
	"\x11dependencies_left\x18\x1c \x01(\x05R\x10dependenciesLeft\x12U\n" +
	"\x12dependency_results\x18\x1d \x03(\v2&.jobwire.v1.Job.DependencyResultsEntryR\x11dependencyResults\x12=\n" +
	"\x1brun_after_failed_dependency\x18\x1e \x01(\bR\x18runAfterFailedDependency\x1a:\n" +
	"\fHeadersEntry\x12\x10\n" +
	"\x03key\x18\x01 \x01(\tR\x03key\x12\x14\n" +
	"\x05value\x18\x02 \x01(\tR\x05value:\x028\x01\x1aD\n" +
	"\x16DependencyResultsEntry\x12\x10\n" +
	"\x03key\x18\x01 \x01(\tR\x03key\x12\x14\n" +
	"\x05value\x18\x02 \x01(\fR\x05value:\x028\x01B\x13\n" +
	"\x11_progress_percent\"O\n" +
	"\bJobError\x12\x18\n" +
	"\aattempt\x18\x01 \x01(\x05R\aattempt\x12\x13\n" +
	"\x05at_ms\x18\x02 \x01(\x03R\x04atMs\x12\x14\n" +
	"\x05error\x18\x03 \x01(\tR\x05error\"\xf1\x05\n" +
	"\x0eEnqueueRequest\x12\x14\n" +
	"\x05queue\x18\x01 \x01(\tR\x05queue\x12\x12\n" +
	"\x04type\x18\x02 \x01(\tR\x04type\x12\x18\n" +
	"\apayload\x18\x03 \x01(\fR\apayload\x12\x1a\n" +
	"\bpriority\x18\x04 \x01(\x05R\bpriority\x12\x19\n" +
	"\bdelay_ms\x18\x05 \x01(\x03R\adelayMs\x12\x1a\n" +
	"\trun_at_ms\x18\x06 \x01(\x03R\arunAtMs\x12!\n" +
	"\fmax_attempts\x18\a \x01(\x05R\vmaxAttempts\x12'\n" +
	"\x0fidempotency_key\x18\b \x01(\tR\x0eidempotencyKey\x12&\n" +
	"\x0fbackoff_base_ms\x18\t \x01(\x03R\rbackoffBaseMs\x12$\n" +
	"\x0ebackoff_max_ms\x18\n" +
	" \x01(\x03R\fbackoffMaxMs\x129\n" +
	"\x16completed_retention_ms\x18\v \x01(\x03H\x00R\x14completedRetentionMs\x88\x01\x01\x12\x1d\n" +
	"\n" +
	"timeout_ms\x18\f \x01(\x03R\ttimeoutMs\x12A\n" +
	"\aheaders\x18\r \x03(\v2'.jobwire.v1.EnqueueRequest.HeadersEntryR\aheaders\x12'\n" +
	"\x0fconcurrency_key\x18\x0e \x01(\tR\x0econcurrencyKey\x12\x1d\n" +
	"\n" +
	"depends_on\x18\x0f \x03(\tR\tdependsOn\x12=\n" +
	"\x1brun_after_failed_dependency\x18\x10 \x01(\bR\x18runAfterFailedDependency\x123\n" +
	"\x16depends_on_batch_index\x18\x11 \x03(\x05R\x13dependsOnBatchIndex\x1a:\n" +
	"\fHeadersEntry\x12\x10\n" +
	"\x03key\x18\x01 \x01(\tR\x03key\x12\x14\n" +
	"\x05value\x18\x02 \x01(\tR\x05value:\x028\x01B\x19\n" +
	"\x17_completed_retention_ms\"F\n" +
	"\x0fEnqueueResponse\x12\x15\n" +
	"\x06job_id\x18\x01 \x01(\tR\x05jobId\x12\x1c\n" +
	"\tduplicate\x18\x02 \x01(\bR\tduplicate\"E\n" +
	"\x13EnqueueBatchRequest\x12.\n" +
	"\x04jobs\x18\x01 \x03(\v2\x1a.jobwire.v1.EnqueueRequestR\x04jobs\"\x8a\x01\n" +
	"\rEnqueueResult\x12\x12\n" +
	"\x04code\x18\x01 \x01(\x05R\x04code\x12\x18\n" +
	"\amessage\x18\x02 \x01(\tR\amessage\x12\x15\n" +
	"\x06job_id\x18\x03 \x01(\tR\x05jobId\x12\x1c\n" +
	"\tduplicate\x18\x04 \x01(\bR\tduplicate\x12\x16\n" +
	"\x06reason\x18\x05 \x01(\tR\x06reason\"K\n" +
	"\x14EnqueueBatchResponse\x123\n" +
	"\aresults\x18\x01 \x03(\v2\x19.jobwire.v1.EnqueueResultR\aresults\"\xb2\x01\n" +
	"\fClaimRequest\x12\x16\n" +
	"\x06queues\x18\x01 \x03(\tR\x06queues\x12\"\n" +
	"\rmax_in_flight\x18\x02 \x01(\x05R\vmaxInFlight\x12\x19\n" +
	"\blease_ms\x18\x03 \x01(\x03R\aleaseMs\x12\x1b\n" +
	"\tworker_id\x18\x04 \x01(\tR\bworkerId\x12\x14\n" +
	"\x05types\x18\x05 \x03(\tR\x05types\x12\x18\n" +
	"\aweights\x18\x06 \x03(\x05R\aweights\"f\n" +
	"\rClaimResponse\x12*\n" +
	"\x04jobs\x18\x01 \x03(\v2\x16.jobwire.v1.ClaimedJobR\x04jobs\x12)\n" +
	"\x05stops\x18\x02 \x03(\v2\x13.jobwire.v1.StopRunR\x05stops\"\xa2\x01\n" +
	"\fWorkResponse\x12*\n" +
	"\x04jobs\x18\x01 \x03(\v2\x16.jobwire.v1.ClaimedJobR\x04jobs\x12)\n" +
	"\x05stops\x18\x02 \x03(\v2\x13.jobwire.v1.StopRunR\x05stops\x12;\n" +
	"\vack_answers\x18\x03 \x03(\v2\x1a.jobwire.v1.WorkAcksAnswerR\n" +
	"ackAnswers\"s\n" +
	"\vWorkRequest\x120\n" +
	"\x05claim\x18\x01 \x01(\v2\x18.jobwire.v1.ClaimRequestH\x00R\x05claim\x12*\n" +
	"\x04acks\x18\x02 \x01(\v2\x14.jobwire.v1.WorkAcksH\x00R\x04acksB\x06\n" +
	"\x04kind\"F\n" +
	"\bWorkAcks\x12\x0e\n" +
	"\x02id\x18\x01 \x01(\x04R\x02id\x12*\n" +
	"\x04acks\x18\x02 \x03(\v2\x16.jobwire.v1.AckRequestR\x04acks\"\x97\x01\n" +
	"\x0eWorkAcksAnswer\x12\x0e\n" +
	"\x02id\x18\x01 \x01(\x04R\x02id\x12\x12\n" +
	"\x04code\x18\x02 \x01(\x05R\x04code\x12\x18\n" +
	"\amessage\x18\x03 \x01(\tR\amessage\x12/\n" +
	"\aresults\x18\x04 \x03(\v2\x15.jobwire.v1.AckResultR\aresults\x12\x16\n" +
	"\x06reason\x18\x05 \x01(\tR\x06reason\"\xca\x01\n" +
	"\aStopRun\x12\x14\n" +
	"\x05queue\x18\x01 \x01(\tR\x05queue\x12\x15\n" +
	"\x06job_id\x18\x02 \x01(\tR\x05jobId\x12\x1f\n" +
	"\vlease_token\x18\x03 \x01(\tR\n" +
	"leaseToken\x122\n" +
	"\x06reason\x18\x04 \x01(\x0e2\x1a.jobwire.v1.StopRun.ReasonR\x06reason\"=\n" +
	"\x06Reason\x12\x16\n" +
	"\x12REASON_UNSPECIFIED\x10\x00\x12\x1b\n" +
	"\x17REASON_CANCEL_REQUESTED\x10\x01\"\x9a\x01\n" +
	"\n" +
	"ClaimedJob\x12!\n" +
	"\x03job\x18\x01 \x01(\v2\x0f.jobwire.v1.JobR\x03job\x12\x1f\n" +
	"\vlease_token\x18\x02 \x01(\tR\n" +
	"leaseToken\x12-\n" +
	"\x13lease_expires_at_ms\x18\x03 \x01(\x03R\x10leaseExpiresAtMs\x12\x19\n" +
	"\blease_ms\x18\x04 \x01(\x03R\aleaseMs\"r\n" +
	"\n" +
	"AckRequest\x12\x14\n" +
	"\x05queue\x18\x01 \x01(\tR\x05queue\x12\x15\n" +
	"\x06job_id\x18\x02 \x01(\tR\x05jobId\x12\x1f\n" +
	"\vlease_token\x18\x03 \x01(\tR\n" +
	"leaseToken\x12\x16\n" +
	"\x06result\x18\x04 \x01(\fR\x06result\"\r\n" +
	"\vAckResponse\"=\n" +
	"\x0fAckBatchRequest\x12*\n" +
	"\x04acks\x18\x01 \x03(\v2\x16.jobwire.v1.AckRequestR\x04acks\"Q\n" +
	"\tAckResult\x12\x12\n" +
	"\x04code\x18\x01 \x01(\x05R\x04code\x12\x18\n" +
	"\amessage\x18\x02 \x01(\tR\amessage\x12\x16\n" +
	"\x06reason\x18\x03 \x01(\tR\x06reason\"C\n" +
	"\x10AckBatchResponse\x12/\n" +
	"\aresults\x18\x01 \x03(\v2\x15.jobwire.v1.AckResultR\aresults\"\xdf\x01\n" +
	"\vFailRequest\x12\x14\n" +
	"\x05queue\x18\x01 \x01(\tR\x05queue\x12\x15\n" +
	"\x06job_id\x18\x02 \x01(\tR\x05jobId\x12\x1f\n" +
	"\vlease_token\x18\x03 \x01(\tR\n" +
	"leaseToken\x12\x14\n" +
	"\x05error\x18\x04 \x01(\tR\x05error\x12#\n" +
	"\rnon_retryable\x18\x05 \x01(\bR\fnonRetryable\x12$\n" +
	"\x0eretry_after_ms\x18\x06 \x01(\x03R\fretryAfterMs\x12!\n" +
	"\fkeep_attempt\x18\a \x01(\bR\vkeepAttempt\"\xca\x01\n" +
	"\fFailResponse\x12:\n" +
	"\aoutcome\x18\x01 \x01(\x0e2 .jobwire.v1.FailResponse.OutcomeR\aoutcome\x12+\n" +
	"\x12next_attempt_at_ms\x18\x02 \x01(\x03R\x0fnextAttemptAtMs\"Q\n" +
	"\aOutcome\x12\x17\n" +
	"\x13OUTCOME_UNSPECIFIED\x10\x00\x12\x1b\n" +
	"\x17OUTCOME_RETRY_SCHEDULED\x10\x01\x12\x10\n" +
	"\fOUTCOME_DEAD\x10\x02\"}\n" +
	"\x12ExtendLeaseRequest\x12\x14\n" +
	"\x05queue\x18\x01 \x01(\tR\x05queue\x12\x15\n" +
	"\x06job_id\x18\x02 \x01(\tR\x05jobId\x12\x1f\n" +
	"\vlease_token\x18\x03 \x01(\tR\n" +
	"leaseToken\x12\x19\n" +
	"\blease_ms\x18\x04 \x01(\x03R\aleaseMs\"D\n" +
	"\x13ExtendLeaseResponse\x12-\n" +
	"\x13lease_expires_at_ms\x18\x01 \x01(\x03R\x10leaseExpiresAtMs\"\xa4\x01\n" +
	"\x15ReportProgressRequest\x12\x14\n" +
	"\x05queue\x18\x01 \x01(\tR\x05queue\x12\x15\n" +
	"\x06job_id\x18\x02 \x01(\tR\x05jobId\x12\x1f\n" +
	"\vlease_token\x18\x03 \x01(\tR\n" +
	"leaseToken\x12\x1d\n" +
	"\apercent\x18\x04 \x01(\x05H\x00R\apercent\x88\x01\x01\x12\x12\n" +
	"\x04data\x18\x05 \x01(\fR\x04dataB\n" +
	"\n" +
	"\b_percent\"\x18\n" +
	"\x16ReportProgressResponse\"e\n" +
	"\rGetJobRequest\x12\x14\n" +
	"\x05queue\x18\x01 \x01(\tR\x05queue\x12\x15\n" +
	"\x06job_id\x18\x02 \x01(\tR\x05jobId\x12'\n" +
	"\x0fidempotency_key\x18\x03 \x01(\tR\x0eidempotencyKey\"3\n" +
	"\x0eGetJobResponse\x12!\n" +
	"\x03job\x18\x01 \x01(\v2\x0f.jobwire.v1.JobR\x03job\"<\n" +
	"\rCancelRequest\x12\x14\n" +
	"\x05queue\x18\x01 \x01(\tR\x05queue\x12\x15\n" +
	"\x06job_id\x18\x02 \x01(\tR\x05jobId\";\n" +
	"\x0eCancelResponse\x12)\n" +
	"\x10cancel_requested\x18\x01 \x01(\bR\x0fcancelRequested\"\\\n" +
	"\x0eWaitJobRequest\x12\x14\n" +
	"\x05queue\x18\x01 \x01(\tR\x05queue\x12\x15\n" +
	"\x06job_id\x18\x02 \x01(\tR\x05jobId\x12\x1d\n" +
	"\n" +
	"timeout_ms\x18\x03 \x01(\x03R\ttimeoutMs\"4\n" +
	"\x0fWaitJobResponse\x12!\n" +
	"\x03job\x18\x01 \x01(\v2\x0f.jobwire.v1.JobR\x03job\"\xc1\x02\n" +
	"\n" +
	"QueueEvent\x12)\n" +
	"\x04kind\x18\x01 \x01(\x0e2\x15.jobwire.v1.EventKindR\x04kind\x12\x14\n" +
	"\x05queue\x18\x02 \x01(\tR\x05queue\x12\x15\n" +
	"\x06job_id\x18\x03 \x01(\tR\x05jobId\x12\x12\n" +
	"\x04type\x18\x04 \x01(\tR\x04type\x12\x1a\n" +
	"\battempts\x18\x05 \x01(\x05R\battempts\x12\x13\n" +
	"\x05at_ms\x18\x06 \x01(\x03R\x04atMs\x12\x16\n" +
	"\x06result\x18\a \x01(\fR\x06result\x12\x14\n" +
	"\x05error\x18\b \x01(\tR\x05error\x12.\n" +
	"\x10progress_percent\x18\t \x01(\x05H\x00R\x0fprogressPercent\x88\x01\x01\x12#\n" +
	"\rprogress_data\x18\n" +
	" \x01(\fR\fprogressDataB\x13\n" +
	"\x11_progress_percent\"\x80\x01\n" +
	"\x10SubscribeRequest\x12\x16\n" +
	"\x06queues\x18\x01 \x03(\tR\x06queues\x12+\n" +
	"\x05kinds\x18\x02 \x03(\x0e2\x15.jobwire.v1.EventKindR\x05kinds\x12'\n" +
	"\x0finclude_details\x18\x03 \x01(\bR\x0eincludeDetails\"\x88\x01\n" +
	"\x11SubscribeResponse\x12.\n" +
	"\x06events\x18\x01 \x03(\v2\x16.jobwire.v1.QueueEventR\x06events\x12\x1e\n" +
	"\n" +
	"subscribed\x18\x02 \x01(\bR\n" +
	"subscribed\x12#\n" +
	"\revents_missed\x18\x03 \x01(\bR\feventsMissed*\x7f\n" +
	"\bJobState\x12\x19\n" +
	"\x15JOB_STATE_UNSPECIFIED\x10\x00\x12\x15\n" +
	"\x11JOB_STATE_PENDING\x10\x01\x12\x14\n" +
	"\x10JOB_STATE_ACTIVE\x10\x02\x12\x17\n" +
	"\x13JOB_STATE_COMPLETED\x10\x03\x12\x12\n" +
	"\x0eJOB_STATE_DEAD\x10\x04*\xf2\x02\n" +
	"\tEventKind\x12\x1a\n" +
	"\x16EVENT_KIND_UNSPECIFIED\x10\x00\x12\x17\n" +
	"\x13EVENT_KIND_ENQUEUED\x10\x01\x12\x15\n" +
	"\x11EVENT_KIND_ACTIVE\x10\x02\x12\x18\n" +
	"\x14EVENT_KIND_COMPLETED\x10\x03\x12\x14\n" +
	"\x10EVENT_KIND_RETRY\x10\x04\x12\x13\n" +
	"\x0fEVENT_KIND_DEAD\x10\x05\x12\x18\n" +
	"\x14EVENT_KIND_CANCELLED\x10\x06\x12\x1c\n" +
	"\x18EVENT_KIND_LEASE_EXPIRED\x10\a\x12\x17\n" +
	"\x13EVENT_KIND_RELEASED\x10\b\x12\x17\n" +
	"\x13EVENT_KIND_REDRIVEN\x10\t\x12\x16\n" +
	"\x12EVENT_KIND_DELETED\x10\n" +
	"\x12\x17\n" +
	"\x13EVENT_KIND_PROGRESS\x10\v\x12\x1f\n" +
	"\x1bEVENT_KIND_CANCEL_REQUESTED\x10\f\x12\x18\n" +
	"\x14EVENT_KIND_TIMED_OUT\x10\r2\x9c\a\n" +
	"\rBrokerService\x12B\n" +
	"\aEnqueue\x12\x1a.jobwire.v1.EnqueueRequest\x1a\x1b.jobwire.v1.EnqueueResponse\x12Q\n" +
	"\fEnqueueBatch\x12\x1f.jobwire.v1.EnqueueBatchRequest\x1a .jobwire.v1.EnqueueBatchResponse\x12>\n" +
	"\x05Claim\x12\x18.jobwire.v1.ClaimRequest\x1a\x19.jobwire.v1.ClaimResponse0\x01\x12=\n" +
	"\x04Work\x12\x17.jobwire.v1.WorkRequest\x1a\x18.jobwire.v1.WorkResponse(\x010\x01\x126\n" +
	"\x03Ack\x12\x16.jobwire.v1.AckRequest\x1a\x17.jobwire.v1.AckResponse\x12E\n" +
	"\bAckBatch\x12\x1b.jobwire.v1.AckBatchRequest\x1a\x1c.jobwire.v1.AckBatchResponse\x129\n" +
	"\x04Fail\x12\x17.jobwire.v1.FailRequest\x1a\x18.jobwire.v1.FailResponse\x12N\n" +
	"\vExtendLease\x12\x1e.jobwire.v1.ExtendLeaseRequest\x1a\x1f.jobwire.v1.ExtendLeaseResponse\x12W\n" +
	"\x0eReportProgress\x12!.jobwire.v1.ReportProgressRequest\x1a\".jobwire.v1.ReportProgressResponse\x12?\n" +
	"\x06GetJob\x12\x19.jobwire.v1.GetJobRequest\x1a\x1a.jobwire.v1.GetJobResponse\x12?\n" +
	"\x06Cancel\x12\x19.jobwire.v1.CancelRequest\x1a\x1a.jobwire.v1.CancelResponse\x12D\n" +
	"\aWaitJob\x12\x1a.jobwire.v1.WaitJobRequest\x1a\x1b.jobwire.v1.WaitJobResponse0\x01\x12J\n" +
	"\tSubscribe\x12\x1c.jobwire.v1.SubscribeRequest\x1a\x1d.jobwire.v1.SubscribeResponse0\x01B\x87\x01\n" +
	"\x0edev.jobwire.v1B\vBrokerProtoP\x01Z8github.com/jobwire/jobwire/client/go/jobwirepb;jobwirepb\xa2\x02\x03JWX\xaa\x02\n" +
	"Jobwire.V1\xca\x02\n" +
	"Jobwire\\V1\xea\x02\vJobwire::V1b\x06proto3"

var (
	file_jobwire_v1_broker_proto_rawDescOnce sync.Once
	file_jobwire_v1_broker_proto_rawDescData []byte
)

func file_jobwire_v1_broker_proto_rawDescGZIP() []byte {
	file_jobwire_v1_broker_proto_rawDescOnce.Do(func() {
		file_jobwire_v1_broker_proto_rawDescData = protoimpl.X.CompressGZIP(unsafe.Slice(unsafe.StringData(file_jobwire_v1_broker_proto_rawDesc), len(file_jobwire_v1_broker_proto_rawDesc)))
	})
	return file_jobwire_v1_broker_proto_rawDescData
}

var file_jobwire_v1_broker_proto_enumTypes = make([]protoimpl.EnumInfo, 4)
var file_jobwire_v1_broker_proto_msgTypes = make([]protoimpl.MessageInfo, 38)
var file_jobwire_v1_broker_proto_goTypes = []any{
	(JobState)(0),                  // 0: jobwire.v1.JobState
	(EventKind)(0),                 // 1: jobwire.v1.EventKind
	(StopRun_Reason)(0),            // 2: jobwire.v1.StopRun.Reason
	(FailResponse_Outcome)(0),      // 3: jobwire.v1.FailResponse.Outcome
	(*Job)(nil),                    // 4: jobwire.v1.Job
	(*JobError)(nil),               // 5: jobwire.v1.JobError
	(*EnqueueRequest)(nil),         // 6: jobwire.v1.EnqueueRequest
	(*EnqueueResponse)(nil),        // 7: jobwire.v1.EnqueueResponse
	(*EnqueueBatchRequest)(nil),    // 8: jobwire.v1.EnqueueBatchRequest
	(*EnqueueResult)(nil),          // 9: jobwire.v1.EnqueueResult
	(*EnqueueBatchResponse)(nil),   // 10: jobwire.v1.EnqueueBatchResponse
	(*ClaimRequest)(nil),           // 11: jobwire.v1.ClaimRequest
	(*ClaimResponse)(nil),          // 12: jobwire.v1.ClaimResponse
	(*WorkResponse)(nil),           // 13: jobwire.v1.WorkResponse
	(*WorkRequest)(nil),            // 14: jobwire.v1.WorkRequest
	(*WorkAcks)(nil),               // 15: jobwire.v1.WorkAcks
	(*WorkAcksAnswer)(nil),         // 16: jobwire.v1.WorkAcksAnswer
	(*StopRun)(nil),                // 17: jobwire.v1.StopRun
	(*ClaimedJob)(nil),             // 18: jobwire.v1.ClaimedJob
	(*AckRequest)(nil),             // 19: jobwire.v1.AckRequest
	(*AckResponse)(nil),            // 20: jobwire.v1.AckResponse
	(*AckBatchRequest)(nil),        // 21: jobwire.v1.AckBatchRequest
	(*AckResult)(nil),              // 22: jobwire.v1.AckResult
	(*AckBatchResponse)(nil),       // 23: jobwire.v1.AckBatchResponse
	(*FailRequest)(nil),            // 24: jobwire.v1.FailRequest
	(*FailResponse)(nil),           // 25: jobwire.v1.FailResponse
	(*ExtendLeaseRequest)(nil),     // 26: jobwire.v1.ExtendLeaseRequest
	(*ExtendLeaseResponse)(nil),    // 27: jobwire.v1.ExtendLeaseResponse
	(*ReportProgressRequest)(nil),  // 28: jobwire.v1.ReportProgressRequest
	(*ReportProgressResponse)(nil), // 29: jobwire.v1.ReportProgressResponse
	(*GetJobRequest)(nil),          // 30: jobwire.v1.GetJobRequest
	(*GetJobResponse)(nil),         // 31: jobwire.v1.GetJobResponse
	(*CancelRequest)(nil),          // 32: jobwire.v1.CancelRequest
	(*CancelResponse)(nil),         // 33: jobwire.v1.CancelResponse
	(*WaitJobRequest)(nil),         // 34: jobwire.v1.WaitJobRequest
	(*WaitJobResponse)(nil),        // 35: jobwire.v1.WaitJobResponse
	(*QueueEvent)(nil),             // 36: jobwire.v1.QueueEvent
	(*SubscribeRequest)(nil),       // 37: jobwire.v1.SubscribeRequest
	(*SubscribeResponse)(nil),      // 38: jobwire.v1.SubscribeResponse
	nil,                            // 39: jobwire.v1.Job.HeadersEntry
	nil,                            // 40: jobwire.v1.Job.DependencyResultsEntry
	nil,                            // 41: jobwire.v1.EnqueueRequest.HeadersEntry
}
var file_jobwire_v1_broker_proto_depIdxs = []int32{
	0,  // 0: jobwire.v1.Job.state:type_name -> jobwire.v1.JobState
	39, // 1: jobwire.v1.Job.headers:type_name -> jobwire.v1.Job.HeadersEntry
	5,  // 2: jobwire.v1.Job.errors:type_name -> jobwire.v1.JobError
	40, // 3: jobwire.v1.Job.dependency_results:type_name -> jobwire.v1.Job.DependencyResultsEntry
	41, // 4: jobwire.v1.EnqueueRequest.headers:type_name -> jobwire.v1.EnqueueRequest.HeadersEntry
	6,  // 5: jobwire.v1.EnqueueBatchRequest.jobs:type_name -> jobwire.v1.EnqueueRequest
	9,  // 6: jobwire.v1.EnqueueBatchResponse.results:type_name -> jobwire.v1.EnqueueResult
	18, // 7: jobwire.v1.ClaimResponse.jobs:type_name -> jobwire.v1.ClaimedJob
	17, // 8: jobwire.v1.ClaimResponse.stops:type_name -> jobwire.v1.StopRun
	18, // 9: jobwire.v1.WorkResponse.jobs:type_name -> jobwire.v1.ClaimedJob
	17, // 10: jobwire.v1.WorkResponse.stops:type_name -> jobwire.v1.StopRun
	16, // 11: jobwire.v1.WorkResponse.ack_answers:type_name -> jobwire.v1.WorkAcksAnswer
	11, // 12: jobwire.v1.WorkRequest.claim:type_name -> jobwire.v1.ClaimRequest
	15, // 13: jobwire.v1.WorkRequest.acks:type_name -> jobwire.v1.WorkAcks
	19, // 14: jobwire.v1.WorkAcks.acks:type_name -> jobwire.v1.AckRequest
	22, // 15: jobwire.v1.WorkAcksAnswer.results:type_name -> jobwire.v1.AckResult
	2,  // 16: jobwire.v1.StopRun.reason:type_name -> jobwire.v1.StopRun.Reason
	4,  // 17: jobwire.v1.ClaimedJob.job:type_name -> jobwire.v1.Job
	19, // 18: jobwire.v1.AckBatchRequest.acks:type_name -> jobwire.v1.AckRequest
	22, // 19: jobwire.v1.AckBatchResponse.results:type_name -> jobwire.v1.AckResult
	3,  // 20: jobwire.v1.FailResponse.outcome:type_name -> jobwire.v1.FailResponse.Outcome
	4,  // 21: jobwire.v1.GetJobResponse.job:type_name -> jobwire.v1.Job
	4,  // 22: jobwire.v1.WaitJobResponse.job:type_name -> jobwire.v1.Job
	1,  // 23: jobwire.v1.QueueEvent.kind:type_name -> jobwire.v1.EventKind
	1,  // 24: jobwire.v1.SubscribeRequest.kinds:type_name -> jobwire.v1.EventKind
	36, // 25: jobwire.v1.SubscribeResponse.events:type_name -> jobwire.v1.QueueEvent
	6,  // 26: jobwire.v1.BrokerService.Enqueue:input_type -> jobwire.v1.EnqueueRequest
	8,  // 27: jobwire.v1.BrokerService.EnqueueBatch:input_type -> jobwire.v1.EnqueueBatchRequest
	11, // 28: jobwire.v1.BrokerService.Claim:input_type -> jobwire.v1.ClaimRequest
	14, // 29: jobwire.v1.BrokerService.Work:input_type -> jobwire.v1.WorkRequest
	19, // 30: jobwire.v1.BrokerService.Ack:input_type -> jobwire.v1.AckRequest
	21, // 31: jobwire.v1.BrokerService.AckBatch:input_type -> jobwire.v1.AckBatchRequest
	24, // 32: jobwire.v1.BrokerService.Fail:input_type -> jobwire.v1.FailRequest
	26, // 33: jobwire.v1.BrokerService.ExtendLease:input_type -> jobwire.v1.ExtendLeaseRequest
	28, // 34: jobwire.v1.BrokerService.ReportProgress:input_type -> jobwire.v1.ReportProgressRequest
	30, // 35: jobwire.v1.BrokerService.GetJob:input_type -> jobwire.v1.GetJobRequest
	32, // 36: jobwire.v1.BrokerService.Cancel:input_type -> jobwire.v1.CancelRequest
	34, // 37: jobwire.v1.BrokerService.WaitJob:input_type -> jobwire.v1.WaitJobRequest
	37, // 38: jobwire.v1.BrokerService.Subscribe:input_type -> jobwire.v1.SubscribeRequest
	7,  // 39: jobwire.v1.BrokerService.Enqueue:output_type -> jobwire.v1.EnqueueResponse
	10, // 40: jobwire.v1.BrokerService.EnqueueBatch:output_type -> jobwire.v1.EnqueueBatchResponse
	12, // 41: jobwire.v1.BrokerService.Claim:output_type -> jobwire.v1.ClaimResponse
	13, // 42: jobwire.v1.BrokerService.Work:output_type -> jobwire.v1.WorkResponse
	20, // 43: jobwire.v1.BrokerService.Ack:output_type -> jobwire.v1.AckResponse
	23, // 44: jobwire.v1.BrokerService.AckBatch:output_type -> jobwire.v1.AckBatchResponse
	25, // 45: jobwire.v1.BrokerService.Fail:output_type -> jobwire.v1.FailResponse
	27, // 46: jobwire.v1.BrokerService.ExtendLease:output_type -> jobwire.v1.ExtendLeaseResponse
	29, // 47: jobwire.v1.BrokerService.ReportProgress:output_type -> jobwire.v1.ReportProgressResponse
	31, // 48: jobwire.v1.BrokerService.GetJob:output_type -> jobwire.v1.GetJobResponse
	33, // 49: jobwire.v1.BrokerService.Cancel:output_type -> jobwire.v1.CancelResponse
	35, // 50: jobwire.v1.BrokerService.WaitJob:output_type -> jobwire.v1.WaitJobResponse
	38, // 51: jobwire.v1.BrokerService.Subscribe:output_type -> jobwire.v1.SubscribeResponse
	39, // [39:52] is the sub-list for method output_type
	26, // [26:39] is the sub-list for method input_type
	26, // [26:26] is the sub-list for extension type_name
	26, // [26:26] is the sub-list for extension extendee
	0,  // [0:26] is the sub-list for field type_name
}

func init() { file_jobwire_v1_broker_proto_init() }
func file_jobwire_v1_broker_proto_init() {
	if File_jobwire_v1_broker_proto != nil {
		return
	}
	file_jobwire_v1_broker_proto_msgTypes[0].OneofWrappers = []any{}
	file_jobwire_v1_broker_proto_msgTypes[2].OneofWrappers = []any{}
	file_jobwire_v1_broker_proto_msgTypes[10].OneofWrappers = []any{
		(*WorkRequest_Claim)(nil),
		(*WorkRequest_Acks)(nil),
	}
	file_jobwire_v1_broker_proto_msgTypes[24].OneofWrappers = []any{}
	file_jobwire_v1_broker_proto_msgTypes[32].OneofWrappers = []any{}
	type x struct{}
	out := protoimpl.TypeBuilder{
		File: protoimpl.DescBuilder{
			GoPackagePath: reflect.TypeOf(x{}).PkgPath(),
			RawDescriptor: unsafe.Slice(unsafe.StringData(file_jobwire_v1_broker_proto_rawDesc), len(file_jobwire_v1_broker_proto_rawDesc)),
			NumEnums:      4,
			NumMessages:   38,
			NumExtensions: 0,
			NumServices:   1,
		},
		GoTypes:           file_jobwire_v1_broker_proto_goTypes,
		DependencyIndexes: file_jobwire_v1_broker_proto_depIdxs,
		EnumInfos:         file_jobwire_v1_broker_proto_enumTypes,
		MessageInfos:      file_jobwire_v1_broker_proto_msgTypes,
	}.Build()
	File_jobwire_v1_broker_proto = out.File
	file_jobwire_v1_broker_proto_goTypes = nil
	file_jobwire_v1_broker_proto_depIdxs = nil
}
