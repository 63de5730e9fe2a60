"""The Redis setups of the chaos run's failover modes (README.md, --redis):
a Sentinel group (SentinelRedis: a master, a replica, three sentinels) and
a Redis Cluster (ClusterRedis: 3 masters, 3 replicas), each with the
master_kill fault; and make_redis, which picks the setup (the standalone
one, Redis, is in chaos_system.py). Same interface as Redis: start, stop,
alive, heal, broker_flags, master_port, describe."""
import os
import signal
import subprocess
import time

from chaos_system import (QUEUE, Redis, Resp, free_port, redis_call, signal_proc, stop_proc,
                          wait_listening, wait_ping)

class Node:
    """One redis-server process (a data node, a sentinel or a cluster node)
    on a fixed port and directory, restartable with the same arguments."""

    def __init__(self, name, workdir, argv_fn, port=None):
        self.name = name
        self.port = port or free_port()
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.argv_fn = argv_fn        # (node, **kw) -> argv
        self.proc = None
        self.starts = 0
        self.logf = open(os.path.join(workdir, f"{name}.log"), "ab")

    def start(self, **kw):
        self.starts += 1
        self.logf.write(f"--- start {self.starts} at {time.time():.3f}\n".encode())
        self.logf.flush()
        self.proc = subprocess.Popen(self.argv_fn(self, **kw), stdout=self.logf,
                                     stderr=subprocess.STDOUT)
        wait_listening("127.0.0.1", self.port, self.proc, f"redis node {self.name}")
        wait_ping(self.port)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        stop_proc(self.proc)


def wait_for(pred, timeout, step=0.05):
    """pred() until it returns something truthy (returned) or `timeout`
    seconds pass (None). Exceptions count as not yet."""
    deadline = time.time() + timeout
    while True:
        try:
            v = pred()
            if v:
                return v
        except (OSError, RuntimeError, ConnectionError):
            pass
        if time.time() >= deadline:
            return None
        time.sleep(step)


def replication_info(port):
    text = redis_call(port, "INFO", "replication", timeout=1.0)
    out = {}
    for line in text.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            out[k] = v.strip()
    return out


def replica_synced(port, master_port):
    """The node is a replica of master_port with its link up."""
    info = replication_info(port)
    return (info.get("role") == "slave" and info.get("master_port") == str(master_port)
            and info.get("master_link_status") == "up")


def data_node_argv(aof, appendfsync):
    """redis-server arguments shared by the failover modes' data nodes:
    replicas are the durability (no AOF unless --aof), no RDB snapshots, and
    a full resync that starts at once (diskless, no delay)."""
    def argv(node, replicaof=None, extra=()):
        a = ["redis-server", "--port", str(node.port), "--bind", "127.0.0.1",
             "--protected-mode", "no", "--save", "", "--dir", node.dir,
             "--appendonly", "yes" if aof else "no", "--appendfsync", appendfsync,
             "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"]
        if replicaof:
            a += ["--replicaof", "127.0.0.1", str(replicaof)]
        return a + list(extra)
    return argv


def cut_replication(master, ms, rec):
    """Before a master_kill (--cut-replication-ms): `CONFIG SET requirepass`
    on the master, which its replicas do not have, and `CLIENT KILL TYPE
    replica`, then `ms` milliseconds of the master acknowledging writes that
    no replica receives (the replica cannot reconnect), as
    tests/sentinel_broker_test's "replication cut, then killed" does. Records
    how far the replica was behind at the kill (bytes of the replication
    stream). The restarted node starts without the password."""
    pw = "chaos-cut-%d" % os.getpid()
    redis_call(master, "CONFIG", "SET", "requirepass", pw)
    r = Resp(master)
    try:
        r.call("AUTH", pw)
        rec["replicas_cut"] = r.call("CLIENT", "KILL", "TYPE", "replica")
        time.sleep(ms / 1000.0)
        info = r.call("INFO", "replication")
    finally:
        r.close()
    offs = dict(l.split(":", 1) for l in info.splitlines() if ":" in l)
    rec["cut_replication_ms"] = ms
    rec["master_repl_offset_at_kill"] = int(offs.get("master_repl_offset", 0))


def replica_offset(port):
    try:
        return int(replication_info(port).get("slave_repl_offset", -1))
    except (OSError, RuntimeError, ConnectionError, ValueError):
        return -1


