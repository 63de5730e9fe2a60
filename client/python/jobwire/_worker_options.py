"""The options both Workers (threaded and asyncio) take, checked and stored
the same way (docs/clients.md, Worker)."""
from __future__ import annotations

import os
import socket

from ._channel import resolve_addr
from ._claim_weights import claim_weights


def default_worker_id() -> str:
    return "python-%s-%d" % (socket.gethostname(), os.getpid())


def init_settings(worker, addr, queues, concurrency, lease_ms, worker_id, grace, on_outcome,
                  timeout, weights) -> None:
    """Checks the options and stores them on ``worker`` (``queues``,
    ``addr``, ``concurrency``, ``lease_ms`` (None: the broker's default),
    ``worker_id``, ``grace``, ``on_outcome``, ``timeout``, ``weights``: the
    Claim's, one per queue in the order of ``queues``, [] for strict order).
    Raises ValueError for no queue, a concurrency below 1 or bad weights
    (see _claim_weights.claim_weights)."""
    if isinstance(queues, str):
        queues = [queues]
    worker.queues = list(queues or [])
    if not worker.queues:
        raise ValueError("Worker needs at least one queue")
    if int(concurrency) < 1:
        raise ValueError("concurrency must be >= 1")
    worker.weights = claim_weights(worker.queues, weights)
    worker.addr = resolve_addr(addr)
    worker.concurrency = int(concurrency)
    worker.lease_ms = int(lease_ms) if lease_ms else None
    worker.worker_id = worker_id or default_worker_id()
    worker.grace = float(grace)
    worker.on_outcome = on_outcome
    worker.timeout = float(timeout)
