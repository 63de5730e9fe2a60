"""Errors raised by the jobwire client."""
from __future__ import annotations

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
