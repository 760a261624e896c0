"""Typed edges (DESIGN §11, seeds-other §2-§3): their schema as data, their validation, and the graph
derivations the engine reads (ordering, LOOPS_WITH groups, effective gates).

Everything here runs at validation time; nothing is decided at run time. `check(...)` reports every
problem through the loader's report (file:line plus a field such as `edges[3].predicate`, the index
being the position in the `edges:` list) and returns a `Model` when it could build one.

Direction conventions, because COMPOSES points the other way: every ordering edge has a `before` and
an `after` end. TRIGGERS and PRODUCES order `from` before `to`; COMPOSES orders `to` (the spoke)
before `from` (the hub). EXTENDS and LOOPS_WITH never order.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from gates.core import graph, surface
from gates.core.condition import ConditionError, compile_condition
from gates.core.dagfile import (Node, _is_str_list, _is_text, _kind, _Report, did_you_mean, id_problem)
from gates.core.yamlfile import Mapping, Sequence

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


# ---- the schema, as data ----------------------------------------------------------------------

EDGE_FIELDS = {
    "id": (_is_text, True), "from": (_is_text, True), "to": (_is_text, True), "predicate": (_is_text, True),
    "type": (_is_text, False), "when": (_is_text, False), "payload": (_is_str_list, False),
    "guardrails": (None, False), "discover": (None, False), "fallback": (_is_text, False),
    "actions": (None, False)}
# Keys that name a real upstream feature we refuse on purpose: a pointed message beats "unknown key".
REJECTED_KEYS = {"trigger_action": "not supported; a node has a single action (its worker dispatch)"}
REJECTED_TYPES = {"personality": ("'personality' edges are not supported (a campaign has no trait state); "
                                  'use type: conditional with when: "params.<name> >= <threshold>"')}
REJECTED_VIOLATIONS = {"sanitize": ("'sanitize' is not supported (orchestrate never rewrites a node's commits); "
                                    "use block, reroute or warn")}
# Which edge types a predicate may have (static goes everywhere).
TYPE_PREDICATES = {"conditional": ROUTABLE, "discovery": ROUTABLE, "static": PREDICATES}
# Optional fields that belong to one type or to some predicates only.
FIELD_TYPE = {"when": "conditional", "discover": "discovery", "fallback": "discovery"}
FIELD_PREDICATES = {"payload": ("PRODUCES",), "guardrails": ROUTABLE, "actions": ("EXTENDS",)}
TYPE_NEEDS = {"conditional": "when", "discovery": "discover"}
GUARDRAIL_FIELDS = {"output": (_is_str_list, False), "input": (_is_str_list, False),
                    "on_violation": (_is_text, True), "reroute_target": (_is_text, False)}
DISCOVER_FIELDS = {"kind": (_is_text, True), "capabilities": (_is_str_list, True)}


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


# ---- entry point ------------------------------------------------------------------------------

def check(rep: _Report, raw_edges: object, line: int, nodes: list[Node], node_lines: dict[str, Mapping],
          declared: set[str], params: dict, gates: dict) -> Model:
    """Parse and check the `edges:` list against the nodes; derive groups, deps and effective gates.

    `declared` holds every id that appeared in `nodes:` (even a node that failed its own checks), so an
    edge to it is not also reported as dangling.
    """
    by_id = {n.id: n for n in nodes}
    edges = _sugar(nodes, node_lines) + _parse_all(rep, raw_edges, line, by_id, declared)
    _duplicates(rep, edges)
    _one_discovery_per_node(rep, edges)
    usable = [e for e in edges if e.src in by_id and (e.predicate == "EXTENDS" or e.dst in by_id)]
    deps = ordering_deps(by_id, usable)
    groups = loop_groups(by_id, usable)
    on_cycle = _cycles(rep, deps, usable, node_lines)
    layer_deps = contract(deps, groups)
    if not on_cycle:
        on_cycle = _group_ordering(rep, deps, layer_deps, groups, usable)
    effective = {n: effective_gates(n, by_id, usable, groups) for n in by_id}
    _semantics(rep, usable, by_id, layer_deps, effective, params, gates)
    exempt = {frozenset((e.dst, e.fallback)) for e in usable if e.fallback}
    exempt |= {frozenset((e.dst, e.guardrails["reroute_target"])) for e in usable
               if e.guardrails and e.guardrails.get("reroute_target")}
    typed_first = [e for e in usable if e.index is not None] + [e for e in usable if e.index is None]
    return Model(typed_first, deps, layer_deps, groups, exempt, on_cycle, effective)


def _sugar(nodes: list[Node], node_lines: dict[str, Mapping]) -> list[Edge]:
    """`depends_on: [X]` on N is a static TRIGGERS edge X -> N (never located at `edges[...]`)."""
    out = []
    for n in nodes:
        raw = node_lines[n.id].get("depends_on")
        for j, dep in enumerate(dict.fromkeys(n.depends_on)):
            line = raw.item_line(j) if isinstance(raw, Sequence) else node_lines[n.id].line
            out.append(Edge(sugar_id(dep, n.id), dep, n.id, "TRIGGERS", line=line))
    return out


# ---- one edge at a time -----------------------------------------------------------------------

def _parse_all(rep: _Report, raw_edges: object, line: int, by_id: dict[str, Node], declared: set[str]) -> list[Edge]:
    if raw_edges is None:
        return []
    if not isinstance(raw_edges, Sequence):
        rep.add(line, "edges", "type", f"expected a list of edges, got {_kind(raw_edges)}")
        return []
    out: list[Edge] = []
    ids: dict[str, int] = {}
    for i, raw in enumerate(raw_edges):
        where = f"edges[{i}]"
        if not isinstance(raw, Mapping):
            rep.add(raw_edges.item_line(i), where, "type",
                    f"expected a mapping like {{id: e1, from: N1, to: N2, predicate: TRIGGERS}}, got {_kind(raw)}")
            continue
        edge = _parse(rep, raw, where, i, by_id, declared)
        if edge is None:
            continue
        if edge.id in ids:
            rep.add(raw.key_line("id"), f"{where}.id", "duplicate-id",
                    f"duplicate edge id '{edge.id}' (first at line {ids[edge.id]}); edge ids must be unique")
            continue
        ids[edge.id] = raw.key_line("id")
        out.append(edge)
    return out


def _parse(rep: _Report, raw: Mapping, where: str, index: int, by_id: dict[str, Node],
           declared: set[str]) -> Edge | None:
    """One edge's fields; None when it cannot take part in the graph checks."""
    before = len(rep.problems)
    for key, why in REJECTED_KEYS.items():
        if key in raw:
            rep.add(raw.key_line(key), f"{where}.{key}", "unsupported", why)
    rep.fields(raw, {**EDGE_FIELDS, **{k: (None, False) for k in REJECTED_KEYS}}, where)
    if "id" in raw and isinstance(raw["id"], str) and (why := id_problem(raw["id"])):
        rep.add(raw.key_line("id"), f"{where}.id", "id", why)
    predicate, etype = raw.get("predicate"), raw.get("type", "static")
    if isinstance(predicate, str) and predicate not in PREDICATES:
        # Exact spelling: `triggers` is as wrong as `DEPENDS`; silently normalising would hide typos.
        rep.add(raw.key_line("predicate"), f"{where}.predicate", "enum",
                f"unknown predicate '{predicate}'; expected one of {', '.join(PREDICATES)}")
        predicate = None
    if isinstance(etype, str) and etype not in TYPES:
        rep.add(raw.key_line("type"), f"{where}.type", "unsupported" if etype in REJECTED_TYPES else "enum",
                REJECTED_TYPES.get(etype, f"unknown type '{etype}'; expected one of {', '.join(TYPES)}"))
        etype = None
    if isinstance(predicate, str) and isinstance(etype, str):
        _scope(rep, raw, where, predicate, etype)
    if isinstance(predicate, str):
        _endpoints(rep, raw, where, predicate, by_id, declared)
    if raw.get("from") is not None and raw.get("from") == raw.get("to") and isinstance(raw.get("id"), str):
        rep.add(raw.line, where, "self-edge", f"edge {raw['id']} connects {raw['from']} to itself")
    guardrails = _guardrails(rep, raw.get("guardrails"), raw.key_line("guardrails"), f"{where}.guardrails", by_id)
    discover = _discover(rep, raw.get("discover"), raw.key_line("discover"), f"{where}.discover")
    actions = _actions(rep, raw, where, predicate)
    if predicate == "PRODUCES" and not raw.get("payload"):
        rep.add(raw.line, where, "missing",
                f"a PRODUCES edge needs payload: (the files {raw.get('from')} must deliver); "
                "without one, use TRIGGERS")
    payload = raw.get("payload") if isinstance(raw.get("payload"), Sequence) else ()
    for j, token in enumerate(payload):
        if isinstance(token, str) and (why := surface.token_problem(token)):
            rep.add(raw["payload"].item_line(j), f"{where}.payload[{j}]", "surface-token", why)
    if len(rep.problems) != before:
        return None
    return Edge(id=raw["id"], src=raw["from"], dst=raw["to"], predicate=predicate, type=etype,
                when=raw.get("when"), payload=tuple(raw.get("payload") or ()),
                guardrails=guardrails, discover=discover, fallback=raw.get("fallback"),
                actions=actions, line=raw.line, index=index, lines=_lines(raw))


