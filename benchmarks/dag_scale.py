"""Validate + layer DAGs of 1k, 10k and 100k nodes; print time, peak memory and a ratio to plain parsing.

Run by hand: .venv/bin/python benchmarks/dag_scale.py [--sizes 1000,10000,100000] [--shapes layered,deep]
    [--before DIR]
Shapes: `layered` is wide layers each depending on the one before (shallow); `deep` gives every node up
to three dependencies among the 300 nodes before it, so ancestry runs thousands of layers deep; `composes`
is 100-deep COMPOSES chains (a chain's head inherits the gates of all below it); `loops` is LOOPS_WITH
groups of 50, each waiting for the group before (contracted groups, wide shared dependencies).
Each measurement runs in a fresh process so memory figures (peak RSS) do not mix. The baseline, measured in the
same run on the same file, is the parser alone (PyYAML's C loader for YAML, `json` for the same DAG
written as JSON): the floor any validator reading that format pays. With `--before DIR` (a checkout of older
code, e.g. `git worktree add DIR main`) each DAG is also validated by that code, right after, for a ratio.
Targets (2-core machine), for every shape: 10k nodes < 1 s as JSON and < 2 s as YAML, 100k < 10 s as JSON;
peak memory < 1 GB.
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write(path: Path, nodes: list[dict], edges: list[dict] = ()) -> None:
    """The same DAG as flow-style YAML (one node or edge a line) and as JSON beside it."""
    lines = ["topic: scale", "workers: {core: \"true\"}", "nodes:"]
    for node in nodes:
        extra = ", serialize: true" if node.get("serialize") else ""
        if node.get("evaluators"):
            extra += ", evaluators: [" + ", ".join(f"{{name: {e['name']}, run: \"{e['run']}\"}}"
                                                   for e in node["evaluators"]) + "]"
        lines.append(f"  - {{id: {node['id']}, depends_on: [{', '.join(node['depends_on'])}], file_surface: "
                     f"[{', '.join(json.dumps(s) for s in node['file_surface'])}], discipline: core{extra}}}")
    if edges:
        lines.append("edges:")
        lines += [f"  - {{id: {e['id']}, from: {e['from']}, to: {e['to']}, predicate: {e['predicate']}}}" for e in edges]
    path.write_text("\n".join(lines) + "\n")
    doc = {"topic": "scale", "workers": {"core": "true"}, "nodes": nodes, **({"edges": edges} if edges else {})}
    path.with_suffix(".json").write_text(json.dumps(doc))


def generate_deep(n: int, path: Path, seed: int = 7) -> None:
    """Each node depends on up to three of the 300 nodes before it; a directory or a file surface of its own."""
    rng = random.Random(seed)
    nodes = []
    for i in range(n):
        window = range(max(0, i - 300), i)
        deps = [f"N{d}" for d in sorted(rng.sample(window, min(len(window), rng.randint(1, 3))))] if i else []
        surface = [f"pkg{i}/"] if rng.random() < 0.5 else [f"src{i // 10}/mod{i}.py"]
        nodes.append({"id": f"N{i}", "depends_on": deps, "file_surface": surface, "discipline": "core"})
    write(path, nodes)


def generate(n: int, path: Path, seed: int = 7) -> None:
    """Layers of 50-200 nodes, 1-3 dependencies on the layer before; surfaces of packages, files and
    globs; a shared changelog touched by a chain of ordered nodes; doc globs owned by serialize nodes."""
    rng = random.Random(seed)
    nodes: list[dict] = []
    previous: list[str] = []
    i = 0
    chain_last = None
    while i < n:
        width = min(rng.randint(50, 200), n - i)
        layer = []
        for _ in range(width):
            node = f"N{i}"
            deps = rng.sample(previous, min(len(previous), rng.randint(1, 3))) if previous else []
            kind = rng.random()
            if kind < 0.5:
                surface = [f"pkg{i}/"]
            elif kind < 0.9:
                surface = [f"pkg{i}/mod{rng.randint(0, 9)}.py", f"tests/pkg{i}/test_mod.py"]
            else:
                surface = [f"docs/area{i}/*.md"]
            serialize = False
            if i % 97 == 0:  # the changelog: every such node depends on the previous one, so they are ordered
                surface.append("CHANGELOG.md")
                if chain_last:
                    deps = sorted(set(deps) | {chain_last})
                chain_last = node
            if i % 211 == 0:
                surface.append("docs/*.md")
                serialize = True
            nodes.append({"id": node, "depends_on": deps, "file_surface": surface, "discipline": "core",
                          **({"serialize": True} if serialize else {})})
            layer.append(node)
            i += 1
        previous = layer
    write(path, nodes)


def generate_composes(n: int, path: Path, seed: int = 7) -> None:
    """Chains of 100 nodes, each hub COMPOSES the next (which runs first), so a chain's head is judged by
    the gates of all 99 below it; every tenth node has an evaluator (seven names in all). Each chain's
    deepest spoke depends on a node of the chain before, so chains follow one another in ten lanes."""
    rng = random.Random(seed)
    nodes, edges = [], []
    for i in range(n):
        depth = i % 100
        deps = [f"N{i - 1000 + rng.randrange(100)}"] if depth == 99 and i >= 1000 else []
        node = {"id": f"N{i}", "depends_on": deps, "file_surface": [f"pkg{i}/"], "discipline": "core"}
        if i % 10 == 0:
            node["evaluators"] = [{"name": f"check{i % 7}", "run": "true"}]
        nodes.append(node)
        if depth < 99 and i + 1 < n:
            edges.append({"id": f"c{i}", "from": f"N{i}", "to": f"N{i + 1}", "predicate": "COMPOSES"})
    write(path, nodes, edges)


def generate_loops(n: int, path: Path, seed: int = 7) -> None:
    """LOOPS_WITH groups of 50 nodes (a chain of LOOPS_WITH edges through each), group after group: every
    member depends on one member of the group before, so a group waits for the whole previous one."""
    rng = random.Random(seed)
    nodes, edges = [], []
    for i in range(n):
        group, member = divmod(i, 50)
        deps = [f"N{(group - 1) * 50 + rng.randrange(50)}"] if group else []
        nodes.append({"id": f"N{i}", "depends_on": deps, "file_surface": [f"src{group}/mod{member}.py"],
                      "discipline": "core"})
        if member and i < n:
            edges.append({"id": f"g{i}", "from": f"N{i - 1}", "to": f"N{i}", "predicate": "LOOPS_WITH"})
    write(path, nodes, edges)


SHAPES = {"layered": generate, "deep": generate_deep, "composes": generate_composes, "loops": generate_loops}


PROBE = r"""
import json, resource, sys, time
sys.path.insert(0, {root!r})
path, mode = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
if mode == "baseline" and path.endswith(".json"):
    import json as js
    with open(path) as fh:
        js.load(fh)
    problems = 0
    layers = 0
