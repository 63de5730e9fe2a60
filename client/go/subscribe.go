package jobwire

// Client.Subscribe: the events of one or more queues over a Subscribe
// stream, subscribing again by itself after UNAVAILABLE, CANCELLED the client
// did not cause, or a broker that cut the stream off (SUBSCRIBER_TOO_SLOW,
// TOO_MANY_SUBSCRIPTIONS), with an EventEventsMissed event for the gap
// (docs/clients.md, Producer).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// EventKind is what happened to a job (broker.proto, EventKind), or
// EventEventsMissed, made by the client. A kind this client does not know
// (sent by a newer broker) is "unknown".
type EventKind string

// The event kinds. EventEventsMissed is never requested: it is delivered
// whenever events may have been lost.
const (
	// EventEnqueued: stored by Enqueue / EnqueueBatch (a duplicate is not an event).
	EventEnqueued EventKind = "enqueued"
	// EventActive: claimed by a worker (Attempts counts this run).
	EventActive EventKind = "active"
	// EventCompleted: acked (with WithEventDetails, Result is the result).
	EventCompleted EventKind = "completed"
	// EventRetry: failed and scheduled to run again (Error: the failure).
	EventRetry EventKind = "retry"
	// EventDead: failed for good (Error: the failure).
	EventDead EventKind = "dead"
	// EventCancelled: DEAD with error "cancelled": cancelled while PENDING,
	// or a run asked to stop (EventCancelRequested) that failed or whose
	// lease ran out.
	EventCancelled EventKind = "cancelled"
	// EventLeaseExpired: its lease ended with no Ack or Fail; an EventRetry
	// or EventDead of the same job follows.
	EventLeaseExpired EventKind = "lease_expired"
	// EventReleased: given back unrun, the attempt undone.
	EventReleased EventKind = "released"
	// EventRedriven: moved from DEAD back to PENDING (RetryDead).
	EventRedriven EventKind = "redriven"
	// EventDeleted: deleted (DeleteJob; DeleteQueue: one event, JobID "").
	EventDeleted EventKind = "deleted"
	// EventProgress: its run reported progress (ReportProgress);
	// ProgressPercent is the percentage (nil when the report had none), and
	// with WithEventDetails ProgressData is the job's progress data.
	EventProgress EventKind = "progress"
	// EventCancelRequested: Cancel asked its run to stop (the job was
	// ACTIVE); an EventCancelled follows when the run stops, or an
	// EventCompleted when its Ack came first.
	EventCancelRequested EventKind = "cancel_requested"
	// EventTimedOut: its run passed its deadline (WithRunTimeout); an
	// EventRetry or EventDead of the same job follows, with error "timeout".
	EventTimedOut EventKind = "timed_out"
	// EventEventsMissed: events may have been lost just before this one (the
	// stream was subscribed again, or the broker lost its Redis
	// subscription for a while); Queue and JobID are "". Read the jobs with
	// GetJob if they matter.
	EventEventsMissed EventKind = "events_missed"
)

// eventKinds maps the requestable kinds to the proto's.
var eventKinds = map[EventKind]jobwirepb.EventKind{
	EventEnqueued:        jobwirepb.EventKind_EVENT_KIND_ENQUEUED,
	EventActive:          jobwirepb.EventKind_EVENT_KIND_ACTIVE,
	EventCompleted:       jobwirepb.EventKind_EVENT_KIND_COMPLETED,
	EventRetry:           jobwirepb.EventKind_EVENT_KIND_RETRY,
	EventDead:            jobwirepb.EventKind_EVENT_KIND_DEAD,
	EventCancelled:       jobwirepb.EventKind_EVENT_KIND_CANCELLED,
	EventLeaseExpired:    jobwirepb.EventKind_EVENT_KIND_LEASE_EXPIRED,
	EventReleased:        jobwirepb.EventKind_EVENT_KIND_RELEASED,
	EventRedriven:        jobwirepb.EventKind_EVENT_KIND_REDRIVEN,
	EventDeleted:         jobwirepb.EventKind_EVENT_KIND_DELETED,
	EventProgress:        jobwirepb.EventKind_EVENT_KIND_PROGRESS,
	EventCancelRequested: jobwirepb.EventKind_EVENT_KIND_CANCEL_REQUESTED,
	EventTimedOut:        jobwirepb.EventKind_EVENT_KIND_TIMED_OUT,
}

