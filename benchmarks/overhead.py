"""Engine overhead against the physical limit: N trivial nodes over L layers, `orchestrate run --jobs 1`,
against a script that does the same git work by hand in the same run (per node: worktree add, one
commit, `merge --no-ff` in an integration worktree, worktree remove; plus one commit in a second
repository per transition, as the recorder does).

Run by hand: .venv/bin/python benchmarks/overhead.py [--sizes 16,64,256] [--layers 4] [--count-git]
            [--against DIR --rounds 3] [--budget]
Target: ratio <= 1.5 at every N under both schedules, and per-node cost flat in N. The engine runs per size
with workers outside the sandbox (`sandbox: none`) under the eager and the layered schedule (each ratio
against the by-hand script), and eager inside the sandbox (`sandbox: bwrap`, when bubblewrap works here),
whose cost per node is printed against the first.

With --count-git, nothing is timed: each schedule runs once with a `git` on PATH that logs its arguments
before it execs the real one, and the git processes per node are printed by subcommand, the engine's apart
from the workers' own (a worker's environment carries ORCH_NODE). Counts do not depend on the machine's load,
which the timings do. With --against DIR, the code unpacked in DIR (`git archive REV | tar -x -C DIR`) is
timed too, interleaved with this code and the by-hand script round by round (medians printed; no sandbox).
With --budget, the campaign has a budget (`budget: {cost_usd: 1000}`, never reached), so the engine works
out what was spent before every dispatch.
"""
from __future__ import annotations

import argparse
import collections
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bytecode import compiled

BIN = Path(sys.executable).parent
ENV = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@x",
           CI="true")
TRANSITIONS_PER_NODE = 5  # DISPATCH, AWAIT, RECONCILE, MERGE, CHECKPOINT for a node alone in its batch


def sh(cwd: Path, *cmd: str) -> None:
    subprocess.run(cmd, cwd=cwd, env=ENV, check=True, capture_output=True)


def repo_with(root: Path, name: str) -> Path:
    repo = root / name
    repo.mkdir()
    sh(repo, "git", "init", "-q", "-b", "main")
    (repo / "work.sh").write_text('#!/bin/sh\necho "$ORCH_NODE" > "$ORCH_NODE.txt"\n'
                                  'git add -A && git commit -qm "$ORCH_NODE"\n')
    (repo / "work.sh").chmod(0o755)
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-qm", "base")
    return repo


