"""``Client.subscribe``: the events of one or more queues over Subscribe
calls (docs/clients.md, Producer). ``SubscribeState`` holds the rules both
clients share (what to send, what each message and each error means);
``Subscription`` (sync) and ``AioSubscription`` (asyncio) read the stream
only as fast as the caller takes events, and subscribe again by themselves
after UNAVAILABLE, a CANCELLED the client did not cause (a broker shutting
down: ``_reconnect.broker_went_away``), SUBSCRIBER_TOO_SLOW or
TOO_MANY_SUBSCRIPTIONS, with one ``'events_missed'`` event for the gap."""
from __future__ import annotations

import asyncio
import collections
import threading
from typing import Any, Callable, Deque, Iterable, List, Optional, Union

import grpc
import grpc.aio

from ._errors import JobwireError, Reason
from ._reconnect import broker_went_away, reconnect_delay
from ._types import QueueEvent
from .v1 import broker_pb2 as pb

# The kinds a subscription may ask for (broker.proto, EventKind), in the
# proto's order.
EVENT_KINDS = ("enqueued", "active", "completed", "retry", "dead", "cancelled",
               "lease_expired", "released", "redriven", "deleted", "progress",
               "cancel_requested", "timed_out")
# The kind of the event the client delivers when events may have been lost.
EVENTS_MISSED = "events_missed"

_KIND_VALUE = {name: pb.EventKind.Value("EVENT_KIND_" + name.upper()) for name in EVENT_KINDS}
_KIND_NAME = {value: name for name, value in _KIND_VALUE.items()}

# The errors after which a subscription that ran subscribes again: the
# broker restarting or draining (broker_went_away: UNAVAILABLE, or CANCELLED
# the client did not cause), or cutting the stream off (these reasons).
_RESUBSCRIBE_REASONS = (Reason.SUBSCRIBER_TOO_SLOW, Reason.TOO_MANY_SUBSCRIPTIONS)

Queues = Union[str, Iterable[str]]
Kinds = Union[None, str, Iterable[str]]


def _never() -> bool:
    return False


def _names(value, what: str) -> List[str]:
    """A str as a list of one, else the items, each a str (TypeError)."""
    items = [value] if isinstance(value, str) else list(value)
    for item in items:
        if not isinstance(item, str):
            raise TypeError("subscribe %s must be strings, got %r" % (what, item))
    return items


def build_subscribe_request(queues: Queues, kinds: Kinds = None,
                            include_details: bool = False) -> "pb.SubscribeRequest":
    """The SubscribeRequest. ``queues``: a name or names (checked by the
    broker: INVALID_ARGUMENT). ``kinds``: None or empty for all, else names
    of EVENT_KINDS; raises ValueError naming a kind that is not one
    (``'events_missed'`` included: it is delivered, never asked for) and
    TypeError for what is not a string."""
    req = pb.SubscribeRequest(queues=_names(queues, "queues"),
                              include_details=bool(include_details))
    for kind in _names(kinds or (), "kinds"):
        if kind not in _KIND_VALUE:
            raise ValueError("unknown event kind %r (%s); one of: %s" % (
                kind, "delivered by the client, never requested" if kind == EVENTS_MISSED
                else "not an event kind", ", ".join(EVENT_KINDS)))
        req.kinds.append(_KIND_VALUE[kind])
    return req


def event_from_proto(ev: "pb.QueueEvent") -> QueueEvent:
    return QueueEvent(kind=_KIND_NAME.get(ev.kind, "unknown"), queue=ev.queue, job_id=ev.job_id,
                      type=ev.type, attempts=ev.attempts, at_ms=ev.at_ms,
                      result=bytes(ev.result), error=ev.error,
                      progress_percent=(ev.progress_percent if ev.HasField("progress_percent")
                                        else None),
                      progress_data=bytes(ev.progress_data))


