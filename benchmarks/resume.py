"""Resume of completed campaigns of 1,000 and 10,000 nodes: rebuild the state from the journal alone
(--from-log) and from the newest checkpoint plus the journal after it.

Run by hand: .venv/bin/python benchmarks/resume.py [--sizes 1000,10000]
The baseline, measured in the same run, is reading and JSON-parsing every journal line: the floor of
any replay of that journal. Targets: 1,000 nodes < 1 s, 10,000 < 3 s, cost growing no faster than the journal.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from orchestrate.engine.resume import rebuild  # noqa: E402
from orchestrate.recorder import checkpoints  # noqa: E402
from orchestrate.recorder.campaign import Campaign, apply  # noqa: E402
from orchestrate.recorder.journal import Recorder  # noqa: E402
from orchestrate.recorder.paths import Layout  # noqa: E402


def journal(n: int) -> list[dict]:
    """The events of a finished campaign of n nodes in layers of 100, as the engine writes them."""
    topic = "bench"
    layers = [[f"N{i}" for i in range(k, min(k + 100, n))] for k in range(0, n, 100)]
    events: list[dict] = []

    def add(kind, **ctx):
        events.append({"id": f"{topic}:{len(events) + 1}", "seq": len(events) + 1, "created_at": "2026-11-22T00:00:00Z",
                       "source_entity": "orchestrate@0.1.0", "source_type": "engine", "kind": kind,
                       "derived_from": [], "context": ctx})

    sha = "0" * 40
    add("open", topic=topic, dag_path="x", brief_dir="", dag_hash="h", mode="autonomous", baseline=sha,
        branch=f"campaign/{topic}", layers=layers, tip=sha)
    for k, layer in enumerate(layers):
        add("layer", k=k, tip=sha)
        for node in layer:
            add("intent", effect="worktree-add", node=node, branch=f"node/{topic}/{node}", path="p", base=sha)
            add("result", effect="worktree-add", node=node, branch=f"node/{topic}/{node}", path="p")
            add("node", node=node, status="DISPATCHED", attempt=1, branch=f"node/{topic}/{node}", worktree="w", base=sha)
            add("result", effect="worker-start", node=node, attempt=1, rc=0, timed_out=False, seconds=1.0)
            add("node", node=node, status="LANDED", head=sha, rc=0, log="l", seconds=1.0)
            for gate in ("evaluators", "reconcile-node", "coherence"):
                add("gate", node=node, gate=gate, code=0, summary="PASS", items=[])
            add("verdict", node=node, verdict="accept", at=sha)
            add("merge", node=node, sha=f"{len(events):040x}", branch="b", head=sha)
            add("transition", **{"from": "MERGE", "outcome": "merged", "to": "CHECKPOINT", "detail": node, "subject": "s"})
    return events


def setup(root: Path, n: int) -> tuple[Layout, float]:
    ledger = root / ".ledger"
    (ledger / "state" / "bench").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(ledger)], check=True)
    events = journal(n)
    path = ledger / "state" / "bench" / "journal.jsonl"
    # written as the recorder writes (sorted keys, compact): readers take a fast path for lines of that shape
    path.write_text("".join(json.dumps(e, sort_keys=True, separators=(",", ":")) + "\n" for e in events))
    env = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@x"}
    subprocess.run(["git", "-C", str(ledger), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(ledger), "commit", "-qm", "journal"], check=True,
                   env={**__import__("os").environ, **env})
    campaign = Campaign()
    for e in events[: len(events) - 500]:
        apply(campaign, e)
    checkpoints.write(Layout(root).checkpoints("bench"), campaign, log_seq=len(events) - 500,
                      log_entry_id=events[len(events) - 501]["id"], message="bench")
    t0 = time.perf_counter()
    for line in path.read_text().splitlines():
        json.loads(line)
    return Layout(root), time.perf_counter() - t0


def timed(layout: Layout, from_log: bool) -> float:
    t0 = time.perf_counter()
    c = rebuild(layout, Recorder(layout.ledger, "bench"), from_log=from_log, warn=lambda m: None)
    elapsed = time.perf_counter() - t0
    assert all(s.status == "ACCEPTED" for s in c.nodes.values())
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000")
    a = ap.parse_args()
    targets = {1000: 1.0, 10000: 3.0}
    print(f"{'nodes':>7} {'entries':>8} {'parse only':>11} {'from log':>9} {'ratio':>6} {'checkpoint':>11}  target")
    for n in (int(x) for x in a.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            layout, base = setup(Path(tmp), n)
            entries = len((layout.journal("bench")).read_text().splitlines())
            log = timed(layout, True)
            cp = timed(layout, False)
            target = targets.get(n)
            verdict = f"< {target:g}s: {'PASS' if max(log, cp) < target else 'MISS'}" if target else ""
            print(f"{n:>7} {entries:>8} {base:>10.2f}s {log:>8.2f}s {log / base:>6.2f} {cp:>10.2f}s  {verdict}")


if __name__ == "__main__":
    main()
