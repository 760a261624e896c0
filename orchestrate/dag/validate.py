"""Validation of a loaded DAG: every rule of the contract checked, every problem reported with its line."""
from __future__ import annotations

from pathlib import Path

from orchestrate.dag import edge_rules, graph, node_rules, surface
from orchestrate.dag.model import (COMMAND_PLUGIN, MODES, RESERVED_GATES, SANDBOXES, SCHEDULES, SCHEMA_VERSIONS,
                                   UNSANDBOXED, Dag, Node, replaced)
from orchestrate.dag.schema import (
    CHECK_FIELDS,
    COMMAND_GATE_FIELDS,
    DEFAULT_FIELDS,
    POLICY_CASES,
    POLICY_FIELDS,
    POLICY_RULE_FIELDS,
    TOP_FIELDS,
    Report,
    checks_of,
    did_you_mean,
    id_problem,
    is_text,
    kind_of,
    reserved,
    topic_problem,
)
from orchestrate.dag.yamlfile import Mapping, Problem, Sequence

EMPTY = ("the DAG has no nodes: the file is empty or holds only comments; add a `nodes:` list, e.g. "
         "`nodes: [{id: A, file_surface: [a.txt], worker: ./work.sh}]`")


def validate(data: object, file: str, *, topic: str | None = None,
             brief_dir: Path | None = None) -> tuple[Dag | None, list[Problem]]:
    """Check every rule of the DAG contract; return the model when there is no problem."""
    rep = Report(file)
    if data is None:
        rep.add(1, "", "empty", EMPTY)
        return None, rep.problems
    if not isinstance(data, Mapping):
        rep.add(getattr(data, "line", 1) or 1, "", "type",
                f"the DAG must be a mapping with a `nodes:` list, got {kind_of(data)}")
        return None, rep.problems
    rep.fields(data, TOP_FIELDS, "")
    version = data.get("schema_version", 1)
    if isinstance(version, int) and version not in SCHEMA_VERSIONS:
        rep.add(data.key_line("schema_version"), "schema_version", "enum",
                f"unsupported schema_version {version}; this orchestrate reads schema_version: 1")

    # `campaign:` is the reference documents' word for our `topic:`; two spellings of one value conflict.
    topic_key = "campaign" if "campaign" in data and "topic" not in data else "topic"
    if "campaign" in data and "topic" in data:
        rep.add(data.key_line("campaign"), "campaign", "exclusive",
                "give `topic` or `campaign` (its alias), not both")
    topic_value = topic or data.get(topic_key) or Path(file).stem
    if isinstance(topic_value, str) and (why := topic_problem(topic_value)):
        rep.add(data.key_line(topic_key) if topic_key in data and not topic else 0, topic_key, "topic",
                why + ("" if topic_key in data or topic else "; set `topic:` (the default is the file's stem)"))
    mode = data.get("mode", "interactive")
    if isinstance(mode, str) and mode not in MODES:
        rep.add(data.key_line("mode"), "mode", "enum", f"`{mode}` is not a mode: use interactive or autonomous")
    schedule = data.get("schedule", "eager")
    if isinstance(schedule, str) and schedule not in SCHEDULES:
        rep.add(data.key_line("schedule"), "schedule", "enum",
                f"`{schedule}` is not a schedule: use eager (a node starts when its inputs merged) or layered "
                "(a layer starts when the previous one merged)")

    defaults = _or_empty(data.get("defaults"))
    if not isinstance(defaults, Mapping):
        rep.add(data.key_line("defaults"), "defaults", "type", f"expected a mapping, got {kind_of(defaults)}")
        defaults = Mapping()
    else:
        rep.fields(defaults, DEFAULT_FIELDS, "defaults")
        for key, allowed, what in (("sandbox", SANDBOXES, "a sandbox setting"),
                                   ("unsandboxed", UNSANDBOXED, "an unsandboxed setting")):
            if isinstance(defaults.get(key), str) and defaults[key] not in allowed:
                rep.add(defaults.key_line(key), f"defaults.{key}", "enum",
                        f"`{defaults[key]}` is not {what}: use {' or '.join(allowed)}")

    workers = _or_empty(data.get("workers"))
    if not isinstance(workers, Mapping):
        rep.add(data.key_line("workers"), "workers", "type", f"expected a mapping discipline -> command, got {kind_of(workers)}")
        workers = Mapping()
    workers = node_rules.disciplines(rep, workers)

    checks = checks_of(rep, data.get("checks"), data.key_line("checks"), "checks", CHECK_FIELDS)
    good, named = {id(c) for c in checks}, {}
    for i, item in enumerate(data["checks"] if checks else []):  # a name tells results apart, as for evaluators
        if id(item) in good and (first := named.setdefault(item.get("name"), i)) != i:
            rep.add(data["checks"].item_line(i), f"checks[{i}].name", "duplicate",
                    f"`{item.get('name')}` is the name of checks[{first}] too; names must be unique")
    params = _params(rep, data.get("params"), data.key_line("params"))
    gates = _gates(rep, data.get("gates"), data.key_line("gates"))
    policy = _policy(rep, data.get("policy"), data.key_line("policy"))
    budget = node_rules.budget(rep, data["budget"], data.key_line("budget"), "budget") if "budget" in data else None
    nodes_raw = data.get("nodes")
    if "nodes" in data and not isinstance(nodes_raw, Sequence):
        rep.add(data.key_line("nodes"), "nodes", "type", f"expected a list of nodes, got {kind_of(nodes_raw)}")
    elif "nodes" in data and not nodes_raw:  # a run of nothing would still open a campaign and ask for its final acceptance
        rep.add(data.key_line("nodes"), "nodes", "empty",
                "the plan has no nodes; list at least one under `nodes:`, e.g. "
                "`nodes: [{id: A, file_surface: [a.txt], worker: ./work.sh}]`")
    nodes_raw = nodes_raw if isinstance(nodes_raw, Sequence) else Sequence()

    base_dir = brief_dir or Path(file).parent
    # a brief_dir is given for a campaign's DAG copy: its briefs are not beside it, and a missing one says so
    looked = node_rules.looked_in(brief_dir)
    nodes: list[Node] = []
    first_line: dict[str, int] = {}
    node_lines: dict[str, Mapping] = {}
    declared: set[str] = set()
    raw_edges = data.get("edges") if isinstance(data.get("edges"), Sequence) else ()
    # a discovery edge's target gets its worker from a plugin: its discipline needs no `workers:` entry
    discovered = {e.get("to") for e in raw_edges
                  if isinstance(e, Mapping) and e.get("type") == "discovery" and isinstance(e.get("to"), str)}
    sound: set[str] = set()  # nodes whose own fields have no problem
    for i, raw in enumerate(nodes_raw):
        where = f"nodes[{i}]"
        if not isinstance(raw, Mapping):
            rep.add(nodes_raw.item_line(i), where, "type", f"expected a node mapping, got {kind_of(raw)}")
            continue
        if isinstance(raw.get("id"), str):
            declared.add(raw["id"])
        node, ok = node_rules.node(rep, raw, where, workers, defaults, base_dir, gates,
                                   has_workers="workers" in data and not (isinstance(raw.get("id"), str)
                                                                          and raw["id"] in discovered), looked=looked)
        if node is None:
            continue
        where = f"nodes.{node.id}"
        if node.id in first_line:
            rep.add(raw.key_line("id"), f"{where}.id", "duplicate-id",
                    f"duplicate id `{node.id}` (first at line {first_line[node.id]}); ids must be unique")
            continue
        first_line[node.id] = raw.key_line("id")
        node_lines[node.id] = raw
        nodes.append(node)
        if ok:
            sound.add(node.id)

    by_id = {n.id: n for n in nodes}
    for n in nodes:
        raw = node_lines[n.id]
        seen = set()
        for j, dep in enumerate(n.depends_on):
            if dep in seen:
                rep.add(_item_line(raw, j), f"nodes.{n.id}.depends_on", "duplicate-dependency",
                        f"`{dep}` is listed twice")
            seen.add(dep)
            if dep not in by_id and dep not in declared:  # a declared id that is unreadable is reported there
                rep.add(_item_line(raw, j), f"nodes.{n.id}.depends_on", "dangling",
                        f"`{dep}` is not a node of this DAG{did_you_mean(dep, by_id)}")
    nodes = [_with_deps(n, _known(n.depends_on, by_id)) for n in nodes]
    model = edge_rules.check(rep, data.get("edges"), data.key_line("edges"), nodes, node_lines,
                          declared, params, gates)
    # Every ordering predecessor becomes part of depends_on, so code reading a node alone sees them all.
    nodes = [_with_deps(n, model.deps[n.id]) for n in nodes]
    by_id = {n.id: n for n in nodes}
    # A node whose `serialize` or `complete` is unreadable may or may not take part: leave it out.
    surfaces = {n.id: n.file_surface for n in nodes
                if not n.serialize and not n.complete and n.id not in model.on_cycle
                and (n.id in sound or _flags_readable(node_lines[n.id]))}
    for a, b, pairs in graph.surface_conflicts(surfaces, model.layer_deps, exempt=model.exempt):
        tokens = ", ".join(f"`{x}`" if x == y else f"`{x}` ~ `{y}`" + _CASED * (not surface.overlap_as_written(x, y))
                           for x, y in pairs)
        rep.add(node_lines[b].key_line("file_surface"), f"nodes.{b}.file_surface", "surface-conflict",
                f"concurrent nodes `{a}` and `{b}` both claim {tokens}; mark one `serialize: true` "
                "or make one depend on the other")
    if rep.problems:
        return None, sorted(rep.problems, key=lambda p: (p.line, p.field))
    return Dag(path=file, topic=str(topic_value), base=str(data.get("base", "HEAD")), mode=str(mode),
               schedule=str(schedule),
               workers=dict(workers), checks=tuple(node_rules.check_of(c) for c in checks),
               nodes=tuple(nodes), by_id=by_id, policy=policy, edges=tuple(model.edges), params=params,
               gates=gates, budget=budget or {}, unsandboxed=defaults.get("unsandboxed"),
               keep_ignored=defaults.get("keep_ignored"),
               _groups=tuple(model.groups), _layer_deps=model.layer_deps,
               _effective=model.effective), []


