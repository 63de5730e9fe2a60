"""The requests and answers the clients share (Client, aio.Client, the
Workers): Enqueue / EnqueueBatch / Ack / ReportProgress requests built from
Python values, and the batch answers turned into EnqueueResult / AckResult."""
from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence

import grpc

from ._errors import JobwireError
from ._types import (AckResult, EnqueueResult, check_depends_on,
                     check_depends_on_batch_index, check_headers, encode_payload,
                     encode_result, to_epoch_ms, to_ms)
from .v1 import broker_pb2 as pb

_OPTION_NAMES = (
    "priority",
    "delay_ms",
    "run_at",
    "max_attempts",
    "idempotency_key",
    "backoff_base_ms",
    "backoff_max_ms",
    "completed_retention_ms",
    "timeout_ms",
    "headers",
    "concurrency_key",
    "depends_on",
    "run_after_failed_dependency",
    "depends_on_batch_index",
)

_NO_PAYLOAD = b""


def build_enqueue_request(
    queue: str,
    type: str,
    payload: Any = _NO_PAYLOAD,
    *,
    priority: Optional[int] = None,
    delay_ms: Any = None,
    run_at: Any = None,
    max_attempts: Optional[int] = None,
    idempotency_key: Optional[str] = None,
    backoff_base_ms: Any = None,
    backoff_max_ms: Any = None,
    completed_retention_ms: Any = None,
    timeout_ms: Any = None,
    headers: Optional[Mapping[str, str]] = None,
    concurrency_key: Optional[str] = None,
    depends_on: Optional[Sequence[str]] = None,
    run_after_failed_dependency: Optional[bool] = None,
    depends_on_batch_index: Optional[Sequence[int]] = None,
) -> "pb.EnqueueRequest":
    """The EnqueueRequest for one job. Unset options (None) take the broker
    defaults; limits are checked by the broker, whose message is surfaced.
    ``completed_retention_ms``: how long the job is kept once completed (0 =
    deleted on ack; at most the broker's --completed_retention_max_ms).
    ``timeout_ms``: the longest a run may take (0..7 days; 0: the broker's
    --default_job_timeout_ms, none out of the box). ``headers``: a mapping of
    str to str that travels with the job to its handler (``job.headers``);
    TypeError for other types, the broker checks the rest. ``concurrency_key``:
    groups the job under its queue's max_active_per_key and key_rate_limit
    limits (e.g. a customer id; at most 128 bytes). ``depends_on``: a sequence of 0..20 job
    ids of the same queue that must complete before this job is due (their
    results reach its handler as ``job.dependency_results``); a str, or
    items that are not str, are a TypeError, the broker checks the rest.
    ``run_after_failed_dependency``: a parent that ends dead (or is deleted)
    counts as done instead of making this job dead.
    ``depends_on_batch_index`` (``enqueue_batch`` only; the broker refuses it
    in ``enqueue``, INVALID_ARGUMENT): parents among the batch's earlier
    jobs, by index; a str, or items that are not int, are a TypeError."""
    header_map = check_headers(headers)
    parents = check_depends_on(depends_on)
    batch_parents = check_depends_on_batch_index(depends_on_batch_index)
    req = pb.EnqueueRequest(queue=queue, type=type, payload=encode_payload(payload))
    if priority is not None:
        req.priority = int(priority)
    if delay_ms is not None:
        req.delay_ms = to_ms(delay_ms, "delay_ms")
    if run_at is not None:
        req.run_at_ms = to_epoch_ms(run_at)
    if max_attempts is not None:
        req.max_attempts = int(max_attempts)
    if idempotency_key is not None:
        req.idempotency_key = idempotency_key
    if concurrency_key is not None:
        req.concurrency_key = concurrency_key
    if backoff_base_ms is not None:
        req.backoff_base_ms = to_ms(backoff_base_ms, "backoff_base_ms")
    if backoff_max_ms is not None:
        req.backoff_max_ms = to_ms(backoff_max_ms, "backoff_max_ms")
    if completed_retention_ms is not None:
        req.completed_retention_ms = to_ms(completed_retention_ms, "completed_retention_ms")
    if timeout_ms is not None:
        req.timeout_ms = to_ms(timeout_ms, "timeout_ms")
    if header_map:
        req.headers.update(header_map)
    if parents:
        req.depends_on.extend(parents)
    if batch_parents:
        req.depends_on_batch_index.extend(batch_parents)
    if run_after_failed_dependency is not None:
        req.run_after_failed_dependency = bool(run_after_failed_dependency)
    return req