def _lines(raw: Mapping) -> dict[str, int]:
    """Line of each key, and of each action's name, so later checks can point at the exact field."""
    lines = {k: raw.key_line(k) for k in raw}
    actions = raw.get("actions")
    if isinstance(actions, Sequence):
        lines.update({f"actions[{k}]": a.key_line("name") for k, a in enumerate(actions) if isinstance(a, Mapping)})
    return lines


def _scope(rep: _Report, raw: Mapping, where: str, predicate: str, etype: str) -> None:
    """Fields and types that only some predicates or types may carry (C4, C5, C12)."""
    if predicate not in TYPE_PREDICATES[etype]:
        rep.add(raw.key_line("type"), f"{where}.type", "unsupported",
                f"{etype} edges are only allowed on {' and '.join(TYPE_PREDICATES[etype])}")
        return  # the fields of that type would only repeat the same problem
    for key, wanted in FIELD_TYPE.items():
        if key in raw and etype != wanted:
            rep.add(raw.key_line(key), f"{where}.{key}", "unsupported", f"only allowed on type: {wanted}")
    for key, allowed in FIELD_PREDICATES.items():
        if key in raw and predicate not in allowed:
            rep.add(raw.key_line(key), f"{where}.{key}", "unsupported",
                    f"only allowed on {' and '.join(allowed)} edges")
    need = TYPE_NEEDS.get(etype)
    if need and need not in raw:
        rep.add(raw.line, where, "missing", f"a {etype} edge needs {need}:")