class SubscribeState:
    """One subscription's rules: the request, the events of each message,
    the wait before subscribing again. Not thread-safe (one reader)."""

    def __init__(self, request: "pb.SubscribeRequest", confirm_within: float):
        self.request = request
        # How long a call has for its first message (the broker's
        # confirmation) before the client gives up on it.
        self.confirm_within = confirm_within
        self._attempt = 0  # calls failed since the last confirmation
        self._missed = False  # a stream ended: the next confirmation brings events_missed

    def take(self, resp: "pb.SubscribeResponse") -> List[QueueEvent]:
        """The events a message carries: one ``'events_missed'`` first when
        it says events were lost, or when it confirms a subscription made
        again after a stream ended."""
        events = []
        if resp.events_missed or (resp.subscribed and self._missed):
            events.append(QueueEvent(kind=EVENTS_MISSED))
        if resp.subscribed:
            self._missed = False
            self._attempt = 0
        events.extend(event_from_proto(ev) for ev in resp.events)
        return events

    def retry_delay(self, err: JobwireError, *, cancelled_by_client: bool) -> float:
        """The wait (seconds) before subscribing again after a stream that
        ran ended with ``err`` (or a call made again failed with it): the
        reconnect backoff (100 ms doubling to 5 s, full jitter), or the
        broker's RetryInfo when larger. Raises ``err`` unless it is
        UNAVAILABLE, CANCELLED with ``cancelled_by_client`` false (a broker
        shutting down, grpc/grpc#41785: ``_reconnect.broker_went_away``),
        RESOURCE_EXHAUSTED with SUBSCRIBER_TOO_SLOW or
        TOO_MANY_SUBSCRIPTIONS, or the client's own DEADLINE_EXCEEDED (no
        confirmation in time). ``cancelled_by_client``: the client cancelled
        the call (the Client was closed); its CANCELLED is raised."""
        retry = (broker_went_away(err.code, cancelled_by_client)
                 or (err.code == grpc.StatusCode.RESOURCE_EXHAUSTED
                     and err.reason in _RESUBSCRIBE_REASONS)
                 or (err.code == grpc.StatusCode.DEADLINE_EXCEEDED and not err.reason))
        if not retry:
            raise err
        self._missed = True
        delay = reconnect_delay(self._attempt)
        self._attempt += 1
        return max(delay, err.retry_delay or 0.0)

    def not_confirmed(self) -> JobwireError:
        """The error of a call whose first message did not come in time."""
        return JobwireError(grpc.StatusCode.DEADLINE_EXCEEDED,
                            "Subscribe not confirmed by the broker within %gs"
                            % self.confirm_within)

    @staticmethod
    def ended() -> JobwireError:
        """The error of a stream that ended OK, which the broker never does."""
        return JobwireError(grpc.StatusCode.INTERNAL, "Subscribe stream ended without an error")


class Subscription:
    """The events of ``jobwire.Client.subscribe``: an iterator of
    ``QueueEvent`` and a context manager (``close()`` on exit).

    Created subscribed (the broker confirmed). Each ``next()`` reads the
    stream only when the events already read are taken, so a caller that
    falls behind is cut off by the broker (SUBSCRIBER_TOO_SLOW) rather than
    buffered here. Subscribing again after a gap happens inside ``next()``,
    which blocks meanwhile. ``next()`` raises the error that ended the
    subscription (then StopIteration), and StopIteration once closed.

    Thread safety: one thread iterates; ``close()`` may be called from any
    thread, and ends an iteration blocked in ``next()`` at once."""

    def __init__(self, stub: Any, metadata: Any, state: SubscribeState,
                 client_closed: Optional[Callable[[], bool]] = None):
        self._stub = stub
        self._metadata = metadata
        self._state = state
        # Whether the Client was closed (its channel close cancels the call).
        self._client_closed = client_closed or _never
        self._pending: Deque[QueueEvent] = collections.deque()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._call: Any = None  # guarded by _lock
        self._open()

    def __iter__(self) -> "Subscription":
        return self

    def __next__(self) -> QueueEvent:
        while True:
            if self._pending:
                return self._pending.popleft()
            if self._closed.is_set():
                raise StopIteration
            try:
                resp = next(self._call)
            except StopIteration:
                err = self._state.ended()
            except grpc.RpcError as e:
                err = JobwireError.from_rpc_error(e)
            else:
                self._pending.extend(self._state.take(resp))
                continue
            if self._closed.is_set():
                raise StopIteration
            self._resubscribe(err)

    def close(self) -> None:
        """End the subscription: its call is cancelled, events not yet taken
        are dropped, and iterating stops. Idempotent."""
        with self._lock:
            self._closed.set()
            call = self._call
        if call is not None:
            call.cancel()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _open(self) -> None:
        """One Subscribe call, confirmed: its first message's events are
        pending. Raises JobwireError: the call's error, or DEADLINE_EXCEEDED
        when no message came within ``confirm_within``. Returns at once,
        with nothing pending, when the subscription is closed meanwhile."""
        call = self._stub.Subscribe(self._state.request, metadata=self._metadata)
        with self._lock:
            self._call = call
            if self._closed.is_set():
                call.cancel()
                return
        late = threading.Event()

        def give_up() -> None:
            late.set()
            call.cancel()

        timer = threading.Timer(self._state.confirm_within, give_up)
        timer.daemon = True
        timer.start()
        try:
            first = next(call)
        except StopIteration:
            raise self._state.ended() from None
        except grpc.RpcError as e:
            if self._closed.is_set():
                return
            # give_up sets ``late`` before it cancels: its CANCELLED is the
            # client's own, never one to subscribe again after as such.
            if late.is_set() and e.code() == grpc.StatusCode.CANCELLED:
                raise self._state.not_confirmed() from None
            raise JobwireError.from_rpc_error(e) from None
        finally:
            timer.cancel()
            # A give_up already running finishes first: once this returns,
            # no timer cancels the call unseen (a CANCELLED read later is not
            # the client's unless it closed the subscription or the Client).
            timer.join()
        if late.is_set():  # the message came as the timer cancelled the call
            raise self._state.not_confirmed()
        self._pending.extend(self._state.take(first))

    def _resubscribe(self, err: JobwireError) -> None:
        """Subscribe again after the stream ended with ``err``, waiting the
        backoff before each call, until a call is confirmed or the
        subscription is closed. Raises (and closes) on an error that is not
        one to subscribe again after."""
        while True:
            try:
                delay = self._state.retry_delay(err, cancelled_by_client=self._cancelled())
            except JobwireError:
                self.close()
                raise
            if self._closed.wait(delay):
                return
            try:
                self._open()
                return
            except JobwireError as e:
                if self._closed.is_set():
                    return
                err = e

    def _cancelled(self) -> bool:
        """Whether the client cancelled the call itself: ``close()``, or
        the Client closed. (The confirmation timer's cancel is
        DEADLINE_EXCEEDED by then: ``_open``.)"""
        return self._closed.is_set() or self._client_closed()


