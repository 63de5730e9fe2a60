"""How a handler's exception becomes a Fail, the same for both Workers
(threaded and asyncio; docs/clients.md, Worker):

- the error text is ``"<ErrorType>: <message>"``, cut to at most
  MAX_ERROR_BYTES (64 KiB, the broker's limit) of UTF-8 at a character
  boundary, nothing appended;
- ``NonRetryableError`` sets ``non_retryable``;
- ``RetryAfter`` sets ``retry_after_ms`` (and ``keep_attempt`` when it was
  raised with ``keep_attempt=True``), unless the exception is also a
  ``NonRetryableError`` (non-retryable wins: neither is sent).
"""
from __future__ import annotations

from dataclasses import dataclass

from ._errors import NonRetryableError, RetryAfter

# FailRequest.error: at most this many bytes of UTF-8 (the broker's limit).
MAX_ERROR_BYTES = 64 * 1024


def cut_error_text(text: str) -> str:
    """``text`` cut to its longest prefix of whole characters that is at
    most MAX_ERROR_BYTES of UTF-8. A character UTF-8 cannot carry (a lone
    surrogate) becomes U+FFFD first, as in every client: a Fail must be
    valid UTF-8."""
    data = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")
    if len(data) <= MAX_ERROR_BYTES:
        return data.decode("utf-8")
    end = MAX_ERROR_BYTES
    while end > 0 and (data[end] & 0xC0) == 0x80:  # data[end] continues a character
        end -= 1
    return data[:end].decode("utf-8")


def error_text(exc: BaseException) -> str:
    """``"<ErrorType>: <message>"``, cut as ``cut_error_text`` says."""
    return cut_error_text("%s: %s" % (type(exc).__name__, exc))


@dataclass(frozen=True)
class Failure:
    """The fields of the Fail a handler's exception gives."""

    error: str
    non_retryable: bool = False
    retry_after_ms: int = 0
    keep_attempt: bool = False


def failure_of(exc: BaseException) -> Failure:
    """The Fail for ``exc``, raised by a handler."""
    non_retryable = isinstance(exc, NonRetryableError)
    retry_after_ms, keep_attempt = 0, False
    if isinstance(exc, RetryAfter) and not non_retryable:
        retry_after_ms, keep_attempt = exc.retry_after_ms, exc.keep_attempt
    return Failure(error_text(exc), non_retryable, retry_after_ms, keep_attempt)
