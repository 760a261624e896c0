"""The linear-time shortcuts of DAG validation give what the plain per-node searches give.

`edges.effective_gates` reuses what a spoke's walk found instead of walking below it again, and
`edge_rules._group_ordering` searches only the LOOPS_WITH groups that Kahn's algorithm or a direct
dependency flags. Both are checked here on random graphs (fixed seeds; cycles, diamonds, groups,
EXTENDS actions, PRODUCES payloads) against the searches they replace, written out plainly.
"""
from __future__ import annotations

import random

import pytest

from orchestrate.dag import edge_rules, edges, graph
from orchestrate.dag.edges import Edge, contract, loop_groups, ordering_deps
from orchestrate.dag.model import Check, Node
from orchestrate.dag.schema import Report


def reference_gates(by_id, all_edges, groups) -> dict[str, list[str]]:
    """One walk per node, each with its own visited set, as the effective-gates rule reads."""
    spokes, extends, payloads = {}, {}, {}
    for e in all_edges:
        if e.predicate == "COMPOSES":
            spokes.setdefault(e.src, []).append(e.dst)
        elif e.predicate == "EXTENDS":
            extends.setdefault(e.src, []).extend(a["name"] for a in e.actions)
        elif e.predicate == "PRODUCES":
            payloads.setdefault(e.src, []).append(edges.payload_gate(e.id))
    group = {m: g for g in groups for m in g}
    out = {}
    for start in by_id:
        visited, found, stack = set(), set(), [start]
        while stack:
            n = stack.pop()
            if n in visited:
                continue
            visited.add(n)
            found.update(edges.own_gates(by_id[n]), extends.get(n, ()))
            for peer in group.get(n, ()):
                if peer not in visited:
                    visited.add(peer)
                    found.update(edges.own_gates(by_id[peer]))
            stack.extend(reversed(spokes.get(n, ())))
        if by_id[start].outputs:
            found.add(edges.OUTPUTS_GATE)
        found.update(payloads.get(start, ()))
        out[start] = sorted(found)
    return out


