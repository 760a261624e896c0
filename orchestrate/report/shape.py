"""The DAG as a picture and as a schedule: columns, rows, edge kinds and the critical path.

Shared by the HTML report and `orchestrate graph`. The graph work is Kahn generations over the ordering
edges (dag/graph.py, which validation uses): the report is written at every CLOSE, where importing
networkx alone cost 0.12-0.18 s, and our generations are 1.3-2.4 times faster than networkx's on valid
DAGs (benchmarks/graph_algos.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from orchestrate.dag.graph import kahn_layers, natural_key, natural_sorted, topological_order


@dataclass
class Link:
    src: str
    dst: str
    predicate: str
    kind: str  # static, taken, untaken, undecided (conditional), discovery
    edge_id: str
    label: str = ""
    guardrail: str = ""  # its guardrail's on_violation (warn, block, reroute); empty without one


@dataclass
class Shape:
    columns: list[list[str]]  # node ids (and `plugin:NAME` boxes) per column, top to bottom
    links: list[Link]
    groups: list[tuple[str, ...]]
    plugins: list[str] = field(default_factory=list)
    # `complete: true` nodes when the caller settles them: drawn as a band ahead of the columns, so that
    # the columns are numbered as `orchestrate layers` numbers them (complete nodes are never scheduled)
    settled: list[str] = field(default_factory=list)

    def position(self) -> dict[str, tuple[int, int]]:
        return {n: (k, row) for k, column in enumerate(self.columns) for row, n in enumerate(column)}


def links(dag, decided: dict | None = None) -> list[Link]:
    """Every edge of the plan, with how a campaign decided its condition (`decided`: edge id -> record)."""
    decided = decided or {}
    found = []
    for e in dag.edges:
        if e.type == "conditional":
            record = decided.get(e.id)
            kind = "undecided" if record is None else ("taken" if record.get("taken") else "untaken")
        else:
            kind = e.type
        label = e.predicate if e.index is not None else ""  # the depends_on short form is plain ordering
        if e.type == "conditional":
            label = f"{e.predicate} {kind}: when {e.when}"
        elif e.payload:
            label = f"{e.predicate} {', '.join(e.payload)}"
        # ordering edges point from what runs first (a COMPOSES spoke) to what waits for it
        found.append(Link(e.before if e.orders else e.src, e.after if e.orders else e.dst, e.predicate, kind,
                          e.id, label, str((e.guardrails or {}).get("on_violation") or "")))
    return found


def shape(dag, decided: dict | None = None, settle: bool = False) -> Shape:
    """Columns are Kahn generations of the ordering edges (LOOPS_WITH groups share one); within a column,
    nodes follow the mean row of their predecessors, group members side by side.

    `settle` takes `complete: true` nodes out of the columns into `Shape.settled`, counting them as done
    the way `Dag.layers` does: column k is then layer k of `orchestrate layers` and `show`. The HTML
    report keeps them in its columns (its picture has no layer numbers to disagree with)."""
    every = links(dag, decided)
    preds = _predecessors(dag, dag.layer_deps())
    plugins = natural_sorted({link.dst for link in every if link.predicate == "EXTENDS"})
    for link in every:
        if link.predicate == "EXTENDS":  # the plugin box sits right of the node it extends
            preds.setdefault(link.dst, set()).add(link.src)
            preds.setdefault(link.src, set())
    group_of = {m: i for i, grp in enumerate(dag.groups()) for m in grp}
    settled = natural_sorted(n.id for n in dag.nodes if n.complete) if settle else []
    columns: list[list[str]] = []
    row: dict[str, float] = {n: float(i) for i, n in enumerate(settled)}  # their successors line up with them
    for generation in kahn_layers(preds, settled=settled):
        centre = {}
        for n in generation:
            preds_at = [row[p] for p in preds[n] if p in row]
            centre[n] = sum(preds_at) / len(preds_at) if preds_at else 0.0
        pull = {}  # a group sits where its best-placed member would: its members stay side by side
        for n in generation:
            if n in group_of:
                pull[group_of[n]] = min(pull.get(group_of[n], centre[n]), centre[n])
        column = sorted(generation, key=lambda n: (pull.get(group_of.get(n), centre[n]), group_of.get(n, -1),
                                                   natural_key(n)))
        row.update((n, float(i)) for i, n in enumerate(column))
        columns.append(column)
    return Shape(columns, every, dag.groups(), plugins, settled)


def critical_path(dag, weight: dict[str, float]) -> tuple[list[str], float]:
    """The heaviest chain of ordering edges, a node weighing `weight[node]` (its time in the campaign)."""
    preds = _predecessors(dag, dag.deps())
    best: dict[str, tuple[float, str | None]] = {}
    for n in topological_order(preds):
        before = max(((best[p][0], p) for p in preds[n]), default=(0.0, None))
        best[n] = (before[0] + weight.get(n, 0.0), before[1])
    if not best:
        return [], 0.0
    end = max(natural_sorted(best), key=lambda n: best[n][0])  # the first of equals, in id order
    path, cursor = [], end
    while cursor is not None:
        path.append(cursor)
        cursor = best[cursor][1]
    return path[::-1], best[end][0]


def _predecessors(dag, deps: dict) -> dict[str, set[str]]:
    """Each node of the plan with the nodes of the plan it waits for."""
    ids = {n.id for n in dag.nodes}
    found: dict[str, set[str]] = {n: set() for n in ids}
    for node, ds in deps.items():
        found.setdefault(node, set()).update(d for d in ds if d in ids)
    return found
