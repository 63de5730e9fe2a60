"""Weighted fair claiming (ClaimRequest.weights; docs/clients.md, Worker):
the Workers' ``weights`` option, checked at construction and sent on every
Claim in the order of ``queues``, and the broker splitting a worker's slots
by them."""
import asyncio
import collections
import threading

import pytest

from jobwire import Worker, aio
from jobwire._claim_weights import claim_weights
from conftest import running

HEAVY_JOBS = 1300
LIGHT_JOBS = 600
COUNTED = 1200  # fewer than either queue could supply alone at its share


def enqueue_jobs(client, queue, n):
    """n jobs of type "fair" into ``queue``, in EnqueueBatch calls of at most
    1000 (the broker's limit)."""
    for start in range(0, n, 1000):
        results = client.enqueue_batch(queue, [{"type": "fair", "payload": {"n": i}}
                                               for i in range(start, min(n, start + 1000))])
        assert all(r.error is None for r in results), results


class QueueLog:
    """The queue of every job handled, in the order the handlers ran;
    ``full`` is set once ``limit`` jobs were handled."""

    def __init__(self, limit):
        self.limit = limit
        self.queues = []
        self.full = threading.Event()
        self._lock = threading.Lock()

    def add(self, queue):
        with self._lock:
            self.queues.append(queue)
            if len(self.queues) >= self.limit:
                self.full.set()

    def first(self):
        with self._lock:
            return collections.Counter(self.queues[:self.limit])


def check_split(counts, heavy, light):
    assert sum(counts.values()) == COUNTED, counts
    # Weights 3 : 1 over 1,200 jobs: 900 : 300. Strict order would give
    # every one of them to heavy.
    assert abs(counts[heavy] - 900) <= 60, counts
    assert abs(counts[light] - 300) <= 60, counts


def test_worker_splits_slots_by_weight(client, queue):
    heavy, light = queue + "-heavy", queue + "-light"
    enqueue_jobs(client, heavy, HEAVY_JOBS)
    enqueue_jobs(client, light, LIGHT_JOBS)
    log = QueueLog(COUNTED)
    w = Worker(client.addr, [heavy, light], concurrency=10,
               weights={heavy: 3, light: 1})
    assert w.weights == [3, 1]
    w.register("fair", lambda job: log.add(job.queue))
    with running(w):
        assert log.full.wait(15), "handled %d jobs" % len(log.queues)
    check_split(log.first(), heavy, light)


def test_aio_worker_splits_slots_by_weight(client, queue):
    heavy, light = queue + "-heavy", queue + "-light"
    enqueue_jobs(client, heavy, HEAVY_JOBS)
    enqueue_jobs(client, light, LIGHT_JOBS)
    log = QueueLog(COUNTED)

    async def main():
        w = aio.Worker(client.addr, [heavy, light], concurrency=10,
                       weights={heavy: 3, light: 1})
        assert w.weights == [3, 1]

        async def handle(job):
            log.add(job.queue)

        w.register("fair", handle)
        run = asyncio.create_task(w.run(install_signal_handlers=False))
        try:
            await asyncio.wait_for(asyncio.to_thread(log.full.wait, 15), 16)
        finally:
            await w.stop()
            await run

    asyncio.run(main())
    assert log.full.is_set(), "handled %d jobs" % len(log.queues)
    check_split(log.first(), heavy, light)


@pytest.mark.parametrize("weights,want", [
    (None, []),  # strict order
    ({}, []),
    ({"b": 2, "a": 1, "c": 1000}, [1, 2, 1000]),  # in the order of queues
])
def test_claim_weights_follow_queues(weights, want):
    assert claim_weights(["a", "b", "c"], weights) == want


@pytest.mark.parametrize("weights,error", [
    ({"a": 1}, r"^weights has no weight for queue 'b' \(with weights, every queue of queues "
               r"needs one\)$"),
    ({"a": 1, "b": 1, "c": 1}, r"^weights names queue 'c', which is not one of queues "
                               r"\['a', 'b'\]$"),
    ({"a": 0, "b": 1}, r"^weights\['a'\] must be an int 1\.\.1000, got 0$"),
    ({"a": 1, "b": 1001}, r"^weights\['b'\] must be an int 1\.\.1000, got 1001$"),
    ({"a": 1, "b": -3}, r"^weights\['b'\] must be an int 1\.\.1000, got -3$"),
    ({"a": 1.5, "b": 1}, r"^weights\['a'\] must be an int 1\.\.1000, got 1\.5$"),
    ({"a": "3", "b": 1}, r"^weights\['a'\] must be an int 1\.\.1000, got '3'$"),
    ({"a": True, "b": 1}, r"^weights\['a'\] must be an int 1\.\.1000, got True$"),
    ([3, 1], r"^weights must be a mapping of queue name -> weight, got list$"),
], ids=["missing", "unknown_queue", "zero", "over_1000", "negative", "float", "str", "bool",
        "not_a_mapping"])
@pytest.mark.parametrize("worker_class", [Worker, aio.Worker], ids=["sync", "aio"])
def test_worker_refuses_bad_weights(broker, worker_class, weights, error):
    with pytest.raises(ValueError, match=error):
        worker_class(broker.addr, ["a", "b"], weights=weights)
