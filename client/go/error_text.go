package jobwire

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The Fail error text of a handler error: "<ErrorType>: <message>", cut to
// the broker's 64 KiB at a character boundary.

// maxErrorText is the broker's limit on Fail.error (64 KiB).
const maxErrorText = 64 * 1024

// noHandlerError is the error of a job whose type has no handler; its text is
// sent as is.
type noHandlerError struct{ msg string }

func (e *noHandlerError) Error() string { return e.msg }

// panicError is a recovered handler panic.
type panicError struct{ value any }

func (e *panicError) Error() string { return fmt.Sprintf("%v", e.value) }

// errorText is the Fail text of a handler error: "<ErrorType>: <message>",
// where ErrorType is the Go type of the error under the NonRetryable and
// RetryAfter marks ("error" for the anonymous errors of errors.New and
// fmt.Errorf), cut to the broker's 64 KiB limit at a character boundary.
// Bytes that are not UTF-8 (a Go string may hold any) become U+FFFD first:
// protobuf refuses to send a string field that is not UTF-8.
func errorText(err error) string {
	var text string
	var nh *noHandlerError
	var pe *panicError
	switch {
	case errors.As(err, &nh):
		text = nh.msg
	case errors.As(err, &pe):
		text = "panic: " + pe.Error()
	default:
		text = errorTypeName(unmarked(err)) + ": " + err.Error()
	}
	return truncateUTF8(strings.ToValidUTF8(text, "\uFFFD"), maxErrorText)
}

// unmarked is err without the NonRetryable and RetryAfter marks wrapped
// around it (in any order).
func unmarked(err error) error {
	for {
		switch e := err.(type) {
		case *nonRetryableError:
			err = e.err
		case *RetryAfterError:
			if e.Err == nil {
				return err
			}
			err = e.Err
		default:
			return err
		}
	}
}

func errorTypeName(err error) string {
	t := strings.TrimPrefix(fmt.Sprintf("%T", err), "*")
	switch t {
	case "errors.errorString", "fmt.wrapError", "fmt.wrapErrors", "errors.joinError":
		return "error"
	}
	return t
}

// truncateUTF8 is the longest prefix of s of at most n bytes that does not
// end inside a UTF-8 sequence.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
