"""The Claim stream's reopen backoff, shared by both Workers (threaded and
asyncio; docs/clients.md, Worker): exponential from 100 ms to 5 s with full
jitter, reset once a stream delivers. ``Client.wait`` and ``subscribe``
(both clients) call again with it too, after the errors
``broker_went_away`` names, which the Workers' Ack / Fail retries follow too
(``_lease_rules.unanswered``)."""
from __future__ import annotations

import random

import grpc

RECONNECT_MIN_S = 0.1
RECONNECT_MAX_S = 5.0


def reconnect_delay(attempt: int) -> float:
    """The wait (seconds) before reopening the Claim stream for the
    ``attempt``-th time (0 for the first) since a stream last delivered:
    uniform in [0, d] ("full jitter"), d = 100 ms doubled per attempt, at
    most 5 s."""
    cap = min(RECONNECT_MIN_S * 2 ** min(max(attempt, 0), 16), RECONNECT_MAX_S)
    return random.uniform(0.0, cap)


def broker_went_away(code: grpc.StatusCode, cancelled_by_client: bool) -> bool:
    """Whether a WaitJob / Subscribe call (``Client.wait``, a subscription
    that ran) or a Worker's Ack / Fail that ended with ``code`` ended because
    the broker went away (restarting or draining, or its Redis down), so
    that the wait / the subscription calls again after the reconnect
    backoff, and the Ack / Fail is sent again (``_lease_rules.unanswered``):
    UNAVAILABLE, or CANCELLED that the client did not cause.

    ``cancelled_by_client``: the client ended the call itself (the caller
    closed the subscription or the Client, whose channel close cancels its
    calls; a subscription's confirmation timer is turned into
    DEADLINE_EXCEEDED before this is asked; for a Worker:
    ``_lease_rules.cut_by_client``). Such a CANCELLED ends the wait /
    subscription, and is the Ack / Fail's final answer, as it always was.
    (grpc.aio raises asyncio.CancelledError, not AioRpcError, for a call
    cancelled locally.)

    Why CANCELLED: a draining broker ends these streams UNAVAILABLE
    (BROKER_SHUTTING_DOWN), and gRPC's status-code guide says a server
    shutting down answers UNAVAILABLE; but gRPC C++ core (the broker's, 1.51)
    ends a call that reaches the server after ``Server::Shutdown`` began,
    before the client processed the GOAWAY, with CANCELLED although nobody
    cancelled it (grpc/grpc#41785); such a call never reached a handler. The
    Workers' Claim stream reopens after any error but INVALID_ARGUMENT."""
    if code == grpc.StatusCode.UNAVAILABLE:
        return True
    return code == grpc.StatusCode.CANCELLED and not cancelled_by_client
