"""The DAG file: its schema as data, the frozen model, and a validator that reports every problem.

`load_dag(path)` returns a `Dag` or raises `DagInvalid` carrying a `Problem` per violation, each with
the file, the line, the field and a fix. Unreadable input raises `UsageError` (exit 2).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from gates.core import graph, surface, yamlfile
from gates.core.errors import DagInvalid, UsageError
from gates.core.yamlfile import Mapping, Problem, Sequence

ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
TOPIC_RE = re.compile(r"[a-z0-9][a-z0-9._-]*")
MODES = ("interactive", "autonomous")
SCHEMA_VERSIONS = (1,)
ACTIVATIONS = ("always", "on_demand")
JOINS = ("all", "any")
ON_EXHAUSTED = ("halt", "continue")
WORKER_KINDS = ("human",)
COMMAND_PLUGIN = "command"  # the one gate plugin built in: a shell command, like an inline evaluator
# Names the implicit contracts use; a declared gate with one of them would be ambiguous in a verdict.
RESERVED_GATES = ("outputs-present", "payload-present")
DEFAULT_TIMEOUT = 3600
DEFAULT_MAX_ATTEMPTS = 2


@dataclass(frozen=True)
class Check:
    """An evaluator or campaign check: a shell command that must exit 0."""

    name: str
    run: str
    timeout: int | None = None
    review: bool = False  # a reviewer: when reviewers disagree, a person decides


@dataclass(frozen=True)
class Tripwire:
    """A premise: `run` must exit with `expect` while the node is pending."""

    run: str
    expect: int = 0
    why: str = ""
    timeout: int | None = None


@dataclass(frozen=True)
class Node:
    id: str
    title: str
    depends_on: tuple[str, ...]
    file_surface: tuple[str, ...]
    worker: str | None
    discipline: str | None = None
    brief: str = ""
    brief_file: str | None = None
    evaluators: tuple[Check, ...] = ()
    tripwires: tuple[Tripwire, ...] = ()
    serialize: bool = False
    complete: bool = False
    mitigates: tuple[str, ...] = ()
    timeout: int = DEFAULT_TIMEOUT
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    line: int = 0
    plugin_gates: tuple[str, ...] = ()  # `gates:` instances of a non-command plugin, run by that plugin
    outputs: tuple[str, ...] = ()  # keys the worker reports; conditions read them as src.outputs.<key>
    activation: str = "always"  # on_demand: SKIPPED unless a reroute or a discovery fallback enables it
    join: str = "all"  # all: every incoming ordering edge taken; any: at least one
    max_rework: int | None = None
    on_exhausted: str = "halt"  # continue: ABANDONED after max_rework instead of halting
    worker_spec: dict | None = None  # `worker: {capabilities: [...]}` or `{kind: human}`


@dataclass(frozen=True)
class Dag:
    path: str
    topic: str
    base: str
    mode: str
    workers: dict[str, str]
    checks: tuple[Check, ...]
    nodes: tuple[Node, ...]
    by_id: dict[str, Node] = field(repr=False, compare=False)
    policy: dict = field(default_factory=dict, repr=False, compare=False)
    edges: tuple = ()  # tuple[edges.Edge, ...]: the `edges:` list in file order, then the `depends_on` short forms
    params: dict = field(default_factory=dict, compare=False)
    gates: dict = field(default_factory=dict, repr=False, compare=False)  # name -> {plugin, ...config}
    _groups: tuple = field(default=(), repr=False, compare=False)
    _layer_deps: dict = field(default_factory=dict, repr=False, compare=False)
    _effective: dict = field(default_factory=dict, repr=False, compare=False)
    _memo: dict = field(default_factory=dict, repr=False, compare=False)  # indexes built on first use

    def cached(self, key: str, build):
        """`build()` once per DAG: the engine asks per node, and a scan per question would be quadratic."""
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]

    def deps(self) -> dict[str, tuple[str, ...]]:
        """node -> ordering predecessors (depends_on, TRIGGERS, PRODUCES, and the spokes a hub COMPOSES)."""
        return {n.id: n.depends_on for n in self.nodes}

    def layer_deps(self) -> dict[str, tuple[str, ...]]:
        """`deps()` with each LOOPS_WITH group contracted: a member waits for all its group's outside deps."""
        return self._layer_deps or self.deps()

    def layers(self) -> list[list[str]]:
        """Kahn layers in natural id order; complete nodes are settled and never appear."""
        return graph.kahn_layers(self.layer_deps(), settled=(n.id for n in self.nodes if n.complete))

    def groups(self) -> list[tuple[str, ...]]:
        """LOOPS_WITH groups (co-reconciled), each in natural id order."""
        return list(self._groups)

    def group_of(self, node_id: str) -> tuple[str, ...]:
        index = self.cached("group_of", lambda: {m: g for g in self._groups for m in g})
        return index.get(node_id, (node_id,))

    def effective_gates(self, node_id: str) -> list[str]:
        """The gate names judging `node_id` (seeds-other §3.1), sorted by name."""
        return list(self._effective.get(node_id, ()))

    def effective_checks(self, node_id: str) -> tuple[Check, ...]:
        """The command checks behind `effective_gates`: the node's own in declared order, then its spokes' and peers'."""
        own = self.by_id[node_id].evaluators
        named = {c.name for c in own}
        first = self.cached("check-by-name", self._first_check_by_name)
        others = sorted(g for g in self.effective_gates(node_id) if g not in named and g in first)
        return tuple(own) + tuple(first[g] for g in others)  # its own in declared order, then the rest by name

    def _first_check_by_name(self) -> dict[str, Check]:
        found: dict[str, Check] = {}
        for n in sorted(self.nodes, key=lambda m: graph.natural_key(m.id)):
            for c in n.evaluators:
                found.setdefault(c.name, c)
        return found

    def incoming(self, node_id: str) -> list:
        """Ordering edges whose later end is `node_id` (for COMPOSES that is the hub), in edge-id order."""
        return self.cached("incoming", lambda: self._by_end(lambda e: e.after if e.orders else None)).get(node_id, [])

    def outgoing(self, node_id: str) -> list:
        """Every edge whose `from` is `node_id`, in edge-id order."""
        return self.cached("outgoing", lambda: self._by_end(lambda e: e.src)).get(node_id, [])

    def _by_end(self, end) -> dict[str, list]:
        index: dict[str, list] = {}
        for e in sorted(self.edges, key=lambda e: graph.natural_key(e.id)):
            if (key := end(e)) is not None:
                index.setdefault(key, []).append(e)
        return index

    def partition(self, layer: list[str]) -> tuple[list[str], list[str]]:
        """(parallel set, serial rest) of one layer, each in natural id order. A LOOPS_WITH group moves as
        one: when any member serializes, the whole group is in the serial rest."""
        def serial_(i: str) -> bool:
            return any(self.by_id[m].serialize for m in self.group_of(i))
        parallel = [i for i in layer if not serial_(i)]
        serial = [i for i in layer if serial_(i)]
        return parallel, serial

    def concurrent_with(self, node_id: str) -> list[str]:
        """Nodes that neither reach nor are reached by `node_id` (complete ones excluded)."""
        deps = self.deps()
        ancestors = graph.reaches(deps, node_id)
        return [n.id for n in self.nodes
                if n.id != node_id and not n.complete and n.id not in ancestors
                and node_id not in graph.reaches(deps, n.id)]