// eventKindNames is eventKinds reversed.
var eventKindNames = func() map[jobwirepb.EventKind]EventKind {
	m := make(map[jobwirepb.EventKind]EventKind, len(eventKinds))
	for k, v := range eventKinds {
		m[v] = k
	}
	return m
}()

// QueueEvent is one event of a Subscription.
type QueueEvent struct {
	Kind EventKind
	// Queue is the queue as Subscribe named it ("" for EventEventsMissed).
	Queue string
	// JobID is "" for EventEventsMissed and the queue-wide EventDeleted of
	// DeleteQueue.
	JobID string
	Type  string
	// Attempts is the job's attempts after the event (runs started so far).
	Attempts int32
	// AtMs is when it happened: Redis time, ms since the Unix epoch (0 for
	// EventEventsMissed).
	AtMs int64
	// Result (EventCompleted) and Error (EventRetry, EventDead) are set only
	// with WithEventDetails, as read from the job just after the event
	// (empty when the job was gone by then).
	Result []byte
	Error  string
	// ProgressPercent is the percentage an EventProgress reported (nil when
	// it had none, and for the other kinds).
	ProgressPercent *int32
	// ProgressData is the job's progress data just after an EventProgress,
	// set only with WithEventDetails.
	ProgressData []byte
}

// At is AtMs as a time.Time (the zero time when AtMs is 0).
func (e QueueEvent) At() time.Time {
	if e.AtMs == 0 {
		return time.Time{}
	}
	return time.UnixMilli(e.AtMs)
}

func eventFromProto(ev *jobwirepb.QueueEvent) QueueEvent {
	kind, ok := eventKindNames[ev.GetKind()]
	if !ok {
		kind = "unknown"
	}
	out := QueueEvent{
		Kind: kind, Queue: ev.GetQueue(), JobID: ev.GetJobId(), Type: ev.GetType(),
		Attempts: ev.GetAttempts(), AtMs: ev.GetAtMs(), Result: ev.GetResult(), Error: ev.GetError(),
		ProgressData: ev.GetProgressData(),
	}
	if ev.ProgressPercent != nil {
		out.ProgressPercent = Percent(ev.GetProgressPercent())
	}
	return out
}

// SubscribeOption configures one Subscribe.
type SubscribeOption func(*subscribeConfig)

type subscribeConfig struct {
	kinds   []EventKind
	details bool
}

// WithEventKinds delivers only events of these kinds (default: all).
// EventEventsMissed is delivered anyway and may not be named; a kind not
// among the constants makes Subscribe fail with INVALID_ARGUMENT, sending
// nothing. Repeated calls add kinds.
func WithEventKinds(kinds ...EventKind) SubscribeOption {
	return func(c *subscribeConfig) { c.kinds = append(c.kinds, kinds...) }
}

// WithEventDetails fills QueueEvent.Result (EventCompleted), Error
// (EventRetry, EventDead) and ProgressData (EventProgress): one read of the
// job per such event on the broker.
func WithEventDetails() SubscribeOption {
	return func(c *subscribeConfig) { c.details = true }
}

// Subscription is the stream of events of Client.Subscribe. Events is read
// by one goroutine at a time; Err and Close are safe for concurrent use.
type Subscription struct {
	events chan QueueEvent
	cancel context.CancelFunc
	done   chan struct{} // closed after events

	mu  sync.Mutex
	err error // set before events is closed
}

// Events is the channel of events, unbuffered: the stream is read only as
// fast as events are received from it (a reader too slow for the broker's
// --subscribe_buffer_events is cut off by the broker and subscribed again,
// with an EventEventsMissed). It is closed when the subscription ends: Close,
// ctx ending, or an error (Err).
func (s *Subscription) Events() <-chan QueueEvent { return s.events }

// Err is why the subscription ended, once Events is closed: nil after Close
// or when ctx ended, else the *Error that ended it (INVALID_ARGUMENT,
// PERMISSION_DENIED, ... on a subscription made again). nil while it runs.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the subscription (its call is cancelled) and returns once
// Events is closed. Events not yet received are dropped. Safe to call more
// than once, from any goroutine.
func (s *Subscription) Close() {
	s.cancel()
	<-s.done
}

