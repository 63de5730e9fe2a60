package jobwire

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A Claim names the job types with a handler, sorted; Run needs 1..64 of
// them.
func TestClaimTypes(t *testing.T) {
	nop := func(ctx context.Context, job *Job) (any, error) { return nil, nil }
	for _, c := range []struct {
		n    int
		want string // handlersErr's text begins so; "" = nil
	}{
		{0, "jobwire: Worker.Run: no handler registered"},
		{1, ""},
		{64, ""},
		{65, "jobwire: Worker.Run: 65 job types have handlers; a Worker takes at most 64"},
	} {
		w := &Worker{handlers: map[string]Handler{}}
		for i := range c.n {
			w.Handle(fmt.Sprintf("t%02d", i), nop)
		}
		w.mu.Lock()
		err := w.handlersErr()
		w.mu.Unlock()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%d types: %v, want nil", c.n, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%d types: %v, want %q...", c.n, err, c.want)
		}
	}

	w := &Worker{handlers: map[string]Handler{"b": nop, "a": nop, "C": nop}}
	if got, want := w.claimTypes(), []string{"C", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("claimTypes() = %v, want %v", got, want)
	}
}
