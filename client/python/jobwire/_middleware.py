"""Handler middleware (``Worker.use``), the same rules for both Workers
(threaded and asyncio; docs/clients.md, Worker):

- a middleware wraps every handler of the Worker: ``mw(job, call_next)``,
  where ``call_next(job)`` runs the next layer (the next middleware, in the
  end the handler) and returns its result;
- the first registered is the outermost;
- what the outermost layer returns or raises is what the Worker settles
  (Ack with that result, or Fail with that exception);
- registering after the Worker started raises RuntimeError.

In ``jobwire.aio.Worker`` a middleware is an ``async def`` (``await
call_next(job)``); a plain function returning an awaitable works too.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Sequence

from ._types import Job

Middleware = Callable[[Job, Callable[[Job], Any]], Any]

# Set by jobwire.tracing on the middlewares it makes: the Worker they are for.
FLAVOUR_ATTR = "_jobwire_worker"


def check_middleware(mw: Any, flavour: str, started: bool) -> None:
    """Raises when ``mw`` may not be added to a Worker of ``flavour``
    ("threaded" or "asyncio"): RuntimeError once the Worker ``started``;
    TypeError when it is not callable, or made for the other Worker (an
    ``async def`` cannot wrap a threaded Worker's handlers)."""
    if started:
        raise RuntimeError("Worker.use() must be called before run()")
    if not callable(mw):
        raise TypeError("middleware must be callable, got %r" % (mw,))
    made_for = getattr(mw, FLAVOUR_ATTR, None)
    if flavour == "threaded" and (made_for == "asyncio" or inspect.iscoroutinefunction(mw)):
        raise TypeError("an async middleware needs jobwire.aio.Worker (for jobwire.Worker: "
                        "jobwire.tracing.tracing_middleware, or a plain function)")
    if flavour == "asyncio" and made_for == "threaded":
        raise TypeError("this middleware is for jobwire.Worker; with jobwire.aio.Worker use "
                        "jobwire.tracing.async_tracing_middleware")


def chain(middlewares: Sequence[Middleware], handler: Callable[[Job], Any]) -> Callable[[Job], Any]:
    """``handler`` wrapped in ``middlewares``, the first the outermost: a
    function of the job."""
    call = handler
    for mw in reversed(middlewares):
        call = functools.partial(_layer, mw, call)
    return call


def _layer(mw: Middleware, call_next: Callable[[Job], Any], job: Job) -> Any:
    return mw(job, call_next)


def aio_chain(middlewares: Sequence[Middleware],
              handler: Callable[[Job], Any]) -> Callable[[Job], Any]:
    """``chain`` for asyncio: ``handler`` is a coroutine function of the job;
    so is the result, and so is each ``call_next``."""
    call = handler
    for mw in reversed(middlewares):
        call = functools.partial(_aio_layer, mw, call)
    return call


async def _aio_layer(mw: Middleware, call_next: Callable[[Job], Any], job: Job) -> Any:
    value = mw(job, call_next)
    if inspect.isawaitable(value):
        value = await value
    return value

