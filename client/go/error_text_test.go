package jobwire

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The Fail error text without a broker: the type name under the NonRetryable
// and RetryAfter marks, and the cut at a character boundary. fail_test.go
// shows them end to end.

type diskError struct{}

func (diskError) Error() string { return "disk full" }

func TestErrorTextUnderTheMarks(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"plain", diskError{}, "jobwire.diskError: disk full"},
		{"retry after", RetryAfter(diskError{}, time.Second), "jobwire.diskError: disk full"},
		{"both marks", NonRetryable(RetryAfter(diskError{}, time.Second)), "jobwire.diskError: disk full"},
		{"both marks, other order", RetryAfter(NonRetryable(diskError{}), time.Second), "jobwire.diskError: disk full"},
		{"wrapped mark", fmt.Errorf("write: %w", RetryAfter(diskError{}, time.Second)), "error: write: disk full"},
		{"no inner error", &RetryAfterError{Delay: time.Second}, "jobwire.RetryAfterError: retry after 1s"},
		{"not UTF-8", errors.New("bad \xff\xfe byte"), "error: bad \uFFFD byte"},
	} {
		if got := errorText(c.err); got != c.want {
			t.Errorf("%s: errorText = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestTruncateUTF8(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abc", 2, "ab"},
		{"aé", 2, "a"}, // would split the é
		{"aé", 3, "aé"},
		{"€€", 5, "€"},
		{"😀", 3, ""},
		{strings.Repeat("é", 40000), 65536, strings.Repeat("é", 32768)},
	} {
		if got := truncateUTF8(c.s, c.n); got != c.want {
			t.Errorf("truncateUTF8(%q, %d) = %q, want %q", c.s[:min(len(c.s), 8)], c.n, got[:min(len(got), 8)], c.want[:min(len(c.want), 8)])
		}
	}
}
