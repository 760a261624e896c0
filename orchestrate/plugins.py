"""Plugins: gates and workers installed as entry points, loaded under the rules of
reference/seeds-other.md §3.9, and worker resolution by capability (§3.4).

Groups: `orchestrate.gates` and `orchestrate.workers`. An entry point's name is the plugin's name in a DAG;
it loads an object (a class, which is instantiated with no arguments, an instance, or a module) with:

- `protocol_version` (int, required): greater than ours is refused; smaller loads with a warning; missing,
  not an int, or a bool is refused (a gate decides merges, so we never guess).
- `version` (str) and `name` (str): informational; the entry point name is authoritative.
- `capabilities` (list[str], default []): matched exactly (case-sensitive) by discovery edges.
- `priority` (int, default 0): the higher wins among matching candidates; ties go to the name.
- `available()` -> bool (optional): called at resolution time; false excludes the plugin.
- gate plugins: `check(config: dict, cwd: str, env: dict[str, str]) -> tuple[int, str]`
  (0 pass, 1 violation, anything else: the gate itself crashed; the str is its output).
- worker plugins: `command(node_id: str, config: dict) -> str`, a shell command run in the node's worktree.

A plugin missing its callable is refused at load. Loading never raises for one bad plugin: each gets a
state (ok, warning, refused, unavailable) and a reason; `require` turns a bad one into a PluginError only
when a DAG actually needs it. Messages carry no "error:"/"warning:" prefix; the CLI adds it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from orchestrate.errors import ExitCode, OrchestrateError

PROTOCOL_VERSION = 1
GROUPS = {"gate": "orchestrate.gates", "worker": "orchestrate.workers"}
CALLABLES = {"gate": "check", "worker": "command"}  # what each kind must provide to be of any use
KINDS = ("gate", "worker")
IMPORT_FAILED = "import failed: "


class PluginError(OrchestrateError):
    """A plugin the DAG needs cannot be used (refused, failed to import, ambiguous or not installed)."""

    exit_code = ExitCode.FAILED


@dataclass(frozen=True)
class Plugin:
    kind: str
    name: str
    dist: str
    dist_version: str
    target: str
    state: str  # "ok" | "warning" | "refused" | "unavailable"
    reason: str
    obj: object | None
    capabilities: tuple[str, ...] = ()
    priority: int = 0
    version: str = ""

    @property
    def usable(self) -> bool:
        return self.state in ("ok", "warning")

    @property
    def shown_version(self) -> str:
        # the object's own version is what the author bumps; the distribution's is the fallback
        return self.version or self.dist_version


# ---- loading ---------------------------------------------------------------------------------------------

def _entry_points(group: str) -> Iterable[Any]:
    from importlib.metadata import entry_points  # kept local: the CLI must start fast
    return entry_points(group=group)


def _dist_of(ep: Any) -> tuple[str, str]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "", ""
    try:
        return str(dist.metadata["Name"] or ""), str(dist.version or "")
    except Exception:  # broken metadata must not hide the plugin from `orchestrate plugins`
        return "", ""


def _label(kind: str, name: str) -> str:
    return f"{kind} plugin '{name}'"


def _origin(dist: str, dist_version: str, target: str) -> str:
    """The parenthesis that tells the user which package to act on."""
    if dist:
        return f"({' '.join(filter(None, (dist, dist_version)))})"
    return f"(entry point {target})"


def _older(dist: str, dist_version: str) -> str:
    """`orchestrate-llm<0.4` for 0.4.0: the release line that introduced the newer protocol."""
    parts = dist_version.split(".")
    if not dist or not dist_version:
        return "an older version of the plugin"
    return f"{dist}<{'.'.join(parts[:2]) if len(parts) > 1 else parts[0]}"


def _instantiate(loaded: Any) -> Any:
    # a class is the documented common case ("module:Plugin"); its methods need an instance
    return loaded() if isinstance(loaded, type) else loaded


def _protocol_problem(kind: str, name: str, origin: str, obj: Any, dist: str, dist_version: str) -> tuple[str, str]:
    """(state, reason) from protocol_version alone: X2–X5."""
    label = _label(kind, name)
    if not hasattr(obj, "protocol_version"):
        return "refused", f"{label} {origin} does not declare protocol_version; it cannot be loaded"
    pv = obj.protocol_version
    if type(pv) is not int:  # bool is an int subclass; True must not read as version 1
        return "refused", f"{label}: protocol_version must be an integer, got {pv!r}"
    if pv > PROTOCOL_VERSION:
        return "refused", (f"{label} {origin} requires protocol version {pv}, but this orchestrate supports version "
                           f"{PROTOCOL_VERSION}; upgrade orchestrate or install {_older(dist, dist_version)}")
    if pv < PROTOCOL_VERSION:
        return "warning", (f"{label} uses protocol version {pv} (current: {PROTOCOL_VERSION}); "
                           "loading it for backward compatibility")
    return "ok", ""


def _shape_problem(kind: str, name: str, obj: Any) -> str:
    """Why the object cannot serve as a plugin of this kind, or ""."""
    label = _label(kind, name)
    call = CALLABLES[kind]
    if not callable(getattr(obj, call, None)):
        return f"{label} has no callable {call}(); it cannot be loaded"
    caps = getattr(obj, "capabilities", [])
    if not isinstance(caps, (list, tuple)) or not all(isinstance(c, str) for c in caps):
        return f"{label}: capabilities must be a list of strings, got {caps!r}"
    prio = getattr(obj, "priority", 0)
    if type(prio) is not int:
        return f"{label}: priority must be an integer, got {prio!r}"
    return ""


def _load(kind: str, ep: Any) -> Plugin:
    dist, dist_version = _dist_of(ep)
    base = dict(kind=kind, name=ep.name, dist=dist, dist_version=dist_version, target=ep.value)
    try:
        obj = _instantiate(ep.load())
    except Exception as exc:  # a plugin's import error is its problem, never ours (X7)
        return Plugin(**base, state="unavailable", reason=f"{IMPORT_FAILED}{type(exc).__name__}: {exc}", obj=None)
    state, reason = _protocol_problem(kind, ep.name, _origin(dist, dist_version, ep.value), obj, dist, dist_version)
    if state != "refused":
        shape = _shape_problem(kind, ep.name, obj)
        if shape:
            state, reason = "refused", shape
    if state == "refused":
        return Plugin(**base, state=state, reason=reason, obj=None)
    return Plugin(**base, state=state, reason=reason, obj=obj,
                  capabilities=tuple(getattr(obj, "capabilities", ())), priority=getattr(obj, "priority", 0),
                  version=str(getattr(obj, "version", "") or ""))


def _duplicate_reason(kind: str, name: str, eps: list[Any]) -> str:
    count = {2: "two", 3: "three"}.get(len(eps), str(len(eps)))
    dists = ", ".join(" ".join(filter(None, _dist_of(ep))) or f"entry point {ep.value}" for ep in eps)
    return f"{kind} plugin name '{name}' is provided by {count} distributions ({dists}); uninstall one"


def _by_name(eps: Iterable[Any]) -> dict[str, list[Any]]:
    """Entry points grouped by name; one distribution seen twice (on two sys.path entries) counts once."""
    grouped: dict[str, list[Any]] = {}
    for ep in eps:
        same = grouped.setdefault(ep.name, [])
        if not any(_dist_of(other)[0] == _dist_of(ep)[0] and other.value == ep.value for other in same):
            same.append(ep)
    return grouped


def discover(kinds: Iterable[str] = KINDS, *, entry_points: Callable[..., Iterable[Any]] | None = None) -> list[Plugin]:
    """Every installed plugin of those kinds, loaded and classified; sorted by kind, name, dist."""
    find = entry_points or _entry_points
    found: list[Plugin] = []
    for kind in kinds:
        for name, eps in _by_name(find(group=GROUPS[kind])).items():
            if len(eps) > 1:  # X8: neither is loaded; which one the user meant is not ours to guess
                reason = _duplicate_reason(kind, name, eps)
                found += [Plugin(kind=kind, name=name, dist=d, dist_version=v, target=ep.value, state="refused",
                                 reason=reason, obj=None) for ep in eps for d, v in [_dist_of(ep)]]
            else:
                found.append(_load(kind, eps[0]))
    return sorted(found, key=lambda p: (p.kind, p.name, p.dist))


def require(plugins: list[Plugin], kind: str, name: str) -> Plugin:
    """The usable plugin `name` of `kind`; a warning-state plugin is returned and the caller prints its reason."""
    matches = [p for p in plugins if p.kind == kind and p.name == name]
    if not matches:
        installed = ", ".join(sorted({p.name for p in plugins if p.kind == kind})) or "none"
        raise PluginError(f"no {kind} plugin named '{name}' is installed; installed {kind} plugins: {installed}")
    plugin = matches[0]
    if plugin.usable:
        return plugin
    if plugin.state == "unavailable":
        detail = plugin.reason.removeprefix(IMPORT_FAILED)
        raise PluginError(f"{_label(kind, name)} (entry point {plugin.target}) failed to import: {detail}")
    raise PluginError(plugin.reason)


# ---- resolution by capability ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Resolution:
    chosen: Plugin | None
    candidates: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        chosen = None
        if self.chosen is not None:
            c = self.chosen
            chosen = {"kind": c.kind, "name": c.name, "version": c.shown_version, "dist": c.dist,
                      "dist_version": c.dist_version}
        return {"chosen": chosen, "candidates": [dict(c) for c in self.candidates]}


def _availability(plugin: Plugin) -> str:
    """"" if the plugin says it can run now, else why not; a raising available() excludes, never crashes."""
    probe = getattr(plugin.obj, "available", None)
    if probe is None:
        return ""
    try:
        ok = probe()
    except Exception as exc:
        return f"available() failed: {type(exc).__name__}: {exc}"
    return "" if ok else "available() returned false"


def _exclusion(plugin: Plugin, wanted: list[str]) -> str:
    if not plugin.usable:
        return plugin.reason
    missing = [c for c in wanted if c not in plugin.capabilities]
    if missing:
        return f"missing capabilities: {', '.join(missing)}"
    return _availability(plugin)  # asked last: it may be slow, and only matters for a match


def _rank(plugin: Plugin) -> tuple:
    return (-plugin.priority, plugin.name, plugin.kind, plugin.dist)


def _loser(plugin: Plugin, winner: Plugin) -> str:
    if plugin.priority < winner.priority:
        return f"lower priority than {winner.name} ({winner.priority})"
    return f"same priority as {winner.name} ({winner.priority}), which sorts first by name"


def _candidate(plugin: Plugin, excluded: str) -> dict:
    return {"kind": plugin.kind, "name": plugin.name, "version": plugin.shown_version, "priority": plugin.priority,
            "capabilities": list(plugin.capabilities), "excluded": excluded}


def resolve(plugins: list[Plugin], capabilities: list[str], *, kind: str = "worker") -> Resolution:
    """D1/D2/D5: the highest-priority usable plugin providing every capability; every other one says why not."""
    considered = sorted((p for p in plugins if kind == "any" or p.kind == kind), key=lambda p: (p.name, p.kind, p.dist))
    reasons = {id(p): _exclusion(p, capabilities) for p in considered}
    matching = sorted((p for p in considered if not reasons[id(p)]), key=_rank)
    chosen = matching[0] if matching else None
    for p in matching[1:]:
        reasons[id(p)] = _loser(p, chosen)
    return Resolution(chosen=chosen, candidates=[_candidate(p, reasons[id(p)]) for p in considered])


def _caps(plugin: Plugin) -> str:
    if not plugin.usable:
        return plugin.state
    return ", ".join(plugin.capabilities) or "none"


def no_match_message(node: str, edge: str, capabilities: list[str], plugins: list[Plugin]) -> str:
    """D4: the halt message when nothing provides the capabilities and no fallback is declared."""
    workers = sorted((p for p in plugins if p.kind == "worker"), key=lambda p: (p.name, p.dist))
    installed = ", ".join(f"{p.name} ({_caps(p)})" for p in workers) or "none"
    return (f"no installed worker provides [{', '.join(capabilities)}] for {node} (edge {edge}) and no fallback "
            f"is declared; installed workers: {installed}")


# ---- listing ---------------------------------------------------------------------------------------------

def as_json(plugins: list[Plugin]) -> list[dict]:
    return [{"kind": p.kind, "name": p.name, "version": p.version, "dist": p.dist, "dist_version": p.dist_version,
             "target": p.target, "state": p.state, "reason": p.reason, "capabilities": list(p.capabilities),
             "priority": p.priority} for p in plugins]


def _detail(p: Plugin) -> str:
    if p.state == "ok":
        caps = ", ".join(p.capabilities) or "-"
        return caps if not p.priority else f"{caps} (priority {p.priority})"
    if p.state == "unavailable":
        return f"unavailable ({p.reason})"
    return p.reason


def render(plugins: list[Plugin]) -> str:
    """The `orchestrate plugins` table; one row per plugin, columns padded to the widest cell."""
    if not plugins:
        return "no plugins installed (entry-point groups: " + ", ".join(GROUPS.values()) + ")"
    header = ("KIND", "NAME", "VERSION", "DIST", "STATE", "DETAIL")
    rows = [header] + [(p.kind, p.name, p.shown_version or "-",
                        " ".join(filter(None, (p.dist, p.dist_version))) or "-", p.state, _detail(p))
                       for p in plugins]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows)
