package jobwire

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// The job types a Worker's Claim names (ClaimRequest.types; docs/clients.md,
// Worker): those it has handlers for, so that the broker delivers it only
// those. A job of another type waits pending, using no attempt, for a worker
// that takes it.

// maxClaimTypes is the limit of ClaimRequest.types (broker.proto): a Worker
// has handlers for at most this many job types (checked by Run).
const maxClaimTypes = 64

// handlersErr is why Run refuses to start with the handlers registered, or
// nil: there is none (an empty ClaimRequest.types would claim every type),
// or more job types have one than a Claim may name. REQUIRES: w.mu held.
func (w *Worker) handlersErr() error {
	switch n := len(w.handlers); {
	case n == 0:
		return errors.New("jobwire: Worker.Run: no handler registered; Handle one per job type before Run " +
			"(the worker claims only the job types it has handlers for)")
	case n > maxClaimTypes:
		return fmt.Errorf("jobwire: Worker.Run: %d job types have handlers; a Worker takes at most %d "+
			"(ClaimRequest.types)", n, maxClaimTypes)
	}
	return nil
}

// claimTypes is ClaimRequest.types: the job types with a handler as they are
// now (when a Claim stream is opened), sorted.
func (w *Worker) claimTypes() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.handlers))
}