# ---- the schema, as data ----------------------------------------------------------------------

Checker = Callable[[object], str | None]


def _is_str(v: object) -> str | None:
    return None if isinstance(v, str) else f"expected text, got {_kind(v)}"


def _is_text(v: object) -> str | None:
    return _is_str(v) or (None if v.strip() else "must not be empty")  # type: ignore[union-attr]


def _is_bool(v: object) -> str | None:
    return None if isinstance(v, bool) else f"expected true or false, got {_kind(v)}"


def _is_int(v: object) -> str | None:
    return None if isinstance(v, int) and not isinstance(v, bool) else f"expected a whole number, got {_kind(v)}"


def _is_pos_int(v: object) -> str | None:
    return _is_int(v) or (None if v > 0 else "must be a positive number")  # type: ignore[operator]


def _is_str_list(v: object) -> str | None:
    if not isinstance(v, list):
        return f"expected a list, got {_kind(v)}"
    bad = [x for x in v if not isinstance(x, str)]
    return f"every entry must be text; `{bad[0]}` is {_kind(bad[0])}" if bad else None


def _kind(v: object) -> str:
    if v is None:
        return "nothing (null)"
    if isinstance(v, bool):
        return f"the boolean {str(v).lower()}"
    return {dict: "a mapping", Mapping: "a mapping", list: "a list", Sequence: "a list",
            int: "a number", float: "a number", str: "text"}.get(type(v), type(v).__name__)


