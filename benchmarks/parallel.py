"""Parallel efficiency: one layer of 4 nodes whose workers sleep 2 s, at --jobs 4, against the ideal 2 s.

Run by hand: .venv/bin/python benchmarks/parallel.py [--nodes 4] [--sleep 2] [--jobs 4]
The fixed cost (validation, worktrees, gates, merges, recorder commits) is measured in the same run
with workers that do not sleep; the ratio is (wall - fixed) / sleep. Target: <= 1.3 plus fixed start-up.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bytecode import compiled

WORKER = """#!/bin/sh
sleep {sleep}
echo "$ORCH_NODE" > "$ORCH_NODE.txt" && git add -A && git commit -qm "$ORCH_NODE"
"""


def campaign(root: Path, nodes: int, sleep: float) -> Path:
    repo = root / f"repo-{sleep}"
    repo.mkdir()
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@x")
    run = lambda *a: subprocess.run(a, cwd=repo, env=env, check=True, capture_output=True)  # noqa: E731
    run("git", "init", "-q", "-b", "main")
    (repo / "work.sh").write_text(WORKER.format(sleep=sleep))
    (repo / "work.sh").chmod(0o755)
    run("git", "add", "-A")
    run("git", "commit", "-qm", "base")
    run(str(Path(sys.executable).parent / "orchestrate"), "init")
    # where bubblewrap does not work, workers without it would run one at a time: parallelism is measured here
    lines = ["topic: par", "workers: {sh: ./work.sh}", "defaults: {unsandboxed: parallel}", "nodes:"]
    lines += [f"  - {{id: P{i}, depends_on: [], file_surface: [P{i}.txt], discipline: sh}}" for i in range(nodes)]
    (repo / ".ledger" / "state" / "dag.yaml").write_text("\n".join(lines) + "\n")
    return repo


def timed_run(repo: Path, jobs: int) -> float:
    t0 = time.perf_counter()
    done = subprocess.run([str(Path(sys.executable).parent / "orchestrate"), "run", "--jobs", str(jobs), "--quiet"],
                          cwd=repo, capture_output=True, text=True, env=dict(os.environ, CI="true"))
    elapsed = time.perf_counter() - t0
    assert done.returncode == 75, done.stdout + done.stderr
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--sleep", type=float, default=2.0)
    ap.add_argument("--jobs", type=int, default=4)
    a = ap.parse_args()
    compiled()
    with tempfile.TemporaryDirectory() as tmp:
        fixed = timed_run(campaign(Path(tmp), a.nodes, 0), a.jobs)
        wall = timed_run(campaign(Path(tmp), a.nodes, a.sleep), a.jobs)
    ideal = a.sleep * -(-a.nodes // a.jobs)
    ratio = (wall - fixed) / ideal
    print(f"{a.nodes} nodes sleeping {a.sleep:g}s at --jobs {a.jobs}: wall {wall:.2f}s, fixed cost {fixed:.2f}s "
          f"(same campaign, no sleep), ideal {ideal:.2f}s")
    print(f"ratio (wall - fixed) / ideal = {ratio:.2f}  (target <= 1.3: {'PASS' if ratio <= 1.3 else 'MISS'}); "
          f"wall / (ideal + fixed) = {wall / (ideal + fixed):.2f}")


if __name__ == "__main__":
    main()
