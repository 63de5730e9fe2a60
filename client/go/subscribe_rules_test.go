package jobwire

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// The rules of a Subscription on their own: which errors it subscribes
// again after (and how long it waits), and where EventEventsMissed goes.

func TestSubscribeRetriesOnlyTheErrorsOfAGap(t *testing.T) {
	for _, tc := range []struct {
		err   *Error
		retry bool
		least time.Duration // the wait is at least this
	}{
		{newError(codes.Unavailable, "", "connection refused"), true, 0},
		{newError(codes.Unavailable, "BROKER_SHUTTING_DOWN", "draining"), true, 0},
		// gRPC core's end of a call that reached a stopping broker
		// (grpc/grpc#41785); the client's own CANCELLED never gets here.
		{newError(codes.Canceled, "", "CANCELLED"), true, 0},
		{newError(codes.ResourceExhausted, "SUBSCRIBER_TOO_SLOW", "too slow"), true, 0},
		{&Error{Code: codes.ResourceExhausted, Reason: "TOO_MANY_SUBSCRIPTIONS", RetryDelay: 7 * time.Second}, true, 7 * time.Second},
		{newError(codes.DeadlineExceeded, "", "not confirmed in time"), true, 0},
		{newError(codes.ResourceExhausted, "REDIS_OUT_OF_MEMORY", "oom"), false, 0},
		{newError(codes.InvalidArgument, "INVALID_FIELD", "queues"), false, 0},
		{newError(codes.PermissionDenied, "TOKEN_NOT_PERMITTED", "no"), false, 0},
		{newError(codes.Internal, "", "stream ended without an error"), false, 0},
	} {
		t.Run(fmt.Sprintf("%s_%s", CodeName(tc.err.Code), tc.err.Reason), func(t *testing.T) {
			s := &subscriber{bo: reconnectBackoff()}
			for i := 0; i < 8; i++ {
				d, retry := s.retryDelay(tc.err)
				if retry != tc.retry {
					t.Fatalf("retry %v, want %v", retry, tc.retry)
				}
				if retry && (d < tc.least || d > max(tc.least, 5*time.Second)) {
					t.Fatalf("wait %v, want within [%v, max(%v, 5s)]", d, tc.least, tc.least)
				}
			}
		})
	}
}

func TestSubscribeTellsOfMissedEventsOnce(t *testing.T) {
	ev := &jobwirepb.QueueEvent{Kind: jobwirepb.EventKind_EVENT_KIND_ENQUEUED, Queue: "q", JobId: "7", AtMs: 1}
	kinds := func(events []QueueEvent) []EventKind {
		out := []EventKind{}
		for _, e := range events {
			out = append(out, e.Kind)
		}
		return out
	}
	s := &subscriber{bo: reconnectBackoff()}
	for _, step := range []struct {
		name   string
		gap    bool // a stream ended before this message
		msg    *jobwirepb.SubscribeResponse
		events []EventKind
	}{
		{"first confirmation", false, &jobwirepb.SubscribeResponse{Subscribed: true}, []EventKind{}},
		{"events", false, &jobwirepb.SubscribeResponse{Events: []*jobwirepb.QueueEvent{ev, ev}}, []EventKind{EventEnqueued, EventEnqueued}},
		{"broker lost events", false, &jobwirepb.SubscribeResponse{EventsMissed: true, Events: []*jobwirepb.QueueEvent{ev}}, []EventKind{EventEventsMissed, EventEnqueued}},
		{"confirmation after a gap", true, &jobwirepb.SubscribeResponse{Subscribed: true}, []EventKind{EventEventsMissed}},
		{"both at once", true, &jobwirepb.SubscribeResponse{Subscribed: true, EventsMissed: true}, []EventKind{EventEventsMissed}},
		{"events after", false, &jobwirepb.SubscribeResponse{Events: []*jobwirepb.QueueEvent{ev}}, []EventKind{EventEnqueued}},
		{"a kind unknown here", false, &jobwirepb.SubscribeResponse{Events: []*jobwirepb.QueueEvent{{Kind: 99}}}, []EventKind{"unknown"}},
	} {
		if step.gap {
			s.missed = true
		}
		if got := kinds(s.take(step.msg)); fmt.Sprint(got) != fmt.Sprint(step.events) {
			t.Errorf("%s: events %v, want %v", step.name, got, step.events)
		}
	}
	got := eventFromProto(&jobwirepb.QueueEvent{
		Kind: jobwirepb.EventKind_EVENT_KIND_DEAD, Queue: "q", JobId: "7", Type: "t", Attempts: 3, AtMs: 1700000000123,
		Error: "error: no", Result: []byte("r"),
	})
	want := QueueEvent{Kind: EventDead, Queue: "q", JobID: "7", Type: "t", Attempts: 3, AtMs: 1700000000123, Result: []byte("r"), Error: "error: no"}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) || !got.At().Equal(time.UnixMilli(1700000000123)) {
		t.Errorf("eventFromProto = %+v, want %+v", got, want)
	}
}
