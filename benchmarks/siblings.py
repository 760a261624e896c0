"""Cost of the sibling check (orchestrate/workers/siblings.py) that runs each time a worker without the
sandbox returns: every other node worktree holding waiting or settled work is compared with its recorded
commit (one `git status` each, plus one `for-each-ref` and one `rev-parse` per check). Measured on a
repository of N files with K sibling worktrees, each one commit ahead of the base (landed nodes awaiting
their gates): the check when nothing changed (every return), and when one sibling was written into (it is
put back: a forced checkout and `git clean -ffdx`). Baseline in the same run: the `git status` orchestrate
already runs in the returning worker's own worktree (its leftover check), in one sibling's worktree.

Worktrees are measured "settled" (their index written more than a second after their files, as after any
worker that runs longer than that) and "fresh" (`--fresh`: checked out and committed in the same second,
so git re-reads every racily clean file on each status: orchestrate's status calls never rewrite an index).

With `--campaign N`, also a whole run: `orchestrate run --jobs 1` in this process on overhead.py's campaign
(N trivial nodes over 4 layers, `sandbox: none`), every call of the check timed: a layer of L nodes makes
L - 1 returns that each compare up to L - 1 landed siblings, so the check grows with the layer's width.

Run by hand: .venv/bin/python benchmarks/siblings.py [--files 3000] [--siblings 1,4,8] [--runs 15] [--fresh]
[--dir /dev/shm] [--campaign 64]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

from bytecode import compiled

ENV = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@x",
           GIT_CONFIG_NOSYSTEM="1")
TOPIC = "bench"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True, text=True).stdout.strip()


def project(root: Path, files: int) -> Path:
    repo = root / "repo"
    for i in range(files):  # 100 files a folder, as a source tree would spread them
        path = repo / "src" / f"d{i // 100}" / f"f{i}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{i}\n" * 20)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return repo


def context(repo: Path, siblings: int, settle: bool):
    """A campaign with `siblings` LANDED nodes (worktree and branch one commit ahead), and the node X that
    has just returned; only what siblings.check reads of the engine's context."""
    from orchestrate.recorder.campaign import LANDED, NodeState
    base = git(repo, "rev-parse", "HEAD")
    nodes = {"X": NodeState("X", status="DISPATCHED", worktree="", branch=f"node/{TOPIC}/X")}
    for i in range(siblings):
        node, where = f"N{i}", repo / ".scratch" / "worktrees" / TOPIC / f"N{i}"
        git(repo, "worktree", "add", "-q", "-b", f"node/{TOPIC}/{node}", str(where), base)
        (where / f"{node}.txt").write_text("x\n")
        git(where, "add", "-A")
        git(where, "commit", "-qm", node)
        nodes[node] = NodeState(node, status=LANDED, attempt=1, branch=f"node/{TOPIC}/{node}", rc=0,
                                worktree=str(where.relative_to(repo)), base=base, head=git(where, "rev-parse", "HEAD"))
    if settle:
        time.sleep(1.1)
        for node in nodes.values():
            if node.worktree:
                git(repo / node.worktree, "update-index", "-q", "--refresh")
    campaign = SimpleNamespace(nodes=nodes)
    dag = SimpleNamespace(by_id={n: SimpleNamespace(worker_spec=None) for n in nodes})
    quiet = SimpleNamespace(always=lambda _line: None)
    return SimpleNamespace(root=repo, topic=TOPIC, campaign=campaign, dag=dag, out=quiet, blamed={},
                           executor=SimpleNamespace(queue=[], live={}), emit=lambda *_a, **_k: None)


def timed(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--siblings", default="1,4,8")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--fresh", action="store_true", help="measure worktrees whose index is racily clean")
    parser.add_argument("--dir", default=None, help="where to build the repository (e.g. /dev/shm)")
    parser.add_argument("--campaign", type=int, default=0, help="also time the check in a run of N nodes")
    args = parser.parse_args()
    compiled()
    from orchestrate import git as orch_git
    from orchestrate.workers import siblings
    print(f"{args.files} files, {'fresh' if args.fresh else 'settled'} worktrees; median of {args.runs}")
    print("| siblings | `git status` in one (baseline) | check, nothing changed | per sibling | ratio to baseline "
          "| check, one written into (put back) |")
    print("|---|---|---|---|---|---|")
    for count in (int(s) for s in args.siblings.split(",")):
        root = Path(tempfile.mkdtemp(prefix="orch-siblings-", dir=args.dir))
        try:
            repo = project(root, args.files)
            ctx = context(repo, count, settle=not args.fresh)
            first = repo / ctx.campaign.nodes["N0"].worktree
            base = timed(lambda: orch_git.status_porcelain(first), args.runs)
            clean = timed(lambda: siblings.check(ctx, "X"), args.runs)

            def dirty():
                (first / "src" / "d0" / "f0.txt").write_text("planted\n")
                assert siblings.check(ctx, "X")
            caught = timed(dirty, args.runs)
            print(f"| {count} | {base * 1000:.1f} ms | {clean * 1000:.1f} ms | {clean / count * 1000:.1f} ms "
                  f"| {clean / base:.2f} | {caught * 1000:.1f} ms |")
        finally:
            shutil.rmtree(root, ignore_errors=True)
    if args.campaign:
        in_a_run(args.campaign, args.dir)


def in_a_run(n: int, where: str | None) -> None:
    import overhead  # this folder is on sys.path when the script runs
    from orchestrate.cli.main import main as orchestrate
    from orchestrate.workers import returns, siblings
    root = Path(tempfile.mkdtemp(prefix="orch-siblings-run-", dir=where))
    spent: list[float] = []
    check = siblings.check

    def timed_check(ctx, node_id: str) -> str:
        start = time.perf_counter()
        try:
            return check(ctx, node_id)
        finally:
            spent.append(time.perf_counter() - start)
    returns.siblings.check = timed_check
    cwd = Path.cwd()
    try:
        repo = overhead.repo_with(root, "run")
        overhead.sh(repo, str(overhead.BIN / "orchestrate"), "init")
        per = max(1, n // 4)
        lines = ["topic: over", "defaults: {sandbox: none}", "workers: {sh: ./work.sh}", "nodes:"]
        lines += [f"  - {{id: N{i}, depends_on: [{f'N{i - per}' if i >= per else ''}], file_surface: [N{i}.txt], "
                  "discipline: sh}" for i in range(n)]
        (repo / ".ledger" / "state" / "dag.yaml").write_text("\n".join(lines) + "\n")
        os.environ.update(overhead.ENV)
        os.chdir(repo)
        start = time.perf_counter()
        rc = orchestrate(["run", "--jobs", "1", "--quiet"])
        wall = time.perf_counter() - start
    finally:
        os.chdir(cwd)
        returns.siblings.check = check
        shutil.rmtree(root, ignore_errors=True)
    total = sum(spent)
    print(f"a run of {n} nodes over 4 layers (exit {rc}): wall {wall:.2f} s; the check ran {len(spent)} times, "
          f"{total:.2f} s in all ({total / wall:.0%} of the run), {total / len(spent) * 1000:.1f} ms a return "
          f"(median {statistics.median(spent) * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
