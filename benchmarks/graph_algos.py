"""networkx against orchestrate's own graph code, for what validation does on every DAG: Kahn
generations (layers), and cycles with their path.

Run by hand: .venv/bin/python benchmarks/graph_algos.py [--sizes 10000,100000]

The DAG is the `deep` shape of dag_scale.py (each node depends on up to three of the 300 before it), one
edge closing a cycle at the end so cycle search has work to do. networkx is timed including building
its DiGraph from the same dependency dict (validation starts from that dict, so the conversion is part of
its cost) and the import itself is timed apart. Cycle search is timed on the valid DAG (the path every
`validate` takes) and on the DAG with one cycle through all of it (the worst error case). Prints each algorithm's time and the ratio
networkx / own (above 1: networkx is slower). Each size runs three times; the best is kept.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def deep(n: int, seed: int = 7) -> dict[str, list[str]]:
    rng = random.Random(seed)
    deps: dict[str, list[str]] = {}
    for i in range(n):
        window = range(max(0, i - 300), i)
        deps[f"N{i}"] = [f"N{d}" for d in rng.sample(window, min(len(window), rng.randint(1, 3)))] if i else []
    return deps


def best(fn, rounds: int = 3) -> tuple[float, object]:
    times, result = [], None
    for _ in range(rounds):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    args = ap.parse_args()
    from orchestrate.dag import graph
    t0 = time.perf_counter()
    import networkx as nx
    print(f"import networkx: {time.perf_counter() - t0:.3f}s (paid once per process; validate imports nothing heavy)")

    def nx_graph(deps):
        g = nx.DiGraph()
        g.add_nodes_from(deps)
        g.add_edges_from((d, n) for n, ds in deps.items() for d in ds)
        return g

    def nx_layers(deps):
        return [graph.natural_sorted(layer) for layer in nx.topological_generations(nx_graph(deps))]

    def nx_cycles(deps):
        g = nx_graph(deps)
        found = []
        for comp in nx.strongly_connected_components(g):
            if len(comp) > 1:
                found.append(nx.find_cycle(g.subgraph(comp)))
        return found

    print(f"{'nodes':>8} {'algorithm':>10} {'own':>8} {'networkx':>9} {'ratio nx/own':>13}")
    for n in (int(x) for x in args.sizes.split(",")):
        acyclic = deep(n)
        cyclic = dict(acyclic)
        cyclic["N0"] = [f"N{n - 1}"]  # one long cycle through the chain of dependencies
        own_t, own_layers = best(lambda: graph.kahn_layers(acyclic))
        nx_t, nx_out = best(lambda: nx_layers(acyclic))
        assert own_layers == nx_out, "the two disagree on the layers"
        print(f"{n:>8} {'layers':>10} {own_t:>7.3f}s {nx_t:>8.3f}s {nx_t / own_t:>13.2f}")
        own_t, none = best(lambda: graph.cycles(acyclic))
        nx_t, nx_none = best(lambda: nx_cycles(acyclic))
        assert not none and not nx_none
        print(f"{n:>8} {'no cycle':>10} {own_t:>7.3f}s {nx_t:>8.3f}s {nx_t / own_t:>13.2f}")
        own_t, own_cycles = best(lambda: graph.cycles(cyclic))
        nx_t, nx_found = best(lambda: nx_cycles(cyclic))
        assert bool(own_cycles) and bool(nx_found)
        print(f"{n:>8} {'one cycle':>10} {own_t:>7.3f}s {nx_t:>8.3f}s {nx_t / own_t:>13.2f}")


if __name__ == "__main__":
    main()