CHECK_FIELDS: dict[str, tuple[Checker, bool]] = {
    "name": (_is_text, True), "run": (_is_text, True), "timeout": (_is_pos_int, False), "review": (_is_bool, False)}
POLICY_CASES = ("attempts-spent", "stale-premise", "refuted-premise")
POLICY_RULE_FIELDS: dict[str, tuple[Checker, bool]] = {
    "choice": (_is_text, True), "limit": (_is_pos_int, False), "then": (_is_text, False)}
TRIPWIRE_FIELDS: dict[str, tuple[Checker, bool]] = {
    "run": (_is_text, True), "expect": (_is_int, False), "why": (_is_str, False), "timeout": (_is_pos_int, False)}
GATE_FIELDS: dict[str, tuple[Checker | None, bool]] = {"plugin": (_is_text, True)}  # plus the plugin's config
COMMAND_GATE_FIELDS: dict[str, tuple[Checker | None, bool]] = {
    "plugin": (_is_text, True), "run": (_is_text, True), "timeout": (_is_pos_int, False), "review": (_is_bool, False)}
WORKER_SPEC_FIELDS: dict[str, tuple[Checker | None, bool]] = {
    "capabilities": (_is_str_list, False), "kind": (_is_text, False), "fallback_worker": (_is_text, False)}
NODE_FIELDS: dict[str, tuple[Checker, bool]] = {
    "id": (None, True), "title": (_is_str, False), "depends_on": (_is_str_list, False),
    "file_surface": (_is_str_list, True), "discipline": (_is_text, False), "worker": (None, False),
    "brief": (_is_str, False), "brief_file": (_is_text, False), "evaluators": (None, False),
    "tripwires": (None, False), "serialize": (_is_bool, False), "complete": (_is_bool, False),
    "mitigates": (_is_str_list, False), "timeout": (_is_pos_int, False), "max_attempts": (_is_pos_int, False),
    "outputs": (_is_str_list, False), "activation": (_is_text, False), "join": (_is_text, False),
    "max_rework": (_is_pos_int, False), "on_exhausted": (_is_text, False)}
# Closed sets of node fields: (field, allowed values, what a value is called in the message).
NODE_ENUMS = (("activation", ACTIVATIONS, "an activation"), ("join", JOINS, "a join"),
              ("on_exhausted", ON_EXHAUSTED, "an on_exhausted"))
TOP_FIELDS: dict[str, tuple[Checker | None, bool]] = {
    "schema_version": (_is_int, False), "campaign": (_is_text, False), "params": (None, False),
    "gates": (None, False), "topic": (_is_text, False), "base": (_is_text, False), "mode": (_is_text, False), "defaults": (None, False),
    "workers": (None, False), "checks": (None, False), "nodes": (None, True), "edges": (None, False),
    "policy": (None, False)}
DEFAULT_FIELDS: dict[str, tuple[Checker, bool]] = {"timeout": (_is_pos_int, False), "max_attempts": (_is_pos_int, False)}


def did_you_mean(word: str, choices) -> str:
    import difflib
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""


