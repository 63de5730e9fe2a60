"""The system under test of the chaos run (README.md): Redis (one
redis-server with AOF, or a Sentinel group, or a Redis Cluster: --redis),
broker replicas and worker processes, each started, signalled and restarted
by the harness (the Sentinel and Cluster setups: failover_redis.py); plus a
minimal RESP client for the nemesis and the checker
(no Redis library in the venv is needed for them)."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PY = sys.executable
QUEUE = "chaos"
KEY_PREFIX = "jw"

# --------------------------------------------------------------------------
# small helpers

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(host, port, proc, what, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited early with status {proc.returncode}")
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} not listening on {host}:{port} after {timeout} s")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def signal_proc(proc, sig):
    if proc is not None and proc.poll() is None:
        try:
            os.kill(proc.pid, sig)
        except ProcessLookupError:
            pass


def proc_state(pid):
    """The state letter of /proc/<pid>/stat (R, S, T = stopped, Z, ...), or
    None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def wait_stopped(pid, timeout=1.0):
    """True once the process is in state T (SIGSTOP took effect)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc_state(pid) == "T":
            return True
        time.sleep(0.01)
    return False


def redis_blocked(port, wait=0.5):
    """True when Redis does not answer a PING within `wait` seconds (frozen
    or paused): the evidence that a redis_pause took effect."""
    try:
        r = Resp(port, timeout=wait)
    except OSError:
        return True
    try:
        r.call("PING")
        return False
    except (OSError, ConnectionError):  # socket.timeout is an OSError
        return True
    finally:
        r.close()


class Resp:
    """A minimal Redis (RESP2) client on one socket: enough for PING,
    CLIENT KILL / PAUSE, MGET. Every call has a timeout."""

    def __init__(self, port, timeout=2.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.f = self.sock.makefile("rb")

    def call(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))
        return self._read()

    def _read(self):
        line = self.f.readline()
        if not line:
            raise ConnectionError("redis closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError("redis error: " + rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return data.decode()
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise RuntimeError(f"bad RESP line {line!r}")

    def close(self):
        try:
            self.f.close()
            self.sock.close()
        except OSError:
            pass


def redis_call(port, *args, timeout=2.0):
    r = Resp(port, timeout)
    try:
        return r.call(*args)
    finally:
        r.close()


# Worker history events that are not an outcome of a run.
NOT_OUTCOMES = ("start", "end", "sigterm", "signal")


def open_runs(path, in_handler=False):
    """Lease tokens of runs started and without an outcome in one worker
    history (an `unsettled` line counts as the run's outcome). With
    in_handler, only those whose handler has not returned either: runs whose
    Ack or Fail is not sent yet."""
    pending = set()
    try:
        with open(path) as f:
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if e["ev"] == "start":
                    pending.add(e.get("tok"))
                elif e["ev"] not in NOT_OUTCOMES or (in_handler and e["ev"] == "end"):
                    pending.discard(e.get("tok"))
    except (OSError, TypeError):
        pass
    return pending


# --------------------------------------------------------------------------
# processes

def wait_ping(port, timeout=30):
    """PING on `port` until it answers PONG (Redis loads its data first)."""
    deadline = time.time() + timeout
    while True:
        try:
            if redis_call(port, "PING") == "PONG":
                return
        except (OSError, RuntimeError, ConnectionError):
            if time.time() > deadline:
                raise
        time.sleep(0.05)


def stop_proc(proc):
    """SIGCONT (it may be paused), SIGTERM, SIGKILL after 20 s."""
    if proc is None or proc.poll() is not None:
        return
    signal_proc(proc, signal.SIGCONT)
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Redis:
    """Standalone: one redis-server with AOF, the default (--redis
    standalone)."""

    mode = "standalone"

    def __init__(self, workdir, appendfsync, replicas):
        self.port = free_port()
        self.dir = os.path.join(workdir, "redis")
        os.makedirs(self.dir)
        self.appendfsync = appendfsync
        # One loopback address per broker replica: replica i connects to
        # 127.0.0.(i+2), so Redis sees its connections with that laddr and
        # CLIENT KILL LADDR cuts exactly that replica off.
        self.binds = ["127.0.0.1"] + [f"127.0.0.{i + 2}" for i in range(replicas)]
        self.proc = None
        self.starts = 0
        self.logf = open(os.path.join(workdir, "redis.log"), "ab")

    def start(self):
        self.starts += 1
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", " ".join(self.binds),
             "--save", "", "--appendonly", "yes", "--appendfsync", self.appendfsync,
             "--dir", self.dir, "--protected-mode", "no"],
            stdout=self.logf, stderr=subprocess.STDOUT)
        wait_listening("127.0.0.1", self.port, self.proc, "redis-server")
        wait_ping(self.port)  # the AOF is loaded

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        stop_proc(self.proc)

    # the interface shared with SentinelRedis and ClusterRedis
    def broker_flags(self, index):
        return [f"--redis_url=redis://127.0.0.{index + 2}:{self.port}"]

    def master_port(self):
        """The port of the node holding the chaos queue's keys."""
        return self.port

    def heal(self):
        if not self.alive():
            self.start()
        signal_proc(self.proc, signal.SIGCONT)
        try:
            redis_call(self.port, "CLIENT", "UNPAUSE")
        except Exception:  # noqa: BLE001
            pass

    def describe(self):
        return f"redis standalone, appendfsync {self.appendfsync}"


def redis_connections_of(pid, ports):
    """[(client addr "127.0.0.1:P", server port)]: the established TCP
    connections of process `pid` to 127.0.0.1 on one of `ports`, found from
    its socket descriptors (/proc/<pid>/fd) and the kernel's table
    (/proc/<pid>/net/tcp). Redis names a client by that address (CLIENT
    LIST addr=, CLIENT KILL ADDR), so this is how the nemesis finds a
    broker's connections when every broker reaches Redis at the same
    address (the failover modes: the sentinels and the cluster announce
    127.0.0.1)."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
        with open(f"/proc/{pid}/net/tcp") as f:
            lines = f.readlines()[1:]
    except OSError:
        return []
    ports = set(ports)
    out = []
    for line in lines:
        parts = line.split()
        if len(parts) < 10 or parts[3] != "01" or parts[9] not in inodes:  # 01: ESTABLISHED
            continue
        lport = int(parts[1].split(":")[1], 16)
        rip, rport = parts[2].split(":")
        if rip == "0100007F" and int(rport, 16) in ports:
            out.append((f"127.0.0.1:{lport}", int(rport, 16)))
    return out

class Broker:
    def __init__(self, index, binary, workdir, redis, args):
        self.index = index
        self.binary = binary
        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.redis_host = f"127.0.0.{index + 2}"  # standalone: its own address to Redis
        self.redis = redis
        self.log_path = os.path.join(workdir, f"broker-{index}.log")
        self.logf = open(self.log_path, "ab")
        self.args = args
        self.proc = None
        self.held = False      # the nemesis owns it right now
        self.starts = 0
        self.exits = []        # (status, expected)

    def start(self):
        self.starts += 1
        self.logf.write(f"--- start {self.starts} at {time.time():.3f}\n".encode())
        self.logf.flush()
        self.proc = subprocess.Popen(
            [self.binary, f"--listen={self.addr}"] + self.redis.broker_flags(self.index)
            + [f"--shutdown_grace_ms={self.args.shutdown_grace_ms}",
             "--metrics_listen=", "--log_level=warning"],
            stdout=self.logf, stderr=subprocess.STDOUT)
        wait_listening("127.0.0.1", self.port, self.proc, f"broker {self.index}")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None


class Workers:
    """Worker processes, each incarnation with its own history file,
    restarted by poll() when they die."""

    def __init__(self, workdir, brokers, args):
        self.workdir = workdir
        self.args = args
        self.n = args.workers
        self.addrs = []
        for i in range(self.n):
            order = [b.addr for b in brokers]
            k = i % len(order)
            order = order[k:] + order[:k]  # spread the workers over the replicas
            self.addrs.append("ipv4:" + ",".join(order))
        self.procs = [None] * self.n
        self.hist = [None] * self.n
        self.incarnation = [0] * self.n
        self.held = [False] * self.n
        self.lock = threading.Lock()
        self.unexpected_exits = []
        self.killed = set()    # incarnations ended by SIGKILL (their open runs are explained)
        self.stderr = [None] * self.n

    def start(self, i):
        self.incarnation[i] += 1
        name = f"w{i}.{self.incarnation[i]}"
        hist = os.path.join(self.workdir, f"worker-{name}.jsonl")
        err = open(os.path.join(self.workdir, f"worker-{name}.stderr"), "wb")
        self.procs[i] = subprocess.Popen(
            [PY, os.path.join(HERE, "worker.py"), "--addr", self.addrs[i], "--history", hist,
             "--name", name, "--queue", QUEUE, "--concurrency", str(self.args.concurrency),
             "--lease-ms", str(self.args.lease_ms)],
            stdout=err, stderr=subprocess.STDOUT)
        self.hist[i] = hist
        self.stderr[i] = err

    def poll(self):
        with self.lock:
            for i, p in enumerate(self.procs):
                if p is None or self.held[i] or p.poll() is None:
                    continue
                self.unexpected_exits.append((f"w{i}.{self.incarnation[i]}", p.returncode))
                log(f"worker w{i}.{self.incarnation[i]} exited by itself with {p.returncode}; "
                    f"restarting")
                self.start(i)

    def in_flight(self, i, in_handler=False):
        """Runs (lease tokens) started and without an outcome in the current
        incarnation's history (with in_handler: and still in the handler)."""
        return len(open_runs(self.hist[i], in_handler))

    def stop_all(self, timeout):
        with self.lock:
            for p in self.procs:
                signal_proc(p, signal.SIGCONT)
                signal_proc(p, signal.SIGTERM)
            for i, p in enumerate(self.procs):
                if p is None:
                    continue
                try:
                    status = p.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    p.kill()
                    status = p.wait()
                    self.killed.add(f"w{i}.{self.incarnation[i]}")
                    self.unexpected_exits.append((f"w{i}.{self.incarnation[i]}",
                                                  f"killed: no exit {timeout} s after SIGTERM"))
                    continue
                if status != 0:
                    self.unexpected_exits.append((f"w{i}.{self.incarnation[i]}",
                                                  f"status {status} on SIGTERM"))
            self.procs = [None] * self.n

