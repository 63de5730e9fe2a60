"""The history file shared by the chaos producer and workers: one JSON object
per line, each line written by a single os.write on an O_APPEND descriptor, so
a process killed with SIGKILL leaves whole lines only (at most its last event
is missing), and lines from several threads never interleave."""
import json
import os
import threading
import time


class History:
    def __init__(self, path, who):
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._who = who
        self._lock = threading.Lock()

    def record(self, ev, **fields):
        rec = {"t": round(time.time(), 4), "who": self._who, "ev": ev}
        rec.update(fields)
        line = (json.dumps(rec, separators=(",", ":")) + "\n").encode()
        with self._lock:  # one write per line; the lock only orders threads
            os.write(self._fd, line)
