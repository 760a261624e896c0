"""The edge schema, one edge at a time: the fields of an `edges:` entry with the predicates and types
they belong to, the `depends_on` short form, and the problems of a single edge reported with its line."""
from __future__ import annotations

from orchestrate.dag import surface
from orchestrate.dag.edges import DISCOVER_KINDS, PLUGIN_PREFIX, PREDICATES, ROUTABLE, TYPES, VIOLATIONS, Edge, short_form
from orchestrate.dag.model import RESERVED_GATES, Node, assemble
from orchestrate.dag.schema import Report, did_you_mean, id_problem, is_str_list, is_text, kind_of, reserved
from orchestrate.dag.yamlfile import Mapping, Sequence

EDGE_FIELDS = {
    "id": (is_text, True), "from": (is_text, True), "to": (is_text, True), "predicate": (is_text, True),
    "type": (is_text, False), "when": (is_text, False), "payload": (is_str_list, False),
    "guardrails": (None, False), "discover": (None, False), "fallback": (is_text, False),
    "actions": (None, False)}
# Keys that name a real upstream feature we refuse on purpose: a pointed message beats "unknown key".
REJECTED_KEYS = {"trigger_action": "not supported; a node has a single action (its worker dispatch)"}
REJECTED_TYPES = {"personality": ("'personality' edges are not supported (a campaign has no trait state); "
                                  'use type: conditional with when: "params.<name> >= <threshold>"')}
REJECTED_VIOLATIONS = {"sanitize": ("'sanitize' is not supported (orchestrate never rewrites a node's commits); "
                                    "use block, reroute or warn")}
_EDGE_KEYS = {**EDGE_FIELDS, **{k: (None, False) for k in REJECTED_KEYS}}  # rejected keys get their own message
# Which edge types a predicate may have (static goes everywhere).
TYPE_PREDICATES = {"conditional": ROUTABLE, "discovery": ROUTABLE, "static": PREDICATES}
# Optional fields that belong to one type or to some predicates only.
FIELD_TYPE = {"when": "conditional", "discover": "discovery", "fallback": "discovery"}
FIELD_PREDICATES = {"payload": ("PRODUCES",), "guardrails": ROUTABLE, "actions": ("EXTENDS",)}
TYPE_NEEDS = {"conditional": "when", "discovery": "discover"}
GUARDRAIL_FIELDS = {"output": (is_str_list, False), "input": (is_str_list, False),
                    "on_violation": (is_text, True), "reroute_target": (is_text, False)}
DISCOVER_FIELDS = {"kind": (is_text, True), "capabilities": (is_str_list, True)}


def sugar(nodes: list[Node], node_lines: dict[str, Mapping]) -> list[Edge]:
    """`depends_on: [X]` on N is a static TRIGGERS edge X -> N (never located at `edges[...]`)."""
    out = []
    for n in nodes:
        raw = node_lines[n.id].get("depends_on")
        for j, dep in enumerate(dict.fromkeys(n.depends_on)):
            line = raw.item_line(j) if isinstance(raw, Sequence) else node_lines[n.id].line
            out.append(short_form(dep, n.id, line))
    return out


def parse_all(rep: Report, raw_edges: object, line: int, by_id: dict[str, Node], declared: set[str]) -> list[Edge]:
    if raw_edges is None:
        return []
    if not isinstance(raw_edges, Sequence):
        rep.add(line, "edges", "type", f"expected a list of edges, got {kind_of(raw_edges)}")
        return []
    out: list[Edge] = []
    ids: dict[str, int] = {}
    for i, raw in enumerate(raw_edges):
        where = f"edges[{i}]"
        if not isinstance(raw, Mapping):
            rep.add(raw_edges.item_line(i), where, "type",
                    f"expected a mapping like {{id: e1, from: N1, to: N2, predicate: TRIGGERS}}, got {kind_of(raw)}")
            continue
        edge_id, again = raw.get("id"), False  # told apart whether or not the rest of either edge is right
        if isinstance(edge_id, str) and (again := edge_id in ids):
            rep.add(raw.key_line("id"), f"{where}.id", "duplicate-id",
                    f"duplicate edge id '{edge_id}' (first at line {ids[edge_id]}); edge ids must be unique")
        elif isinstance(edge_id, str):
            ids[edge_id] = raw.key_line("id")
        edge = _parse(rep, raw, where, i, by_id, declared)
        if edge is not None and not again:
            out.append(edge)
    return out


