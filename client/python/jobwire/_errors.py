"""Errors raised by the jobwire client."""
from __future__ import annotations

import datetime as _dt
import decimal
from typing import Union

import grpc

_CODE_BY_VALUE = {c.value[0]: c for c in grpc.StatusCode}


def status_code(value: int) -> grpc.StatusCode:
    """grpc.StatusCode for a google.rpc.Code number (UNKNOWN if out of range)."""
    return _CODE_BY_VALUE.get(int(value), grpc.StatusCode.UNKNOWN)


class JobwireError(Exception):
    """A failed RPC: the gRPC status code and the broker's message, unchanged.

    ``code`` is a ``grpc.StatusCode`` (e.g. ``grpc.StatusCode.INVALID_ARGUMENT``)
    and ``message`` the broker's text (``details`` is an alias).
    """

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(code, message)
        self.code = code
        self.message = message

    @property
    def details(self) -> str:
        return self.message

    def __str__(self) -> str:
        return "%s: %s" % (self.code.name, self.message)

    @classmethod
    def from_rpc_error(cls, err: grpc.RpcError) -> "JobwireError":
        code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
        details = err.details() if hasattr(err, "details") else str(err)
        return cls(code or grpc.StatusCode.UNKNOWN, details or "")


class NonRetryableError(Exception):
    """Raise from a handler to fail the job for good (``non_retryable``):
    the job becomes DEAD whatever attempts it has left."""


# The broker's limit on retry_after_ms (FailRequest): 7 days.
MAX_RETRY_AFTER_MS = 7 * 24 * 3600 * 1000


def _delay_ms(delay) -> int:
    """``delay`` (seconds as an int / float / Decimal, or a timedelta) in whole
    milliseconds, rounded up, at least 1, at most MAX_RETRY_AFTER_MS."""
    if isinstance(delay, _dt.timedelta):
        us = (delay.days * 86400 + delay.seconds) * 1_000_000 + delay.microseconds
        ms = -(-us // 1000)
    elif isinstance(delay, (int, float, decimal.Decimal)) and not isinstance(delay, bool):
        # Through the decimal text, so that 0.1 s is 100 ms, not 101.
        exact = decimal.Decimal(str(delay)) * 1000
        if exact.is_nan():
            raise ValueError("RetryAfter delay is NaN")
        if exact.is_infinite():
            return MAX_RETRY_AFTER_MS if exact > 0 else 1
        ms = int(exact.to_integral_value(rounding=decimal.ROUND_CEILING))
    else:
        raise TypeError("RetryAfter delay must be seconds (a number) or a timedelta, got %r"
                        % (delay,))
    return min(max(ms, 1), MAX_RETRY_AFTER_MS)


class RetryAfter(Exception):
    """Raise from a handler to fail the job and have it retried after
    ``delay`` (seconds as a number, or a ``datetime.timedelta``) instead of
    the backoff: the Fail carries ``retry_after_ms``, the delay in whole
    milliseconds rounded up, at least 1 and at most 7 days (the broker's
    limit). The error text is ``"RetryAfter: <message>"`` (a subclass: its
    own name). A job with no attempt left still becomes DEAD.

    An exception that is also a ``NonRetryableError`` (a subclass of both)
    fails the job for good: non-retryable wins, no delay is sent.

    ``delay`` is kept as given; ``retry_after_ms`` is what the Worker sends.
    Raises TypeError for a delay of another type, ValueError for NaN."""

    def __init__(self, delay: Union[float, int, _dt.timedelta], message: str = ""):
        self.retry_after_ms = _delay_ms(delay)
        super().__init__(message)
        self.delay = delay
        self.message = message

    def __reduce__(self):
        return type(self), (self.delay, self.message)
