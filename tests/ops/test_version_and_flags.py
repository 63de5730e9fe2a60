"""The binaries' identity and flag spelling, run as an operator would.

- `jobwire-broker --version` and `jobwire --version` print one line naming
  the program, the release version and the git commit, and exit 0; the
  version is the one every client package declares (one release number).
- Broker flags take dashes as well as underscores: a dashed flag reaches the
  same setting (its range check answers), and an unknown one is still refused.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BROKER_BIN = os.environ.get("JOBWIRE_BROKER_BIN") or str(REPO / "build" / "broker" / "jobwire-broker")
CLI_BIN = os.environ.get("JOBWIRE_CLI_BIN") or str(REPO / "build" / "cli" / "jobwire")

LINE = re.compile(r"^(?P<program>\S+) (?P<version>\d+\.\d+\.\d+) \(commit (?P<commit>[0-9a-f]{12}(-dirty)?|unknown)\)$")


def run(argv, timeout=20):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd="/tmp")


def package_versions() -> dict:
    python = re.search(r'__version__ = "([^"]+)"', (REPO / "client/python/jobwire/_version.py").read_text())
    node = json.loads((REPO / "client/node/package.json").read_text())["version"]
    return {"python": python.group(1), "node": node}


def test_version_lines_name_the_release_and_the_commit():
    git = run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"])
    for binary, program in ((BROKER_BIN, "jobwire-broker"), (CLI_BIN, "jobwire")):
        out = run([binary, "--version"])
        assert out.returncode == 0, out.stderr
        line = out.stdout.strip()
        m = LINE.match(line)
        assert m, f"{program} --version printed {line!r}"
        assert m["program"] == program
        for lang, version in package_versions().items():
            assert m["version"] == version, f"{program} is {m['version']}, the {lang} client {version}"
        if git.returncode == 0:  # built from this checkout
            assert m["commit"].startswith(git.stdout.strip()), (line, git.stdout)


def test_broker_flags_take_dashes():
    # In range with dashes or underscores alike: refused by the same check.
    for flag in ("--default-lease-ms=5", "--default_lease_ms=5"):
        out = run([BROKER_BIN, "--listen=127.0.0.1:0", "--metrics_listen=", flag])
        assert out.returncode == 2, (flag, out.returncode, out.stderr)
        assert "default_lease_ms" in out.stderr and "1000" in out.stderr, out.stderr
    out = run([BROKER_BIN, "--no-such-flag=1"])
    assert out.returncode != 0
    assert "no-such-flag" in out.stderr, out.stderr


def test_dashed_flags_leave_values_alone():
    # A value after a flag given without '=' keeps its dashes.
    out = run([BROKER_BIN, "--listen=127.0.0.1:0", "--metrics_listen=", "--redis-mode", "-sent-inel"])
    assert out.returncode == 2, out.stderr
    assert 'got "-sent-inel"' in out.stderr, out.stderr
    # A dashed negation of a bool flag is that flag's negation.
    out = run([BROKER_BIN, "--listen=127.0.0.1:0", "--metrics_listen=",
               "--no-redis-tls-insecure-skip-verify", "--default-lease-ms=5"])
    assert out.returncode == 2, out.stderr
    assert "default_lease_ms must be in 1000..43200000" in out.stderr, out.stderr