def engine(root: Path, n: int, layers: int, sandbox: str = "none", schedule: str = "eager",
           env: dict[str, str] = ENV, tag: str = "", budget: bool = False) -> float:
    repo = repo_with(root, f"engine-{n}-{sandbox}-{schedule}{tag}")
    sh(repo, str(BIN / "orchestrate"), "init")
    per = max(1, n // layers)
    lines = ["topic: over", f"defaults: {{sandbox: {sandbox}}}", "workers: {sh: ./work.sh}",
             *(["budget: {cost_usd: 1000}"] if budget else []), "nodes:"]
    for i in range(n):
        dep = f"N{i - per}" if i >= per else ""
        lines.append(f"  - {{id: N{i}, depends_on: [{dep}], file_surface: [N{i}.txt], discipline: sh}}")
    (repo / ".ledger" / "state" / "dag.yaml").write_text("\n".join(lines) + "\n")
    t0 = time.perf_counter()
    done = subprocess.run([str(BIN / "orchestrate"), "run", "--jobs", "1", "--schedule", schedule, "--quiet"],
                          cwd=repo, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    assert done.returncode == 75, done.stdout + done.stderr
    return elapsed


def by_hand(root: Path, n: int) -> float:
    repo = repo_with(root, f"hand-{n}")
    ledger = root / f"ledger-{n}"
    ledger.mkdir()
    sh(ledger, "git", "init", "-q", "-b", "main")
    t0 = time.perf_counter()
    sh(repo, "git", "branch", "campaign/x")
    integ = root / f"integ-{n}"
    sh(repo, "git", "worktree", "add", "-q", str(integ), "campaign/x")
    for i in range(n):
        wt = root / f"wt-{n}-{i}"
        sh(repo, "git", "worktree", "add", "-q", "-b", f"node/x/N{i}", str(wt), "campaign/x")
        sh(wt, "sh", "-c", f"ORCH_NODE=N{i} ./work.sh")
        sh(integ, "git", "merge", "--no-ff", "-q", "-m", f"merge node N{i}", f"node/x/N{i}")
        sh(repo, "git", "worktree", "remove", "--force", str(wt))
        for t in range(TRANSITIONS_PER_NODE):
            (ledger / "journal").write_text(f"{i} {t}\n")
            sh(ledger, "git", "add", "-A")
            sh(ledger, "git", "commit", "-qm", f"x: {i} {t}")
    return time.perf_counter() - t0


def count_git(root: Path, n: int, layers: int, schedule: str) -> None:
    """Run the campaign once with a logging `git` first on PATH; print git processes per node."""
    shim, log = root / "shim", root / f"git-{schedule}.log"
    shim.mkdir(exist_ok=True)
    (shim / "git").write_text(f'#!/bin/sh\nprintf "%s %s\\0" "${{ORCH_NODE:+W}}${{ORCH_NODE:-E}}" "$*" >> {log}\n'
                              f'exec {shutil.which("git")} "$@"\n')
    (shim / "git").chmod(0o755)
    engine(root, n, layers, schedule=schedule, env=dict(ENV, PATH=f"{shim}{os.pathsep}{ENV['PATH']}"))
    engine_calls: collections.Counter = collections.Counter()
    workers = 0
    for line in filter(None, log.read_text().split("\0")):  # a commit message spans lines
        who, _, args = line.partition(" ")
        if who != "E":
            workers += 1
            continue
        words = args.split(" ")
        while words and words[0] in ("-C", "-c"):  # the options before the subcommand
            words = words[2:]
        engine_calls[words[0] if words else "?"] += 1
    total = sum(engine_calls.values())
    top = ", ".join(f"{cmd} {k / n:.1f}" for cmd, k in engine_calls.most_common(8))
    print(f"{n:>6} {schedule:>8}: {total / n:5.1f} engine git processes per node ({top}); workers {workers / n:.1f}",
          flush=True)


def compare(root: Path, n: int, layers: int, other: Path, rounds: int, budget: bool) -> None:
    """This code and the code at `other` (on PYTHONPATH), interleaved round by round with the by-hand script:
    the median of each, so that both ratios are measured in the same run under the same load."""
    theirs_env = dict(ENV, PYTHONPATH=str(other))
    runs: dict[str, list[float]] = {k: [] for k in ("hand", "eager", "eager other", "layered", "layered other")}
    for r in range(rounds):
        sub = root / f"round-{r}"
        sub.mkdir()
        runs["hand"].append(by_hand(sub, n))
        order = [("eager", ENV), ("eager other", theirs_env), ("layered", ENV), ("layered other", theirs_env)]
        for name, env in (order if r % 2 == 0 else order[::-1]):
            runs[name].append(engine(sub, n, layers, schedule=name.split()[0], env=env, tag=name.replace(" ", "-"),
                                     budget=budget))
    med = {k: statistics.median(v) for k, v in runs.items()}
    cells = "".join(f" {med[k]:>7.2f}s {med[k] / med['hand']:>5.2f} {1000 * med[k] / n:>5.0f}ms"
                    for k in ("eager", "layered", "eager other", "layered other"))
    print(f"{n:>6} {med['hand']:>7.2f}s{cells}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="16,64,256")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--dir", default=None, help="where to build the repositories (e.g. /dev/shm for tmpfs)")
    ap.add_argument("--count-git", action="store_true", help="count git processes per node instead of timing")
    ap.add_argument("--against", metavar="DIR", help="also time the orchestrate code in DIR (an unpacked older "
                    "commit, put first on PYTHONPATH), interleaved; medians of --rounds")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", action="store_true", help="give the campaign a budget it never reaches")
    a = ap.parse_args()
    compiled(*([Path(a.against)] if a.against else []), Path(__file__).resolve().parent.parent)
    if a.against:
        print(f"{'nodes':>6} {'by hand':>8}" + "".join(f" {h:>22}" for h in (
            "eager (ratio, /node)", "layered", f"eager {Path(a.against).name}", f"layered {Path(a.against).name}")))
        for n in (int(x) for x in a.sizes.split(",")):
            with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
                compare(Path(tmp), n, a.layers, Path(a.against).resolve(), a.rounds, a.budget)
        return
    if a.count_git:
        for n in (int(x) for x in a.sizes.split(",")):
            for schedule in ("eager", "layered"):
                with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
                    count_git(Path(tmp), n, a.layers, schedule)
        return
    from orchestrate.workers import sandbox
    boxed = sandbox.probe() is None
    print(f"{'nodes':>6} {'by hand':>9} {'eager':>9} {'ratio':>6} {'per node':>9} {'layered':>9} {'ratio':>6}"
          "  target <= 1.5" + (f"  {'sandboxed':>10} {'vs none':>8} {'+per node':>10}" if boxed else "  (no sandbox here)"),
          flush=True)
    for n in (int(x) for x in a.sizes.split(",")):
        with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
            hand = by_hand(Path(tmp), n)
            ours = engine(Path(tmp), n, a.layers, budget=a.budget)
            layered = engine(Path(tmp), n, a.layers, schedule="layered", budget=a.budget)
            jailed = engine(Path(tmp), n, a.layers, "bwrap", budget=a.budget) if boxed else None
        worst = max(ours, layered) / hand
        line = (f"{n:>6} {hand:>8.2f}s {ours:>8.2f}s {ours / hand:>6.2f} {1000 * ours / n:>7.0f}ms "
                f"{layered:>8.2f}s {layered / hand:>6.2f}  {'PASS' if worst <= 1.5 else 'MISS'}")
        if jailed is not None:
            line += f"  {jailed:>9.2f}s {jailed / ours:>8.2f} {1000 * (jailed - ours) / n:>8.0f}ms"
        print(line, flush=True)


if __name__ == "__main__":
    main()