// Subscribe follows the events of queues (1..100 names, no repeats) and
// returns once the broker confirmed the subscription (its first message):
// every event that happens after Subscribe returns is delivered, events of
// one queue partition in the order they happened. The broker has the
// client's WithTimeout (default 10 s) to confirm, else DEADLINE_EXCEEDED.
// The subscription lives until Close or ctx ends.
//
// Errors of Subscribe: INVALID_ARGUMENT (queues; a kind of WithEventKinds
// unknown here, checked before calling, with Reason ""), UNAUTHENTICATED,
// PERMISSION_DENIED (each queue needs read access), RESOURCE_EXHAUSTED /
// ErrTooManySubscriptions, UNAVAILABLE (broker unreachable or draining),
// CANCELLED / DEADLINE_EXCEEDED when ctx ends first; all *Error.
//
// Once it runs, a stream ending with UNAVAILABLE (a broker restarting or
// draining), CANCELLED the client did not cause (gRPC ends a call that
// reached a broker as it stopped with CANCELLED), ErrSubscriberTooSlow or
// ErrTooManySubscriptions is subscribed again with the Claim stream's
// reconnect backoff (100 ms doubling to 5 s, full jitter; the broker's
// RetryDelay when larger), as long as it takes; once subscribed again, one
// EventEventsMissed comes first, since the gap's events are lost. A broker
// message telling of lost events gives one too. Any other error ends the
// subscription: Events is closed and Err returns it.
func (c *Client) Subscribe(ctx context.Context, queues []string, opts ...SubscribeOption) (*Subscription, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	var cfg subscribeConfig
	for _, o := range opts {
		o(&cfg)
	}
	req, err := subscribeRequest(queues, cfg)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	sb := &subscriber{stub: c.stub, req: req, confirmWithin: c.timeout, bo: reconnectBackoff()}
	if err := sb.open(sctx); err != nil {
		cancel()
		if ctx.Err() != nil {
			return nil, toError(ctx.Err())
		}
		return nil, err
	}
	s := &Subscription{events: make(chan QueueEvent), cancel: cancel, done: make(chan struct{})}
	go s.run(sctx, sb)
	return s, nil
}

// subscribeRequest builds the request, or an INVALID_ARGUMENT *Error for a
// kind that is not requestable.
func subscribeRequest(queues []string, cfg subscribeConfig) (*jobwirepb.SubscribeRequest, error) {
	req := &jobwirepb.SubscribeRequest{Queues: queues, IncludeDetails: cfg.details}
	for _, k := range cfg.kinds {
		pk, ok := eventKinds[k]
		if !ok {
			return nil, newError(codes.InvalidArgument, "",
				fmt.Sprintf("unknown event kind %q (requestable: %s)", string(k), requestableKinds()))
		}
		req.Kinds = append(req.Kinds, pk)
	}
	return req, nil
}

// requestableKinds is the kinds WithEventKinds takes, in the proto's order,
// comma-separated.
func requestableKinds() string {
	pks := slices.Sorted(maps.Keys(eventKindNames))
	names := make([]string, len(pks))
	for i, pk := range pks {
		names[i] = string(eventKindNames[pk])
	}
	return strings.Join(names, ", ")
}

// run feeds Events until the subscription ends, then records why and
// closes Events.
func (s *Subscription) run(ctx context.Context, sb *subscriber) {
	err := sb.feed(ctx, s.events)
	sb.endCall()
	s.cancel()
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	close(s.events)
	close(s.done)
}

// errNotConfirmed is the cause of a call cancelled because its first
// message did not come in time.
var errNotConfirmed = errors.New("jobwire: Subscribe not confirmed in time")

// subscriber is the state of one Subscription: its current call and what
// the next messages mean. Used by one goroutine at a time.
type subscriber struct {
	stub          jobwirepb.BrokerServiceClient
	req           *jobwirepb.SubscribeRequest
	confirmWithin time.Duration
	bo            backoffState

	stream  grpc.ServerStreamingClient[jobwirepb.SubscribeResponse]
	first   *jobwirepb.SubscribeResponse // the current call's first message, not yet taken
	endCall context.CancelFunc           // cancels the current call
	missed  bool                         // a stream ended: the next confirmation brings EventEventsMissed
}