def build_progress_request(queue: str, job_id: str, lease_token: str,
                           percent: Optional[int] = None,
                           data: Any = b"") -> "pb.ReportProgressRequest":
    """The ReportProgressRequest of one run: ``percent`` (None: absent) and
    ``data`` (bytes unchanged, None → empty, anything else JSON). Limits
    (0..100, 4096 bytes, at least one given) are checked by the broker."""
    req = pb.ReportProgressRequest(queue=queue, job_id=job_id, lease_token=lease_token,
                                   data=encode_result(data))
    if percent is not None:
        if isinstance(percent, bool) or not isinstance(percent, int):
            raise TypeError("percent must be an int (0..100) or None, got %r" % (percent,))
        req.percent = percent
    return req


def _batch_item(queue: str, item: Any) -> "pb.EnqueueRequest":
    if not isinstance(item, Mapping):
        raise TypeError(
            "enqueue_batch jobs must be dicts {type, payload, options}, got %r" % (item,)
        )
    item = dict(item)
    try:
        job_type = item.pop("type")
    except KeyError:
        raise TypeError("enqueue_batch job without 'type': %r" % (item,)) from None
    payload = item.pop("payload", _NO_PAYLOAD)
    options = dict(item.pop("options", None) or {})
    for name in _OPTION_NAMES:  # options may also be given inline
        if name in item:
            options[name] = item.pop(name)
    if item:
        raise TypeError("enqueue_batch job has unknown keys: %s" % ", ".join(sorted(item)))
    unknown = set(options) - set(_OPTION_NAMES)
    if unknown:
        raise TypeError("unknown enqueue options: %s" % ", ".join(sorted(unknown)))
    return build_enqueue_request(queue, job_type, payload, **options)


_ACK_KEYS = ("queue", "job_id", "lease_token")


def _ack_item(item: Any) -> "pb.AckRequest":
    if not isinstance(item, Mapping):
        raise TypeError(
            "ack_batch acks must be dicts {queue, job_id, lease_token, result}, got %r" % (item,)
        )
    missing = [k for k in _ACK_KEYS if k not in item]
    if missing:
        raise TypeError("ack_batch ack without %s: %r" % (", ".join(missing), item))
    unknown = set(item) - set(_ACK_KEYS) - {"result"}
    if unknown:
        raise TypeError("ack_batch ack has unknown keys: %s" % ", ".join(sorted(unknown)))
    return pb.AckRequest(queue=item["queue"], job_id=item["job_id"],
                         lease_token=item["lease_token"],
                         result=encode_result(item.get("result")))


def publish_tracer(tracing: bool, tracer_provider: Any) -> Any:
    """The producer side of tracing (``jobwire.tracing.PublishTracer``) when
    ``tracing`` is on, else None (nothing traced, opentelemetry not
    imported). ImportError without ``opentelemetry-api`` (jobwire[otel])."""
    if not tracing:
        return None
    from .tracing import PublishTracer
    return PublishTracer(tracer_provider)


def build_enqueue_results(resp: "pb.EnqueueBatchResponse") -> List[EnqueueResult]:
    """``enqueue_batch``'s answer: one EnqueueResult per job, in order; a
    refused job's ``error`` carries the result's code, message and reason."""
    return [EnqueueResult(job_id=r.job_id, duplicate=r.duplicate) if r.code == 0 else
            EnqueueResult(job_id=r.job_id, duplicate=r.duplicate,
                          error=JobwireError.from_result(r.code, r.message, r.reason))
            for r in resp.results]


def ack_batch_errors(requests: Sequence["pb.AckRequest"],
                     resp: "pb.AckBatchResponse") -> List[Optional[JobwireError]]:
    """The per-ack errors of an AckBatch answer, in request order (None: the
    ack was stored; else a JobwireError with the result's code, message and
    reason, e.g. LEASE_STALE). Raises JobwireError(INTERNAL) when the broker
    answered a different number of results (shared with the workers'
    coalescers)."""
    if len(resp.results) != len(requests):
        raise JobwireError(grpc.StatusCode.INTERNAL, "AckBatch answered %d results for %d acks"
                           % (len(resp.results), len(requests)))
    return [None if r.code == 0 else JobwireError.from_result(r.code, r.message, r.reason)
            for r in resp.results]


def build_ack_results(requests: Sequence["pb.AckRequest"],
                      resp: "pb.AckBatchResponse") -> List[AckResult]:
    """``ack_batch``'s answer: one AckResult per request, in order."""
    return [AckResult(queue=req.queue, job_id=req.job_id, error=err)
            for req, err in zip(requests, ack_batch_errors(requests, resp))]
