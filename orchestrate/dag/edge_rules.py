"""Rules over all edges at once: `check(...)` parses the `edges:` list, then finds cycles, LOOPS_WITH
groups that would need ordering inside, effective gates, conditions and guardrails that do not fit,
and returns the `Model` the `Dag` keeps. Every problem goes to the loader's report with file:line and a
field such as `edges[3].predicate` (the index is the position in the `edges:` list)."""
from __future__ import annotations

from orchestrate.dag import graph, surface
from orchestrate.dag.condition import ConditionError, compile_condition
from orchestrate.dag.edge_schema import duplicates, one_discovery_per_node, parse_all, sugar
from orchestrate.dag.edges import (
    Edge,
    Model,
    contract,
    effective_gates,
    known_gates,
    loop_groups,
    ordering_deps,
    own_gates,
)
from orchestrate.dag.model import Node
from orchestrate.dag.schema import Report, did_you_mean
from orchestrate.dag.yamlfile import Mapping


def check(rep: Report, raw_edges: object, line: int, nodes: list[Node], node_lines: dict[str, Mapping],
          declared: set[str], params: dict, gates: dict) -> Model:
    """Parse and check the `edges:` list against the nodes; derive groups, deps and effective gates.

    `declared` holds every id that appeared in `nodes:` (even a node that failed its own checks), so an
    edge to it is not also reported as dangling.
    """
    by_id = {n.id: n for n in nodes}
    edges = sugar(nodes, node_lines) + parse_all(rep, raw_edges, line, by_id, declared)
    duplicates(rep, edges)
    one_discovery_per_node(rep, edges)
    usable = [e for e in edges if e.src in by_id and (e.predicate == "EXTENDS" or e.dst in by_id)]
    deps = ordering_deps(by_id, usable)
    groups = loop_groups(by_id, usable)
    on_cycle = _cycles(rep, deps, usable, node_lines)
    layer_deps = contract(deps, groups)
    if not on_cycle:
        on_cycle = _group_ordering(rep, deps, layer_deps, groups, usable)
    effective = effective_gates(by_id, usable, groups)
    _semantics(rep, usable, by_id, layer_deps, effective, params, gates)
    exempt = {frozenset((e.dst, e.fallback)) for e in usable if e.fallback}
    exempt |= {frozenset((e.dst, e.guardrails["reroute_target"])) for e in usable
               if e.guardrails and e.guardrails.get("reroute_target")}
    typed_first = [e for e in usable if e.index is not None] + [e for e in usable if e.index is None]
    return Model(typed_first, deps, layer_deps, groups, exempt, on_cycle, effective)


def _cycles(rep: Report, deps: dict, edges: list[Edge], node_lines: dict[str, Mapping]) -> set[str]:
    """Ordering cycles, each reported once; one through COMPOSES explains the reversed arrow (P9)."""
    found = graph.cycles(deps)
    why = {}
    for e in edges if found else ():  # which edge made each step: wanted only to explain a cycle
        if e.orders:
            why.setdefault((e.after, e.before), e)
    on_cycle: set[str] = set()
    for cycle in found:
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


def _group_ordering(rep: Report, deps: dict, layer_deps: dict, groups: list[tuple[str, ...]],
                    edges: list[Edge]) -> set[str]:
    """Members of one group must not order each other (L3), nor may two groups order each other both ways."""
    bad: set[str] = set()
    if not groups:  # then layer_deps is deps, whose cycles are already reported
        return bad
    # A path between two members either is one dependency inside the group, or leaves it: then in
    # layer_deps, where every member waits for what any member waits for, it closes a cycle through the
    # group, and Kahn cannot settle that member. Only such groups are searched (a search per group
    # walks everything downstream of it: quadratic over many groups).
    settled = set(graph.kahn_order(layer_deps))
    suspects = [g for g in groups if not settled.issuperset(g) or _inside(g, deps)]
    succ: dict[str, list[str]] = {n: [] for n in deps}
    for n, ds in deps.items() if suspects else ():
        for d in ds:
            succ[d].append(n)
    for g in suspects:
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
        loops = [e for e in edges if e.predicate == "LOOPS_WITH"]
        # the cycle may pass through only the `to` ends of its groups' edges (it used to crash then)
        e = next((e for e in loops if e.src in cycle), None) or next(e for e in loops if e.dst in cycle)
        involved = [g for g in groups if set(g) & set(cycle)]
        rep.add(e.line, e.where, "group-ordered",
                f"LOOPS_WITH groups {' and '.join('{' + ', '.join(g) + '}' for g in involved)} order each other "
                f"(each group runs as one, so {' -> '.join(cycle)} is a cycle); "
                "members of a co-reconciled group must share one layer")
        bad.update(cycle)
    return bad