elif mode == "baseline":
    import yaml
    with open(path) as fh:
        yaml.load(fh, Loader=yaml.CSafeLoader)
    problems = 0
    layers = 0
else:
    from orchestrate.dag.load import check_dag
    dag, problems = check_dag(path)
    assert dag is not None, problems[:3]
    layers = len(dag.layers())
    problems = len(problems)
seconds = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({{"seconds": seconds, "rss": rss, "layers": layers, "problems": problems}}))
"""


def measure(path: Path, mode: str, root: Path = ROOT) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE.format(root=str(root)), str(path), mode],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated, of: {', '.join(SHAPES)}")
    ap.add_argument("--before", type=Path, metavar="DIR",
                    help="a checkout of older code (e.g. `git worktree add DIR main`): each DAG is also validated "
                         "with it, right after the current code, and the time and after/before ratio printed")
    args = ap.parse_args()
    targets = {("json", 10000): 1.0, ("yaml", 10000): 2.0, ("json", 100000): 10.0}
    before = f" {'before':>8} {'after/before':>12}" if args.before else ""
    print(f"{'shape':>8} {'nodes':>8} {'format':>6} {'validate+layers':>16} {'parse only':>11} {'ratio':>6} {'peak rss':>9} "
          f"{'layers':>7}{before}  target")
    with tempfile.TemporaryDirectory() as tmp:
        for shape, n in ((s, int(x)) for s in args.shapes.split(",") for x in args.sizes.split(",")):
            path = Path(tmp) / f"{shape}{n}.yaml"
            SHAPES[shape](n, path)
            for fmt, file in (("yaml", path), ("json", path.with_suffix(".json"))):
                base = measure(file, "baseline")
                full = measure(file, "full")
                if args.before:
                    old = measure(file, "full", args.before.resolve())
                    before = f" {old['seconds']:>7.2f}s {full['seconds'] / old['seconds']:>12.2f}"
                target = targets.get((fmt, n))
                verdict = ""
                if target:
                    ok = full["seconds"] < target and full["rss"] < 1 << 30
                    verdict = f"< {target:g}s, < 1 GB: {'PASS' if ok else 'MISS'}"
                print(f"{shape:>8} {n:>8} {fmt:>6} {full['seconds']:>15.2f}s {base['seconds']:>10.2f}s "
                      f"{full['seconds'] / base['seconds']:>6.2f} {full['rss'] / 2**20:>7.0f}MB {full['layers']:>7}{before}  {verdict}")


if __name__ == "__main__":
    main()
