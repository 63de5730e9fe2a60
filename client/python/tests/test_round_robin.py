"""round_robin by default (README, "Several brokers (Kubernetes)"): a target
that resolves to several brokers spreads a client's calls over all of them.

The target ``ipv4:<A>,<B>`` resolves to two brokers, as ``dns:///`` of a
headless Service resolves to every broker pod. With gRPC's default
pick_first every call would go to A.
"""
import asyncio
import json
import time
import uuid

import pytest

from jobwire import Client, JobState, JobwireError, Worker, aio
from jobwire._channel import SERVICE_CONFIG, channel_options
from conftest import Broker, broker_stack, running, wait_for
from test_worker import Outcomes

PICK_FIRST = json.dumps({"loadBalancingConfig": [{"pick_first": {}}]})


def both(a: Broker, b: Broker) -> str:
    """One target that resolves to both brokers."""
    return "ipv4:%s,%s" % (a.addr, b.addr)


@pytest.fixture(scope="module")
def two_stacks(tmp_path_factory):
    """Two independent stacks: each broker has its own redis-server."""
    with broker_stack(tmp_path_factory.mktemp("stack-a")) as a, \
            broker_stack(tmp_path_factory.mktemp("stack-b")) as b:
        yield a, b


@pytest.fixture
def shared_pair(redis_url, tmp_path):
    """Two brokers on one Redis, as deployed (any broker serves any call)."""
    pair = [Broker(redis_url, tmp_path), Broker(redis_url, tmp_path)]
    for b in pair:
        b.start()
    yield pair
    for b in pair:
        b.stop()


def _stored_on(directs, queue, job_id, payload):
    """The indexes of the brokers whose Redis holds job ``job_id`` with this
    payload (the stacks number their jobs alike: the payload tells them apart)."""
    found = []
    for i, direct in enumerate(directs):
        try:
            job = direct.get_job(queue, job_id)
        except JobwireError as e:
            if e.code.name != "NOT_FOUND":
                raise
            continue
        if job.json() == payload:
            found.append(i)
    return found


def _enqueue_until_both(enqueue, directs, queue, calls=200):
    """Enqueues one job a call (a few ms apart) until both brokers stored
    some; returns how many each stored. Every job is on exactly one."""
    per_broker = [0, 0]
    tag = uuid.uuid4().hex
    for n in range(calls):
        payload = {"tag": tag, "n": n}
        job_id = enqueue(payload)
        found = _stored_on(directs, queue, job_id, payload)
        assert len(found) == 1, "job %s stored on brokers %s" % (job_id, found)
        per_broker[found[0]] += 1
        if all(per_broker):
            break
        time.sleep(0.005)
    return per_broker


def test_channel_options_default_and_overrides():
    opts = dict(channel_options())
    assert json.loads(opts["grpc.service_config"]) == {"loadBalancingConfig": [{"round_robin": {}}]}
    assert opts["grpc.service_config"] == SERVICE_CONFIG
    # The caller's service config replaces the default ...
    assert dict(channel_options([("grpc.service_config", PICK_FIRST)]))[
        "grpc.service_config"] == PICK_FIRST
    # ... and a policy name drops it (gRPC core would let the service config win).
    opts = dict(channel_options([("grpc.lb_policy_name", "pick_first")]))
    assert "grpc.service_config" not in opts and opts["grpc.lb_policy_name"] == "pick_first"
    # The other options stay.
    assert opts["grpc.keepalive_time_ms"] == 360000


def test_client_spreads_calls_over_every_address(two_stacks, queue):
    a, b = two_stacks
    with Client(both(a, b), timeout=5.0) as c, Client(a.addr) as da, Client(b.addr) as db:
        per_broker = _enqueue_until_both(
            lambda p: c.enqueue(queue, "rr", p).job_id, (da, db), queue)
    assert all(per_broker), "jobs per broker %s: all on one (pick_first?)" % per_broker


def test_aio_client_spreads_calls_over_every_address(two_stacks, queue):
    a, b = two_stacks

    async def main():
        async with aio.Client(both(a, b), timeout=5.0) as c:
            with Client(a.addr) as da, Client(b.addr) as db:
                per_broker = [0, 0]
                tag = uuid.uuid4().hex
                for n in range(200):
                    payload = {"tag": tag, "n": n}
                    job_id = (await c.enqueue(queue, "rr", payload)).job_id
                    found = _stored_on((da, db), queue, job_id, payload)
                    assert len(found) == 1, "job %s stored on brokers %s" % (job_id, found)
                    per_broker[found[0]] += 1
                    if all(per_broker):
                        break
                    await asyncio.sleep(0.005)
                return per_broker

    per_broker = asyncio.run(main())
    assert all(per_broker), "jobs per broker %s: all on one (pick_first?)" % per_broker


