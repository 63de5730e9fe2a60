package jobwire_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	jobwire "github.com/jobwire/jobwire/client/go"
	"github.com/jobwire/jobwire/client/go/internal/testbroker"
)

// The broker's error reasons (broker.proto, "Error details") as the Go client
// exposes them: Error.Reason / Metadata / Field and the sentinels of
// errors.Is, against the real broker; then (*Error).Is on its own.

// sentinels is every reason sentinel, by reason.
var sentinels = map[string]error{
	"INVALID_FIELD":          jobwire.ErrInvalidField,
	"JOB_NOT_FOUND":          jobwire.ErrJobNotFound,
	"QUEUE_NOT_FOUND":        jobwire.ErrQueueNotFound,
	"DEPENDENCY_NOT_FOUND":   jobwire.ErrDependencyNotFound,
	"LEASE_STALE":            jobwire.ErrLeaseStale,
	"JOB_STATE":              jobwire.ErrJobState,
	"JOB_CANCEL_REQUESTED":   jobwire.ErrJobCancelled,
	"RUN_TIMED_OUT":          jobwire.ErrRunTimedOut,
	"QUEUE_HAS_ACTIVE_JOBS":  jobwire.ErrQueueHasActiveJobs,
	"PARTITIONS_DECREASE":    jobwire.ErrPartitionsDecrease,
	"QUEUE_EXISTS":           jobwire.ErrQueueExists,
	"TOKEN_MISSING":          jobwire.ErrTokenMissing,
	"TOKEN_INVALID":          jobwire.ErrTokenInvalid,
	"TOKEN_NOT_PERMITTED":    jobwire.ErrTokenNotPermitted,
	"REDIS_OUT_OF_MEMORY":    jobwire.ErrRedisOutOfMemory,
	"TOO_MANY_CLAIM_STREAMS": jobwire.ErrTooManyClaimStreams,
	"TOO_MANY_WAITS":         jobwire.ErrTooManyWaits,
	"WAIT_TIMEOUT":           jobwire.ErrWaitTimeout,
	"TOO_MANY_SUBSCRIPTIONS": jobwire.ErrTooManySubscriptions,
	"SUBSCRIBER_TOO_SLOW":    jobwire.ErrSubscriberTooSlow,
	"REDIS_UNAVAILABLE":      jobwire.ErrRedisUnavailable,
	"BROKER_SHUTTING_DOWN":   jobwire.ErrBrokerShuttingDown,
	"CLAIM_STREAM_MAX_AGE":   jobwire.ErrClaimStreamMaxAge,
	"JOB_RECORD_CORRUPT":     jobwire.ErrJobRecordCorrupt,
}

// checkOnlySentinel fails unless err matches the sentinel of reason and no
// other.
func checkOnlySentinel(t *testing.T, err error, reason string) {
	t.Helper()
	for r, s := range sentinels {
		if got, want := errors.Is(err, s), r == reason; got != want {
			t.Errorf("errors.Is(%v, %v) = %v, want %v", err, s, got, want)
		}
	}
}

// claimOne enqueues a job in q and claims it through the raw Claim stream
// (the lease, 60 s, stays after the stream ends); it returns the job id and
// its lease token.
func claimOne(t *testing.T, c *jobwire.Client, q string) (id, token string) {
	t.Helper()
	id = mustEnqueue(t, c, q, "t", nil)
	return id, claimAll(t, c, []string{q}, 1)[q+"/"+id]
}