def _endpoints(rep: _Report, raw: Mapping, where: str, predicate: str, by_id: dict, declared: set[str]) -> None:
    src, dst = raw.get("from"), raw.get("to")
    if isinstance(src, str) and src not in declared:
        rep.add(raw.key_line("from"), f"{where}.from", "dangling",
                f"node '{src}' is not declared{did_you_mean(src, by_id)}")
    if not isinstance(dst, str):
        return
    if predicate == "EXTENDS":
        name = dst[len(PLUGIN_PREFIX):] if dst.startswith(PLUGIN_PREFIX) else ""
        if not name.strip():
            got = f"node '{dst}'" if dst in declared else f"'{dst}'"
            rep.add(raw.key_line("to"), f"{where}.to", "extends-target",
                    f"an EXTENDS target must be a gate plugin written plugin:<name>, got {got}")
    elif dst not in declared:
        rep.add(raw.key_line("to"), f"{where}.to", "dangling",
                f"node '{dst}' is not declared{did_you_mean(dst, by_id)}")


def _guardrails(rep: _Report, value: object, line: int, where: str, by_id: dict) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        rep.add(line, where, "type", f"expected a mapping {{output: [...], on_violation: ...}}, got {_kind(value)}")
        return None
    rep.fields(value, GUARDRAIL_FIELDS, where)
    action = value.get("on_violation")
    if isinstance(action, str) and action not in VIOLATIONS:
        rep.add(value.key_line("on_violation"), f"{where}.on_violation",
                "unsupported" if action in REJECTED_VIOLATIONS else "enum",
                REJECTED_VIOLATIONS.get(action, f"'{action}' is not an on_violation; use block, reroute or warn"))
    target = value.get("reroute_target")
    if action == "reroute" and target is None:
        rep.add(value.line, where, "missing", "reroute needs reroute_target")
    elif target is not None and action != "reroute":
        rep.add(value.key_line("reroute_target"), f"{where}.reroute_target", "unsupported",
                "only used with on_violation: reroute")
    elif isinstance(target, str) and target not in by_id:
        rep.add(value.key_line("reroute_target"), f"{where}.reroute_target", "dangling",
                f"node '{target}' is not declared{did_you_mean(target, by_id)}")
    if not value.get("output") and not value.get("input"):
        rep.add(value.line, where, "missing", "a guardrail needs output: or input: gates")
    return dict(value)


