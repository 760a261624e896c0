"""Typed edges (DESIGN §11, seeds-other §2-§3): the model and the graph
derivations the engine reads (ordering, LOOPS_WITH groups, effective gates).

Direction conventions, because COMPOSES points the other way: every ordering edge has a `before` and
an `after` end. TRIGGERS and PRODUCES order `from` before `to`; COMPOSES orders `to` (the spoke)
before `from` (the hub). EXTENDS and LOOPS_WITH never order.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from orchestrate.dag import graph
from orchestrate.dag.model import Node, assemble

PREDICATES = ("COMPOSES", "EXTENDS", "LOOPS_WITH", "PRODUCES", "TRIGGERS")  # sorted: messages list them so
ORDERING = ("TRIGGERS", "PRODUCES", "COMPOSES")
ROUTABLE = ("TRIGGERS", "PRODUCES")  # the predicates that may carry conditions, discovery and guardrails
TYPES = ("conditional", "discovery", "static")
DISCOVER_KINDS = ("any", "gate", "worker")
VIOLATIONS = ("block", "reroute", "warn")
PLUGIN_PREFIX = "plugin:"
OUTPUTS_GATE = "outputs-present"
PAYLOAD_GATE = "payload-present"  # spelled `payload-present(<edge id>)`: one per PRODUCES edge


def payload_gate(edge_id: str) -> str:
    # Parentheses cannot occur in a declared gate name, so the implicit gate never shadows one.
    return f"{PAYLOAD_GATE}({edge_id})"


@dataclass(frozen=True)
class Edge:
    id: str
    src: str
    dst: str
    predicate: str
    type: str = "static"
    when: str | None = None
    payload: tuple[str, ...] = ()
    guardrails: dict | None = None
    discover: dict | None = None
    fallback: str | None = None
    actions: tuple[dict, ...] = ()
    line: int = 0
    index: int | None = None  # position in `edges:`; None for the `depends_on` short form
    lines: dict = field(default_factory=dict, compare=False, repr=False)  # key -> line, for messages

    def key_line(self, key: str) -> int:
        return self.lines.get(key, self.line)

    @property
    def orders(self) -> bool:
        return self.predicate in ORDERING

    @property
    def before(self) -> str:
        return self.dst if self.predicate == "COMPOSES" else self.src

    @property
    def after(self) -> str:
        return self.src if self.predicate == "COMPOSES" else self.dst

    @property
    def plugin(self) -> str | None:
        return self.dst[len(PLUGIN_PREFIX):] if self.predicate == "EXTENDS" else None

    @property
    def where(self) -> str:
        return f"edges[{self.index}]"


def sugar_id(dep: str, node: str) -> str:
    # `->` cannot occur in a declared edge id (ids are git-ref-safe words), so the two never collide.
    return f"{dep}->{node}"


def short_form(dep: str, node: str, line: int) -> Edge:
    """The static TRIGGERS edge `depends_on: [dep]` on `node` stands for; a 100k-node DAG has some 300k."""
    return assemble(Edge, id=sugar_id(dep, node), src=dep, dst=node, predicate="TRIGGERS", line=line, lines={})


@dataclass
class Model:
    """What validation derives from the edges; the `Dag` keeps it and answers from it."""

    edges: list[Edge]
    deps: dict[str, tuple[str, ...]]  # node -> ordering predecessors (declared depends_on first)
    layer_deps: dict[str, tuple[str, ...]]  # the same with every LOOPS_WITH group contracted
    groups: list[tuple[str, ...]]
    exempt: set[frozenset]  # node pairs the surface check skips (fallback, reroute target)
    on_cycle: set[str] = field(default_factory=set)
    effective: dict[str, list[str]] = field(default_factory=dict)


def ordering_deps(by_id: dict[str, Node], edges: Iterable[Edge]) -> dict[str, tuple[str, ...]]:
    """node -> its ordering predecessors, whatever the edge's condition (layers must not depend on it)."""
    acc: dict[str, dict[str, None]] = {n: {} for n in by_id}  # ordered sets: a wide fan-in stays linear
    for e in edges:
        predicate = e.predicate  # the properties `orders`, `before`, `after` inlined: 300k edges at 100k nodes
        if predicate in ORDERING:
            before, after = (e.dst, e.src) if predicate == "COMPOSES" else (e.src, e.dst)
            if before in by_id and after in by_id:
                acc[after][before] = None
    return {n: tuple(ds) for n, ds in acc.items()}


