"""Concurrency keys through the Python client (docs/semantics.md,
"Concurrency per key"): the key travels with the job, and a Worker of this
client never runs more jobs of one key at once than the queue's
max_active_per_key, while other keys' jobs run beside them."""
import threading
import time

import grpc

from jobwire import Worker
from jobwire.v1 import admin_pb2, admin_pb2_grpc
from conftest import running, wait_for


def test_the_key_travels_with_the_job(client, queue):
    r = client.enqueue(queue, "t", {"n": 1}, concurrency_key="customer-7")
    assert client.get_job(queue, r.job_id).concurrency_key == "customer-7"
    [b] = client.enqueue_batch(queue, [{"type": "t", "concurrency_key": "customer-8"}])
    assert client.get_job(queue, b.job_id).concurrency_key == "customer-8"
    assert client.get_job(queue, client.enqueue(queue, "t").job_id).concurrency_key == ""


def test_a_worker_runs_at_most_the_limit_per_key(broker, client, queue):
    with grpc.insecure_channel(broker.addr) as ch:
        admin_pb2_grpc.AdminServiceStub(ch).CreateQueue(
            admin_pb2.CreateQueueRequest(queue=queue, max_active_per_key=1), timeout=5)
    lock = threading.Lock()
    running_now = {}
    most = {}
    total = [0, 0]  # now, most
    done = []
    w = Worker(broker.addr, [queue], concurrency=8)

    @w.handler("work")
    def work(job):
        key = job.concurrency_key
        with lock:
            running_now[key] = running_now.get(key, 0) + 1
            most[key] = max(most.get(key, 0), running_now[key])
            total[0] += 1
            total[1] = max(total[1], total[0])
        time.sleep(0.1)
        with lock:
            running_now[key] -= 1
            total[0] -= 1
            done.append(key)

    with running(w):
        client.enqueue_batch(queue, [{"type": "work", "concurrency_key": k}
                                     for _ in range(4) for k in ("a", "b")])
        wait_for(lambda: len(done) == 8, timeout=15, what="8 jobs run")
    assert most == {"a": 1, "b": 1}, most
    assert total[1] == 2, "the keys' jobs did not run beside each other"
    with grpc.insecure_channel(broker.addr) as ch:
        stats = admin_pb2_grpc.AdminServiceStub(ch).GetQueueStats(
            admin_pb2.GetQueueStatsRequest(queue=queue), timeout=5).stats
    assert stats.max_active_per_key == 1 and stats.pending_due == 0