def id_problem(value: object) -> str | None:
    """Why `value` cannot be a node id (git-ref-safe, no YAML-1.1 booleans), or None."""
    if isinstance(value, bool):
        return (f"reads as the boolean {str(value).lower()}: YAML 1.1 turns no/yes/on/off into booleans; "
                "quote the id")
    if not isinstance(value, str):
        return f"expected text, got {_kind(value)}; quote the id"
    if not ID_RE.fullmatch(value):
        return (f"`{value}` is not a valid id: use 1-64 letters, digits, `.`, `_` or `-`, "
                "starting with a letter or digit")
    if ".." in value or value.endswith(".lock") or value.endswith("."):
        return f"`{value}` cannot be part of a git branch name (no `..`, no trailing `.` or `.lock`)"
    return None


def topic_problem(value: str) -> str | None:
    if not TOPIC_RE.fullmatch(value) or ".." in value or value.endswith(".lock") or value.endswith("."):
        return (f"`{value}` is not a valid topic: lower-case letters, digits, `.`, `_`, `-`, starting with "
                "a letter or digit, usable in a git branch name")
    return None


# ---- validation -------------------------------------------------------------------------------

class _Report:
    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[Problem] = []

    def add(self, line: int, fld: str, code: str, message: str) -> None:
        self.problems.append(Problem(self.file, line, fld, code, message))

    def fields(self, data: Mapping, spec: dict, where: str) -> None:
        """Unknown keys, missing required keys, and simple types of one mapping."""
        for key in data:
            if key not in spec:
                self.add(data.key_line(key), _join(where, str(key)), "unknown-key",
                         f"unknown key `{key}`{did_you_mean(str(key), spec)}")
        for key, (checker, required) in spec.items():
            if key not in data:
                if required:
                    self.add(data.line, _join(where, key), "missing", f"required key `{key}` is missing")
            elif checker is not None:
                why = checker(data[key])
                if why:
                    self.add(data.key_line(key), _join(where, key), "type", why)


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _checks(rep: _Report, value: object, line: int, where: str, spec: dict) -> list[Mapping]:
    if value is None:
        return []
    if not isinstance(value, Sequence):
        rep.add(line, where, "type", f"expected a list, got {_kind(value)}")
        return []
    good = []
    for i, item in enumerate(value):
        loc = f"{where}[{i}]"
        if not isinstance(item, Mapping):
            rep.add(value.item_line(i), loc, "type", f"expected a mapping like {{name: ..., run: ...}}, got {_kind(item)}")
            continue
        before = len(rep.problems)
        rep.fields(item, spec, loc)
        if len(rep.problems) == before:
            good.append(item)
    return good