def loop_groups(by_id: dict[str, Node], edges: Iterable[Edge]) -> list[tuple[str, ...]]:
    """Connected components of LOOPS_WITH edges (union-find), each and all in natural id order."""
    parent = {n: n for n in by_id}

    def root(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for e in edges:
        if e.predicate == "LOOPS_WITH" and e.src in parent and e.dst in parent:
            parent[root(e.src)] = root(e.dst)
    members: dict[str, list[str]] = {}
    for n in by_id:
        members.setdefault(root(n), []).append(n)
    groups = [tuple(graph.natural_sorted(m)) for m in members.values() if len(m) > 1]
    return sorted(groups, key=lambda g: graph.natural_key(g[0]))


def contract(deps: dict[str, tuple[str, ...]], groups: list[tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """Each member waits for the union of its group's outside predecessors, so all land in one layer."""
    out = dict(deps)
    for g in groups:
        inside = set(g)
        outside = tuple(dict.fromkeys(d for m in g for d in deps.get(m, ()) if d not in inside))
        for m in g:
            out[m] = outside
    return out


def own_gates(node: Node) -> list[str]:
    return [c.name for c in node.evaluators] + list(node.plugin_gates)


def effective_gates(by_id: dict[str, Node], edges: Iterable[Edge],
                    groups: list[tuple[str, ...]]) -> dict[str, list[str]]:
    """node -> eff(n) = own(n) ∪ eff(spokes of n) ∪ actions(EXTENDS of n) ∪ own(LOOPS_WITH peers), sorted.

    One visited set spans each node's walk: a node already visited contributes nothing, so a diamond
    contributes its tip once and any cycle terminates. TRIGGERS and PRODUCES never contribute. The
    implicit contracts (`outputs-present`, `payload-present(<edge>)`) belong to the node alone: they
    check what that node delivered, so a hub or a peer does not inherit them. The spoke, EXTENDS,
    group and payload maps are built once for all nodes; rebuilding them per node made a 10,000-node
    DAG take minutes to validate.
    """
    spokes: dict[str, list[str]] = {}
    extends: dict[str, list[str]] = {}
    payloads: dict[str, list[str]] = {}
    for e in edges:
        if e.predicate == "COMPOSES":
            spokes.setdefault(e.src, []).append(e.dst)
        elif e.predicate == "EXTENDS":
            extends.setdefault(e.src, []).extend(a["name"] for a in e.actions)
        elif e.predicate == "PRODUCES":
            payloads.setdefault(e.src, []).append(payload_gate(e.id))
    group = {m: g for g in groups for m in g}
    found = _found(by_id, spokes, extends, group)
    return {n: sorted(found[n] | _implicit(node, payloads)) for n, node in by_id.items()}


def _found(by_id: dict[str, Node], spokes: dict[str, list[str]], extends: dict[str, list[str]],
           group: dict[str, tuple[str, ...]]) -> dict[str, set[str]]:
    """What each node's walk finds, without walking again below a spoke already done. Spokes come first
    (Kahn over the spoke graph); a node whose spokes reach no LOOPS_WITH member gets the union of its
    own gates, its EXTENDS actions and what its spokes found: the set its walk would collect, since every
    node below is visited once whichever path reaches it. A 100-deep COMPOSES chain walked from each
    hub was quadratic. A group member adds its peers' own gates (those of the whole group, gathered
    once) and marks them visited, which changes what a walk above it may reach: nodes with a member
    below them, and nodes on or behind a spoke cycle (reported elsewhere), take the walk itself."""
    own = {n: own_gates(node) for n, node in by_id.items()}
    peers_own = {g: {gate for m in g for gate in own[m]} for g in set(group.values())}
    found: dict[str, set[str]] = {}
    walked: set[str] = set()  # nodes whose set came from the walk: not a sum of their parts
    for n in by_id.keys() - spokes.keys():  # no spokes: the node, its actions and maybe its peers
        if n in group:
            found[n] = peers_own[group[n]].union(extends.get(n, ()))
            walked.add(n)
        else:
            found[n] = set(own[n]).union(extends.get(n, ())) if n in extends else set(own[n])
    for n in graph.kahn_order(spokes):  # hubs, each after the hubs among its spokes
        below = spokes[n]
        if n in group or any(s in walked for s in below):
            found[n] = _walk(n, by_id, spokes, extends, group)
            walked.add(n)
        else:
            found[n] = set(own[n]).union(extends.get(n, ()), *(found[s] for s in below))
    for n in by_id.keys() - found.keys():
        found[n] = _walk(n, by_id, spokes, extends, group)
    return found


def _implicit(node: Node, payloads: dict[str, list[str]]) -> set[str]:
    """The contracts that belong to the node alone: never inherited by a hub or a peer."""
    return {*payloads.get(node.id, ()), *((OUTPUTS_GATE,) if node.outputs else ())}


def _walk(node_id: str, by_id: dict[str, Node], spokes: dict[str, list[str]], extends: dict[str, list[str]],
          group: dict[str, tuple[str, ...]]) -> set[str]:
    found: set[str] = set()
    for n, as_peer in visited(node_id, by_id, spokes, group):
        found.update(own_gates(by_id[n]))
        if not as_peer:
            found.update(extends.get(n, ()))
    return found


def visited(node_id: str, by_id: dict[str, Node], spokes: dict[str, list[str]],
            group: dict[str, tuple[str, ...]]) -> list[tuple[str, bool]]:
    """The nodes eff(node_id) gathers gates from, in the walk's order (itself first), each once: its spokes,
    theirs, and the LOOPS_WITH peers of each, which bring their own gates only (`as_peer` true)."""
    seen: set[str] = set()
    order: list[tuple[str, bool]] = []
    stack = [node_id]  # explicit stack: a long COMPOSES chain must not hit the recursion limit
    while stack:
        n = stack.pop()
        if n in seen or n not in by_id:
            continue
        seen.add(n)
        order.append((n, False))
        for peer in group.get(n, ()):
            if peer not in seen:
                seen.add(peer)
                order.append((peer, True))
        stack.extend(reversed(spokes.get(n, ())))
    return order


def known_gates(node: Node, gates: dict) -> list[str]:
    """Gate names a reference may use: the campaign's `gates:` instances and the node's inline evaluators."""
    inline = [c.name for c in node.evaluators if c.name not in gates]
    return sorted(set(gates) | set(inline))