func TestErrorReasonsFromTheBroker(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// call makes the refused call in a queue of its own and returns its
		// error (a per-item error for the batch calls).
		call     func(t *testing.T, q string) error
		code     codes.Code
		sentinel error
		reason   string
		field    string            // Error.Field
		metadata map[string]string // Error.Metadata (nil: none)
	}{
		{
			name: "GetJob of a missing job",
			call: func(t *testing.T, q string) error {
				_, err := c.GetJob(ctx, q, "424242")
				return err
			},
			code: codes.NotFound, sentinel: jobwire.ErrJobNotFound, reason: "JOB_NOT_FOUND",
		},
		{
			name: "Enqueue with priority 5000",
			call: func(t *testing.T, q string) error {
				_, err := c.Enqueue(ctx, q, "t", nil, jobwire.WithPriority(5000))
				return err
			},
			code: codes.InvalidArgument, sentinel: jobwire.ErrInvalidField, reason: "INVALID_FIELD",
			field: "priority", metadata: map[string]string{"field": "priority"},
		},
		{
			name: "AckBatch with a wrong lease token",
			call: func(t *testing.T, q string) error {
				id, token := claimOne(t, c, q)
				res, err := c.AckBatch(ctx, []jobwire.BatchAck{{Queue: q, JobID: id, LeaseToken: token + "x"}})
				if err != nil || len(res) != 1 {
					t.Fatalf("AckBatch: %+v %v", res, err)
				}
				return res[0].Err
			},
			code: codes.FailedPrecondition, sentinel: jobwire.ErrLeaseStale, reason: "LEASE_STALE",
		},
		{
			name: "EnqueueBatch with one invalid job",
			call: func(t *testing.T, q string) error {
				res, err := c.EnqueueBatch(ctx, q, []jobwire.BatchJob{
					{Type: "t"},
					{Type: "t", Options: []jobwire.EnqueueOption{jobwire.WithPriority(5000)}},
				})
				if err != nil || len(res) != 2 {
					t.Fatalf("EnqueueBatch: %+v %v", res, err)
				}
				if res[0].Err != nil || res[0].JobID == "" {
					t.Errorf("the valid job: %+v, want enqueued", res[0])
				}
				if res[1].JobID != "" {
					t.Errorf("the invalid job has id %q", res[1].JobID)
				}
				return res[1].Err
			},
			// A batch result has the reason alone: no Field or Metadata.
			code: codes.InvalidArgument, sentinel: jobwire.ErrInvalidField, reason: "INVALID_FIELD",
		},
		{
			name: "Cancel of a DEAD job",
			call: func(t *testing.T, q string) error {
				id := mustEnqueue(t, c, q, "t", nil, jobwire.WithDelay(time.Hour))
				if requested, err := c.Cancel(ctx, q, id); requested || err != nil {
					t.Fatalf("Cancel of the PENDING job = %v, %v", requested, err)
				}
				_, err := c.Cancel(ctx, q, id)
				return err
			},
			code: codes.FailedPrecondition, sentinel: jobwire.ErrJobState, reason: "JOB_STATE",
			metadata: map[string]string{"state": "dead"},
		},
		{
			name: "ReportProgress of a run Cancel asked to stop",
			call: func(t *testing.T, q string) error {
				id, token := claimOne(t, c, q)
				if requested, err := c.Cancel(ctx, q, id); !requested || err != nil {
					t.Fatalf("Cancel of the ACTIVE job = %v, %v; want true, nil", requested, err)
				}
				return c.ReportProgress(ctx, q, id, token, jobwire.Progress{Percent: jobwire.Percent(5)})
			},
			code: codes.FailedPrecondition, sentinel: jobwire.ErrJobCancelled, reason: "JOB_CANCEL_REQUESTED",
		},
		{
			name: "ReportProgress with percent 101",
			call: func(t *testing.T, q string) error {
				id, token := claimOne(t, c, q)
				return c.ReportProgress(ctx, q, id, token, jobwire.Progress{Percent: jobwire.Percent(101)})
			},
			code: codes.InvalidArgument, sentinel: jobwire.ErrInvalidField, reason: "INVALID_FIELD",
			field: "percent", metadata: map[string]string{"field": "percent"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.call(t, queueName(t))
			je := asError(t, err)
			if je.Code != tc.code || je.Reason != tc.reason {
				t.Errorf("error %v: code %s reason %q, want %s %q", err, jobwire.CodeName(je.Code), je.Reason, jobwire.CodeName(tc.code), tc.reason)
			}
			if !errors.Is(err, tc.sentinel) {
				t.Errorf("errors.Is(%v, %v) is false", err, tc.sentinel)
			}
			if !errors.Is(fmt.Errorf("wrapped: %w", err), tc.sentinel) {
				t.Errorf("errors.Is through fmt.Errorf(%%w) is false for %v", err)
			}
			checkOnlySentinel(t, err, tc.reason)
			if je.Field != tc.field {
				t.Errorf("Field = %q, want %q", je.Field, tc.field)
			}
			if !maps.Equal(je.Metadata, tc.metadata) || (je.Metadata == nil) != (tc.metadata == nil) {
				t.Errorf("Metadata = %#v, want %#v", je.Metadata, tc.metadata)
			}
			if je.RetryDelay != 0 {
				t.Errorf("RetryDelay = %v, want 0", je.RetryDelay)
			}
		})
	}
}