class FailoverRedis:
    """What the Sentinel and Cluster setups share: their processes
    (processes(): every Node, the order they stop in), the master every
    view agrees on (agreed_master; no_master() says why there is none), and
    the run's settings (shape() names the setup)."""

    def __init__(self, appendfsync, aof, cut_ms):
        self.appendfsync = appendfsync
        self.aof = aof
        self.cut_ms = cut_ms

    def master_port(self):
        p = wait_for(self.agreed_master, 10, 0.1)
        if p is None:
            raise RuntimeError(self.no_master())
        return p

    def node(self, port):
        return next(n for n in self.processes() if n.port == port)

    def alive(self):
        return all(n.alive() for n in self.processes())

    def stop(self):
        for n in self.processes():
            n.stop()

    def describe(self):
        return (f"{self.shape()}, "
                + (f"AOF appendfsync {self.appendfsync}" if self.aof else "no AOF")
                + (f", replication cut {self.cut_ms} ms before each master kill"
                   if self.cut_ms else ""))


class SentinelRedis(FailoverRedis):
    """--redis sentinel: 1 master + 1 replica + 3 sentinels on 127.0.0.1
    (quorum 2, down-after-milliseconds 1000, failover-timeout 5000), as
    tests/redis_sentinel.cc; the brokers in sentinel mode ask the sentinels
    where the master is."""

    mode = "sentinel"
    MASTER_NAME = "jobwire"
    DOWN_AFTER_MS = 1000

    def __init__(self, workdir, appendfsync, aof=False, n_sentinels=3, cut_ms=0):
        super().__init__(appendfsync, aof, cut_ms)
        argv = data_node_argv(aof, appendfsync)
        self.data = [Node(f"redis-d{i}", workdir, argv) for i in range(2)]
        self.sentinels = [Node(f"sentinel-{i}", workdir, self._sentinel_argv)
                          for i in range(n_sentinels)]
        self.port = self.data[0].port   # the first master

    def _sentinel_argv(self, node):
        conf = os.path.join(node.dir, "sentinel.conf")
        if not os.path.exists(conf):  # a sentinel rewrites its own file: keep it on restart
            n = self.MASTER_NAME
            with open(conf, "w") as f:
                f.write(f"port {node.port}\nbind 127.0.0.1\nprotected-mode no\ndir {node.dir}\n"
                        f"sentinel monitor {n} 127.0.0.1 {self.data[0].port} "
                        f"{len(self.sentinels) // 2 + 1}\n"
                        f"sentinel down-after-milliseconds {n} {self.DOWN_AFTER_MS}\n"
                        f"sentinel failover-timeout {n} 5000\n"
                        f"sentinel parallel-syncs {n} 1\n")
        return ["redis-server", conf, "--sentinel"]

    def start(self):
        self.data[0].start()
        self.data[1].start(replicaof=self.data[0].port)
        if not wait_for(lambda: replica_synced(self.data[1].port, self.data[0].port), 30):
            raise RuntimeError("the replica did not sync")
        for s in self.sentinels:
            s.start()
        if not wait_for(self._ready, 30, 0.1):
            raise RuntimeError("the sentinels did not discover each other and the replica")

    def _ready(self):
        for s in self.sentinels:
            m = redis_call(s.port, "SENTINEL", "MASTER", self.MASTER_NAME, timeout=1.0)
            d = dict(zip(m[::2], m[1::2]))
            if d.get("num-slaves") != "1" or d.get("num-other-sentinels") != str(
                    len(self.sentinels) - 1):
                return False
        return True

    def broker_flags(self, index):
        seeds = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        return ["--redis_mode=sentinel", f"--redis_sentinel_master={self.MASTER_NAME}",
                f"--redis_url=redis://{seeds}"]

    def sentinel_views(self):
        """The master port each live sentinel names (None: no answer)."""
        out = []
        for s in self.sentinels:
            try:
                a = redis_call(s.port, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.MASTER_NAME,
                               timeout=1.0)
                out.append(int(a[1]) if a else None)
            except (OSError, RuntimeError, ConnectionError):
                out.append(None)
        return out

    def agreed_master(self, not_port=None):
        """The master every sentinel names, if they agree, it is not
        `not_port` and it answers ROLE as master; else None."""
        views = self.sentinel_views()
        if not views or views[0] is None or any(v != views[0] for v in views):
            return None
        if views[0] == not_port:
            return None
        role = redis_call(views[0], "ROLE", timeout=1.0)
        return views[0] if role and role[0] == "master" else None

    def processes(self):
        return self.sentinels + self.data

    def data_ports(self):
        return [n.port for n in self.data]

    def client_ports(self):
        """Every port a broker holds connections to (data nodes, sentinels)."""
        return [n.port for n in self.data + self.sentinels]

    def kill_master(self, rec, secs, stop_event=None):
        """SIGKILL the master; wait until the sentinels agree on the promoted
        replica; `secs` later restart the old master as a replica of the new
        one (--replicaof) and wait until it has synced. Evidence: the killed
        process' status, the master's port before and after."""
        old = self.master_port()
        n = self.node(old)
        rec["master_before"] = old
        rec["alive_before"] = n.alive()
        if self.cut_ms:
            cut_replication(old, self.cut_ms, rec)
        t_kill = time.time()
        n.proc.kill()
        rec["status"] = n.proc.wait()
        rec["t_kill"] = round(t_kill, 3)
        if self.cut_ms:
            rec["replica_offsets_at_kill"] = [replica_offset(d.port) for d in self.data
                                              if d.port != old]
        new = wait_for(lambda: self.agreed_master(not_port=old), 30, 0.05)
        rec["t_promoted"] = round(time.time(), 3)
        rec["failover_s"] = round(time.time() - t_kill, 2)
        rec["master_after"] = new
        rec["effect"] = (rec["alive_before"] and rec["status"] == -signal.SIGKILL
                         and new is not None and new != old)
        time.sleep(secs)
        n.start(replicaof=new or self.master_port())
        master = new or self.master_port()
        t = time.time()
        rec["rejoined_as_replica"] = bool(wait_for(lambda: replica_synced(old, master), 30, 0.1))
        rec["resync_s"] = round(time.time() - t, 2)

    def heal(self):
        for s in self.sentinels:
            if not s.alive():
                s.start()
        for n in self.data:
            signal_proc(n.proc, signal.SIGCONT)
        for n in self.data:
            if not n.alive():
                n.start(replicaof=self.master_port())
        m = self.master_port()
        for n in self.data:
            if n.port != m:
                wait_for(lambda: replica_synced(n.port, m), 30, 0.1)

    def no_master(self):
        return f"the sentinels do not agree on a master: {self.sentinel_views()}"

    def shape(self):
        return f"redis sentinel: 1 master + 1 replica + {len(self.sentinels)} sentinels"