def _discover(rep: _Report, value: object, line: int, where: str) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        rep.add(line, where, "type", f"expected a mapping {{kind: worker, capabilities: [...]}}, got {_kind(value)}")
        return None
    rep.fields(value, DISCOVER_FIELDS, where)
    kind = value.get("kind")
    if isinstance(kind, str) and kind not in DISCOVER_KINDS:
        rep.add(value.key_line("kind"), f"{where}.kind", "enum", f"expected one of {', '.join(DISCOVER_KINDS)}")
    if value.get("capabilities") == []:
        rep.add(value.key_line("capabilities"), f"{where}.capabilities", "missing",
                "list at least one capability to match")
    return dict(value)


def _actions(rep: _Report, raw: Mapping, where: str, predicate: object) -> tuple[dict, ...]:
    """EXTENDS actions: each `{name, ...config}`; the config goes to the plugin untouched."""
    value = raw.get("actions")
    if predicate == "EXTENDS" and not value:
        rep.add(raw.line, where, "missing", f"EXTENDS edge {raw.get('id')} must define actions "
                "(gates are declared on the edge, not taken from the target)")
        return ()
    if value is None:
        return ()
    if not isinstance(value, Sequence):
        rep.add(raw.key_line("actions"), f"{where}.actions", "type", f"expected a list, got {_kind(value)}")
        return ()
    out = []
    for k, action in enumerate(value):
        loc = f"{where}.actions[{k}]"
        if not isinstance(action, Mapping):
            rep.add(value.item_line(k), loc, "type", f"expected a mapping {{name: ..., ...config}}, got {_kind(action)}")
        elif "name" not in action:
            rep.add(action.line, loc, "missing", "required key `name` is missing")
        elif why := (_is_text(action["name"]) or id_problem(action["name"])):
            rep.add(action.key_line("name"), f"{loc}.name", "type", why)
        else:
            out.append(dict(action))
    return tuple(out)


# ---- across edges -----------------------------------------------------------------------------

def _duplicates(rep: _Report, edges: list[Edge]) -> None:
    """At most one edge per ordered node pair; LOOPS_WITH is symmetric, so its pair is unordered (P5, L7)."""
    first: dict[tuple, Edge] = {}
    for e in edges:
        # LOOPS_WITH gets its own key space: next to an ordering edge between the same nodes it is
        # not a duplicate but an ordered group, which L3 reports.
        key = ("~", *sorted((e.src, e.dst))) if e.predicate == "LOOPS_WITH" else (e.src, e.dst)
        prior = first.setdefault(key, e)
        if prior is e:
            continue
        if prior.index is None:
            by = f"depends_on of {prior.dst} ({rep.file}:{prior.line})"
        else:
            by = f"edge {prior.id} ({rep.file}:{prior.line})"
        sym = "; LOOPS_WITH is symmetric" if e.predicate == "LOOPS_WITH" else ""
        rep.add(e.line, e.where, "duplicate-edge", f"{e.src} -> {e.dst} is already declared by {by}{sym}; keep one")


def _one_discovery_per_node(rep: _Report, edges: list[Edge]) -> None:
    seen: dict[str, Edge] = {}
    for e in edges:
        if e.type != "discovery":
            continue
        if e.dst in seen:
            rep.add(e.line, e.where, "discovery-twice", f"{e.dst} already has discovery edge {seen[e.dst].id}")
        else:
            seen[e.dst] = e


def ordering_deps(by_id: dict[str, Node], edges: Iterable[Edge]) -> dict[str, tuple[str, ...]]:
    """node -> its ordering predecessors, whatever the edge's condition (layers must not depend on it)."""
    acc: dict[str, list[str]] = {n: [] for n in by_id}
    for e in edges:
        if e.orders and e.before in by_id and e.after in by_id and e.before not in acc[e.after]:
            acc[e.after].append(e.before)
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