@pytest.mark.parametrize("override", [("grpc.service_config", PICK_FIRST),
                                      ("grpc.lb_policy_name", "pick_first")],
                         ids=["service_config", "lb_policy_name"])
def test_channel_options_override_the_policy(two_stacks, queue, override):
    a, b = two_stacks
    with Client(both(a, b), timeout=5.0, channel_options=[override]) as c, \
            Client(a.addr) as da, Client(b.addr) as db:
        per_broker = [0, 0]
        tag = uuid.uuid4().hex
        for n in range(20):
            payload = {"tag": tag, "n": n}
            found = _stored_on((da, db), queue, c.enqueue(queue, "rr", payload).job_id, payload)
            assert len(found) == 1
            per_broker[found[0]] += 1
    assert per_broker == [20, 0], "pick_first: every call to the first address"


def calls(brokers, methods):
    """[calls of ``methods`` each broker handled], from its /metrics."""
    return [sum(v for (m, _), v in br.scrape_rpcs().items() if m in methods) for br in brokers]


def since(before, after):
    return [n - m for m, n in zip(before, after)]


def test_worker_on_several_brokers_processes_every_job(shared_pair, queue):
    """The Worker's one Work stream is on one broker; jobs enqueued through
    either broker (one Redis) all complete."""
    a, b = shared_pair
    before = calls((a, b), ("Work",))
    outcomes = Outcomes()
    w = Worker(both(a, b), [queue], concurrency=10, on_outcome=outcomes)
    w.register("rr", lambda job: job.json())
    with Client(a.addr) as da, Client(b.addr) as db:
        ids = [d.enqueue(queue, "rr", {"n": n}).job_id for n in range(5) for d in (da, db)]
        with running(w):
            wait_for(lambda: all(da.get_job(queue, i).state == JobState.COMPLETED for i in ids),
                     timeout=15, what="every job to complete")
    assert sorted(o.kind for o in outcomes.items) == ["ack_ok"] * 10
    streams = since(before, calls((a, b), ("Work",)))
    assert sorted(streams) == [0, 1], "Work streams per broker: %s" % streams


@pytest.mark.parametrize("older", [False, True], ids=["work", "older_than_work"])
def test_worker_slots_free_at_once_with_several_brokers(shared_pair, queue, older, request):
    """The Worker's channel is round_robin too. Its acks go on its one Work
    stream, to the broker that holds their slots, which frees them at once
    (instead of when the lease ends): no Ack or AckBatch call. With a broker
    older than Work, its Claim stream is on one broker and its AckBatch calls
    go to both; the broker that gets an Ack for the other's stream tells it,
    which frees the stream's slot at once too (broker.proto, Claim)."""
    if older:
        request.getfixturevalue("older_broker")
    a, b = shared_pair
    methods = ("Ack", "AckBatch", "Work", "Claim")
    before = {m: calls((a, b), (m,)) for m in methods}
    outcomes = Outcomes()
    w = Worker(both(a, b), [queue], concurrency=1, lease_ms=30000, on_outcome=outcomes)
    w.register("rr", lambda job: None)
    with Client(a.addr) as da:
        ids = [da.enqueue(queue, "rr").job_id for _ in range(8)]
        with running(w):
            # One stream slot: each job is claimed once the previous one's
            # Ack freed it; a slot held to its lease's end would take 30 s.
            wait_for(lambda: all(da.get_job(queue, i).state == JobState.COMPLETED for i in ids),
                     timeout=10, what="every job to complete")
    assert sorted(o.kind for o in outcomes.items) == ["ack_ok"] * 8
    made = {m: since(before[m], calls((a, b), (m,))) for m in methods}
    acks = [x + y for x, y in zip(made["Ack"], made["AckBatch"])]
    if older:
        assert sorted(made["Claim"]) == [0, 1] and made["Work"] == [0, 0], made
        assert all(acks), "Ack calls per broker: %s (round_robin spreads them)" % acks
    else:
        assert sorted(made["Work"]) == [0, 1] and made["Claim"] == [0, 0], made
        assert acks == [0, 0], "Ack calls per broker: %s (the acks went on the stream)" % acks

