"""A fresh redis-server and broker on loopback, and what the benchmark reads
from them: Redis' INFO, the broker's memory and CPU from /proc, and its
Prometheus metrics. Used by run_bench.py and scale_checks.py."""

import os
import socket
import subprocess
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, what, timeout=15.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited early ({proc.returncode})")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} not listening on {port}")


def redis_info(port):
    """INFO as a dict; commandstats as {cmd: calls}."""
    out = subprocess.run(["redis-cli", "-p", str(port), "INFO", "all"], capture_output=True,
                         text=True, check=True).stdout
    info, calls = {}, {}
    for line in out.splitlines():
        if ":" not in line or line.startswith("#"):
            continue
        key, value = line.split(":", 1)
        if key.startswith("cmdstat_"):
            fields = dict(f.split("=") for f in value.split(","))
            calls[key[len("cmdstat_"):]] = int(fields["calls"])
        else:
            info[key] = value
    return info, calls


def rss_mib(pid, field="VmHWM"):
    """The process' peak resident set (VmHWM), or with field="VmRSS" its
    current one, in MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid):
    """User + system CPU seconds the process has used (/proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()  # after the command name
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def metric(port, name):
    """The value of the sample `name` (no labels) on the broker's /metrics
    endpoint at `port`, or None when it has none."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return None


class Stack:
    """redis-server + broker (none when `broker` is empty), fresh for each
    run so that every run starts empty. `broker_args` are added to the
    broker's command line; with `metrics` it serves /metrics on
    `metrics_port`."""

    def __init__(self, broker, workdir, broker_args=(), metrics=False):
        self.redis_port = free_port()
        self.redis = subprocess.Popen(
            ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", workdir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_listening(self.redis_port, self.redis, "redis-server")
        self.broker = None
        if not broker:
            return
        self.port = free_port()
        self.metrics_port = free_port() if metrics else None
        metrics_listen = f"127.0.0.1:{self.metrics_port}" if metrics else ""
        self.broker = subprocess.Popen(
            [broker, f"--listen=127.0.0.1:{self.port}",
             f"--redis_url=redis://127.0.0.1:{self.redis_port}", "--log_level=warning",
             f"--metrics_listen={metrics_listen}", *broker_args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_listening(self.port, self.broker, "broker")

    def close(self):
        for proc in (self.broker, self.redis):
            if proc is None:
                continue
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


