"""The Worker's rules as pure functions (docs/clients.md, Worker), shared by
the threaded and the asyncio Worker: the Claim stream's reopen backoff, the
types a Claim names, the lease length a broker older than
ClaimedJob.lease_ms leaves, and when and after how long an Ack / Fail may be
sent again. No broker needed."""
import grpc
import pytest

from jobwire import JobwireError
from jobwire._claim_types import check_handlers, claim_types
from jobwire._errors import ClientCancelled
from jobwire._lease_rules import (cut_by_client, lease_length_s, may_resend, retry_jitter,
                                  unanswered)
from jobwire._reconnect import reconnect_delay


@pytest.mark.parametrize("attempt,cap_s", [(0, 0.1), (1, 0.2), (2, 0.4), (5, 3.2), (6, 5.0),
                                           (7, 5.0), (60, 5.0)])
def test_reconnect_delay_is_full_jitter_up_to_the_doubled_cap(attempt, cap_s):
    delays = [reconnect_delay(attempt) for _ in range(2000)]
    assert all(0.0 <= d <= cap_s for d in delays), (min(delays), max(delays))
    # Full jitter ([0, d]), not half-to-full ([d/2, d]): about a quarter of
    # the draws fall below d/4 (the chance that none of 2000 does: nil).
    assert min(delays) < cap_s / 4
    assert max(delays) > cap_s * 3 / 4


@pytest.mark.parametrize("granted_ms,configured_ms,want_s", [
    (1500, None, 1.5),    # the lease the broker granted wins
    (1500, 4000, 1.5),
    (0, 4000, 4.0),       # an older broker: the lease the Claim asked for
    (0, None, 30.0),      # ... or, asked for the broker's default: 30 s
])
def test_lease_length(granted_ms, configured_ms, want_s):
    assert lease_length_s(granted_ms, configured_ms) == want_s


@pytest.mark.parametrize("code,lost,by_client,want", [
    (grpc.StatusCode.UNAVAILABLE, False, False, True),
    (grpc.StatusCode.DEADLINE_EXCEEDED, False, False, True),
    # A CANCELLED the client did not cause (a broker shutting down,
    # grpc/grpc#41785) as UNAVAILABLE; one the client caused is final.
    (grpc.StatusCode.CANCELLED, False, False, True),
    (grpc.StatusCode.CANCELLED, False, True, False),
    (grpc.StatusCode.UNAVAILABLE, True, False, False),  # lease known lost: sent once
    (grpc.StatusCode.DEADLINE_EXCEEDED, True, False, False),
    (grpc.StatusCode.CANCELLED, True, False, False),
    (grpc.StatusCode.FAILED_PRECONDITION, False, False, False),
    (grpc.StatusCode.NOT_FOUND, False, False, False),
])
def test_may_resend(code, lost, by_client, want):
    assert may_resend(code, lost, cancelled_by_client=by_client) is want


@pytest.mark.parametrize("code,by_client,want", [
    (grpc.StatusCode.UNAVAILABLE, False, True),
    (grpc.StatusCode.UNAVAILABLE, True, True),
    (grpc.StatusCode.DEADLINE_EXCEEDED, False, True),
    (grpc.StatusCode.DEADLINE_EXCEEDED, True, True),
    # A broker shutting down (gRPC core, grpc/grpc#41785) ...
    (grpc.StatusCode.CANCELLED, False, True),
    # ... but not a call the client cut itself.
    (grpc.StatusCode.CANCELLED, True, False),
    (grpc.StatusCode.FAILED_PRECONDITION, False, False),
    (grpc.StatusCode.NOT_FOUND, False, False),
    (grpc.StatusCode.INTERNAL, False, False),
])
def test_unanswered(code, by_client, want):
    """Whether an Ack / Fail answered ``code`` went unanswered (sent again;
    the last attempt's outcome unknown, not ``*_error``)."""
    assert unanswered(code, by_client) is want


def test_cut_by_client():
    """Only a CANCELLED the client made for a call it cut, or any once the
    Worker was closed, counts as caused by the client."""
    broker_cancelled = JobwireError(grpc.StatusCode.CANCELLED, "CANCELLED")
    own = ClientCancelled("channel closed")
    assert not cut_by_client(broker_cancelled, False)
    assert cut_by_client(broker_cancelled, True)  # the Worker was closed: its own close
    assert cut_by_client(own, False)
    # The ack coalescer hands each ack a copy: still the client's own.
    copy = own._copy()
    assert copy is not own and cut_by_client(copy, False)
    assert (copy.code, copy.message) == (grpc.StatusCode.CANCELLED, "channel closed")


@pytest.mark.parametrize("backoff_s", [0.1, 0.4, 2.0])
def test_ack_fail_retry_jitter_is_full(backoff_s):
    waits = [retry_jitter(backoff_s) for _ in range(2000)]
    assert all(0.0 <= w <= backoff_s for w in waits), (min(waits), max(waits))
    # Full jitter ([0, d]) as the Go client's, not half-to-full ([d/2, d]).
    assert min(waits) < backoff_s / 4
    assert max(waits) > backoff_s * 3 / 4


def test_claim_types_are_the_handlers_types_sorted():
    assert claim_types({"b": 1, "a": 2, "C": 3}) == ["C", "a", "b"]


@pytest.mark.parametrize("n,error", [
    (0, "no handler registered"),  # an empty types would claim every type
    (1, None),
    (64, None),
    (65, "65 job types have handlers; a Worker takes at most 64"),
])
def test_check_handlers(n, error):
    handlers = {"t%d" % i: None for i in range(n)}
    if error is None:
        check_handlers(handlers)
    else:
        with pytest.raises(ValueError, match=error):
            check_handlers(handlers)
