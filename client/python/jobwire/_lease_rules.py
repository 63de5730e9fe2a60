"""The two lease rules both Workers (threaded and asyncio) follow
(docs/clients.md, Worker):

- An Ack / Fail answered UNAVAILABLE / DEADLINE_EXCEEDED is sent again
  until the lease ends by the worker's own estimate; the waits are clipped so
  that one attempt goes out ``FINAL_LEAD_S`` before that end and a last one
  at the end. Still unanswered then, the outcome is unknown
  (``ack_unknown`` / ``fail_unknown``).
- A delivery whose lease has already ended when its handler would start is
  dropped (no handler, no Ack / Fail): see ``lease_ended_ago_ms``.
"""
from __future__ import annotations

import time
from typing import Optional

# The attempt before the last one is sent this long before the estimated
# lease end, so that it reaches the broker while the lease still holds.
FINAL_LEAD_S = 0.1


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
