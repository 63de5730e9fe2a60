"""Broker binaries of another commit, or of a commit with a patch, for the
benchmarks that compare variants of the broker (observer_cost.py,
limits_cost.py). Each variant is a git worktree in build/variant-<name>/src
with its own build directory next to it, built once and then incrementally.
"""

import os
import subprocess

from side_by_side import BUILD, REPO


def build_broker(name, rev, patches=()):
    """The broker binary of commit `rev`, with `patches` applied: each
    (path in the tree, text, replacement); the text must be there, else the
    benchmark stops and names the file (the patch needs updating). Returns
    (binary path, the commit's first 12 hex digits)."""
    root = os.path.join(BUILD, f"variant-{name}")
    src, build = os.path.join(root, "src"), os.path.join(root, "build")
    want = subprocess.run(["git", "-C", REPO, "rev-parse", rev], capture_output=True,
                          text=True, check=True).stdout.strip()
    if not os.path.isdir(src):
        os.makedirs(root, exist_ok=True)
        subprocess.run(["git", "-C", REPO, "worktree", "add", "--detach", src, want], check=True,
                       stdout=subprocess.DEVNULL)
    subprocess.run(["git", "-C", src, "checkout", "--force", "--detach", "-q", want], check=True)
    for path, text, replacement in patches:
        full = os.path.join(src, path)
        with open(full) as f:
            content = f.read()
        if text not in content:
            raise SystemExit(f"{path} of {want[:12]}: the patched text is not there any more: "
                             f"{text!r}")
        with open(full, "w") as f:
            f.write(content.replace(text, replacement))
    subprocess.run(["cmake", "-S", src, "-B", build, "-G", "Ninja",
                    "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DJOBWIRE_BUILD_TESTS=OFF"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", build, "-j2", "--target", "jobwire-broker"], check=True,
                   stdout=subprocess.DEVNULL)
    return os.path.join(build, "broker", "jobwire-broker"), want[:12]
