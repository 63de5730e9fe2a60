"""The weights a Worker's Claim carries (``ClaimRequest.weights``), shared by
both Workers (threaded and asyncio; docs/clients.md, Worker): weighted fair
claiming. While several of the worker's queues have due jobs, the broker
splits the stream's free slots between them in proportion to their weights;
a queue without due jobs leaves its share to the others. No weights: strict
order, every free slot to the first queue with due jobs.
"""
from __future__ import annotations

from typing import List, Mapping, Optional, Sequence

# Each weight is 1..MAX_WEIGHT (broker.proto, ClaimRequest.weights); the
# broker refuses another with INVALID_ARGUMENT.
MAX_WEIGHT = 1000


def claim_weights(queues: Sequence[str], weights: Optional[Mapping[str, int]]) -> List[int]:
    """The ``weights`` of a ClaimRequest for ``weights`` (queue name ->
    weight): one per queue of ``queues``, in their order; [] (strict order)
    for None or an empty mapping. Raises ValueError when ``weights`` is not a
    mapping, has no weight for a queue of ``queues``, names another queue, or
    holds a weight that is not an int 1..MAX_WEIGHT (a bool is not)."""
    if weights is None:
        return []
    if not isinstance(weights, Mapping):
        raise ValueError("weights must be a mapping of queue name -> weight, got %s"
                         % type(weights).__name__)
    if not weights:
        return []
    for name, weight in weights.items():
        if name not in queues:
            raise ValueError("weights names queue %r, which is not one of queues %r"
                             % (name, list(queues)))
        if isinstance(weight, bool) or not isinstance(weight, int) \
                or not 1 <= weight <= MAX_WEIGHT:
            raise ValueError("weights[%r] must be an int 1..%d, got %r"
                             % (name, MAX_WEIGHT, weight))
    missing = [q for q in queues if q not in weights]
    if missing:
        raise ValueError("weights has no weight for queue %r (with weights, every queue of "
                         "queues needs one)" % missing[0])
    return [weights[q] for q in queues]
