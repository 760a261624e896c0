"""Per-node cost on a big repository against a small one: what a node pays for the repository's size.

Run by hand: .venv/bin/python benchmarks/bigrepo.py [--files 20000] [--nodes 6] [--repeat 1] [--sandbox none|auto]

Two repositories, measured in the same run: one with --files tracked files (in directories of 100),
one with 20. Each runs the same campaign of --nodes trivial nodes (a worker that writes one file), a
chain, so each node starts from the merge of the one before (as most nodes of a real campaign do: from a
campaign head that moved) and nodes never overlap. A node's cycle is read from the journal: from its
working copy's start to the next node's, so the campaign's fixed cost (validation, the integration
worktree, CLOSE) is left out. The first node makes a working copy from nothing; later ones may reuse a
pooled one (workers/pool.py). Printed: the first node's cycle and the median of the later ones on each
repository, their ratio (target, DESIGN §14.4: <= 1.3), the median MERGE step (from the transition into
MERGE to the one out of it, both read from the journal), and the disk a node costs: how many full checkouts
the run made (fresh working copies and the integration worktree, from the journal) and their size (the
base tree's files, measured in the user's checkout after the run), how much the repository and the
recorder grew per node, and whether a file no node changes kept its inode from node to node (a re-base
that rewrote it would give it a new one). Beside it, the floor: the least git work such a node needs, done
by a script on both repositories in the same run (`by_hand`); its own ratio shows how much of the target a
tool that runs git can reach at all; the same for the O(diff) design, a worker on an overlay whose upper layer is
its diff (`by_overlay`; needs unprivileged user namespaces, and says so when it cannot mount); and the ceiling:
the ratio an orchestrator none of whose own steps cost more on the big repository would still show, since the
worker's own `git add` and `git commit` do. No working copy is walked while the run goes on: walking 20,000
files every fraction of a second took a core from the run being measured (on 2 cores), which inflated the
big repository's figures only. The big repository's files are written by `git fast-import`, so building
it is quick; the nodes then pay for checking it out, which is what is measured.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from bytecode import compiled

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
    # as the user's own `git status` would: without it, the files the reset wrote in its last second stay
    # racily clean in the index, and every `git status` orchestrate runs (never writing the user's index)
    # reads them again
    subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=repo, check=True, env=ENV)


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


def by_hand(root: Path, files: int, nodes: int) -> list[float]:
    """The least git work a node of this chain needs, done by a script: one working copy kept and re-based
    for each node (`checkout -f -B`, which must stat every tracked file), the worker, a `git status` to see
    what it left, a merge made with `merge-tree --write-tree` + `commit-tree` + `update-ref` (no checkout),
    and five commits in a second, small repository (the recorder's share). Seconds per node, the first
    node (the working copy's first checkout) left out, as it is for orchestrate."""
    import time
    repo = root / f"hand{files}"
    repo.mkdir(parents=True)
    run = lambda cwd, *a: subprocess.run(a, cwd=cwd, check=True, capture_output=True, env=ENV).stdout  # noqa: E731
    run(repo, "git", "init", "-q", "-b", "main")
    fast_import(repo, files)
    ledger = root / f"hand{files}-ledger"
    ledger.mkdir()
    run(ledger, "git", "init", "-q", "-b", "main")
    run(repo, "git", "branch", "campaign", "main")
    tree = root / f"hand{files}-tree"
    run(repo, "git", "worktree", "add", "-q", "--detach", str(tree), "main")
    cycles = []
    for i in range(nodes):
        t0 = time.perf_counter()
        run(tree, "git", "checkout", "-q", "-f", "-B", f"node/B{i}", "campaign")
        subprocess.run(["sh", "./work.sh"], cwd=tree, check=True, env=dict(ENV, ORCH_NODE=f"B{i}"))
        run(tree, "git", "status", "--porcelain", "-z", "--untracked-files=all")
        merged = run(repo, "git", "merge-tree", "--write-tree", "campaign", f"node/B{i}").split()[0].decode()
        commit = run(repo, "git", "commit-tree", merged, "-p", "campaign", "-p", f"node/B{i}", "-m", f"merge B{i}")
        run(repo, "git", "update-ref", "refs/heads/campaign", commit.decode().strip())
        for t in range(5):
            (ledger / "journal").write_text(f"{i} {t}\n")
            run(ledger, "git", "add", "-A")
            run(ledger, "git", "commit", "-qm", f"{i} {t}")
        cycles.append(time.perf_counter() - t0)
    return cycles[1:]


def by_overlay(root: Path, files: int, nodes: int) -> tuple[list[float], list[float]] | str:
    """The O(diff) design the 1.3 target asks for, by hand: a working copy kept at the base that only the
    orchestrator writes (the lower layer, re-based with `read-tree -m -u` from an index of its own, which
    writes only the changed paths), and the worker run in a user and mount namespace of its own on an overlay
    of it, so that everything it writes lands in the upper layer: the node's diff, found by listing that layer
    instead of looking at every file. Then the commit's diff is compared with the layer, the merge made as in
    `by_hand`, the layer removed. Seconds per node and the worker's share of them (its `git add` and `git
    commit` through the overlay, the mount included), the first node left out; or why no overlay could be
    mounted here (`unshare` missing, user namespaces disabled)."""
    import time
    run = lambda cwd, *a, **kw: subprocess.run(a, cwd=cwd, check=True, capture_output=True, env=kw.get("env", ENV),  # noqa: E731
                                               input=kw.get("input")).stdout
    repo, lower, upper, work, merged = (root / f"overlay{files}{part}" for part in ("", "-lower", "-upper", "-work", "-mnt"))
    repo.mkdir(parents=True)
    merged.mkdir()
    mount = (f"mount -t overlay overlay -o lowerdir={lower},upperdir={upper},workdir={work},userxattr {merged} "
             f"&& cd {merged} && exec sh ./work.sh")
    run(repo, "git", "init", "-q", "-b", "main")
    fast_import(repo, files)
    run(repo, "git", "branch", "campaign", "main")
    run(repo, "git", "worktree", "add", "-q", "--detach", str(lower), "main")
    admin = Path(run(lower, "git", "rev-parse", "--absolute-git-dir").decode().strip())
    time.sleep(1.1)  # past the checkout's last second, so that no entry of the index is racily clean
    run(lower, "git", "update-index", "-q", "--refresh")
    own = dict(ENV, GIT_INDEX_FILE=str(root / f"overlay{files}-index"))
    (root / f"overlay{files}-index").write_bytes((admin / "index").read_bytes())
    ledger = root / f"overlay{files}-ledger"
    ledger.mkdir()
    run(ledger, "git", "init", "-q", "-b", "main")
    was, cycles, workers = run(repo, "git", "rev-parse", "main").decode().strip(), [], []
    for i in range(nodes):
        t0 = time.perf_counter()
        base = run(repo, "git", "rev-parse", "campaign").decode().strip()
        run(lower, "git", "read-tree", "-m", "-u", was, base, env=own)
        was = base
        (admin / "index.new").write_bytes(Path(own["GIT_INDEX_FILE"]).read_bytes())  # the worker's: a copy of ours
        os.replace(admin / "index.new", admin / "index")
        run(repo, "git", "update-ref", f"refs/heads/node/B{i}", base)
        (admin / "HEAD").write_text(f"ref: refs/heads/node/B{i}\n")
        upper.mkdir()
        work.mkdir()
        t1 = time.perf_counter()
        try:
            done = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", mount],
                                  capture_output=True, text=True, env=dict(ENV, ORCH_NODE=f"B{i}"))
        except OSError as exc:
            return str(exc)
        if done.returncode:
            return (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[0]
        workers.append(time.perf_counter() - t1)
        written = [os.path.relpath(os.path.join(d, f), upper) for d, _, names in os.walk(upper) for f in names]
        head = run(repo, "git", "rev-parse", f"node/B{i}").decode().strip()
        changed = run(repo, "git", "diff-tree", "-r", "--name-only", "--no-renames", base, head).decode().split()
        assert sorted(written) == sorted(changed), (written, changed)
        ids = run(repo, "git", "hash-object", "--no-filters", "--stdin-paths",
                  input="".join(f"{upper / name}\n" for name in written).encode()).decode().split()
        assert ids == run(repo, "git", "rev-parse", *[f"{head}:{name}" for name in written]).decode().split()
        tree = run(repo, "git", "merge-tree", "--write-tree", "campaign", head).split()[0].decode()
        commit = run(repo, "git", "commit-tree", tree, "-p", "campaign", "-p", head, "-m", f"merge B{i}")
        run(repo, "git", "update-ref", "refs/heads/campaign", commit.decode().strip())
        shutil.rmtree(upper)
        shutil.rmtree(work)
        for t in range(5):
            (ledger / "journal").write_text(f"{i} {t}\n")
            run(ledger, "git", "add", "-A")
            run(ledger, "git", "commit", "-qm", f"{i} {t}")
        cycles.append(time.perf_counter() - t0)
    return cycles[1:], workers[1:]


def du(path: Path) -> int:
    total = 0
    for dirpath, _dirs, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
            except OSError:
                pass
    return total


def intervals(repo: Path) -> tuple[list[float], list[float], dict[str, int]]:
    """Seconds between consecutive nodes' `worktree-add` intents in the journal: each is one node's whole
    cycle (working copy, worker, gates, merge, recorder) in a chain where nodes never overlap; each
    MERGE step's seconds (the transition into MERGE is journalled as RECONCILE ends, so the step includes
    that transition's recorder commit, the same on every repository); and how many working copies were
    checked out in full, re-based, and integration worktrees made."""
    import json
    from datetime import datetime
    times, merges, entered = [], [], None
    made = {"fresh": 0, "reused": 0, "integration": 0, "worker": []}
    from orchestrate.recorder import segments
    for line in segments.read_bytes(repo / ".ledger" / "state" / "big" / "journal.jsonl").decode().splitlines():
        e = json.loads(line)
        at = datetime.fromisoformat(e["created_at"].replace("Z", "+00:00")).timestamp()
        effect = e["context"].get("effect")
        if e["kind"] == "intent" and effect == "worktree-add":
            times.append(at)
        elif e["kind"] == "result" and effect == "worktree-add":
            # one checked out for a batch (workers/prepared.py) is a full checkout taken as a spare
            made["reused" if e["context"].get("reused") and not e["context"].get("prepared") else "fresh"] += 1
        elif e["kind"] == "result" and effect == "integration-add":
            made["integration"] += 1
        elif e["kind"] == "transition" and e["context"]["to"] == "MERGE":
            entered = at
        elif e["kind"] == "transition" and e["context"]["from"] == "MERGE" and entered is not None:
            merges.append(at - entered)
        elif e["kind"] == "node" and e["context"].get("status") == "LANDED" and "seconds" in e["context"]:
            made["worker"].append(e["context"]["seconds"])  # the worker's own time (its git add and commit)
    return [b - a for a, b in zip(times, times[1:])], merges, made


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]  # the upper median: noise on a shared machine


def measured(repo: Path) -> tuple[list[float], list[float], dict]:
    kept = repo / "src" / "d0" / "f0.txt"  # in every base, changed by no node
    inodes: dict[str, set[int]] = {}  # working copy's inode -> the inodes its copy of `kept` had
    stop = threading.Event()

    def sample() -> None:  # one lstat per working copy a sample: nothing a run of seconds notices
        trees = repo / ".scratch" / "worktrees" / "big"
        while not stop.wait(0.05):
            try:
                for tree in trees.iterdir():
                    if not tree.name.startswith("."):
                        inodes.setdefault(str(tree.stat().st_ino), set()).add(os.lstat(tree / kept.relative_to(repo)).st_ino)
            except OSError:
                pass

    grown = -(du(repo / ".git") + du(repo / ".ledger"))
    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    done = subprocess.run([ORCH, "run", "--jobs", "1", "--quiet", "--no-interactive"], cwd=repo,
                          capture_output=True, text=True, env=dict(ENV, CI="true"))
    stop.set()
    watcher.join()
    assert done.returncode == 75, done.stdout + done.stderr
    grown += du(repo / ".git") + du(repo / ".ledger")
    cycles, merges, made = intervals(repo)
    tracked = sum(os.lstat(repo / name).st_blocks * 512 for name in
                  subprocess.run(["git", "ls-files", "-z"], cwd=repo, capture_output=True, text=True).stdout.split("\0")
                  if name)
    rewritten = max((len(seen) for seen in inodes.values()), default=0) - 1
    return cycles, merges, dict(made, checkout=tracked, grown=grown, rewritten=rewritten)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--nodes", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=1,
                    help="run both repositories this many times, alternating (the load of a shared machine "
                         "drifts in minutes: alternating spreads it over both); medians over all runs")
    ap.add_argument("--sandbox", default="none")
    a = ap.parse_args()
    compiled()
    runs: dict[int, list] = {20: [], a.files: []}
    hand: dict[int, list[float]] = {20: [], a.files: []}
    overlay: dict[int, list] | str = {20: [], a.files: []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.repeat):
            for files in runs:
                runs[files].append(measured(campaign(Path(tmp) / str(r), files, a.nodes, a.sandbox)))
                hand[files] += by_hand(Path(tmp) / str(r), files, a.nodes)
                if not isinstance(overlay, str):
                    found = by_overlay(Path(tmp) / str(r), files, a.nodes)
                    overlay = found if isinstance(found, str) else {**overlay, files: overlay[files] + [found]}
    print(f"a chain of {a.nodes} trivial nodes, sandbox {a.sandbox}, {a.repeat} run(s) of each repository; a node's "
          "cycle = from its working copy's start to the next node's")
    steady = {}
    for files, results in runs.items():
        later = [c for cycles, _, _ in results for c in cycles[1:]]
        merges = [m for _, ms, _ in results for m in ms]
        steady[files] = median(later)
        each = ", ".join(f"{median(cycles[1:]):.2f}" for cycles, _, _ in results)
        print(f"{files:>9} files: first node {median([c[0] for c, _, _ in results]):.2f}s, later nodes "
              f"{steady[files]:.2f}s each (median of {len(later)}; per run {each}), MERGE step {median(merges):.3f}s")
        disk = results[-1][2]
        print(f"{'':>16} disk: {disk['fresh']} full checkouts for {a.nodes} nodes, plus {disk['integration']} "
              f"integration worktree ({disk['checkout'] / 2**20:.1f} MB each); {disk['reused']} re-based, an unchanged "
              f"file rewritten {disk['rewritten']} times; repository and recorder +{disk['grown'] / a.nodes / 1024:.0f} KB "
              "per node")
    # What orchestrate adds: a node's cycle less its worker's own time (the worker's `git add` and `git commit`
    # stat every file too, and would by hand); each node's cycle is paired with its own worker's seconds.
    engine = {files: median([c - w for cycles, _, m in results for c, w in zip(cycles[1:], m["worker"][1:])])
              for files, results in runs.items()}
    workers = {files: median([w for _, _, m in results for w in m["worker"][1:]]) for files, results in runs.items()}
    print(f"{'':>16} the worker's own time, later nodes: {workers[20]:.2f}s (20 files), {workers[a.files]:.2f}s "
          f"({a.files} files); the rest of a cycle: {engine[20]:.2f}s and {engine[a.files]:.2f}s, ratio "
          f"{engine[a.files] / engine[20]:.2f}")
    # The best ratio at all with this worker: the small repository's whole cycle, plus only what the worker's own
    # git work costs more on the big one (an orchestrator whose every step cost the same on both).
    ceiling = (steady[20] + workers[a.files] - workers[20]) / steady[20]
    print(f"{'':>16} with nothing of orchestrate's growing with the repository, the ratio would still be "
          f"{ceiling:.2f} (the small cycle plus the worker's own extra time)")
    floor = {files: median(times) for files, times in hand.items()}
    print(f"{'':>16} by hand, the least git work a node needs (see by_hand): {floor[20]:.2f}s (20 files), "
          f"{floor[a.files]:.2f}s ({a.files} files), ratio {floor[a.files] / floor[20]:.2f}; orchestrate's cycle "
          f"less this: {steady[20] - floor[20]:+.2f}s and {steady[a.files] - floor[a.files]:+.2f}s")
    if isinstance(overlay, str):
        print(f"{'':>16} an overlay working copy (by_overlay): not measured here ({overlay})")
    else:
        lay = {files: median([c for cycles, _ in done for c in cycles]) for files, done in overlay.items()}
        own = {files: median([w for _, spent in done for w in spent]) for files, done in overlay.items()}
        print(f"{'':>16} by hand on an overlay, the node's diff its upper layer (see by_overlay): {lay[20]:.2f}s (20 "
              f"files), {lay[a.files]:.2f}s ({a.files} files), ratio {lay[a.files] / lay[20]:.2f}; of which the "
              f"worker's git through the overlay {own[20]:.2f}s and {own[a.files]:.2f}s")
    ratio = steady[a.files] / steady[20]
    per_run = ", ".join(f"{median(b[0][1:]) / median(s[0][1:]):.2f}" for s, b in zip(runs[20], runs[a.files]))
    print(f"ratio big / small, later nodes: {ratio:.2f}  (target <= 1.3: {'PASS' if ratio <= 1.3 else 'MISS'}; "
          f"per run {per_run})")

if __name__ == "__main__":
    main()