class ClusterRedis(FailoverRedis):
    """--redis cluster: 3 masters + 3 replicas (`--cluster-enabled yes`,
    `redis-cli --cluster create ... --cluster-replicas 1 --cluster-yes`,
    cluster-node-timeout 2000), as tests/redis_cluster.cc; the brokers in
    cluster mode get every node as a seed. A killed node is restarted with
    its nodes.conf, on its port and bus port, and rejoins as a replica."""

    mode = "cluster"
    NODE_TIMEOUT_MS = 2000

    def __init__(self, workdir, appendfsync, aof=False, masters=3, cut_ms=0):
        super().__init__(appendfsync, aof, cut_ms)
        self.workdir = workdir
        base = data_node_argv(aof, appendfsync)

        def argv(node, **kw):
            return base(node, extra=["--cluster-enabled", "yes", "--cluster-port",
                                     str(node.bus_port), "--cluster-config-file",
                                     os.path.join(node.dir, "nodes.conf"),
                                     "--cluster-node-timeout", str(self.NODE_TIMEOUT_MS)])
        self.nodes = []
        for i in range(masters * 2):
            n = Node(f"redis-c{i}", workdir, argv)
            n.bus_port = free_port()
            self.nodes.append(n)
        self.port = self.nodes[0].port
        self.slot = None

    def start(self):
        for n in self.nodes:
            n.start()
        log_path = os.path.join(self.workdir, "cluster-create.log")
        with open(log_path, "wb") as logf:
            r = subprocess.run(["redis-cli", "--cluster", "create"]
                               + [f"127.0.0.1:{n.port}" for n in self.nodes]
                               + ["--cluster-replicas", "1", "--cluster-yes"],
                               stdout=logf, stderr=subprocess.STDOUT, timeout=60)
        if r.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed ({log_path})")
        if not wait_for(self.healthy, 60, 0.1):
            raise RuntimeError("the cluster did not reach cluster_state:ok on every node")
        self.slot = redis_call(self.port, "CLUSTER", "KEYSLOT", QUEUE)
        for n in self.nodes:
            if not wait_for(lambda: replication_info(n.port).get("role") == "master"
                            or replication_info(n.port).get("master_link_status") == "up", 30):
                raise RuntimeError(f"cluster node {n.name} never synced with its master")

    def healthy(self):
        """cluster_state:ok and all slots ok on every live node, and every
        live node names the same live master for the chaos slot."""
        owners = set()
        for n in self.nodes:
            if not n.alive():
                continue
            info = redis_call(n.port, "CLUSTER", "INFO", timeout=1.0)
            if "cluster_state:ok" not in info or "cluster_slots_ok:16384" not in info:
                return False
            if self.slot is not None:
                owners.add(self.slot_master_at(n.port))
        if self.slot is None:
            return True
        if len(owners) != 1:
            return False
        (m,) = owners
        return m is not None and self.node(m).alive()

    def slot_master_at(self, port):
        """The master port that node `port` names for the chaos slot."""
        for rng in redis_call(port, "CLUSTER", "SLOTS", timeout=1.0):
            if rng[0] <= self.slot <= rng[1]:
                return int(rng[2][1])
        return None

    def agreed_master(self, not_port=None):
        if not self.healthy():
            return None
        m = self.slot_master_at(next(n.port for n in self.nodes if n.alive()))
        if m == not_port:
            return None
        role = redis_call(m, "ROLE", timeout=1.0)
        return m if role and role[0] == "master" else None

    def processes(self):
        return self.nodes

    def no_master(self):
        return "the cluster does not agree on the chaos slot's master"

    def shape(self):
        return "redis cluster: 3 masters + 3 replicas"

    def broker_flags(self, index):
        return ["--redis_mode=cluster",
                "--redis_url=redis://" + ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)]

    def data_ports(self):
        return [n.port for n in self.nodes]

    def client_ports(self):
        return self.data_ports()

    def kill_master(self, rec, secs, stop_event=None):
        """SIGKILL the master of the chaos queue's slot; wait until every
        live node reports cluster_state:ok and names the promoted replica;
        `secs` later restart the old node with its nodes.conf and wait until
        it is a synced replica of the new master."""
        old = self.master_port()
        n = self.node(old)
        rec["slot"] = self.slot
        rec["master_before"] = old
        rec["alive_before"] = n.alive()
        if self.cut_ms:
            replicas = [x.port for x in self.nodes if x.alive() and x.port != old
                        and replication_info(x.port).get("master_port") == str(old)]
            cut_replication(old, self.cut_ms, rec)
        t_kill = time.time()
        n.proc.kill()
        rec["status"] = n.proc.wait()
        rec["t_kill"] = round(t_kill, 3)
        if self.cut_ms:
            rec["replica_offsets_at_kill"] = [replica_offset(p) for p in replicas]
        new = wait_for(lambda: self.agreed_master(not_port=old), 40, 0.05)
        rec["t_promoted"] = round(time.time(), 3)
        rec["failover_s"] = round(time.time() - t_kill, 2)
        rec["master_after"] = new
        rec["effect"] = (rec["alive_before"] and rec["status"] == -signal.SIGKILL
                         and new is not None and new != old)
        time.sleep(secs)
        n.start()
        t = time.time()
        master = new or self.master_port()
        rec["rejoined_as_replica"] = bool(wait_for(lambda: replica_synced(old, master)
                                                   and self.healthy(), 40, 0.1))
        rec["resync_s"] = round(time.time() - t, 2)

    def heal(self):
        for n in self.nodes:
            signal_proc(n.proc, signal.SIGCONT)
        for n in self.nodes:
            if not n.alive():
                n.start()
        wait_for(self.healthy, 40, 0.1)
        m = self.master_port()
        for n in self.nodes:
            wait_for(lambda: replication_info(n.port).get("role") == "master"
                     or replication_info(n.port).get("master_link_status") == "up", 30, 0.1)
        return m



def make_redis(mode, workdir, appendfsync, brokers, aof=False, cut_ms=0):
    if mode == "standalone":
        return Redis(workdir, appendfsync, brokers)
    if mode == "sentinel":
        return SentinelRedis(workdir, appendfsync, aof, cut_ms=cut_ms)
    if mode == "cluster":
        return ClusterRedis(workdir, appendfsync, aof, cut_ms=cut_ms)
    raise ValueError(mode)
