"""The job types a Worker's Claim names (``ClaimRequest.types``), shared by
both Workers (threaded and asyncio; docs/clients.md, Worker): the types it
has handlers for, so that the broker delivers it only those. A job of
another type waits pending, using no attempt, for a worker that takes it.
"""
from __future__ import annotations

from typing import List, Mapping

# ClaimRequest.types names at most this many types (broker.proto); the
# broker refuses a longer list with INVALID_ARGUMENT.
MAX_CLAIM_TYPES = 64


def check_handlers(handlers: Mapping[str, object]) -> None:
    """What ``run()`` checks before it starts: raises ValueError when no
    handler is registered (an empty ``types`` would claim every type) or
    when more than MAX_CLAIM_TYPES types have one."""
    if not handlers:
        raise ValueError("Worker.run(): no handler registered; register(job_type, fn) first "
                         "(the Worker claims only the job types it has handlers for)")
    if len(handlers) > MAX_CLAIM_TYPES:
        raise ValueError("Worker.run(): %d job types have handlers; a Worker takes at most %d "
                         "(ClaimRequest.types)" % (len(handlers), MAX_CLAIM_TYPES))


def claim_types(handlers: Mapping[str, object]) -> List[str]:
    """The ``types`` of a ClaimRequest: the job types with a handler as they
    are now (when the stream is opened or reopened), sorted."""
    return sorted(list(handlers))
