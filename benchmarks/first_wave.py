"""The first wave of a campaign on a big repository: how long until every node of a batch has started.

Run by hand: .venv/bin/python benchmarks/first_wave.py [--files 20000] [--nodes 4] [--sleep 2] [--repeat 1]
[--sandbox auto|none]

A repository of --files tracked files (bigrepo.py builds it), a campaign of --nodes independent nodes run with
`--jobs` as many, each worker sleeping --sleep seconds then writing one file. With no spare in the pool, every
node of the batch needs a checkout of the whole repository. Measured in the same run, alternating: orchestrate
as shipped (workers/prepared.py checks a batch's working copies out several at once) and the same code made to
check them out (and remove them at the close) one after another (`prepared.THREADS = 1`, the baseline).
Printed, for each: from the first working copy's intent to the last node's dispatch (the batch's start span,
read from the journal), from the close to the final question (every working copy removed), and the run's
wall time; then the ratios shipped / one at a time. Each run gets a repository of its own, so that no
run finds another's spares or page cache warm for it alone.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from bigrepo import ENV, fast_import
from bytecode import compiled

RUN = """import sys
from orchestrate.workers import prepared
prepared.THREADS = int(sys.argv[1]) or prepared.THREADS
from orchestrate.cli.main import main
raise SystemExit(main(sys.argv[2:]))
"""
WORKER = """#!/bin/sh
sleep "$SLEEP" && echo "$ORCH_NODE" > "n/$ORCH_NODE.txt" && git add "n/$ORCH_NODE.txt" && git commit -qm "$ORCH_NODE"
"""


def campaign(root: Path, files: int, nodes: int, sandbox: str) -> Path:
    repo = root / "repo"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True, env=ENV)
    fast_import(repo, files)
    (repo / "work.sh").write_text(WORKER)
    (repo / "work.sh").chmod(0o755)
    subprocess.run(["git", "add", "work.sh"], cwd=repo, check=True, env=ENV)
    subprocess.run(["git", "commit", "-qm", "worker sleeps"], cwd=repo, check=True, env=ENV)
    subprocess.run([sys.executable, "-m", "orchestrate", "init"], cwd=repo, check=True, capture_output=True, env=ENV)
    lines = ["topic: wave", "workers: {sh: ./work.sh}", f"defaults: {{sandbox: {sandbox}, timeout: 600}}", "nodes:"]
    lines += [f"  - {{id: W{i}, file_surface: [n/W{i}.txt], discipline: sh}}" for i in range(nodes)]
    (repo / ".ledger" / "state" / "dag.yaml").write_text("\n".join(lines) + "\n")
    return repo


def spans(repo: Path) -> tuple[float, float]:
    """Seconds from the first `worktree-add` intent to the last node's dispatch, and from the campaign's close
    entry to its final question (CLOSE removing every working copy), from the journal."""
    from orchestrate.recorder import segments
    first = last = closed = asked = None
    for line in segments.read_bytes(repo / ".ledger" / "state" / "wave" / "journal.jsonl").decode().splitlines():
        e = json.loads(line)
        at = datetime.fromisoformat(e["created_at"].replace("Z", "+00:00")).timestamp()
        if e["kind"] == "intent" and e["context"].get("effect") == "worktree-add" and first is None:
            first = at
        elif e["kind"] == "node" and e["context"].get("status") == "DISPATCHED":
            last = at
        elif e["kind"] == "close":
            closed = at
        elif e["kind"] == "seam" and closed is not None:
            asked = at
    assert None not in (first, last, closed, asked), "the campaign did not run to its final question"
    return last - first, asked - closed


def measure(root: Path, a, threads: int) -> tuple[float, float, float]:
    repo = campaign(root, a.files, a.nodes, a.sandbox)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", RUN, str(threads), "run", "--jobs", str(a.nodes), "--quiet",
                           "--no-interactive"], cwd=repo, capture_output=True, text=True,
                          env=dict(ENV, CI="true", SLEEP=str(a.sleep)))
    wall = time.monotonic() - started
    assert done.returncode == 75, done.stdout + done.stderr
    return (*spans(repo), wall)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--sleep", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--sandbox", default="auto", choices=("none", "auto"))
    a = ap.parse_args()
    compiled()
    from orchestrate.workers import prepared
    print(f"{a.nodes} independent nodes, --jobs {a.nodes}, {a.files} files, workers of {a.sleep:g} s; "
          f"checkouts at once as shipped: {prepared.THREADS}")
    found: dict[str, list[tuple[float, float, float]]] = {"shipped": [], "one at a time": []}
    with tempfile.TemporaryDirectory(prefix="first-wave-") as tmp:
        for round_ in range(a.repeat):
            for name, threads in (("shipped", 0), ("one at a time", 1)):
                found[name].append(measure(Path(tmp) / f"{round_}-{threads}", a, threads))
                start, close, run = found[name][-1]
                print(f"  round {round_ + 1} {name:>14}: start span {start:6.2f} s, close {close:5.2f} s, "
                      f"run {run:6.2f} s", flush=True)
    for i, what in enumerate(("start span", "close", "run")):
        shipped, alone = (min(r[i] for r in found[name]) for name in ("shipped", "one at a time"))
        print(f"{what + ':':<11} shipped {shipped:.2f} s, one at a time {alone:.2f} s, ratio {shipped / alone:.2f}")

if __name__ == "__main__":
    main()
