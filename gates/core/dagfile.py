"""The DAG file: its schema as data, the frozen model, and a validator that reports every problem.

`load_dag(path)` returns a `Dag` or raises `DagInvalid` carrying a `Problem` per violation, each with
the file, the line, the field and a fix. Unreadable input raises `UsageError` (exit 2).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from gates.core import graph, surface, yamlfile
from gates.core.errors import DagInvalid, UsageError
from gates.core.yamlfile import Mapping, Problem, Sequence

ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
TOPIC_RE = re.compile(r"[a-z0-9][a-z0-9._-]*")
MODES = ("interactive", "autonomous")
PREDICATES = ("TRIGGERS", "PRODUCES", "COMPOSES", "EXTENDS", "LOOPS_WITH")
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

    def deps(self) -> dict[str, tuple[str, ...]]:
        return {n.id: n.depends_on for n in self.nodes}

    def layers(self) -> list[list[str]]:
        """Kahn layers in natural id order; complete nodes are settled and never appear."""
        return graph.kahn_layers(self.deps(), settled=(n.id for n in self.nodes if n.complete))

    def partition(self, layer: list[str]) -> tuple[list[str], list[str]]:
        """(parallel set, serial rest) of one layer, each in natural id order."""
        parallel = [i for i in layer if not self.by_id[i].serialize]
        serial = [i for i in layer if self.by_id[i].serialize]
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
EDGE_FIELDS: dict[str, tuple[Checker, bool]] = {
    "id": (_is_text, True), "from": (_is_text, True), "to": (_is_text, True),
    "predicate": (_is_text, True), "type": (_is_text, False)}
NODE_FIELDS: dict[str, tuple[Checker, bool]] = {
    "id": (None, True), "title": (_is_str, False), "depends_on": (_is_str_list, False),
    "file_surface": (_is_str_list, True), "discipline": (_is_text, False), "worker": (_is_text, False),
    "brief": (_is_str, False), "brief_file": (_is_text, False), "evaluators": (None, False),
    "tripwires": (None, False), "serialize": (_is_bool, False), "complete": (_is_bool, False),
    "mitigates": (_is_str_list, False), "timeout": (_is_pos_int, False), "max_attempts": (_is_pos_int, False)}
TOP_FIELDS: dict[str, tuple[Checker | None, bool]] = {
    "topic": (_is_text, False), "base": (_is_text, False), "mode": (_is_text, False), "defaults": (None, False),
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

    topic_value = topic or data.get("topic") or Path(file).stem
    if isinstance(topic_value, str) and (why := topic_problem(topic_value)):
        rep.add(data.key_line("topic") if "topic" in data and not topic else 0, "topic", "topic",
                why + ("" if "topic" in data or topic else "; set `topic:` (the default is the file's stem)"))
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
    policy = _policy(rep, data.get("policy"), data.key_line("policy"))
    nodes_raw = data.get("nodes")
    if "nodes" in data and not isinstance(nodes_raw, Sequence):
        rep.add(data.key_line("nodes"), "nodes", "type", f"expected a list of nodes, got {_kind(nodes_raw)}")
    nodes_raw = nodes_raw if isinstance(nodes_raw, Sequence) else Sequence()

    base_dir = brief_dir or Path(file).parent
    nodes: list[Node] = []
    first_line: dict[str, int] = {}
    node_lines: dict[str, Mapping] = {}
    for i, raw in enumerate(nodes_raw):
        where = f"nodes[{i}]"
        if not isinstance(raw, Mapping):
            rep.add(nodes_raw.item_line(i), where, "type", f"expected a node mapping, got {_kind(raw)}")
            continue
        node = _node(rep, raw, where, workers, defaults, base_dir)
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

    edges = data.get("edges") or Sequence()
    extra_deps = _edges(rep, edges, data.key_line("edges"), first_line)
    if extra_deps:
        nodes = [_with_deps(n, extra_deps.get(n.id, ())) for n in nodes]

    by_id = {n.id: n for n in nodes}
    for n in nodes:
        raw = node_lines[n.id]
        seen = set()
        for j, dep in enumerate(n.depends_on):
            line = raw["depends_on"].item_line(j) if isinstance(raw.get("depends_on"), Sequence) and j < len(raw["depends_on"]) else raw.line
            if dep in seen:
                rep.add(line, f"nodes.{n.id}.depends_on", "duplicate-dependency", f"`{dep}` is listed twice")
            seen.add(dep)
            if dep not in by_id and dep not in first_line:
                rep.add(line, f"nodes.{n.id}.depends_on", "dangling",
                        f"`{dep}` is not a node of this DAG{did_you_mean(dep, by_id)}")
    deps = {n.id: tuple(d for d in n.depends_on if d in by_id) for n in nodes}
    on_cycle: set[str] = set()
    for cycle in graph.cycles(deps):
        on_cycle.update(cycle)
        raw = node_lines[cycle[0]]
        rep.add(raw.key_line("depends_on"), f"nodes.{cycle[0]}.depends_on", "cycle",
                f"dependency cycle {' -> '.join(cycle)}; remove one of these dependencies")
    surfaces = {n.id: n.file_surface for n in nodes
                if not n.serialize and not n.complete and n.id not in on_cycle}
    for a, b, pairs in graph.surface_conflicts(surfaces, deps):
        tokens = ", ".join(f"`{x}`" if x == y else f"`{x}` ~ `{y}`" for x, y in pairs)
        rep.add(node_lines[b].key_line("file_surface"), f"nodes.{b}.file_surface", "surface-conflict",
                f"concurrent nodes `{a}` and `{b}` both claim {tokens}; mark one `serialize: true` "
                "or make one depend on the other")
    if rep.problems:
        return None, sorted(rep.problems, key=lambda p: (p.line, p.field))
    return Dag(path=file, topic=str(topic_value), base=str(data.get("base", "HEAD")), mode=str(mode),
               workers=dict(workers), checks=tuple(_check(c) for c in checks),
               nodes=tuple(nodes), by_id=by_id, policy=policy), []


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


def _with_deps(node: Node, extra: tuple[str, ...]) -> Node:
    if not extra:
        return node
    from dataclasses import replace
    return replace(node, depends_on=tuple(dict.fromkeys(node.depends_on + extra)))


def _node(rep: _Report, raw: Mapping, where: str, workers: Mapping, defaults: Mapping, base_dir: Path) -> Node | None:
    before = len(rep.problems)
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
    evaluators = _checks(rep, raw.get("evaluators"), raw.key_line("evaluators"), f"{where}.evaluators", CHECK_FIELDS)
    tripwires = _checks(rep, raw.get("tripwires"), raw.key_line("tripwires"), f"{where}.tripwires", TRIPWIRE_FIELDS)
    if "brief" in raw and "brief_file" in raw:
        rep.add(raw.key_line("brief_file"), f"{where}.brief_file", "exclusive", "give `brief` or `brief_file`, not both")
    elif isinstance(raw.get("brief_file"), str) and not (base_dir / raw["brief_file"]).is_file():
        rep.add(raw.key_line("brief_file"), f"{where}.brief_file", "missing-file",
                f"`{raw['brief_file']}` does not exist (paths are relative to the DAG file's folder)")
    worker = raw.get("worker") if isinstance(raw.get("worker"), str) else None
    discipline = raw.get("discipline") if isinstance(raw.get("discipline"), str) else None
    if worker is None and not raw.get("complete"):
        if discipline is None:
            rep.add(raw.line, where, "no-worker",
                    "no worker: set `worker:` or a `discipline:` that `workers:` maps to a command")
        elif discipline not in workers:
            rep.add(raw.key_line("discipline"), f"{where}.discipline", "unknown-discipline",
                    f"`{discipline}` is not under `workers:`{did_you_mean(discipline, workers)}")
    if len(rep.problems) != before or node_id is None:
        return None
    return Node(
        id=node_id, title=raw.get("title") or node_id, depends_on=tuple(raw.get("depends_on") or ()),
        file_surface=tuple(raw["file_surface"]), worker=worker or workers.get(discipline or ""),
        discipline=discipline, brief=raw.get("brief") or "", brief_file=raw.get("brief_file"),
        evaluators=tuple(_check(e) for e in evaluators),
        tripwires=tuple(Tripwire(t["run"], t.get("expect", 0), t.get("why", ""), t.get("timeout")) for t in tripwires),
        serialize=raw.get("serialize") is True, complete=raw.get("complete") is True,
        mitigates=tuple(raw.get("mitigates") or ()),
        timeout=raw.get("timeout", defaults.get("timeout", DEFAULT_TIMEOUT)),
        max_attempts=raw.get("max_attempts", defaults.get("max_attempts", DEFAULT_MAX_ATTEMPTS)),
        line=raw.line)


def _edges(rep: _Report, edges: object, line: int, ids: dict[str, int]) -> dict[str, tuple[str, ...]]:
    """Typed edges; only static TRIGGERS edges (the long form of `depends_on`) are scheduled here."""
    extra: dict[str, tuple[str, ...]] = {}
    good = _checks(rep, edges, line, "edges", EDGE_FIELDS)
    for e in good:
        where = f"edges.{e['id']}"
        if e["predicate"] not in PREDICATES:
            rep.add(e.key_line("predicate"), f"{where}.predicate", "enum",
                    f"`{e['predicate']}` is not a predicate: use one of {', '.join(PREDICATES)}")
            continue
        if e["predicate"] != "TRIGGERS" or e.get("type", "static") != "static":
            rep.add(e.key_line("predicate"), f"{where}.predicate", "unsupported",
                    f"{e['predicate']} {e.get('type', 'static')} edges are not supported by this version; "
                    "use a static TRIGGERS edge or `depends_on`")
            continue
        for end in ("from", "to"):
            if e[end] not in ids:
                rep.add(e.key_line(end), f"{where}.{end}", "dangling",
                        f"`{e[end]}` is not a node of this DAG{did_you_mean(e[end], ids)}")
        if e["from"] == e["to"]:
            rep.add(e.line, where, "self-edge", "an edge from a node to itself is a cycle")
        elif e["from"] in ids and e["to"] in ids:
            extra[e["to"]] = extra.get(e["to"], ()) + (e["from"],)
    return extra


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
