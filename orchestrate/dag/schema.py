"""The DAG's schema as data: the fields of each mapping with their checkers, ids and topics, and the
`Report` that collects every problem with its line."""
from __future__ import annotations

import re
from datetime import date, datetime
from typing import Callable

from orchestrate.dag.model import ACTIVATIONS, JOINS, ON_EXHAUSTED, SANDBOXES
from orchestrate.dag.yamlfile import Mapping, Problem, Sequence

ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
TOPIC_RE = re.compile(r"[a-z0-9][a-z0-9._-]*")

Checker = Callable[[object], str | None]


def is_str(v: object) -> str | None:
    return None if isinstance(v, str) else f"expected text, got {kind_of(v)}"


def is_text(v: object) -> str | None:
    return is_str(v) or (None if v.strip() else "must not be empty")  # type: ignore[union-attr]


def is_bool(v: object) -> str | None:
    return None if isinstance(v, bool) else f"expected true or false, got {kind_of(v)}"


def is_int(v: object) -> str | None:
    return None if isinstance(v, int) and not isinstance(v, bool) else f"expected a whole number, got {kind_of(v)}"


def is_pos_int(v: object) -> str | None:
    return is_int(v) or (None if v > 0 else "must be a positive number")  # type: ignore[operator]


def bounded(low: int, high: int, unit: str = "") -> Checker:
    """A whole number in low..high: larger values (`timeout: 99999999999999999999`) overflow what uses them."""
    def check(v: object) -> str | None:
        if is_int(v):
            return is_int(v)
        return None if low <= v <= high else f"must be {low}{unit} to {high:,}{unit}, got {v:,}"  # type: ignore[operator]
    return check


is_timeout = bounded(1, 7 * 24 * 3600, " s")  # one second to seven days
is_count = bounded(1, 100)  # attempts and reworks
is_exit_code = bounded(0, 255)  # a tripwire's `expect`: no command exits with any other