_CASED = " (one path where case or accents' composition is not told apart, as on macOS and Windows)"


def _item_line(raw: Mapping, j: int) -> int:
    """The line of a node's j-th dependency: looked up only for a problem, never per dependency."""
    return raw["depends_on"].item_line(j) if isinstance(raw.get("depends_on"), Sequence) else raw.line


def _known(deps: tuple[str, ...], by_id: dict) -> tuple[str, ...]:
    """`deps` without repeats and unknown ids: most often `deps` itself, with no tuple built."""
    unique = dict.fromkeys(deps)
    if len(unique) == len(deps) and by_id.keys() >= unique.keys():
        return deps
    return tuple(d for d in unique if d in by_id)


def _with_deps(node: Node, deps: tuple[str, ...]) -> Node:
    return node if deps == node.depends_on else replaced(node, depends_on=deps)


def _or_empty(value: object) -> object:
    """A mapping field's value, null read as an empty mapping; `defaults: []` or `0` is a mistake to report, not
    an empty mapping to take quietly (rv83)."""
    return Mapping() if value is None else value


def _flags_readable(raw: Mapping) -> bool:
    return all(isinstance(raw.get(key, False), bool) for key in ("serialize", "complete"))


def _policy(rep: Report, value: object, line: int) -> dict:
    """`policy: {realignment: {<case>: {choice: rework|skip|halt, limit: N, then: skip|halt}}}`."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        rep.add(line, "policy", "type", f"expected a mapping, got {kind_of(value)}")
        return {}
    rep.fields(value, POLICY_FIELDS, "policy")
    cases = _or_empty(value.get("realignment"))
    if not isinstance(cases, Mapping):
        rep.add(value.key_line("realignment"), "policy.realignment", "type", f"expected a mapping, got {kind_of(cases)}")
        return {}
    result = {}
    for case, rule in cases.items():
        where = f"policy.realignment.{case}"
        if case not in POLICY_CASES:
            rep.add(cases.key_line(case), where, "unknown-key",
                    f"unknown realignment case `{case}`{did_you_mean(str(case), POLICY_CASES)}; "
                    f"cases: {', '.join(POLICY_CASES)}")
            continue
        if not isinstance(rule, Mapping):
            rep.add(cases.key_line(case), where, "type", "expected {choice: rework|skip|halt, limit: N, then: skip|halt}")
            continue
        before = len(rep.problems)
        rep.fields(rule, POLICY_RULE_FIELDS, where)
        if rule.get("choice") not in ("rework", "skip", "halt"):
            rep.add(rule.key_line("choice"), f"{where}.choice", "enum", "choice must be rework, skip or halt")
        if "then" in rule and rule["then"] not in ("skip", "halt"):
            rep.add(rule.key_line("then"), f"{where}.then", "enum", "then must be skip or halt")
        if len(rep.problems) == before:
            result[case] = dict(rule)
    return {"realignment": result} if result else {}


def _params(rep: Report, value: object, line: int) -> dict:
    """`params:` a flat mapping of scalars, read by conditions as `params.<key>`."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        rep.add(line, "params", "type", f"expected a mapping of names to values, got {kind_of(value)}")
        return {}
    for key, v in value.items():
        if not isinstance(key, str) or not key.isidentifier():
            rep.add(value.key_line(key), f"params.{key}", "type",
                    f"`{key}` cannot be read as params.<name>: use letters, digits and `_`")
        elif v is not None and not isinstance(v, (str, int, float)):  # a YAML date no journal entry can hold (rv83)
            quoted = f"; quote it: {key}: '{v}'" if not isinstance(v, (dict, list, set, bytes)) else ""
            rep.add(value.key_line(key), f"params.{key}", "type",
                    f"expected text, a number, true/false or null, got {kind_of(v)}{quoted}")
    return dict(value)