def _cycles(rep: _Report, deps: dict, edges: list[Edge], node_lines: dict[str, Mapping]) -> set[str]:
    """Ordering cycles, each reported once; one through COMPOSES explains the reversed arrow (P9)."""
    why = {}
    for e in edges:
        if e.orders:
            why.setdefault((e.after, e.before), e)
    on_cycle: set[str] = set()
    for cycle in graph.cycles(deps):
        on_cycle.update(cycle)
        steps = [why[a, b] for a, b in zip(cycle, cycle[1:])]
        composes = [e for e in steps if e.predicate == "COMPOSES"]
        if composes:
            reasons = "; ".join(_reason(e) for e in steps)
            rep.add(composes[0].line, composes[0].where, "cycle",
                    f"cycle detected: {' -> '.join(cycle)} ({reasons}); use LOOPS_WITH for mutual work")
            continue
        typed = [e for e in steps if e.index is not None]
        line, where = ((typed[0].line, typed[0].where) if typed and steps[0].index is not None
                       else (node_lines[cycle[0]].key_line("depends_on"), f"nodes.{cycle[0]}.depends_on"))
        rep.add(line, where, "cycle", f"dependency cycle {' -> '.join(cycle)}; remove one of these dependencies")
    return on_cycle


def _reason(e: Edge) -> str:
    if e.index is None:
        return f"{e.after} depends_on {e.before}"
    return f"{e.src} {e.predicate} {e.dst} orders {e.before} before {e.after}"


def _group_ordering(rep: _Report, deps: dict, layer_deps: dict, groups: list[tuple[str, ...]],
                    edges: list[Edge]) -> set[str]:
    """Members of one group must not order each other (L3), nor may two groups order each other both ways."""
    bad: set[str] = set()
    succ: dict[str, list[str]] = {n: [] for n in deps}
    for n, ds in deps.items():
        for d in ds:
            succ[d].append(n)
    for g in groups:
        path = _path_within(g, succ)
        if path:
            e = next(e for e in edges if e.predicate == "LOOPS_WITH" and e.src in g)
            rep.add(e.line, e.where, "group-ordered",
                    f"LOOPS_WITH group {{{', '.join(g)}}} is also ordered by {' -> '.join(path)}; "
                    "members of a co-reconciled group cannot depend on each other")
            bad.update(g)
    if bad:
        return bad
    for cycle in graph.cycles(layer_deps):  # only groups contracted into one vertex can make these
        e = next(e for e in edges if e.predicate == "LOOPS_WITH" and e.src in cycle)
        involved = [g for g in groups if set(g) & set(cycle)]
        rep.add(e.line, e.where, "group-ordered",
                f"LOOPS_WITH groups {' and '.join('{' + ', '.join(g) + '}' for g in involved)} order each other "
                f"(each group runs as one, so {' -> '.join(cycle)} is a cycle); "
                "members of a co-reconciled group must share one layer")
        bad.update(cycle)
    return bad


def _path_within(group: tuple[str, ...], succ: dict[str, list[str]]) -> list[str] | None:
    """A shortest ordering path from one member to another (BFS from each member, natural order)."""
    members = set(group)
    for start in group:
        parent: dict[str, str | None] = {start: None}
        queue = [start]
        for node in queue:
            for nxt in graph.natural_sorted(succ.get(node, ())):
                if nxt in parent:
                    continue
                parent[nxt] = node
                if nxt in members:
                    path, cur = [], nxt
                    while cur is not None:
                        path.append(cur)
                        cur = parent[cur]
                    return list(reversed(path))
                queue.append(nxt)
    return None


# ---- effective gates --------------------------------------------------------------------------

def own_gates(node: Node) -> list[str]:
    return [c.name for c in node.evaluators] + list(node.plugin_gates)


def effective_gates(node_id: str, by_id: dict[str, Node], edges: Iterable[Edge],
                    groups: list[tuple[str, ...]]) -> list[str]:
    """eff(n) = own(n) ∪ eff(spokes of n) ∪ actions(EXTENDS of n) ∪ own(LOOPS_WITH peers), sorted by name.

    One visited set spans the whole walk: a node already visited contributes nothing, so a diamond
    contributes its tip once and any cycle terminates. TRIGGERS and PRODUCES never contribute. The
    implicit contracts (`outputs-present`, `payload-present(<edge>)`) belong to `node_id` alone: they
    check what that node delivered, so a hub or a peer does not inherit them.
    """
    edges = list(edges)
    spokes: dict[str, list[str]] = {}
    extends: dict[str, list[str]] = {}
    for e in edges:
        if e.predicate == "COMPOSES":
            spokes.setdefault(e.src, []).append(e.dst)
        elif e.predicate == "EXTENDS":
            extends.setdefault(e.src, []).extend(a["name"] for a in e.actions)
    group = {m: g for g in groups for m in g}
    visited: set[str] = set()
    found: set[str] = set()
    stack = [node_id]  # explicit stack: a long COMPOSES chain must not hit the recursion limit
    while stack:
        n = stack.pop()
        if n in visited or n not in by_id:
            continue
        visited.add(n)
        found.update(own_gates(by_id[n]))
        found.update(extends.get(n, ()))
        for peer in group.get(n, ()):
            if peer not in visited:
                visited.add(peer)
                found.update(own_gates(by_id[peer]))
        stack.extend(reversed(spokes.get(n, ())))
    if node_id in by_id and by_id[node_id].outputs:
        found.add(OUTPUTS_GATE)
    found.update(payload_gate(e.id) for e in edges if e.predicate == "PRODUCES" and e.src == node_id)
    return sorted(found)