def is_pos_number(v: object) -> str | None:
    """A finite number above zero (money, say): 0, negatives, NaN and infinity are refused."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return f"expected a number, got {kind_of(v)}"
    return None if 0 < v < float("inf") else f"must be a number above 0, got {v}"


def is_str_list(v: object) -> str | None:
    if not isinstance(v, list):
        return f"expected a list, got {kind_of(v)}"
    bad = [x for x in v if not isinstance(x, str)]
    return f"every entry must be text; `{_short(bad[0])}` is {kind_of(bad[0])}" if bad else None


def _short(v: object, depth: int = 2) -> str:
    """A value as a message quotes it: four items a level, two levels (an aliased list written out whole was
    600 MB), text cut at 60 characters."""
    if isinstance(v, (list, dict)):
        if depth == 0 or not v:
            return ("[...]" if isinstance(v, list) else "{...}") if v else str(v)
        shown = [f"{_short(k, 0)}: {_short(x, depth - 1)}" for k, x in list(v.items())[:4]] if isinstance(v, dict) \
            else [_short(x, depth - 1) for x in v[:4]]
        more = ", ..." if len(v) > 4 else ""
        return ("[{}]" if isinstance(v, list) else "{{{}}}").format(", ".join(shown) + more)
    text = repr(v[:60] if isinstance(v, str) else v)  # inside a list or mapping, as Python writes it
    return text if len(text) <= 60 else text[:57] + "..."


def kind_of(v: object) -> str:
    if v is None:
        return "nothing (null)"
    if isinstance(v, bool):
        return f"the boolean {str(v).lower()}"
    if isinstance(v, float):  # `timeout: .inf` or `1.5`: "a number" would not say what is wrong with it
        return f"the number {v:g}"
    return _KINDS.get(type(v), type(v).__name__)


_KINDS = {dict: "a mapping", Mapping: "a mapping", list: "a list", Sequence: "a list",
          int: "a number", float: "a number", str: "text", set: "a set", bytes: "binary data (!!binary)",
          date: "a date (YAML reads an unquoted 2024-01-01 as one)",
          datetime: "a date and time (YAML reads an unquoted 2024-01-01 10:00 as one)"}


CHECK_FIELDS: dict[str, tuple[Checker, bool]] = {
    "name": (is_text, True), "run": (is_text, True), "timeout": (is_pos_int, False), "review": (is_bool, False)}
POLICY_CASES = ("attempts-spent", "stale-premise", "refuted-premise")
POLICY_FIELDS: dict[str, tuple[Checker | None, bool]] = {"realignment": (None, False)}
POLICY_RULE_FIELDS: dict[str, tuple[Checker, bool]] = {
    "choice": (is_text, True), "limit": (is_pos_int, False), "then": (is_text, False)}
TRIPWIRE_FIELDS: dict[str, tuple[Checker, bool]] = {
    "run": (is_text, True), "expect": (is_exit_code, False), "why": (is_str, False), "timeout": (is_pos_int, False)}
GATE_FIELDS: dict[str, tuple[Checker | None, bool]] = {"plugin": (is_text, True)}  # plus the plugin's config
COMMAND_GATE_FIELDS: dict[str, tuple[Checker | None, bool]] = {
    "plugin": (is_text, True), "run": (is_text, True), "timeout": (is_pos_int, False), "review": (is_bool, False)}
WORKER_SPEC_FIELDS: dict[str, tuple[Checker | None, bool]] = {
    "capabilities": (is_str_list, False), "kind": (is_text, False), "fallback_worker": (is_text, False),
    "agent": (is_text, False), "model": (is_text, False), "args": (is_str_list, False)}
NODE_FIELDS: dict[str, tuple[Checker, bool]] = {
    "id": (None, True), "title": (is_str, False), "depends_on": (is_str_list, False),
    "file_surface": (is_str_list, True), "discipline": (is_text, False), "worker": (None, False),
    "brief": (is_str, False), "brief_file": (is_text, False), "evaluators": (None, False),
    "tripwires": (None, False), "serialize": (is_bool, False), "complete": (is_bool, False),
    "mitigates": (is_str_list, False), "timeout": (is_timeout, False), "max_attempts": (is_count, False),
    "outputs": (is_str_list, False), "activation": (is_text, False), "join": (is_text, False),
    "max_rework": (is_count, False), "on_exhausted": (is_text, False), "sandbox": (is_text, False),
    "budget": (None, False)}
# `budget:` of a node or of the whole campaign: what its workers may spend, as they report it to $ORCH_USAGE.
BUDGET_FIELDS: dict[str, tuple[Checker, bool]] = {"cost_usd": (is_pos_number, False), "tokens": (is_pos_int, False)}
# `workers: {discipline: {agent: NAME, ...}}`: a coding-agent preset standing for a discipline's command.
AGENT_FIELDS: dict[str, tuple[Checker, bool]] = {
    "agent": (is_text, True), "model": (is_text, False), "args": (is_str_list, False)}
# Closed sets of node fields: (field, allowed values, what a value is called in the message).
NODE_ENUMS = (("activation", ACTIVATIONS, "an activation"), ("join", JOINS, "a join"),
              ("sandbox", SANDBOXES, "a sandbox setting"),
              ("on_exhausted", ON_EXHAUSTED, "an on_exhausted"))
TOP_FIELDS: dict[str, tuple[Checker | None, bool]] = {
    "schema_version": (is_int, False), "campaign": (is_text, False), "params": (None, False),
    "gates": (None, False), "topic": (is_text, False), "base": (is_text, False), "mode": (is_text, False), "defaults": (None, False),
    "schedule": (is_text, False),
    "workers": (None, False), "checks": (None, False), "nodes": (None, True), "edges": (None, False),
    "policy": (None, False), "budget": (None, False)}
DEFAULT_FIELDS: dict[str, tuple[Checker, bool]] = {"timeout": (is_timeout, False), "max_attempts": (is_count, False),
                                                   "sandbox": (is_text, False), "unsandboxed": (is_text, False),
                                                   "keep_ignored": (is_bool, False)}


def reserved(name: str) -> str:
    return (f"`{name}` is the name of an implicit gate, which the engine adds and records under that name; "
            "rename it")


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
        return f"expected text, got {kind_of(value)}; quote the id"
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


class Report:
    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[Problem] = []

    def add(self, line: int, fld: str, code: str, message: str) -> None:
        self.problems.append(Problem(self.file, line, fld, code, message))

    def fields(self, data: Mapping, spec: dict, where: str) -> None:
        """Unknown keys, missing required keys, and simple types of one mapping.

        Walks the keys the mapping has, not every key the spec knows (a node has a handful of its 22):
        each key yields at most one problem, under its own field, so the order is the sorted report's."""
        for key, value in data.items():
            entry = spec.get(key)
            if entry is None and (key is None or isinstance(key, bool)):  # `yes:` was said as unknown key `True`
                shown = "null" if key is None else str(key).lower()
                written = "~, null or nothing" if key is None else "yes, no, on, off, true or false"
                self.add(data.key_line(key), join_path(where, shown), "unknown-key",
                         f"YAML reads this key ({written}) as {shown}, which names no field; quote it if you "
                         "meant the text, or use a known key")
            elif entry is None:
                self.add(data.key_line(key), join_path(where, str(key)), "unknown-key",
                         f"unknown key `{key}`{did_you_mean(str(key), spec)}")
            elif entry[0] is not None and (why := entry[0](value)):
                self.add(data.key_line(key), join_path(where, key), "type", why)
        for key in _required(spec):
            if key not in data:
                self.add(data.line, join_path(where, key), "missing", f"required key `{key}` is missing")


_REQUIRED: dict[int, tuple[dict, tuple[str, ...]]] = {}


def _required(spec: dict) -> tuple[str, ...]:
    """The required keys of a spec, found once: specs are module constants. The entry keeps the spec
    itself alive, so its id cannot be reused by another dict while cached."""
    hit = _REQUIRED.get(id(spec))
    if hit is None:
        if len(_REQUIRED) > 256:  # a caller building specs on the fly must not grow this without end
            _REQUIRED.clear()
        hit = _REQUIRED[id(spec)] = (spec, tuple(k for k, (_, required) in spec.items() if required))
    return hit[1]


def join_path(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def checks_of(rep: Report, value: object, line: int, where: str, spec: dict) -> list[Mapping]:
    if value is None:
        return []
    if not isinstance(value, Sequence):
        rep.add(line, where, "type", f"expected a list, got {kind_of(value)}")
        return []
    good = []
    for i, item in enumerate(value):
        loc = f"{where}[{i}]"
        if not isinstance(item, Mapping):
            rep.add(value.item_line(i), loc, "type", f"expected a mapping like {{name: ..., run: ...}}, got {kind_of(item)}")
            continue
        before = len(rep.problems)
        rep.fields(item, spec, loc)
        if len(rep.problems) == before:
            good.append(item)
    return good