def _inside(group: tuple[str, ...], deps: dict) -> bool:
    """Does a member depend directly on another member?"""
    members = set(group)
    return any(d in members for m in group for d in deps[m])


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


def _semantics(rep: Report, edges: list[Edge], by_id: dict[str, Node], layer_deps: dict,
               effective: dict[str, list[str]], params: dict, gates: dict) -> None:
    extended: dict[str, set[str]] = {}
    for e in edges:
        src = by_id[e.src]
        if e.when is not None and e.type == "conditional":
            _condition(rep, e, src, params, effective[e.src])
        for j, path in enumerate(e.payload):
            if surface.is_glob(path):  # the contract looks each path up at the producer's head, as written
                rep.add(e.key_line("payload"), f"{e.where}.payload[{j}]", "payload-pattern",
                        f"{path} is a pattern; a payload names the files (or folders) {e.src} must deliver, "
                        "each looked up at its head as written")
            elif surface.covering(src.file_surface, path) is None:
                short = surface.short_of(src.file_surface, path, "its file_surface")
                why = f"{e.src} cannot produce {path}: {short}" if short else \
                    f"{path} is outside the file_surface of {e.src}, which cannot produce it"
                rep.add(e.key_line("payload"), f"{e.where}.payload[{j}]", "payload-surface", why)
        if e.predicate == "LOOPS_WITH" and (done := next((n for n in (e.src, e.dst) if by_id[n].complete), None)):
            rep.add(e.line, e.where, "complete-source",  # the group's routing looked up its state: KeyError
                    f"{done} is complete: true, never run, so it cannot be reconciled with its LOOPS_WITH peer; "
                    f"make the edge TRIGGERS, or set {done}'s complete: false")
        if e.guardrails and src.complete:  # no merge to judge, no state to cite: the run crossed it with a KeyError
            rep.add(e.key_line("guardrails"), f"{e.where}.guardrails", "complete-source",
                    f"{src.id} is complete: true, never run or merged, so no crossing of this edge is judged; put "
                    f"the gates among {e.dst}'s evaluators, or set {src.id}'s complete: false")
        elif e.guardrails:
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


def _condition(rep: Report, e: Edge, src: Node, params: dict, src_gates: list[str]) -> None:
    if src.complete:  # it never runs: its condition would be left undecided, its target skipped without a word
        rep.add(e.key_line("when"), f"{e.where}.when", "condition",
                f"{src.id} is complete: true, never run, so it records no outcome for a condition to read; "
                f"drop type: conditional and when:, or set {src.id}'s complete: false")
        return
    can_abandon = src.max_rework is not None and src.on_exhausted == "continue"
    try:
        compile_condition(e.when, outputs=src.outputs, params=params, gates=src_gates,
                          source=src.id, can_abandon=can_abandon)
    except ConditionError as exc:
        rep.add(e.key_line("when"), f"{e.where}.when", "condition", exc.message)


def _guardrail_gates(rep: Report, e: Edge, src: Node, gates: dict) -> None:
    known = known_gates(src, gates)
    for side in ("output", "input"):
        for j, name in enumerate(e.guardrails.get(side) or ()):
            if name not in known:
                rep.add(e.key_line("guardrails"), f"{e.where}.guardrails.{side}[{j}]", "unknown-gate",
                        f"unknown gate '{name}' (known: {', '.join(known) or 'none'})")


def _stand_in(rep: Report, e: Edge, target: str, where: str, by_id: dict[str, Node], layer_deps: dict) -> None:
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
