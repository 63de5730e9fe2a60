package jobwire_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	jobwire "github.com/jobwire/jobwire/client/go"
)

// Job dependencies (docs/semantics.md, "Dependencies") through the Go
// client: a child enqueued WithDependsOn waits, PENDING, until its parent
// completed; then a Worker's handler gets it with the parent's result in
// Job.DependencyResults. An id that names no job of the queue is refused
// NOT_FOUND / ErrDependencyNotFound, by Enqueue and per entry of
// EnqueueBatch. WithDependsOnBatchIndex links jobs of one EnqueueBatch by
// index: the batch stores the graph, and a child of a refused batch job is
// refused too.

// unknownJobID names no job of any test's queue.
const unknownJobID = "999999999999"

// depRun is one run a handler saw: the job and its DependencyResults.
type depRun struct {
	id      string
	results map[string]string
}

func TestDependenciesTheChildRunsAfterItsParentWithItsResult(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	ctx := context.Background()

	parent := mustEnqueue(t, c, q, "parent", map[string]int{"n": 1})
	child := mustEnqueue(t, c, q, "child", nil, jobwire.WithDependsOn(parent))
	anyway := mustEnqueue(t, c, q, "child", nil, jobwire.WithDependsOn(parent),
		jobwire.WithRunAfterFailedDependency())
	waiting, err := c.GetJob(ctx, q, child)
	if err != nil {
		t.Fatalf("GetJob(%s): %v", child, err)
	}
	if waiting.GetState() != jobwire.StatePending || !slices.Equal(waiting.GetDependsOn(), []string{parent}) ||
		waiting.GetDependenciesLeft() != 1 || len(waiting.GetDependencyResults()) != 0 ||
		waiting.GetRunAfterFailedDependency() {
		t.Errorf("waiting child: state %v depends_on %v left %d results %v run_after_failed %v; want PENDING [%s] 1 none false",
			waiting.GetState(), waiting.GetDependsOn(), waiting.GetDependenciesLeft(),
			waiting.GetDependencyResults(), waiting.GetRunAfterFailedDependency(), parent)
	}
	if j, err := c.GetJob(ctx, q, anyway); err != nil || !j.GetRunAfterFailedDependency() {
		t.Errorf("GetJob(%s): run_after_failed_dependency %v, err %v; want true", anyway, j.GetRunAfterFailedDependency(), err)
	}

	var mu sync.Mutex
	var runs []depRun // in the order the handlers started
	record := func(job *jobwire.Job) {
		mu.Lock()
		defer mu.Unlock()
		results := map[string]string{}
		for id, r := range job.DependencyResults {
			results[id] = string(r)
		}
		runs = append(runs, depRun{job.ID, results})
	}
	startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"parent": func(ctx context.Context, job *jobwire.Job) (any, error) {
			record(job)
			time.Sleep(200 * time.Millisecond) // free slots meanwhile: a child delivered early would start
			var p struct{ N int }
			if err := job.JSON(&p); err != nil {
				return nil, err
			}
			return map[string]int{"sum": p.N + 41}, nil
		},
		"child": func(ctx context.Context, job *jobwire.Job) (any, error) {
			record(job)
			return nil, nil
		},
	}, jobwire.WithConcurrency(4))
	for _, id := range []string{parent, child, anyway} {
		waitState(t, c, q, id, jobwire.StateCompleted, 10*time.Second)
	}

	mu.Lock()
	got := slices.Clone(runs)
	mu.Unlock()
	want := map[string]string{parent: `{"sum":42}`}
	if len(got) != 3 || got[0].id != parent || len(got[0].results) != 0 {
		t.Fatalf("runs %v: want the parent first, without results, then two children", got)
	}
	for _, r := range got[1:] {
		if (r.id != child && r.id != anyway) || !maps.Equal(r.results, want) {
			t.Errorf("run of %s saw DependencyResults %v; want a child with %v", r.id, r.results, want)
		}
	}
	done, err := c.GetJob(ctx, q, child)
	if err != nil || done.GetDependenciesLeft() != 0 || string(done.GetDependencyResults()[parent]) != want[parent] {
		t.Errorf("GetJob(%s) once done: left %d results %v, err %v", child, done.GetDependenciesLeft(), done.GetDependencyResults(), err)
	}
}

func TestDependenciesAnUnknownParentIsRefusedNotFound(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	ctx := context.Background()

	parent := mustEnqueue(t, c, q, "t", nil)
	_, err := c.Enqueue(ctx, q, "t", nil, jobwire.WithDependsOn(parent), jobwire.WithDependsOn(unknownJobID))
	if je := asError(t, err); je.Code != codes.NotFound || !errors.Is(err, jobwire.ErrDependencyNotFound) ||
		je.Metadata["job_id"] != unknownJobID {
		t.Errorf("Enqueue with an unknown parent: %v (reason %q, metadata %v); want NOT_FOUND DEPENDENCY_NOT_FOUND job_id %s",
			err, je.Reason, je.Metadata, unknownJobID)
	}
	checkOnlySentinel(t, err, "DEPENDENCY_NOT_FOUND")

	results, err := c.EnqueueBatch(ctx, q, []jobwire.BatchJob{
		{Type: "t", Options: []jobwire.EnqueueOption{jobwire.WithDependsOn(unknownJobID)}},
		{Type: "t", Options: []jobwire.EnqueueOption{jobwire.WithDependsOn(parent)}},
	})
	if err != nil || len(results) != 2 {
		t.Fatalf("EnqueueBatch: %v, %v", results, err)
	}
	if e := results[0].Err; !errors.Is(e, jobwire.ErrDependencyNotFound) || asError(t, e).Code != codes.NotFound {
		t.Errorf("batch entry with an unknown parent: %v; want NOT_FOUND DEPENDENCY_NOT_FOUND", e)
	}
	if results[1].Err != nil {
		t.Fatalf("batch entry with a known parent: %v", results[1].Err)
	}
	if j, err := c.GetJob(ctx, q, results[1].JobID); err != nil || !slices.Equal(j.GetDependsOn(), []string{parent}) {
		t.Errorf("GetJob(%s): depends_on %v, err %v; want [%s]", results[1].JobID, j.GetDependsOn(), err, parent)
	}
}