def _gates(rep: Report, value: object, line: int) -> dict[str, dict]:
    """`gates:` named gate instances `{plugin: <name>, ...config}`; the plugin itself is resolved at run time."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        rep.add(line, "gates", "type", f"expected a mapping of gate names to {{plugin: ..., ...}}, got {kind_of(value)}")
        return {}
    out = {}
    for name, spec in value.items():
        where = f"gates.{name}"
        before = len(rep.problems)
        if why := id_problem(name):
            rep.add(value.key_line(name), where, "id", why)
        elif name in RESERVED_GATES:
            rep.add(value.key_line(name), where, "reserved", reserved(name))
        if not isinstance(spec, Mapping):
            rep.add(value.key_line(name), where, "type", f"expected {{plugin: ..., ...config}}, got {kind_of(spec)}")
            continue
        if spec.get("plugin") == COMMAND_PLUGIN:
            rep.fields(spec, COMMAND_GATE_FIELDS, where)
        elif "plugin" not in spec:
            rep.add(spec.line, f"{where}.plugin", "missing", "required key `plugin` is missing")
        elif why := is_text(spec["plugin"]):
            rep.add(spec.key_line("plugin"), f"{where}.plugin", "type", why)
        if len(rep.problems) == before:
            out[name] = dict(spec)
    return out