// open makes one Subscribe call and waits for its first message (at most
// confirmWithin), which it keeps in s.first. The error is an *Error:
// the call's, or DEADLINE_EXCEEDED (Reason "") when the broker did not
// confirm in time.
func (s *subscriber) open(ctx context.Context) error {
	cctx, cancel := context.WithCancelCause(ctx)
	s.endCall = func() { cancel(context.Canceled) }
	late := time.AfterFunc(s.confirmWithin, func() { cancel(errNotConfirmed) })
	stream, err := s.stub.Subscribe(cctx, s.req)
	var first *jobwirepb.SubscribeResponse
	if err == nil {
		first, err = stream.Recv()
	}
	inTime := late.Stop()
	if err == nil && inTime {
		s.stream, s.first = stream, first
		return nil
	}
	s.endCall()
	// Not confirmed in time: the message came as the timer cancelled the
	// call, or the call ended with that cancellation.
	if err == nil || (status.Code(err) == codes.Canceled && errors.Is(context.Cause(cctx), errNotConfirmed)) {
		return newError(codes.DeadlineExceeded, "",
			fmt.Sprintf("Subscribe not confirmed by the broker within %s", s.confirmWithin))
	}
	return s.callError(err)
}

// callError is err of a Subscribe call as an *Error; a stream that ended
// OK (which the broker never does) is INTERNAL.
func (s *subscriber) callError(err error) error {
	if errors.Is(err, io.EOF) {
		return newError(codes.Internal, "", "Subscribe stream ended without an error")
	}
	return toError(err)
}

// feed sends the events of the current call, and of those made after it,
// to out until ctx ends (nil) or an error ends the subscription (returned).
func (s *subscriber) feed(ctx context.Context, out chan<- QueueEvent) error {
	for {
		msg := s.first
		s.first = nil
		var err error
		if msg == nil {
			msg, err = s.stream.Recv()
		}
		if err == nil {
			for _, ev := range s.take(msg) {
				select {
				case out <- ev:
				case <-ctx.Done():
					return nil
				}
			}
			continue
		}
		s.endCall()
		if ctx.Err() != nil {
			return nil
		}
		if err := s.resubscribe(ctx, s.callError(err)); err != nil {
			return err
		}
	}
}

// resubscribe subscribes again after the current call ended with err,
// waiting the backoff before each call, until a call is confirmed (nil), ctx
// ends (nil) or an error is not one to subscribe again after (returned).
func (s *subscriber) resubscribe(ctx context.Context, err error) error {
	s.missed = true
	for {
		delay, ok := s.retryDelay(err)
		if !ok {
			return err
		}
		if !sleepCtx(ctx, delay) {
			return nil
		}
		err = s.open(ctx)
		if err == nil || ctx.Err() != nil {
			return nil
		}
	}
}

// retryDelay is the wait before subscribing again after err, and whether to:
// after UNAVAILABLE or CANCELLED (brokerWentAway), RESOURCE_EXHAUSTED with
// SUBSCRIBER_TOO_SLOW or TOO_MANY_SUBSCRIPTIONS, or DEADLINE_EXCEEDED when a
// call was not confirmed in time. The reconnect backoff, or the broker's
// RetryDelay when larger. Only called while ctx has not ended (feed and
// resubscribe check it first), and open turns the one call the client
// cancels on purpose (not confirmed in time) into DEADLINE_EXCEEDED, so a
// CANCELLED here is never the client's own.
func (s *subscriber) retryDelay(err error) (time.Duration, bool) {
	var e *Error
	if !errors.As(err, &e) {
		return 0, false
	}
	switch {
	case brokerWentAway(e):
	case e.Code == codes.ResourceExhausted && (e.Reason == "SUBSCRIBER_TOO_SLOW" || e.Reason == "TOO_MANY_SUBSCRIPTIONS"):
	case e.Code == codes.DeadlineExceeded && e.Reason == "":
	default:
		return 0, false
	}
	return max(s.bo.next(), e.RetryDelay), true
}

// take is the events a message carries: one EventEventsMissed first when it
// says events were lost, or when it confirms a subscription made again.
func (s *subscriber) take(msg *jobwirepb.SubscribeResponse) []QueueEvent {
	events := make([]QueueEvent, 0, len(msg.GetEvents())+1)
	if msg.GetEventsMissed() || (msg.GetSubscribed() && s.missed) {
		events = append(events, QueueEvent{Kind: EventEventsMissed})
	}
	if msg.GetSubscribed() {
		s.missed = false
		s.bo.reset()
	}
	for _, ev := range msg.GetEvents() {
		events = append(events, eventFromProto(ev))
	}
	return events
}