def _parse(rep: Report, raw: Mapping, where: str, index: int, by_id: dict[str, Node],
           declared: set[str]) -> Edge | None:
    """One edge's fields; None when it cannot take part in the graph checks."""
    before = len(rep.problems)
    for key, why in REJECTED_KEYS.items():
        if key in raw:
            rep.add(raw.key_line(key), f"{where}.{key}", "unsupported", why)
    rep.fields(raw, _EDGE_KEYS, where)
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
    _endpoints(rep, raw, where, predicate if isinstance(predicate, str) else None, by_id, declared)
    if raw.get("from") is not None and raw.get("from") == raw.get("to") and isinstance(raw.get("id"), str):
        rep.add(raw.line, where, "self-edge", f"edge {raw['id']} connects {raw['from']} to itself")
    # most edges have neither: skip the calls and the field names built for their messages
    guardrails = _guardrails(rep, raw["guardrails"], raw.key_line("guardrails"), f"{where}.guardrails",
                             by_id) if "guardrails" in raw else None
    discover = _discover(rep, raw["discover"], raw.key_line("discover"), f"{where}.discover") \
        if "discover" in raw else None
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
    return assemble(Edge, id=raw["id"], src=raw["from"], dst=raw["to"], predicate=predicate, type=etype,
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


def _scope(rep: Report, raw: Mapping, where: str, predicate: str, etype: str) -> None:
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


def _endpoints(rep: Report, raw: Mapping, where: str, predicate: str | None, by_id: dict,
               declared: set[str]) -> None:
    """What the edge joins, named by declared nodes; with no known predicate (none, or one misspelt) a target
    written plugin:<name> is left be: an EXTENDS edge's would be right."""
    src, dst = raw.get("from"), raw.get("to")
    if isinstance(src, str) and src not in declared:
        rep.add(raw.key_line("from"), f"{where}.from", "dangling",
                f"node '{src}' is not declared{did_you_mean(src, by_id)}")
    if not isinstance(dst, str) or (predicate is None and dst.startswith(PLUGIN_PREFIX)):
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


def _guardrails(rep: Report, value: object, line: int, where: str, by_id: dict) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        rep.add(line, where, "type", f"expected a mapping {{output: [...], on_violation: ...}}, got {kind_of(value)}")
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


def _discover(rep: Report, value: object, line: int, where: str) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        rep.add(line, where, "type", f"expected a mapping {{kind: worker, capabilities: [...]}}, got {kind_of(value)}")
        return None
    rep.fields(value, DISCOVER_FIELDS, where)
    kind = value.get("kind")
    if isinstance(kind, str) and kind not in DISCOVER_KINDS:
        rep.add(value.key_line("kind"), f"{where}.kind", "enum", f"expected one of {', '.join(DISCOVER_KINDS)}")
    if value.get("capabilities") == []:
        rep.add(value.key_line("capabilities"), f"{where}.capabilities", "missing",
                "list at least one capability to match")
    return dict(value)


def _actions(rep: Report, raw: Mapping, where: str, predicate: object) -> tuple[dict, ...]:
    """EXTENDS actions: each `{name, ...config}`; the config goes to the plugin untouched."""
    value = raw.get("actions")
    if predicate == "EXTENDS" and not value:
        rep.add(raw.line, where, "missing", f"EXTENDS edge {raw.get('id')} must define actions "
                "(gates are declared on the edge, not taken from the target)")
        return ()
    if value is None:
        return ()
    if not isinstance(value, Sequence):
        rep.add(raw.key_line("actions"), f"{where}.actions", "type", f"expected a list, got {kind_of(value)}")
        return ()
    out = []
    for k, action in enumerate(value):
        loc = f"{where}.actions[{k}]"
        if not isinstance(action, Mapping):
            rep.add(value.item_line(k), loc, "type", f"expected a mapping {{name: ..., ...config}}, got {kind_of(action)}")
        elif "name" not in action:
            rep.add(action.line, loc, "missing", "required key `name` is missing")
        elif why := (is_text(action["name"]) or id_problem(action["name"])):
            rep.add(action.key_line("name"), f"{loc}.name", "type", why)
        elif action["name"] in RESERVED_GATES:
            rep.add(action.key_line("name"), f"{loc}.name", "reserved", reserved(action["name"]))
        else:
            out.append(dict(action))
    return tuple(out)


def duplicates(rep: Report, edges: list[Edge]) -> None:
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


def one_discovery_per_node(rep: Report, edges: list[Edge]) -> None:
    seen: dict[str, Edge] = {}
    for e in edges:
        if e.type != "discovery":
            continue
        if e.dst in seen:
            rep.add(e.line, e.where, "discovery-twice", f"{e.dst} already has discovery edge {seen[e.dst].id}")
        else:
            seen[e.dst] = e
