"""The Claim stream's reopen backoff, shared by both Workers (threaded and
asyncio; docs/clients.md, Worker): exponential from 100 ms to 5 s with full
jitter, reset once a stream delivers."""
from __future__ import annotations

import random

RECONNECT_MIN_S = 0.1
RECONNECT_MAX_S = 5.0


def reconnect_delay(attempt: int) -> float:
    """The wait (seconds) before reopening the Claim stream for the
    ``attempt``-th time (0 for the first) since a stream last delivered:
    uniform in [0, d] ("full jitter"), d = 100 ms doubled per attempt, at
    most 5 s."""
    cap = min(RECONNECT_MIN_S * 2 ** min(max(attempt, 0), 16), RECONNECT_MAX_S)
    return random.uniform(0.0, cap)
