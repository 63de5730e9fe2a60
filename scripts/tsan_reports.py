#!/usr/bin/env python3
"""Sorts ThreadSanitizer reports into ours and gRPC's own.

    scripts/tsan_reports.py LOG...

Reads TSan log files (one per process) and splits every report in two:
  - ours: either racing access (the "Write/Read of size" and "Previous
    write/read" stacks) was made by jobwire's code: see owner_is_ours (the
    standard library, protobuf and abseil headers count as their caller).
    These fail the run.
  - gRPC-internal: both racing accesses were made by gRPC's own inline
    header code (grpcpp/...), on gRPC's objects (call op sets, callback tags,
    interceptor state), even when a jobwire frame (our interceptor, a
    reactor) sits further down the call chain. gRPC
    hands these objects between its threads with atomics inside its
    uninstrumented shared libraries (call refcounts, completion-queue tags),
    which TSan cannot see; they are listed with their top frames, not failed.
Data races on a vptr (ctor/dtor vs virtual call) are sorted the same way;
other report kinds (use after free, lock-order, signal, thread leaks)
always count as ours.
Exit status 1 when there is any report of ours, else 0.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ACCESS = re.compile(r"^  (Write|Read|Atomic write|Atomic read|Previous write|Previous read|Previous atomic write|Previous atomic read) of size")
FRAME = re.compile(r"^\s+#\d+ (.*)$")


LOCATED = re.compile(r"^(.*) (\S+) \((\S+)\)$")
# Header-only code that accesses memory on behalf of its caller: a race in
# it belongs to whoever called it.
ON_BEHALF = ("/usr/include/c++/", "/usr/include/google/protobuf/", "/usr/include/absl/")


def owner_is_ours(stack) -> bool:
    """Whether the code that made this access is jobwire's: the first frame
    from the top that is not standard-library, protobuf or abseil header code
    lies in a jobwire source file (generated protobuf code included) or is a
    function of namespace jobwire (not just a gRPC template instantiated with
    jobwire's message types)."""
    for frame in stack:
        m = LOCATED.match(frame)
        function, location = (m.group(1), m.group(2)) if m else (frame, "")
        if location.startswith(ON_BEHALF):
            continue
        return location.startswith(ROOT + "/") or function.startswith("jobwire::")
    return False


def parse(text: str):
    """Yields (kind, access_stacks, summary) for each report in `text`."""
    for block in text.split("==================\n"):
        m = re.search(r"WARNING: ThreadSanitizer: (.+?) \(pid=", block)
        if not m:
            continue
        kind = m.group(1)
        stacks, current = [], None
        for line in block.splitlines():
            if ACCESS.match(line):
                current = []
                stacks.append(current)
            elif current is not None and FRAME.match(line):
                current.append(FRAME.match(line).group(1))
            elif current is not None and not line.strip():
                current = None
        summary = next((l for l in block.splitlines() if l.startswith("SUMMARY:")), kind)
        yield kind, stacks, summary


def main(paths):
    mine, theirs = [], {}
    for path in paths:
        with open(path, errors="replace") as f:
            for kind, stacks, summary in parse(f.read()):
                if not kind.startswith("data race") or any(owner_is_ours(st) for st in stacks):
                    mine.append((path, summary))
                else:
                    theirs[summary] = theirs.get(summary, 0) + 1
    for summary, n in sorted(theirs.items(), key=lambda kv: -kv[1]):
        print(f"gRPC-internal ({n}x): {summary}")
    for path, summary in mine:
        print(f"OURS in {path}: {summary}")
    print(f"tsan: {len(mine)} report(s) in jobwire code, {sum(theirs.values())} gRPC-internal")
    return 1 if mine else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