class AioSubscription:
    """The events of ``jobwire.aio.Client.subscribe``: an async iterator of
    ``QueueEvent`` and an async context manager.

    Subscribes when first used: ``async with client.subscribe(...) as sub``,
    ``sub = await client.subscribe(...)`` or the first ``async for`` step
    wait for the broker's confirmation (and raise its refusal). Then as
    ``Subscription``: the stream is read only as fast as events are taken,
    a gap is bridged inside ``__anext__`` (with ``'events_missed'``), an
    error that ends the subscription is raised from it. ``close()`` (sync)
    or ``await aclose()`` ends it; so does cancelling the task that awaits
    it. Use it from one event loop; ``close()`` from that loop's thread."""

    def __init__(self, stub: Any, metadata: Any, state: SubscribeState,
                 client_closed: Optional[Callable[[], bool]] = None):
        self._stub = stub
        self._metadata = metadata
        self._state = state
        self._client_closed = client_closed or _never  # as Subscription's
        self._pending: Deque[QueueEvent] = collections.deque()
        self._started = False
        self._closed = False
        self._closed_event: Optional[asyncio.Event] = None  # made on the loop
        self._call: Any = None

    def __await__(self):
        return self._start().__await__()

    async def __aenter__(self) -> "AioSubscription":
        return await self._start()

    async def __aexit__(self, *exc) -> None:
        self.close()

    def __aiter__(self) -> "AioSubscription":
        return self

    async def __anext__(self) -> QueueEvent:
        await self._start()
        while True:
            if self._pending:
                return self._pending.popleft()
            if self._closed:
                raise StopAsyncIteration
            try:
                resp = await self._call.read()
            except asyncio.CancelledError:
                if self._closed:  # close() cancelled the call
                    raise StopAsyncIteration from None
                self.close()  # the awaiting task was cancelled
                raise
            except grpc.aio.AioRpcError as e:
                err = JobwireError.from_rpc_error(e)
            else:
                if resp is not grpc.aio.EOF:
                    self._pending.extend(self._state.take(resp))
                    continue
                err = self._state.ended()
            if self._closed:
                raise StopAsyncIteration
            await self._resubscribe(err)

    def close(self) -> None:
        """End the subscription: its call is cancelled, events not yet taken
        are dropped, and iterating stops. Idempotent."""
        self._closed = True
        if self._closed_event is not None:
            self._closed_event.set()
        if self._call is not None:
            self._call.cancel()

    async def aclose(self) -> None:
        """``close()``, for ``contextlib.aclosing`` and the like."""
        self.close()

    @property
    def closed(self) -> bool:
        return self._closed

    async def _start(self) -> "AioSubscription":
        """Subscribes once (later calls return at once). Raises as
        ``jobwire.Client.subscribe``, closing the subscription."""
        if not self._started:
            self._started = True
            self._closed_event = asyncio.Event()
            if self._closed:
                self._closed_event.set()
            try:
                await self._open()
            except BaseException:
                self.close()
                raise
        return self

    async def _open(self) -> None:
        """As ``Subscription._open``."""
        if self._closed:
            return
        call = self._stub.Subscribe(self._state.request, metadata=self._metadata)
        self._call = call
        try:
            first = await asyncio.wait_for(call.read(), self._state.confirm_within)
        except asyncio.TimeoutError:
            call.cancel()
            raise self._state.not_confirmed() from None
        except asyncio.CancelledError:
            if self._closed:
                return
            self.close()
            raise
        except grpc.aio.AioRpcError as e:
            raise JobwireError.from_rpc_error(e) from None
        if first is grpc.aio.EOF:
            raise self._state.ended()
        self._pending.extend(self._state.take(first))

    async def _resubscribe(self, err: JobwireError) -> None:
        """As ``Subscription._resubscribe``. (grpc.aio raises a call the
        client cancelled, by ``close()`` or by closing the Client, as
        asyncio.CancelledError, not AioRpcError; ``cancelled_by_client``
        says so all the same.)"""
        while True:
            try:
                delay = self._state.retry_delay(
                    err, cancelled_by_client=self._closed or self._client_closed())
            except JobwireError:
                self.close()
                raise
            try:
                await asyncio.wait_for(self._closed_event.wait(), delay)
                return  # closed
            except asyncio.TimeoutError:
                pass
            try:
                await self._open()
                return
            except JobwireError as e:
                if self._closed:
                    return
                err = e
