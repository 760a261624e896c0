"""What the bubblewrap sandbox adds to starting a worker: `sh -c true`, and `git status` in a small
worktree whose shared .git is read-only, each run plain and wrapped, interleaved so drift on a shared
machine hits both alike.

Run by hand: .venv/bin/python benchmarks/sandbox.py [--runs 50]
Target: the sandbox adds a few milliseconds per worker, nothing a worker of seconds would notice.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from orchestrate.workers import sandbox

ENV = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@x",
           GIT_CONFIG_NOSYSTEM="1")


def sh(cwd: Path, *cmd: str) -> str:
    return subprocess.run(cmd, cwd=cwd, env=ENV, check=True, capture_output=True, text=True).stdout.strip()


def small_worktree(root: Path) -> tuple[Path, list[Path], list[Path]]:
    """A repository of 50 files and a detached worktree; returns it with its writable and readable paths."""
    repo = root / "repo"
    repo.mkdir()
    sh(repo, "git", "init", "-q", "-b", "main")
    for i in range(50):
        (repo / f"f{i}.txt").write_text(f"{i}\n")
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-qm", "base")
    wt = root / "wt"
    sh(repo, "git", "worktree", "add", "-q", "--detach", str(wt))
    admin = Path(sh(wt, "git", "rev-parse", "--absolute-git-dir"))
    return wt, [wt, admin], [repo]


def timed(argv: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=ENV, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t0) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    t0 = time.perf_counter()
    reason = sandbox.probe()
    probe_ms = (time.perf_counter() - t0) * 1000
    if reason:
        sys.exit(f"bubblewrap does not work here: {reason}")
    print(f"probe (once per process): {probe_ms:.1f} ms")
    with tempfile.TemporaryDirectory(prefix="orch-sandbox-bench-") as tmp:
        root = Path(tmp)
        wt, writable, readable = small_worktree(root)
        cases = {
            "sh -c true": (["sh", "-c", "true"], root, [root], []),
            "git status (50 files)": (["git", "status", "--porcelain"], wt, writable, readable),
        }
        print(f"{'command':<24}{'plain ms':>10}{'wrapped ms':>12}{'added ms':>10}{'ratio':>8}   (median of {args.runs})")
        for name, (argv, cwd, rw, ro) in cases.items():
            wrapped = sandbox.wrap(argv, cwd=cwd, writable=rw, readable=[*ro, os.environ.get("HOME", "/")])
            timed(argv, cwd), timed(wrapped, cwd)  # warm the page cache for both
            plain, boxed = [], []
            for _ in range(args.runs):
                plain.append(timed(argv, cwd))
                boxed.append(timed(wrapped, cwd))
            p, b = statistics.median(plain), statistics.median(boxed)
            print(f"{name:<24}{p:>10.2f}{b:>12.2f}{b - p:>10.2f}{b / p:>8.2f}")


if __name__ == "__main__":
    main()