// A fan-out / fan-in in one batch: root; two children naming index 0; a join
// naming 1 and 2. The join's DependsOn lists the children's ids, and its
// handler sees both children's results.
func TestDependenciesABatchStoresAGraphByIndex(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	ctx := context.Background()

	node := func(name string, parents ...int) jobwire.BatchJob {
		j := jobwire.BatchJob{Type: "node", Payload: map[string]string{"name": name}}
		if len(parents) > 0 {
			j.Options = []jobwire.EnqueueOption{jobwire.WithDependsOnBatchIndex(parents...)}
		}
		return j
	}
	results, err := c.EnqueueBatch(ctx, q, []jobwire.BatchJob{
		node("root"), node("left", 0), node("right", 0), node("join", 1, 2),
	})
	if err != nil || len(results) != 4 {
		t.Fatalf("EnqueueBatch: %v, %v", results, err)
	}
	ids := make([]string, len(results))
	for i, r := range results {
		if r.Err != nil || r.JobID == "" || r.Duplicate {
			t.Fatalf("batch entry %d: %+v; want a stored job", i, r)
		}
		ids[i] = r.JobID
	}
	root, left, right, join := ids[0], ids[1], ids[2], ids[3]
	for _, want := range []struct {
		id      string
		parents []string
	}{{left, []string{root}}, {right, []string{root}}, {join, []string{left, right}}} {
		j, err := c.GetJob(ctx, q, want.id)
		if err != nil {
			t.Fatalf("GetJob(%s): %v", want.id, err)
		}
		if !slices.Equal(j.GetDependsOn(), want.parents) || j.GetState() != jobwire.StatePending ||
			j.GetDependenciesLeft() != int32(len(want.parents)) {
			t.Errorf("GetJob(%s): depends_on %v state %v left %d; want %v PENDING %d",
				want.id, j.GetDependsOn(), j.GetState(), j.GetDependenciesLeft(), want.parents, len(want.parents))
		}
	}

	var mu sync.Mutex
	runs := map[string]map[string]string{} // job id -> its DependencyResults
	startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"node": func(ctx context.Context, job *jobwire.Job) (any, error) {
			var p struct{ Name string }
			if err := job.JSON(&p); err != nil {
				return nil, err
			}
			results := map[string]string{}
			for id, r := range job.DependencyResults {
				results[id] = string(r)
			}
			mu.Lock()
			runs[job.ID] = results
			mu.Unlock()
			return map[string]string{"from": p.Name}, nil
		},
	}, jobwire.WithConcurrency(4))
	waitState(t, c, q, join, jobwire.StateCompleted, 10*time.Second)

	mu.Lock()
	defer mu.Unlock()
	want := map[string]map[string]string{
		root:  {},
		left:  {root: `{"from":"root"}`},
		right: {root: `{"from":"root"}`},
		join:  {left: `{"from":"left"}`, right: `{"from":"right"}`},
	}
	for id, w := range want {
		if got, ok := runs[id]; !ok || !maps.Equal(got, w) {
			t.Errorf("run of %s saw DependencyResults %v (ran: %v); want %v", id, got, ok, w)
		}
	}
}

// A child naming a batch job that was refused is refused too, naming it; a
// single Enqueue refuses WithDependsOnBatchIndex.
func TestDependenciesABatchChildOfARefusedJobIsRefused(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	ctx := context.Background()

	results, err := c.EnqueueBatch(ctx, q, []jobwire.BatchJob{
		{Type: "t", Options: []jobwire.EnqueueOption{jobwire.WithPriority(5000)}},
		{Type: "t", Options: []jobwire.EnqueueOption{jobwire.WithDependsOnBatchIndex(0)}},
		{Type: "t"},
	})
	if err != nil || len(results) != 3 {
		t.Fatalf("EnqueueBatch: %v, %v", results, err)
	}
	if e := results[0].Err; e == nil || asError(t, e).Code != codes.InvalidArgument {
		t.Errorf("batch entry with priority 5000: %v; want INVALID_ARGUMENT", e)
	}
	const wantMsg = "jobs[1].depends_on_batch_index[0]: names jobs[0], which was refused"
	if e := results[1].Err; e == nil {
		t.Errorf("batch child of a refused job: stored as %s; want INVALID_ARGUMENT", results[1].JobID)
	} else if je := asError(t, e); je.Code != codes.InvalidArgument ||
		!strings.Contains(je.Message, "depends_on_batch_index") || !strings.Contains(je.Message, wantMsg) {
		t.Errorf("batch child of a refused job: %v; want INVALID_ARGUMENT %q", e, wantMsg)
	}
	if results[2].Err != nil || results[2].JobID == "" {
		t.Errorf("unlinked batch entry: %+v; want it stored", results[2])
	}

	_, err = c.Enqueue(ctx, q, "t", nil, jobwire.WithDependsOnBatchIndex(0))
	if je := asError(t, err); je.Code != codes.InvalidArgument || !strings.Contains(je.Message, "depends_on_batch_index") {
		t.Errorf("Enqueue with a batch index: %v; want INVALID_ARGUMENT naming depends_on_batch_index", err)
	}
}
