"""Real redis-server + real jobwire broker for the whole test session."""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Dict, Tuple

import pytest

_RPC_SAMPLE = re.compile(r"^jobwire_rpc_requests_total\{([^}]*)\} (\S+)$", re.M)
_LABEL = re.compile(r'(\w+)="([^"]*)"')

REPO = Path(__file__).resolve().parents[3]
BROKER_BIN = os.environ.get("JOBWIRE_BROKER_BIN") or str(REPO / "build" / "broker" / "jobwire-broker")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("process exited with %s before listening on %d" % (proc.returncode, port))
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("nothing listening on port %d after %.0fs" % (port, timeout))


def wait_for(pred, timeout: float = 10.0, interval: float = 0.05, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.1fs waiting for %s" % (timeout, what))
        time.sleep(interval)


def _stop(proc: subprocess.Popen, sig=signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Broker:
    """One broker process; can be SIGKILLed and restarted on the same port.
    Its Prometheus endpoint is on a port of its own (``scrape_rpcs``)."""

    def __init__(self, redis_url: str, log_dir: Path, *extra: str):
        self.port = free_port()
        self.addr = "127.0.0.1:%d" % self.port
        self.metrics_port = free_port()
        self.redis_url = redis_url
        self.extra = list(extra)
        self.log_path = log_dir / ("broker-%d.log" % self.port)
        self.proc = None

    def start(self) -> None:
        if not os.access(BROKER_BIN, os.X_OK):
            pytest.fail("broker binary not found: %s (set JOBWIRE_BROKER_BIN)" % BROKER_BIN)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [BROKER_BIN, "--listen=" + self.addr, "--redis_url=" + self.redis_url,
             "--metrics_listen=127.0.0.1:%d" % self.metrics_port, "--log_level=warning",
             *self.extra],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        try:
            wait_port(self.port, self.proc)
        except RuntimeError as e:
            pytest.fail("broker did not start: %s\n%s" % (e, self.log_path.read_text()))

    def scrape_rpcs(self) -> Dict[Tuple[str, str], float]:
        """{(method, code): calls} from jobwire_rpc_requests_total on /metrics."""
        wait_port(self.metrics_port, self.proc)  # bound just after the gRPC port
        url = "http://127.0.0.1:%d/metrics" % self.metrics_port
        with urllib.request.urlopen(url, timeout=5) as resp:
            text = resp.read().decode()
        calls: Dict[Tuple[str, str], float] = {}
        for m in _RPC_SAMPLE.finditer(text):
            labels = dict(_LABEL.findall(m.group(1)))
            key = (labels.get("method", ""), labels.get("code", ""))
            calls[key] = calls.get(key, 0.0) + float(m.group(2))
        return calls

    def kill(self) -> None:
        _stop(self.proc, signal.SIGKILL)

    def stop(self) -> None:
        if self.proc is not None:
            _stop(self.proc)


@contextlib.contextmanager
def redis_server(data_dir: Path):
    """A redis-server on a free port (no persistence) for the body; yields
    its URL."""
    exe = shutil.which("redis-server")
    if not exe:
        pytest.fail("redis-server not found on PATH")
    port = free_port()
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(data_dir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        wait_port(port, proc)
        yield "redis://127.0.0.1:%d" % port
    finally:
        _stop(proc)


@contextlib.contextmanager
def broker_stack(data_dir: Path, *extra: str):
    """An independent stack for the body: its own redis-server and a broker
    on it; yields the started Broker."""
    with redis_server(data_dir) as url:
        b = Broker(url, data_dir, *extra)
        try:
            b.start()
            yield b
        finally:
            b.stop()


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture(scope="session")
def broker(redis_url, tmp_path_factory):
    """The shared broker: small default backoff so retries come quickly."""
    b = Broker(redis_url, tmp_path_factory.mktemp("broker"), "--backoff_base_ms=100")
    b.start()
    yield b
    b.stop()


@pytest.fixture
def own_broker(redis_url, tmp_path):
    """A broker for one test (e.g. to kill it)."""
    b = Broker(redis_url, tmp_path, "--backoff_base_ms=100", "--shutdown_grace_ms=1000")
    b.start()
    yield b
    b.stop()


@pytest.fixture
def client(broker):
    from jobwire import Client
    c = Client(broker.addr, timeout=5.0)
    yield c
    c.close()


@pytest.fixture
def queue():
    return "pytest-" + uuid.uuid4().hex[:12]


@contextlib.contextmanager
def running(worker):
    """Run worker.run() in a thread for the body, then stop it."""
    errors = []

    def target():
        try:
            worker.run(install_signal_handlers=False)
        except BaseException as e:  # surfaced below
            errors.append(e)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    try:
        yield t
    finally:
        worker.stop(timeout=15)
        t.join(timeout=15)
    if errors:
        raise errors[0]


WORK_METHOD = "/jobwire.v1.BrokerService/Work"


def _older(details, stand_in):
    """``details`` with a Work call sent to a method no broker has (counted),
    other calls unchanged."""
    method = details.method.decode() if isinstance(details.method, bytes) else details.method
    if method != WORK_METHOD:
        return details
    stand_in.work_calls += 1
    redirected = method + "NotHere"
    return details._replace(method=redirected.encode() if isinstance(details.method, bytes)
                            else redirected)


class OlderBroker:
    """Client interceptors standing in for a broker older than Work: a Work
    call goes to a method the real broker does not have, so it answers
    UNIMPLEMENTED as such a broker does; other calls pass. ``work_calls``
    counts the Work calls. ``sync``: for grpc.intercept_channel; ``aio``: a
    grpc.aio channel's ``interceptors``."""

    def __init__(self):
        import grpc
        import grpc.aio
        self.work_calls = 0
        stand_in = self

        class Sync(grpc.StreamStreamClientInterceptor):
            def intercept_stream_stream(self, continuation, details, request_iterator):
                return continuation(_older(details, stand_in), request_iterator)

        class Aio(grpc.aio.StreamStreamClientInterceptor):
            async def intercept_stream_stream(self, continuation, details, request_iterator):
                return await continuation(_older(details, stand_in), request_iterator)

        self.sync, self.aio = Sync(), Aio()


class WorkerInterceptors:
    """The channels of the Workers made in the test (both kinds; plaintext)
    get the interceptors of every stand-in ``add``-ed (one with ``sync`` and
    ``aio``: OlderBroker, CancelledByBroker) before the Worker opens its
    channel (the threaded one in its constructor, the asyncio one in run())."""

    def __init__(self, monkeypatch):
        import grpc
        import grpc.aio
        import jobwire._aio_worker
        import jobwire.worker
        from jobwire import _channel
        self.sync, self.aio = [], []

        def open_channel(addr, extra=None, security=None):
            return grpc.intercept_channel(_channel.open_channel(addr, extra, security),
                                          *self.sync)

        def open_aio_channel(addr, extra=None, security=None):
            assert security is None or not security.tls
            return grpc.aio.insecure_channel(addr, options=_channel.channel_options(extra),
                                             interceptors=list(self.aio))
        monkeypatch.setattr(jobwire.worker, "open_channel", open_channel)
        monkeypatch.setattr(jobwire._aio_worker, "open_aio_channel", open_aio_channel)

    def add(self, stand_in):
        self.sync.append(stand_in.sync)
        self.aio.append(stand_in.aio)
        return stand_in


@pytest.fixture
def worker_interceptors(monkeypatch):
    return WorkerInterceptors(monkeypatch)


@pytest.fixture
def older_broker(worker_interceptors):
    """The Workers made in the test (both kinds; plaintext) see a broker
    older than Work (OlderBroker, returned)."""
    return worker_interceptors.add(OlderBroker())


WAIT_JOB_METHOD = "/jobwire.v1.BrokerService/WaitJob"
SUBSCRIBE_METHOD = "/jobwire.v1.BrokerService/Subscribe"
FAIL_METHOD = "/jobwire.v1.BrokerService/Fail"
ACK_BATCH_METHOD = "/jobwire.v1.BrokerService/AckBatch"


def _method_name(details) -> str:
    method = details.method
    return method.decode() if isinstance(method, bytes) else method


class CancelledByBroker:
    """Client interceptors standing in for a broker whose gRPC core ends a
    call CANCELLED although the client did not cancel it (a call reaching it
    just after Server::Shutdown began: grpc/grpc#41785): the FIRST call of
    ``method`` ends with a grpc.RpcError (AioRpcError) of code CANCELLED and
    details 'CANCELLED', as gRPC core gives. A server-streaming ``method``
    (WaitJob, Subscribe) ends so once its first message was received, the
    real call cancelled underneath; a ``unary`` one (Fail, AckBatch) is
    answered so without being sent, as a call zombified by a broker shutting
    down never reaches a handler. Other calls pass. ``calls``: the calls of
    ``method``; ``cut``: set once the first one was ended so. ``sync``: for
    grpc.intercept_channel; ``aio``: a grpc.aio channel's ``interceptors``."""

    def __init__(self, method: str, unary: bool = False):
        import grpc
        import grpc.aio
        self.method = method
        self.calls = 0
        self.cut = threading.Event()
        stand_in = self

        class Cancelled(grpc.RpcError, grpc.Call):
            def code(self):
                return grpc.StatusCode.CANCELLED

            def details(self):
                return "CANCELLED"

            def initial_metadata(self):
                return ()

            def trailing_metadata(self):
                return ()

            def is_active(self):
                return False

            def time_remaining(self):
                return None

            def cancel(self):
                return False

            def add_callback(self, callback):
                return False

        class CutAfterFirst:
            """The call, as the caller sees it: its first message, then
            CANCELLED."""

            def __init__(self, call):
                self._call, self._read = call, 0

            def __iter__(self):
                return self

            def __next__(self):
                if self._read == 0:
                    self._read = 1
                    return next(self._call)
                self._call.cancel()
                stand_in.cut.set()
                raise Cancelled()

            def __getattr__(self, name):  # cancel(), code(), ...: the real call's
                return getattr(self._call, name)

        class Sync(grpc.UnaryStreamClientInterceptor):
            def intercept_unary_stream(self, continuation, details, request):
                call = continuation(details, request)
                return CutAfterFirst(call) if stand_in._first(details) else call

        async def cut_after_first(call):
            first = await call.read()
            if first is grpc.aio.EOF:
                return
            yield first
            call.cancel()
            stand_in.cut.set()
            raise grpc.aio.AioRpcError(grpc.StatusCode.CANCELLED, grpc.aio.Metadata(),
                                       grpc.aio.Metadata(), details="CANCELLED")

        class Aio(grpc.aio.UnaryStreamClientInterceptor):
            async def intercept_unary_stream(self, continuation, details, request):
                call = await continuation(details, request)
                return cut_after_first(call) if stand_in._first(details) else call

        class UnarySync(grpc.UnaryUnaryClientInterceptor):
            def intercept_unary_unary(self, continuation, details, request):
                if stand_in._first(details):
                    stand_in.cut.set()
                    raise Cancelled()  # not sent
                return continuation(details, request)

        class UnaryAio(grpc.aio.UnaryUnaryClientInterceptor):
            async def intercept_unary_unary(self, continuation, details, request):
                if stand_in._first(details):
                    stand_in.cut.set()
                    raise grpc.aio.AioRpcError(grpc.StatusCode.CANCELLED, grpc.aio.Metadata(),
                                               grpc.aio.Metadata(), details="CANCELLED")
                return await continuation(details, request)

        self.sync, self.aio = (UnarySync(), UnaryAio()) if unary else (Sync(), Aio())

    def _first(self, details) -> bool:
        """Counts a call of ``method``: True for the first one."""
        if _method_name(details) != self.method:
            return False
        self.calls += 1
        return self.calls == 1

    def client(self, addr: str, **kwargs):
        """A jobwire.Client (plaintext) whose channel has ``sync``."""
        import grpc
        import jobwire.client
        from jobwire import _channel

        def open_channel(addr, extra=None, security=None):
            return grpc.intercept_channel(_channel.open_channel(addr, extra, security), self.sync)
        with pytest.MonkeyPatch.context() as m:
            m.setattr(jobwire.client, "open_channel", open_channel)
            return jobwire.client.Client(addr, **kwargs)

    def aio_client(self, addr: str, **kwargs):
        """A jobwire.aio.Client (plaintext) whose channel has ``aio``;
        made inside the event loop."""
        import grpc.aio
        import jobwire.aio
        from jobwire import _channel

        def open_aio_channel(addr, extra=None, security=None):
            assert security is None or not security.tls
            return grpc.aio.insecure_channel(addr, options=_channel.channel_options(extra),
                                             interceptors=[self.aio])
        with pytest.MonkeyPatch.context() as m:
            m.setattr(jobwire.aio, "open_aio_channel", open_aio_channel)
            return jobwire.aio.Client(addr, **kwargs)
