package jobwire

import (
	"maps"
	"testing"
)

// WithHeaders merges (a later value wins), copies the caller's map, and a
// request without it (or with an empty map) has no headers.
func TestWithHeadersMergesAndCopies(t *testing.T) {
	first := map[string]string{"tenant": "acme", "region": "eu"}
	second := map[string]string{"tenant": "globex", "traceparent": "00-1-2-01"}
	req, err := buildRequest("q", "t", nil, []EnqueueOption{WithHeaders(first), WithHeaders(nil), WithHeaders(second)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"tenant": "globex", "region": "eu", "traceparent": "00-1-2-01"}
	if !maps.Equal(req.GetHeaders(), want) {
		t.Errorf("headers %v, want %v", req.GetHeaders(), want)
	}
	first["region"] = "us"
	if req.GetHeaders()["region"] != "eu" {
		t.Errorf("the request shares the caller's map")
	}
	if !maps.Equal(first, map[string]string{"tenant": "acme", "region": "us"}) {
		t.Errorf("the caller's map changed: %v", first)
	}

	// The same options (as in BatchJob.Options) build separate maps.
	opts := []EnqueueOption{WithHeaders(second)}
	a, _ := buildRequest("q", "t", nil, opts)
	b, _ := buildRequest("q", "t", nil, opts)
	a.Headers["tenant"] = "x"
	if b.GetHeaders()["tenant"] != "globex" {
		t.Errorf("two requests share one headers map")
	}

	for _, opts := range [][]EnqueueOption{nil, {WithHeaders(nil)}, {WithHeaders(map[string]string{})}} {
		req, _ := buildRequest("q", "t", nil, opts)
		if req.Headers != nil {
			t.Errorf("%d options: headers %v, want nil", len(opts), req.Headers)
		}
	}
}