func TestErrorIsMatchesReasonsOnly(t *testing.T) {
	stale := &jobwire.Error{Code: codes.FailedPrecondition, Message: "stale", Reason: "LEASE_STALE"}
	for _, tc := range []struct {
		name   string
		err    error
		reason string // the one sentinel err matches ("" for none)
	}{
		{"*Error of LEASE_STALE", stale, "LEASE_STALE"},
		{"wrapped by fmt.Errorf(%w)", fmt.Errorf("ack job 7: %w", stale), "LEASE_STALE"},
		{"wrapped twice", fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", stale)), "LEASE_STALE"},
		{"joined", errors.Join(errors.New("other"), stale), "LEASE_STALE"},
		{"same code, other reason", &jobwire.Error{Code: codes.FailedPrecondition, Reason: "JOB_STATE"}, "JOB_STATE"},
		{"no reason", &jobwire.Error{Code: codes.Unavailable, Message: "connection refused"}, ""},
		{"reason without a sentinel", &jobwire.Error{Code: codes.Internal, Reason: "INTERNAL"}, ""},
		{"not a jobwire error", errors.New("LEASE_STALE"), ""},
		{"wrapped non-jobwire error", fmt.Errorf("x: %w", context.Canceled), ""},
		{"nil", nil, ""},
		{"the worker's ErrLeaseLost", jobwire.ErrLeaseLost, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkOnlySentinel(t, tc.err, tc.reason)
		})
	}
	// A sentinel only names a reason: it is not an *Error, and matches itself
	// and no other sentinel.
	var je *jobwire.Error
	if errors.As(jobwire.ErrLeaseStale, &je) {
		t.Errorf("errors.As(ErrLeaseStale, *Error) found %v", je)
	}
	checkOnlySentinel(t, jobwire.ErrLeaseStale, "LEASE_STALE")
	if stale.Is(context.Canceled) || stale.Is(nil) {
		t.Errorf("(*Error).Is matched a non-sentinel")
	}
	if got := jobwire.ErrLeaseStale.Error(); got != "jobwire: LEASE_STALE" {
		t.Errorf("ErrLeaseStale.Error() = %q", got)
	}
}

// TestSentinelsCoverTheContract: there is one sentinel per reason of the
// "Error details" table of broker.proto, and none for a reason it does not
// list.
func TestSentinelsCoverTheContract(t *testing.T) {
	root, err := testbroker.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "proto", "jobwire", "v1", "broker.proto"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "// Error details:")
	end := strings.Index(text, "// Batch results (")
	if start < 0 || end < start {
		t.Fatal(`broker.proto has no "Error details" table`)
	}
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^//   ([A-Z][A-Z_]+) {2,}`).FindAllStringSubmatch(text[start:end], -1) {
		listed = append(listed, m[1])
	}
	have := slices.Sorted(maps.Keys(sentinels))
	slices.Sort(listed)
	if !slices.Equal(have, listed) {
		t.Fatalf("sentinels %v, broker.proto lists %v", have, listed)
	}
	for reason, s := range sentinels {
		if s.Error() != "jobwire: "+reason {
			t.Errorf("the sentinel of %s is %q", reason, s.Error())
		}
	}
}
