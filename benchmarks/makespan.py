"""Makespan: a campaign's wall time against its lower bound max(critical path, total work / jobs).

Run by hand: .venv/bin/python benchmarks/makespan.py [--jobs 4] [--nodes 40] [--seed 11] [--scale 1.0]
                                                     [--files 0] [--shapes random,chains,judged]

Two DAGs, each node's worker sleeping a fixed time before its commit:
- `random`: --nodes nodes, each depending on 1-3 earlier ones, durations 1-5 s drawn with --seed;
- `chains`: two independent chains whose steps take 4-1-4 s and 1-4-1 s (a barrier per layer costs
  the most here: the critical path is 9 s, a layered schedule needs 4+4+4 = 12 s plus overhead);
- `judged`: the same chains with the time spent in each node's evaluator instead of its worker, every
  worker in the sandbox (bubblewrap): evaluators run ahead while the rest goes on (engine/evaluations.py);
  skipped where the sandbox cannot run.
Durations are multiplied by --scale (0.25 for a quick look). --files N adds N small files to each
repository (a real project's size: every working copy the run checks out, and every look at one, costs
more), in folders of 100. The campaign's fixed cost (validation,
working copies, gates, merges, recorder) is measured in the same run on the same DAG with workers that
do not sleep, and added to the bound, so the ratio shows what scheduling loses, not what the engine
costs (overhead.py measures that). Target (DESIGN §14.3, eager schedule): ratio <= 1.15; the layered
schedule is printed beside it, measured in the same run.
"""
from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bytecode import compiled

WORKER = """#!/bin/sh
[ -f judged ] || sleep "$(sed -n "s/^$ORCH_NODE //p" durations.txt)"
echo "$ORCH_NODE" > "$ORCH_NODE.txt" && git add "$ORCH_NODE.txt" && git commit -qm "$ORCH_NODE"
"""
ORCH = str(Path(sys.executable).parent / "orchestrate")


def random_dag(n: int, seed: int) -> tuple[dict[str, list[str]], dict[str, float]]:
    rng = random.Random(seed)
    deps: dict[str, list[str]] = {}
    for i in range(n):
        earlier = [f"R{j}" for j in range(i)]
        deps[f"R{i}"] = sorted(rng.sample(earlier, min(len(earlier), rng.randint(1, 3)))) if i else []
    return deps, {node: float(rng.randint(1, 5)) for node in deps}


def chains() -> tuple[dict[str, list[str]], dict[str, float]]:
    deps = {"A1": [], "A2": ["A1"], "A3": ["A2"], "B1": [], "B2": ["B1"], "B3": ["B2"]}
    return deps, {"A1": 4, "A2": 1, "A3": 4, "B1": 1, "B2": 4, "B3": 1}


def critical_path(deps: dict[str, list[str]], cost: dict[str, float]) -> float:
    finish: dict[str, float] = {}
    for node in deps:  # ids are generated in a topological order
        finish[node] = cost[node] + max((finish[d] for d in deps[node]), default=0.0)
    return max(finish.values())


def campaign(root: Path, name: str, deps: dict[str, list[str]], cost: dict[str, float], judged: bool = False,
             files: int = 0) -> Path:
    repo = root / name
    repo.mkdir()
    for i in range(files):
        folder = repo / "filler" / f"d{i // 100:04d}"
        if i % 100 == 0:
            folder.mkdir(parents=True)
        (folder / f"f{i:06d}.txt").write_text(f"filler {i}\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="b",
               GIT_COMMITTER_EMAIL="b@x")
    run = lambda *a: subprocess.run(a, cwd=repo, env=env, check=True, capture_output=True)  # noqa: E731
    run("git", "init", "-q", "-b", "main")
    (repo / "work.sh").write_text(WORKER)
    (repo / "work.sh").chmod(0o755)
    (repo / "durations.txt").write_text("".join(f"{n} {c:g}\n" for n, c in cost.items()))
    if judged:  # the worker only commits; its node's evaluator takes the time
        (repo / "judged").write_text("")
    run("git", "add", "-A")
    run("git", "commit", "-qm", "base")
    run(ORCH, "init")
    # the schedule is measured, not containment: workers without the sandbox would otherwise run one at a time
    sandbox = "bwrap" if judged else "none, unsandboxed: parallel"
    lines = ["topic: span", "workers: {sh: ./work.sh}", f"defaults: {{sandbox: {sandbox}}}", "nodes:"]
    slow = 'evaluators: [{{name: slow, run: \'sleep "$(sed -n "s/^{} //p" durations.txt)"\'}}], '
    lines += [f"  - {{id: {n}, depends_on: [{', '.join(ds)}], file_surface: [{n}.txt], "
              f"{slow.format(n) if judged else ''}discipline: sh}}" for n, ds in deps.items()]
    (repo / ".ledger" / "state" / "dag.yaml").write_text("\n".join(lines) + "\n")
    return repo


def wall(repo: Path, jobs: int, schedule: str) -> float:
    t0 = time.perf_counter()
    done = subprocess.run([ORCH, "run", "--jobs", str(jobs), "--schedule", schedule, "--quiet", "--no-interactive"],
                          cwd=repo,
                          capture_output=True, text=True, env=dict(os.environ, CI="true"))
    elapsed = time.perf_counter() - t0
    assert done.returncode == 75, done.stdout + done.stderr
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--nodes", type=int, default=40)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--files", type=int, default=0)
    ap.add_argument("--shapes", default="random,chains,judged")
    a = ap.parse_args()
    compiled()
    shapes = {"random": random_dag(a.nodes, a.seed), "chains": chains(), "judged": chains()}
    shapes = {name: shapes[name] for name in a.shapes.split(",")}
    if subprocess.run(["sh", "-c", "command -v bwrap && bwrap --ro-bind / / true"], capture_output=True).returncode:
        print("judged: skipped (no bubblewrap that runs here; evaluators run ahead only in the sandbox)")
        shapes.pop("judged", None)
    print(f"{'dag':>7} {'nodes':>5} {'critical':>9} {'work/jobs':>9} {'fixed':>7} {'wall':>7} {'ratio':>6}  schedule")
    with tempfile.TemporaryDirectory() as tmp:
        for name, (deps, cost) in shapes.items():
            cost = {n: c * a.scale for n, c in cost.items()}
            cp, spread = critical_path(deps, cost), sum(cost.values()) / a.jobs
            for schedule in ("eager", "layered"):
                judged = name == "judged"
                fixed = wall(campaign(Path(tmp), f"{name}-{schedule}-fixed", deps, {n: 0.0 for n in deps}, judged,
                                      a.files), a.jobs, schedule)
                took = wall(campaign(Path(tmp), f"{name}-{schedule}", deps, cost, judged, a.files), a.jobs, schedule)
                bound = max(cp, spread) + fixed
                target = "  (target <= 1.15)" if schedule == "eager" else ""
                print(f"{name:>7} {len(deps):>5} {cp:>8.1f}s {spread:>8.1f}s {fixed:>6.1f}s {took:>6.1f}s "
                      f"{took / bound:>6.2f}  {schedule}{target}", flush=True)


if __name__ == "__main__":
    main()
