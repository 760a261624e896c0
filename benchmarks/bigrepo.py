"""Per-node cost on a big repository against a small one: what a node pays for the repository's size.

Run by hand: .venv/bin/python benchmarks/bigrepo.py [--files 20000] [--nodes 4] [--sandbox none|auto]

Two repositories, measured in the same run: one with --files tracked files (in directories of 100),
one with 20. Each runs the same campaign of --nodes trivial nodes (a worker that writes one file), a
chain, so each node starts from the merge of the one before (as most nodes of a real campaign do: from a
campaign head that moved) and nodes never overlap. A node's cycle is read from the journal: from its
working copy's start to the next node's, so the campaign's fixed cost (validation, the integration
worktree, CLOSE) is left out. The first node makes a working copy from nothing; later ones may reuse a
pooled one (workers/pool.py). Printed: the first node's cycle and the median of the later ones on each
repository, their ratio (target, DESIGN §14.4: <= 1.3), the median MERGE step (from the transition into
MERGE to the one out of it, both read from the journal), and the disk each node's working copy took at its
largest (sampled from .scratch/worktrees while the campaign runs, so it shows what a node costs in space,
not only in time). The big repository's files are written by `git fast-import`, so building it is quick; the
nodes then pay for checking it out, which is what is measured.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ORCH = str(Path(sys.executable).parent / "orchestrate")
WORKER = """#!/bin/sh
echo "$ORCH_NODE" > "n/$ORCH_NODE.txt" && git add "n/$ORCH_NODE.txt" && git commit -qm "$ORCH_NODE"
"""
ENV = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="b",
           GIT_COMMITTER_EMAIL="b@x")


def fast_import(repo: Path, files: int) -> None:
    """One commit holding `files` small files plus the worker and n/.keep, written without a checkout."""
    blobs = [b"blob\nmark :1\ndata 6\nhello\n"]
    worker = WORKER.encode()
    blobs.append(b"blob\nmark :2\ndata %d\n%s\n" % (len(worker), worker))
    lines = [b"commit refs/heads/main\ncommitter b <b@x> 0 +0000\ndata 4\nbase\n"]
    lines += [b"M 100644 :1 src/d%d/f%d.txt\n" % (i // 100, i) for i in range(files)]
    lines.append(b"M 100755 :2 work.sh\nM 100644 :1 n/.keep\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=b"".join(blobs + lines), check=True, env=ENV)
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=repo, check=True, env=ENV)


def campaign(root: Path, files: int, nodes: int, sandbox: str) -> Path:
    repo = root / f"repo{files}"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True, env=ENV)
    fast_import(repo, files)
    subprocess.run([ORCH, "init"], cwd=repo, check=True, capture_output=True, env=ENV)
    lines = ["topic: big", "workers: {sh: ./work.sh}", f"defaults: {{sandbox: {sandbox}}}", "nodes:"]
    lines += [f"  - {{id: B{i}, depends_on: [{f'B{i - 1}' if i else ''}], file_surface: [n/B{i}.txt], discipline: sh}}"
              for i in range(nodes)]
    (repo / ".ledger" / "state" / "dag.yaml").write_text("\n".join(lines) + "\n")
    return repo


def du(path: Path) -> int:
    total = 0
    for dirpath, _dirs, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
            except OSError:
                pass
    return total


def intervals(repo: Path) -> tuple[list[float], list[float]]:
    """Seconds between consecutive nodes' `worktree-add` intents in the journal: each is one node's whole
    cycle (working copy, worker, gates, merge, recorder) in a chain where nodes never overlap; and each
    MERGE step's seconds (the transition into MERGE is journalled as RECONCILE ends, so the step includes
    that transition's recorder commit, the same on every repository)."""
    import json
    from datetime import datetime
    times, merges, entered = [], [], None
    for line in (repo / ".ledger" / "state" / "big" / "journal.jsonl").read_text().splitlines():
        e = json.loads(line)
        at = datetime.fromisoformat(e["created_at"].replace("Z", "+00:00")).timestamp()
        if e["kind"] == "intent" and e["context"].get("effect") == "worktree-add":
            times.append(at)
        elif e["kind"] == "transition" and e["context"]["to"] == "MERGE":
            entered = at
        elif e["kind"] == "transition" and e["context"]["from"] == "MERGE" and entered is not None:
            merges.append(at - entered)
    return [b - a for a, b in zip(times, times[1:])], merges


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]  # the upper median: noise on a shared machine


def measured(repo: Path) -> tuple[list[float], list[float], int]:
    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        trees = repo / ".scratch" / "worktrees" / "big"
        while not stop.wait(0.2):
            if trees.is_dir():
                for tree in trees.iterdir():
                    if not tree.name.startswith("."):  # the pool's spares are counted once in use
                        peak[0] = max(peak[0], du(tree))

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    done = subprocess.run([ORCH, "run", "--jobs", "1", "--quiet", "--no-interactive"], cwd=repo,
                          capture_output=True, text=True, env=dict(ENV, CI="true"))
    stop.set()
    watcher.join()
    assert done.returncode == 75, done.stdout + done.stderr
    return *intervals(repo), peak[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--nodes", type=int, default=6)
    ap.add_argument("--sandbox", default="none")
    a = ap.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for files in (20, a.files):
            results[files] = measured(campaign(Path(tmp), files, a.nodes, a.sandbox))
    print(f"a chain of {a.nodes} trivial nodes, sandbox {a.sandbox}; a node's cycle = from its working copy's "
          "start to the next node's")
    steady = {}
    for files, (cycles, merges, disk) in results.items():
        steady[files] = median(cycles[1:])
        print(f"{files:>9} files: first node {cycles[0]:.2f}s, later nodes {steady[files]:.2f}s each (median), "
              f"MERGE step {median(merges):.3f}s (median of {len(merges)}), "
              f"a working copy up to {disk / 2**20:.1f} MB on disk")
    ratio = steady[a.files] / steady[20]
    print(f"ratio big / small, later nodes: {ratio:.2f}  (target <= 1.3: {'PASS' if ratio <= 1.3 else 'MISS'}); "
          f"first node: {results[a.files][0][0] / results[20][0][0]:.2f}")


if __name__ == "__main__":
    main()