def validate(data: object, file: str, *, topic: str | None = None,
             brief_dir: Path | None = None) -> tuple[Dag | None, list[Problem]]:
    """Check every rule of the DAG contract; return the model when there is no problem."""
    rep = _Report(file)
    if not isinstance(data, Mapping):
        rep.add(getattr(data, "line", 1) or 1, "", "type",
                f"the DAG must be a mapping with a `nodes:` list, got {_kind(data)}")
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

    defaults = data.get("defaults") or Mapping()
    if not isinstance(defaults, Mapping):
        rep.add(data.key_line("defaults"), "defaults", "type", f"expected a mapping, got {_kind(defaults)}")
        defaults = Mapping()
    else:
        rep.fields(defaults, DEFAULT_FIELDS, "defaults")

    workers = data.get("workers") or Mapping()
    if not isinstance(workers, Mapping):
        rep.add(data.key_line("workers"), "workers", "type", f"expected a mapping discipline -> command, got {_kind(workers)}")
        workers = Mapping()
    for key, cmd in workers.items():
        if not isinstance(cmd, str) or not cmd.strip():
            rep.add(workers.key_line(key), f"workers.{key}", "type", "expected a non-empty command line")

    checks = _checks(rep, data.get("checks"), data.key_line("checks"), "checks", CHECK_FIELDS)
    params = _params(rep, data.get("params"), data.key_line("params"))
    gates = _gates(rep, data.get("gates"), data.key_line("gates"))
    policy = _policy(rep, data.get("policy"), data.key_line("policy"))
    nodes_raw = data.get("nodes")
    if "nodes" in data and not isinstance(nodes_raw, Sequence):
        rep.add(data.key_line("nodes"), "nodes", "type", f"expected a list of nodes, got {_kind(nodes_raw)}")
    nodes_raw = nodes_raw if isinstance(nodes_raw, Sequence) else Sequence()

    base_dir = brief_dir or Path(file).parent
    nodes: list[Node] = []
    first_line: dict[str, int] = {}
    node_lines: dict[str, Mapping] = {}
    declared: set[str] = set()
    raw_edges = data.get("edges") if isinstance(data.get("edges"), Sequence) else ()
    # a discovery edge's target gets its worker from a plugin: its discipline needs no `workers:` entry
    discovered = {e.get("to") for e in raw_edges if isinstance(e, Mapping) and e.get("type") == "discovery"}
    for i, raw in enumerate(nodes_raw):
        where = f"nodes[{i}]"
        if not isinstance(raw, Mapping):
            rep.add(nodes_raw.item_line(i), where, "type", f"expected a node mapping, got {_kind(raw)}")
            continue
        if isinstance(raw.get("id"), str):
            declared.add(raw["id"])
        node = _node(rep, raw, where, workers, defaults, base_dir, gates,
                     has_workers="workers" in data and raw.get("id") not in discovered)
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

    by_id = {n.id: n for n in nodes}
    for n in nodes:
        raw = node_lines[n.id]
        seen = set()
        for j, dep in enumerate(n.depends_on):
            line = raw["depends_on"].item_line(j) if isinstance(raw.get("depends_on"), Sequence) else raw.line
            if dep in seen:
                rep.add(line, f"nodes.{n.id}.depends_on", "duplicate-dependency", f"`{dep}` is listed twice")
            seen.add(dep)
            if dep not in by_id and dep not in first_line:
                rep.add(line, f"nodes.{n.id}.depends_on", "dangling",
                        f"`{dep}` is not a node of this DAG{did_you_mean(dep, by_id)}")
    nodes = [replace(n, depends_on=tuple(d for d in dict.fromkeys(n.depends_on) if d in by_id)) for n in nodes]
    from gates.core import edges as edgemod  # edges builds on this module's schema helpers
    model = edgemod.check(rep, data.get("edges"), data.key_line("edges"), nodes, node_lines,
                          declared, params, gates)
    # Every ordering predecessor becomes part of depends_on, so code reading a node alone sees them all.
    nodes = [replace(n, depends_on=model.deps[n.id]) for n in nodes]
    by_id = {n.id: n for n in nodes}
    surfaces = {n.id: n.file_surface for n in nodes
                if not n.serialize and not n.complete and n.id not in model.on_cycle}
    for a, b, pairs in graph.surface_conflicts(surfaces, model.layer_deps, exempt=model.exempt):
        tokens = ", ".join(f"`{x}`" if x == y else f"`{x}` ~ `{y}`" for x, y in pairs)
        rep.add(node_lines[b].key_line("file_surface"), f"nodes.{b}.file_surface", "surface-conflict",
                f"concurrent nodes `{a}` and `{b}` both claim {tokens}; mark one `serialize: true` "
                "or make one depend on the other")
    if rep.problems:
        return None, sorted(rep.problems, key=lambda p: (p.line, p.field))
    return Dag(path=file, topic=str(topic_value), base=str(data.get("base", "HEAD")), mode=str(mode),
               workers=dict(workers), checks=tuple(_check(c) for c in checks),
               nodes=tuple(nodes), by_id=by_id, policy=policy, edges=tuple(model.edges), params=params,
               gates=gates, _groups=tuple(model.groups), _layer_deps=model.layer_deps,
               _effective=model.effective), []


def _check(raw: Mapping) -> Check:
    return Check(raw["name"], raw["run"], raw.get("timeout"), raw.get("review", False))