# ---- checks that need the whole graph ---------------------------------------------------------

def _semantics(rep: _Report, edges: list[Edge], by_id: dict[str, Node], layer_deps: dict,
               effective: dict[str, list[str]], params: dict, gates: dict) -> None:
    extended: dict[str, set[str]] = {}
    for e in edges:
        src = by_id[e.src]
        if e.when is not None and e.type == "conditional":
            _condition(rep, e, src, params, effective[e.src])
        for j, path in enumerate(e.payload):
            if surface.covering(src.file_surface, path) is None:
                rep.add(e.key_line("payload"), f"{e.where}.payload[{j}]", "payload-surface",
                        f"{path} is outside the file_surface of {e.src}, which cannot produce it")
        if e.guardrails:
            _guardrail_gates(rep, e, src, gates)
        if e.fallback:
            _stand_in(rep, e, e.fallback, f"{e.where}.fallback", by_id, layer_deps)
        target = (e.guardrails or {}).get("reroute_target")
        if target in by_id:
            _stand_in(rep, e, target, f"{e.where}.guardrails.reroute_target", by_id, layer_deps)
        for k, action in enumerate(e.actions):
            taken = extended.setdefault(e.src, set(own_gates(src)))
            if action["name"] in taken:
                rep.add(e.key_line(f"actions[{k}]"), f"{e.where}.actions[{k}].name", "duplicate-gate",
                        f"gate '{action['name']}' already exists on {e.src}; "
                        "EXTENDS gate names must be unique on the node")
            taken.add(action["name"])


def _condition(rep: _Report, e: Edge, src: Node, params: dict, src_gates: list[str]) -> None:
    can_abandon = src.max_rework is not None and src.on_exhausted == "continue"
    try:
        compile_condition(e.when, outputs=src.outputs, params=params, gates=src_gates,
                          source=src.id, can_abandon=can_abandon)
    except ConditionError as exc:
        rep.add(e.key_line("when"), f"{e.where}.when", "condition", exc.message)


def known_gates(node: Node, gates: dict) -> list[str]:
    """Gate names a reference may use: the campaign's `gates:` instances and the node's inline evaluators."""
    inline = [c.name for c in node.evaluators if c.name not in gates]
    return sorted(set(gates) | set(inline))


def _guardrail_gates(rep: _Report, e: Edge, src: Node, gates: dict) -> None:
    known = known_gates(src, gates)
    for side in ("output", "input"):
        for j, name in enumerate(e.guardrails.get(side) or ()):
            if name not in known:
                rep.add(e.key_line("guardrails"), f"{e.where}.guardrails.{side}[{j}]", "unknown-gate",
                        f"unknown gate '{name}' (known: {', '.join(known) or 'none'})")


def _stand_in(rep: _Report, e: Edge, target: str, where: str, by_id: dict[str, Node], layer_deps: dict) -> None:
    """A fallback or reroute target runs only when enabled, and late enough to be still undecided (§2)."""
    line = e.key_line("fallback" if where.endswith("fallback") else "guardrails")
    if target not in by_id:
        if where.endswith("fallback"):
            rep.add(line, where, "dangling", f"node '{target}' is not declared{did_you_mean(target, by_id)}")
        return
    if by_id[target].activation != "on_demand":
        rep.add(line, where, "stand-in", f"{target} must be activation: on_demand (otherwise it would also run)")
    waits = graph.reaches(layer_deps, target)
    for pred in graph.natural_sorted(layer_deps.get(e.dst, ())):
        if pred != target and pred not in waits:
            rep.add(line, where, "stand-in", f"{target} must wait for {pred} (a predecessor of {e.dst}); "
                    f"add it to {target}'s depends_on")
