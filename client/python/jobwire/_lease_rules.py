"""The lease rules both Workers (threaded and asyncio) follow
(docs/clients.md, Worker):

- The lease length is the one the broker granted (ClaimedJob.lease_ms); a
  broker older than that field (0) leaves the one the Claim asked for, or
  the broker default: see ``lease_length_s``. Renewals come every third of it.

- An Ack / Fail answered UNAVAILABLE / DEADLINE_EXCEEDED, or CANCELLED that
  the client did not cause (a broker shutting down: see ``unanswered``), is
  sent again, with backoff (100 ms doubling to 2 s, full jitter:
  ``retry_jitter``), until the lease ends by the worker's own estimate; the
  waits are clipped so that one attempt goes out ``FINAL_LEAD_S`` before
  that end and a last one at the end. Still unanswered then, the outcome is
  unknown (``ack_unknown`` / ``fail_unknown``). An attempt sent while the
  lease was already known lost (a renewal refused) is final: see
  ``may_resend``. One sent before, answered once the lease has been learnt
  lost (maybe because that very attempt was stored, its answer lost), is
  sent once more, at once, whatever the lease end: sent while lost, its
  answer is final (OK when the earlier attempt was stored: the broker
  answers a repeat with the first outcome).
- A delivery whose lease has already ended when its handler would start is
  dropped (no handler, no Ack / Fail): see ``lease_ended_ago_ms``.
"""
from __future__ import annotations

import random
import time
from typing import Optional

import grpc

from ._errors import ClientCancelled, JobwireError
from ._reconnect import broker_went_away

# Answers to an Ack / Fail after which it is sent again (until the lease
# end), besides a CANCELLED the client did not cause: see ``unanswered``.
RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)

# The broker's default lease, assumed when nothing better is known.
BROKER_DEFAULT_LEASE_S = 30.0

# The attempt before the last one is sent this long before the estimated
# lease end, so that it reaches the broker while the lease still holds.
FINAL_LEAD_S = 0.1


def unanswered(code: Optional[grpc.StatusCode], cancelled_by_client: bool) -> bool:
    """Whether an Ack / Fail attempt answered ``code`` went unanswered by the
    broker (it may or may not be stored), so that it may be sent again
    (``may_resend``) and, as the last attempt, makes the outcome unknown
    (``ack_unknown`` / ``fail_unknown``, not ``*_error``): UNAVAILABLE,
    DEADLINE_EXCEEDED, or CANCELLED that the client did not cause
    (``_reconnect.broker_went_away``: gRPC C++ core ends a call that reaches
    a broker shutting down CANCELLED, not UNAVAILABLE, and no handler sees
    it, grpc/grpc#41785). ``cancelled_by_client`` (``cut_by_client``): the
    client cut the call itself; such a CANCELLED is final, as any refusal."""
    return code in RETRYABLE or broker_went_away(code, cancelled_by_client)


def cut_by_client(err: JobwireError, closed: bool) -> bool:
    """``cancelled_by_client`` for an Ack / Fail attempt that failed with
    ``err``: the Worker was closed meanwhile (stopped, its handlers
    abandoned: its channel's close cancels the calls in flight), ``closed``;
    or ``err`` is one the client made for a call it cut itself
    (``ClientCancelled``: the ack coalescer's sending interrupted, its
    channel closed). A call the asyncio Worker cancels raises
    asyncio.CancelledError, not an error with a code."""
    return closed or isinstance(err, ClientCancelled)


def may_resend(code: Optional[grpc.StatusCode], lost_when_sent: bool, *,
               cancelled_by_client: bool) -> bool:
    """Whether an Ack / Fail attempt answered ``code`` may be sent again:
    only when it went unanswered (``unanswered``: UNAVAILABLE,
    DEADLINE_EXCEEDED, a CANCELLED the client did not cause), and only when
    the lease was not already known lost when that attempt was sent
    (``lost_when_sent``: the broker refuses it then, unless an earlier
    attempt was stored, which it answers again). False: its outcome is final
    (unknown when it went unanswered). True: the caller sends it again at
    once when the lease is known lost now (learnt since: the once-more
    attempt, sent while lost), else after ``retry_wait``."""
    return unanswered(code, cancelled_by_client) and not lost_when_sent


def given_up(lease_lost: bool) -> str:
    """How the log says why an unanswered Ack / Fail was not sent again."""
    return "after its lease was lost" if lease_lost else "when its lease ended"


def retry_jitter(backoff: float) -> float:
    """The wait before an Ack / Fail retry whose backoff is now ``backoff``
    (seconds): uniform in [0, backoff] ("full jitter", as every client's
    reopen of the Claim stream), before ``retry_wait`` clips it."""
    return random.uniform(0.0, backoff)


def retry_wait(wait: float, left: float) -> Optional[float]:
    """The wait before the next Ack / Fail attempt: ``wait`` (the jittered
    backoff), clipped so that no attempt is skipped at the lease end.
    ``left``: seconds until the estimated lease end. None: the lease has
    ended, no attempt is left."""
    if left <= 0:
        return None
    if left > FINAL_LEAD_S and wait >= left - FINAL_LEAD_S:
        return left - FINAL_LEAD_S
    return min(wait, left)


def lease_ended_ago_ms(lease_expires_at_ms: int, local_deadline: float) -> Optional[float]:
    """How long ago (ms, >= 0) the lease of a delivery ended, or None while
    it lasts. It has ended when the local wall clock is at or past
    ``lease_expires_at_ms`` (epoch ms on the Redis clock: this assumes the
    worker's and Redis's clocks agree to well within a lease, e.g. NTP), or
    when ``local_deadline`` (the worker's own estimate: ``time.monotonic()``
    at receipt plus the lease) has passed."""
    ago = (time.monotonic() - local_deadline) * 1000.0
    if lease_expires_at_ms > 0:
        ago = max(ago, time.time() * 1000.0 - lease_expires_at_ms)
    return ago if ago >= 0 else None


def lease_length_s(granted_ms: int, configured_ms: Optional[int]) -> float:
    """The lease length (seconds) of a delivery: ``granted_ms``
    (ClaimedJob.lease_ms: the Claim's lease_ms or the broker's default) when
    the broker sent it. From an older broker (0): the worker's
    ``configured_ms`` (ClaimRequest.lease_ms), else (it asked for the
    broker's default) the documented 30 s. No clock is read: the Redis clock
    and the local one need not agree."""
    if granted_ms > 0:
        return granted_ms / 1000.0
    if configured_ms:
        return configured_ms / 1000.0
    return BROKER_DEFAULT_LEASE_S


def renew_lease_ms(granted_ms: int, configured_ms: Optional[int]) -> int:
    """ExtendLeaseRequest.lease_ms: the granted lease again (0 from an older
    broker: the worker's own, or 0 for the broker's default)."""
    return granted_ms if granted_ms > 0 else (configured_ms or 0)