def random_graph(seed: int, size: int = 14):
    rng = random.Random(seed)
    ids = [f"N{i}" for i in range(size)]
    by_id = {}
    for i, n in enumerate(ids):
        names = rng.sample(["lint", "unit", "types", "docs", "perf"], rng.randint(0, 2))
        by_id[n] = Node(id=n, title=n, depends_on=(), file_surface=(f"f{i}",), worker="true",
                        evaluators=tuple(Check(x, "true") for x in names),
                        outputs=("x",) if rng.random() < 0.2 else ())
    found = []
    for k in range(rng.randint(size // 2, size * 2)):
        a, b = rng.sample(ids, 2)
        if rng.random() < 0.15 and k % 3 == 0:  # mostly forward edges, some backward: cycles happen
            a, b = b, a
        elif ids.index(a) > ids.index(b):
            a, b = b, a
        predicate = rng.choice(["COMPOSES", "COMPOSES", "TRIGGERS", "LOOPS_WITH", "EXTENDS", "PRODUCES"])
        actions = tuple({"name": f"act{rng.randint(0, 3)}"} for _ in range(rng.randint(1, 2))) \
            if predicate == "EXTENDS" else ()
        found.append(Edge(f"e{k}", a, b, predicate, actions=actions))
    return by_id, found


@pytest.mark.parametrize("seed", range(400))
def test_effective_gates_match_a_walk_per_node(seed):
    by_id, all_edges = random_graph(seed)
    groups = loop_groups(by_id, all_edges)
    assert edges.effective_gates(by_id, all_edges, groups) == reference_gates(by_id, all_edges, groups)


def test_a_deep_composes_chain_is_not_walked_from_every_hub():
    """A 3,000-deep chain: one walk per hub would visit 4.5 million nodes; the shared sets make it instant
    in steps (counted here by the walks taken, not timed)."""
    by_id = {f"N{i}": Node(id=f"N{i}", title="", depends_on=(), file_surface=(), worker="true",
                           evaluators=(Check(f"g{i % 5}", "true"),)) for i in range(3000)}
    chain = [Edge(f"c{i}", f"N{i}", f"N{i + 1}", "COMPOSES") for i in range(2999)]
    walks = []
    original = edges._walk

    def counting(*args):
        walks.append(args[0])
        return original(*args)

    edges._walk = counting
    try:
        found = edges.effective_gates(by_id, chain, [])
    finally:
        edges._walk = original
    assert walks == []
    assert found["N0"] == ["g0", "g1", "g2", "g3", "g4"] and found["N2999"] == ["g4"]


def exhaustive_group_paths(deps, groups) -> set[tuple[str, ...]]:
    succ = {n: [] for n in deps}
    for n, ds in deps.items():
        for d in ds:
            succ[d].append(n)
    return {g for g in groups if edge_rules._path_within(g, succ)}


@pytest.mark.parametrize("seed", range(400))
def test_only_groups_with_a_path_inside_are_reported_and_every_one_is(seed):
    by_id, all_edges = random_graph(seed, size=12)
    deps = ordering_deps(by_id, all_edges)
    if graph.cycles(deps):  # _group_ordering runs only on an acyclic ordering
        return
    groups = loop_groups(by_id, all_edges)
    rep = Report("dag.yaml")
    edge_rules._group_ordering(rep, deps, contract(deps, groups), groups, all_edges)
    reported = {p.message.split("{")[1].split("}")[0] for p in rep.problems if "is also ordered by" in p.message}
    assert reported == {", ".join(g) for g in exhaustive_group_paths(deps, groups)}


def test_groups_ordering_each_other_through_the_to_ends_of_their_edges_are_reported(tmp_path):
    """The cycle {B, C} meets each group only at an edge's `to` end; validation used to stop with StopIteration."""
    from orchestrate.dag.load import check_dag
    path = tmp_path / "grp.yaml"
    path.write_text("topic: grp\nnodes:\n"
                    "  - {id: A, depends_on: [C], file_surface: [a], worker: 'true'}\n"
                    "  - {id: B, file_surface: [b], worker: 'true'}\n"
                    "  - {id: C, file_surface: [c], worker: 'true'}\n"
                    "  - {id: D, depends_on: [B], file_surface: [d], worker: 'true'}\n"
                    "edges:\n"
                    "  - {id: g1, from: A, to: B, predicate: LOOPS_WITH}\n"
                    "  - {id: g2, from: D, to: C, predicate: LOOPS_WITH}\n")
    dag, problems = check_dag(path)
    assert dag is None
    assert [(p.line, p.field, p.code) for p in problems] == [(8, "edges[0]", "group-ordered")]
    assert "LOOPS_WITH groups {A, B} and {C, D} order each other" in problems[0].message


def test_assembled_and_replaced_records_equal_the_constructors():
    from dataclasses import replace

    from orchestrate.dag.model import assemble, replaced
    made = Node(id="A", title="A", depends_on=("B",), file_surface=("a/",), worker="true", timeout=5)
    built = assemble(Node, id="A", title="A", depends_on=("B",), file_surface=("a/",), worker="true", timeout=5)
    assert built == made and hash(built) == hash(made) and repr(built) == repr(made)
    assert replaced(built, depends_on=("C",)) == replace(made, depends_on=("C",))
    assert built.depends_on == ("B",)  # the original is untouched
    assert assemble(Edge, id="x", src="a", dst="b", predicate="TRIGGERS", lines={}) == Edge("x", "a", "b", "TRIGGERS")
    with pytest.raises(TypeError):
        assemble(Node, id="A", title="A", depends_on=(), file_surface=(), worker=None, colour="red")
    with pytest.raises(TypeError):
        assemble(Node, id="A")  # title, depends_on, file_surface and worker have no default
    with pytest.raises(TypeError):
        replaced(made, colour="red")
    with pytest.raises(TypeError):
        assemble(Edge, id="x", src="a", dst="b", predicate="TRIGGERS")  # `lines` comes from a factory


def reference_layers(deps, settled=()):
    """Kahn generations, one vertex per node."""
    done, layers = set(settled), []
    left = {n: {d for d in ds if d not in done} for n, ds in deps.items() if n not in done}
    while True:
        ready = graph.natural_sorted(n for n, ds in left.items() if not ds)
        if not ready:
            return layers
        layers.append(ready)
        left = {n: ds - set(ready) for n, ds in left.items() if n not in ready}


@pytest.mark.parametrize("seed", range(300))
def test_kahn_layers_with_shared_dependency_tuples_match_one_vertex_per_node(seed):
    """Nodes sharing one tuple (as contracted groups do) are one vertex inside kahn_layers; a shared tuple
    naming one of its holders, a dependency outside the graph and settled nodes keep their meaning."""
    rng = random.Random(seed)
    ids = [f"N{i}" for i in range(15)]
    shared = [tuple(rng.sample(ids + ["ghost"], rng.randint(0, 3))) for _ in range(3)]
    deps = {n: rng.choice(shared) if rng.random() < 0.5 else tuple(rng.sample(ids[:i], min(i, rng.randint(0, 3))))
            for i, n in enumerate(ids)}
    settled = rng.sample(ids, rng.randint(0, 3))
    assert graph.kahn_layers(deps, settled) == reference_layers(deps, settled)
    known = {n: tuple(d for d in ds if d in deps) for n, ds in deps.items()}
    assert sorted(graph.kahn_order(deps)) == sorted(n for layer in reference_layers(known) for n in layer)