def _policy(rep: _Report, value: object, line: int) -> dict:
    """`policy: {realignment: {<case>: {choice: rework|skip|halt, limit: N, then: skip|halt}}}`."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        rep.add(line, "policy", "type", f"expected a mapping, got {_kind(value)}")
        return {}
    rep.fields(value, {"realignment": (None, False)}, "policy")
    cases = value.get("realignment") or Mapping()
    if not isinstance(cases, Mapping):
        rep.add(value.key_line("realignment"), "policy.realignment", "type", f"expected a mapping, got {_kind(cases)}")
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


def _params(rep: _Report, value: object, line: int) -> dict:
    """`params:` a flat mapping of scalars, read by conditions as `params.<key>`."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        rep.add(line, "params", "type", f"expected a mapping of names to values, got {_kind(value)}")
        return {}
    for key, v in value.items():
        if not isinstance(key, str) or not key.isidentifier():
            rep.add(value.key_line(key), f"params.{key}", "type",
                    f"`{key}` cannot be read as params.<name>: use letters, digits and `_`")
        elif isinstance(v, (dict, list)):
            rep.add(value.key_line(key), f"params.{key}", "type",
                    f"expected text, a number, true/false or null, got {_kind(v)}")
    return dict(value)


def _gates(rep: _Report, value: object, line: int) -> dict[str, dict]:
    """`gates:` named gate instances `{plugin: <name>, ...config}`; the plugin itself is resolved at run time."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        rep.add(line, "gates", "type", f"expected a mapping of gate names to {{plugin: ..., ...}}, got {_kind(value)}")
        return {}
    out = {}
    for name, spec in value.items():
        where = f"gates.{name}"
        before = len(rep.problems)
        if why := id_problem(name):
            rep.add(value.key_line(name), where, "id", why)
        elif name in RESERVED_GATES:
            rep.add(value.key_line(name), where, "reserved", f"`{name}` is the name of an implicit gate; rename it")
        if not isinstance(spec, Mapping):
            rep.add(value.key_line(name), where, "type", f"expected {{plugin: ..., ...config}}, got {_kind(spec)}")
            continue
        if spec.get("plugin") == COMMAND_PLUGIN:
            rep.fields(spec, COMMAND_GATE_FIELDS, where)
        elif "plugin" not in spec:
            rep.add(spec.line, f"{where}.plugin", "missing", "required key `plugin` is missing")
        elif why := _is_text(spec["plugin"]):
            rep.add(spec.key_line("plugin"), f"{where}.plugin", "type", why)
        if len(rep.problems) == before:
            out[name] = dict(spec)
    return out


def _evaluators(rep: _Report, value: object, line: int, where: str, gates: dict) -> tuple[list[Check], list[str]]:
    """Inline `{name, run}` evaluators and references to `gates:` instances, in the order written.

    A reference to a `command` gate becomes an ordinary Check, so the engine runs it like an inline one;
    any other plugin's gate is kept by name for the plugin layer.
    """
    if value is None:
        return [], []
    if not isinstance(value, Sequence):
        rep.add(line, where, "type", f"expected a list, got {_kind(value)}")
        return [], []
    names = [v["name"] for v in value if isinstance(v, Mapping) and isinstance(v.get("name"), str)]
    checks, plugin_gates, seen = [], [], set()
    for i, item in enumerate(value):
        loc = f"{where}[{i}]"
        if isinstance(item, Mapping):
            before = len(rep.problems)
            rep.fields(item, CHECK_FIELDS, loc)
            if len(rep.problems) == before:
                checks.append(_check(item))
            name = item.get("name")
        elif isinstance(item, str):
            name = item
            if item not in gates:
                known = sorted(set(gates) | set(names))
                rep.add(value.item_line(i), loc, "unknown-gate",
                        f"unknown gate '{item}' (known: {', '.join(known) or 'none'})")
            elif gates[item]["plugin"] == COMMAND_PLUGIN:
                g = gates[item]
                checks.append(Check(item, g["run"], g.get("timeout"), g.get("review", False)))
            else:
                plugin_gates.append(item)
        else:
            rep.add(value.item_line(i), loc, "type",
                    f"expected a gate name or a mapping like {{name: ..., run: ...}}, got {_kind(item)}")
            continue
        if name in seen:
            rep.add(value.item_line(i), loc, "duplicate-gate", f"gate '{name}' is listed twice")
        seen.add(name)
    return checks, plugin_gates


def _worker(rep: _Report, raw: Mapping, where: str) -> tuple[str | None, dict | None]:
    """`worker:` a command line, or a mapping asking for a capability match or a person."""
    value = raw.get("worker")
    if value is None or isinstance(value, str):
        if isinstance(value, str) and not value.strip():
            rep.add(raw.key_line("worker"), f"{where}.worker", "type", "must not be empty")
        return value, None
    if not isinstance(value, Mapping):
        rep.add(raw.key_line("worker"), f"{where}.worker", "type",
                f"expected a command, {{capabilities: [...]}} or {{kind: human}}, got {_kind(value)}")
        return None, None
    loc = f"{where}.worker"
    rep.fields(value, WORKER_SPEC_FIELDS, loc)
    if ("capabilities" in value) == ("kind" in value):
        rep.add(value.line, loc, "exclusive", "give exactly one of `capabilities` or `kind`")
    kind = value.get("kind")
    if isinstance(kind, str) and kind not in WORKER_KINDS:
        rep.add(value.key_line("kind"), f"{loc}.kind", "enum", f"`{kind}` is not a worker kind: use {', '.join(WORKER_KINDS)}")
    if value.get("capabilities") == []:
        rep.add(value.key_line("capabilities"), f"{loc}.capabilities", "missing", "list at least one capability")
    return None, dict(value)


def _node(rep: _Report, raw: Mapping, where: str, workers: Mapping, defaults: Mapping, base_dir: Path,
          gates: dict | None = None, has_workers: bool = True) -> Node | None:
    before = len(rep.problems)
    gates = gates or {}
    node_id = raw.get("id")
    if "id" in raw:
        why = id_problem(node_id)
        if why:
            rep.add(raw.key_line("id"), f"{where}.id", "id", why)
            node_id = None
        else:
            where = f"nodes.{node_id}"
    rep.fields(raw, NODE_FIELDS, where)
    for j, token in enumerate(raw.get("file_surface") or ()):
        why = surface.token_problem(token)
        if why and isinstance(raw["file_surface"], Sequence):
            rep.add(raw["file_surface"].item_line(j), f"{where}.file_surface", "surface-token", why)
    for j, dep in enumerate(raw.get("depends_on") or ()):
        if isinstance(raw["depends_on"], Sequence) and (why := id_problem(dep)) and isinstance(dep, bool):
            rep.add(raw["depends_on"].item_line(j), f"{where}.depends_on", "id", why)
    evaluators, plugin_gates = _evaluators(rep, raw.get("evaluators"), raw.key_line("evaluators"),
                                           f"{where}.evaluators", gates)
    tripwires = _checks(rep, raw.get("tripwires"), raw.key_line("tripwires"), f"{where}.tripwires", TRIPWIRE_FIELDS)
    if "brief" in raw and "brief_file" in raw:
        rep.add(raw.key_line("brief_file"), f"{where}.brief_file", "exclusive", "give `brief` or `brief_file`, not both")
    elif isinstance(raw.get("brief_file"), str) and not (base_dir / raw["brief_file"]).is_file():
        rep.add(raw.key_line("brief_file"), f"{where}.brief_file", "missing-file",
                f"`{raw['brief_file']}` does not exist (paths are relative to the DAG file's folder)")
    _outcome_fields(rep, raw, where)
    worker, worker_spec = _worker(rep, raw, where)
    discipline = raw.get("discipline") if isinstance(raw.get("discipline"), str) else None
    if worker is None and worker_spec is None and not raw.get("complete"):
        if discipline is None:
            rep.add(raw.line, where, "no-worker",
                    "no worker: set `worker:` or a `discipline:` that `workers:` maps to a command")
        # Without any `workers:` section a discipline is a routing label the run resolves (worker plugins).
        elif discipline not in workers and has_workers:
            rep.add(raw.key_line("discipline"), f"{where}.discipline", "unknown-discipline",
                    f"`{discipline}` is not under `workers:`{did_you_mean(discipline, workers)}")
    if len(rep.problems) != before or node_id is None:
        return None
    return Node(
        id=node_id, title=raw.get("title") or node_id, depends_on=tuple(raw.get("depends_on") or ()),
        file_surface=tuple(raw["file_surface"]),
        worker=worker or (None if worker_spec else workers.get(discipline or "")),
        discipline=discipline, brief=raw.get("brief") or "", brief_file=raw.get("brief_file"),
        evaluators=tuple(evaluators),
        tripwires=tuple(Tripwire(t["run"], t.get("expect", 0), t.get("why", ""), t.get("timeout")) for t in tripwires),
        serialize=raw.get("serialize") is True, complete=raw.get("complete") is True,
        mitigates=tuple(raw.get("mitigates") or ()),
        timeout=raw.get("timeout", defaults.get("timeout", DEFAULT_TIMEOUT)),
        max_attempts=raw.get("max_attempts", defaults.get("max_attempts", DEFAULT_MAX_ATTEMPTS)),
        line=raw.line, plugin_gates=tuple(plugin_gates), outputs=tuple(raw.get("outputs") or ()),
        activation=raw.get("activation", "always"), join=raw.get("join", "all"),
        max_rework=raw.get("max_rework"), on_exhausted=raw.get("on_exhausted", "halt"), worker_spec=worker_spec)


def _outcome_fields(rep: _Report, raw: Mapping, where: str) -> None:
    """activation, join, on_exhausted (closed sets), outputs (readable names) and the ABANDONED opt-in."""
    for key, allowed, called in NODE_ENUMS:
        value = raw.get(key)
        if isinstance(value, str) and value not in allowed:
            rep.add(raw.key_line(key), f"{where}.{key}", "enum",
                    f"`{value}` is not {called}: use {' or '.join(allowed)}")
    outputs = raw.get("outputs")
    if isinstance(outputs, list):
        seen = set()
        for j, key in enumerate(outputs):
            line = outputs.item_line(j) if isinstance(outputs, Sequence) else raw.line
            if isinstance(key, str) and not key.isidentifier():
                rep.add(line, f"{where}.outputs", "type",
                        f"`{key}` cannot be read as src.outputs.<key>: use letters, digits and `_`")
            elif key in seen:
                rep.add(line, f"{where}.outputs", "duplicate", f"`{key}` is listed twice")
            seen.add(key)
    if raw.get("on_exhausted") == "continue" and "max_rework" not in raw:
        rep.add(raw.key_line("on_exhausted"), f"{where}.on_exhausted", "missing",
                "on_exhausted: continue needs max_rework: N (how many reworks before ABANDONED)")


def read_text(path: str | Path) -> str:
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{p}: no such DAG file", hint="create it, or pass --dag PATH") from None
    except IsADirectoryError:
        raise UsageError(f"{p}: is a directory, not a DAG file", hint="pass --dag PATH to a YAML file") from None
    except PermissionError:
        raise UsageError(f"{p}: permission denied", hint="make the file readable") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{p}: not UTF-8 text (byte {exc.start})", hint="save the DAG as UTF-8") from None


def check_dag(path: str | Path, *, topic: str | None = None,
              brief_dir: Path | None = None) -> tuple[Dag | None, list[Problem]]:
    """Read and validate; UsageError only when the file cannot be read at all.

    `brief_dir` resolves `brief_file` paths when the DAG was copied away from its own folder.
    """
    file = str(path)
    text = read_text(path)
    data, problems = yamlfile.load(text, file)
    if data is None:
        return None, problems
    dag, more = validate(data, file, topic=topic, brief_dir=brief_dir)
    if more and getattr(data, "fast", False):  # read as JSON, without lines: read again to point at them
        data, problems = yamlfile.load(text, file, fast=False)
        dag, more = validate(data, file, topic=topic, brief_dir=brief_dir)
    if problems:  # duplicate keys make the data untrustworthy even if the rest validates
        return None, sorted(problems + more, key=lambda p: (p.line, p.field))
    return dag, more


def load_dag(path: str | Path, *, topic: str | None = None, brief_dir: Path | None = None) -> Dag:
    dag, problems = check_dag(path, topic=topic, brief_dir=brief_dir)
    if dag is None:
        raise DagInvalid(problems, str(path))
    return dag
