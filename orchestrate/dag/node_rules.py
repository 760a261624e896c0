"""The checks of one node mapping: fields, surface tokens, evaluators, worker, outcome settings.

`node(...)` returns the node whenever its id is readable, even when some field is wrong, so the
checks over the whole graph (dangling dependencies, cycles, surface conflicts) still see it: one run of
`validate` lists every problem, and none comes from a node that was dropped for an unrelated field.
A wrong field is read as its default (a wrong surface token as absent) for those graph checks.
"""
from __future__ import annotations

from pathlib import Path

from orchestrate.dag import surface
from orchestrate.dag.model import (
    ACTIVATIONS,
    AGENT_PRESETS,
    COMMAND_PLUGIN,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_TIMEOUT,
    JOINS,
    ON_EXHAUSTED,
    RESERVED_GATES,
    SANDBOXES,
    WORKER_KINDS,
    Check,
    Node,
    Tripwire,
    assemble,
)
from orchestrate.dag.schema import (
    AGENT_FIELDS,
    BUDGET_FIELDS,
    CHECK_FIELDS,
    NODE_ENUMS,
    NODE_FIELDS,
    TRIPWIRE_FIELDS,
    WORKER_SPEC_FIELDS,
    Report,
    checks_of,
    did_you_mean,
    id_problem,
    is_count,
    is_timeout,
    kind_of,
    reserved,
)
from orchestrate.dag.yamlfile import Mapping, Sequence

# why a plan's brief_file is looked for where it is: beside the DAG, unless the DAG is a campaign's copy
_BESIDE_THE_DAG = "paths are relative to the DAG file's folder"


def node(rep: Report, raw: Mapping, where: str, workers: Mapping, defaults: Mapping, base_dir: Path,
         gates: dict | None = None, has_workers: bool = True,
         looked: str = _BESIDE_THE_DAG) -> tuple[Node | None, bool]:
    """(the node or None when its id is unreadable, whether it is free of problems). `looked`: where
    `base_dir` came from, for a brief_file that is not there (see brief_problem)."""
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
    tokens = raw.get("file_surface") if isinstance(raw.get("file_surface"), Sequence) else Sequence()
    usable = []
    for j, token in enumerate(tokens):
        if not isinstance(token, str):  # reported once, by the field's own check of its entries
            continue
        if why := surface.token_problem(token):
            rep.add(tokens.item_line(j), f"{where}.file_surface", "surface-token", why)
        else:
            usable.append(token)
    deps = raw.get("depends_on")
    for j, dep in enumerate(deps if isinstance(deps, Sequence) else ()):  # `depends_on: 5` is the field's to report
        if isinstance(dep, bool) and (why := id_problem(dep)):
            rep.add(raw["depends_on"].item_line(j), f"{where}.depends_on", "id", why)
    # Most nodes have neither: skip the calls and the field names built for their messages.
    evaluators, plugin_gates = _evaluators(rep, raw["evaluators"], raw.key_line("evaluators"),
                                           f"{where}.evaluators", gates) if "evaluators" in raw else ([], [])
    tripwires = checks_of(rep, raw["tripwires"], raw.key_line("tripwires"), f"{where}.tripwires",
                          TRIPWIRE_FIELDS) if "tripwires" in raw else []
    if "brief" in raw and "brief_file" in raw:
        rep.add(raw.key_line("brief_file"), f"{where}.brief_file", "exclusive", "give `brief` or `brief_file`, not both")
    elif isinstance(raw.get("brief_file"), str) and (why := brief_problem(base_dir / raw["brief_file"], looked)):
        rep.add(raw.key_line("brief_file"), f"{where}.brief_file", "missing-file", f"`{raw['brief_file']}` {why}")
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
    if node_id is None:
        return None, False

    def valid(key: str, check, default):
        if key not in raw and key not in defaults:
            return default
        value = raw.get(key, defaults.get(key, default))
        return default if check(value) else value

    def texts(key: str) -> tuple[str, ...]:
        value = raw.get(key)
        return tuple(x for x in value if isinstance(x, str)) if isinstance(value, list) else ()

    def one_of(key: str, allowed: tuple[str, ...], default: str) -> str:
        return raw[key] if raw.get(key) in allowed else default

    max_rework = raw.get("max_rework")
    built = assemble(
        Node, id=node_id, title=raw["title"] if isinstance(raw.get("title"), str) and raw["title"] else node_id,
        depends_on=texts("depends_on"),
        file_surface=tuple(usable),
        worker=worker or (None if worker_spec else workers.get(discipline or "")),
        discipline=discipline, brief=raw["brief"] if isinstance(raw.get("brief"), str) else "",
        brief_file=raw["brief_file"] if isinstance(raw.get("brief_file"), str) else None,
        evaluators=tuple(evaluators),
        tripwires=tuple(Tripwire(t["run"], t.get("expect", 0), t.get("why", ""), t.get("timeout")) for t in tripwires),
        serialize=raw.get("serialize") is True, complete=raw.get("complete") is True,
        mitigates=texts("mitigates"),
        timeout=valid("timeout", is_timeout, DEFAULT_TIMEOUT),
        max_attempts=valid("max_attempts", is_count, DEFAULT_MAX_ATTEMPTS),
        line=raw.line, plugin_gates=tuple(plugin_gates),
        outputs=tuple(k for k in texts("outputs") if k.isidentifier()),
        activation=one_of("activation", ACTIVATIONS, "always"), join=one_of("join", JOINS, "all"),
        max_rework=None if max_rework is None or is_count(max_rework) else max_rework,
        on_exhausted=one_of("on_exhausted", ON_EXHAUSTED, "halt"), worker_spec=worker_spec,
        sandbox=raw["sandbox"] if raw.get("sandbox") in SANDBOXES else defaults.get("sandbox"),
        budget=budget(rep, raw["budget"], raw.key_line("budget"), f"{where}.budget") if "budget" in raw else None)
    return built, len(rep.problems) == before


def budget(rep: Report, value: object, line: int, where: str) -> dict | None:
    """`budget: {cost_usd: X, tokens: N}`, both above zero, at least one given; None when unusable."""
    if not isinstance(value, Mapping):
        rep.add(line, where, "type", f"expected {{cost_usd: X, tokens: N}}, got {kind_of(value)}")
        return None
    before = len(rep.problems)
    rep.fields(value, BUDGET_FIELDS, where)
    if not any(key in value for key in BUDGET_FIELDS):
        rep.add(value.line, where, "missing", "give `cost_usd`, `tokens` or both")
    return {k: value[k] for k in BUDGET_FIELDS if k in value} if len(rep.problems) == before else None


def disciplines(rep: Report, workers: Mapping) -> dict:
    """`workers:` discipline -> its command line; `{agent: NAME, model, args}` becomes the preset's runner."""
    found: dict = {}
    for key, spec in workers.items():
        loc = f"workers.{key}"
        if isinstance(spec, Mapping):
            rep.fields(spec, AGENT_FIELDS, loc)
            found[key] = _agent_command(rep, spec, loc)
        else:
            if not isinstance(spec, str) or not spec.strip():
                rep.add(workers.key_line(key), loc, "type", "expected a non-empty command line or {agent: NAME, ...}")
            found[key] = spec
    return found


def _agent_command(rep: Report, value: Mapping, loc: str) -> str | None:
    """The command running the preset `agent:` names (workers/agents/run.py), checked against what exists."""
    agent, model, args = value.get("agent"), value.get("model"), value.get("args")
    if not isinstance(agent, str) or not agent.strip():
        return None
    known = _agent_names(agent)
    if agent not in known:
        rep.add(value.key_line("agent"), f"{loc}.agent", "unknown-agent",
                f"no agent preset `{agent}`{did_you_mean(agent, known)}; agents: {', '.join(sorted(known))}")
    import shlex
    import sys
    line = [sys.executable, "-m", "orchestrate.workers.agents", agent]
    line += ["--model", model] if isinstance(model, str) and model else []
    line += ["--", *args] if isinstance(args, list) and args and all(isinstance(a, str) for a in args) else []
    return shlex.join(line)


def _agent_names(wanted: str) -> set[str]:
    """The built-in presets and, only when `wanted` is none of them, every installed `orchestrate.workers` plugin
    (read from the entry points, not loaded: the run loads the one it needs and says if it is no preset)."""
    if wanted in AGENT_PRESETS:
        return set(AGENT_PRESETS)
    from importlib.metadata import entry_points
    return set(AGENT_PRESETS) | {ep.name for ep in entry_points(group="orchestrate.workers")}


def check_of(raw: Mapping) -> Check:
    return Check(raw["name"], raw["run"], raw.get("timeout"), raw.get("review", False))


def _evaluators(rep: Report, value: object, line: int, where: str, gates: dict) -> tuple[list[Check], list[str]]:
    """Inline `{name, run}` evaluators and references to `gates:` instances, in the order written.

    A reference to a `command` gate becomes an ordinary Check, so the engine runs it like an inline one;
    any other plugin's gate is kept by name for the plugin layer.
    """
    if value is None:
        return [], []
    if not isinstance(value, Sequence):
        rep.add(line, where, "type", f"expected a list, got {kind_of(value)}")
        return [], []
    names = [v["name"] for v in value if isinstance(v, Mapping) and isinstance(v.get("name"), str)]
    checks, plugin_gates, seen = [], [], set()
    for i, item in enumerate(value):
        loc = f"{where}[{i}]"
        if isinstance(item, Mapping):
            before = len(rep.problems)
            rep.fields(item, CHECK_FIELDS, loc)
            if len(rep.problems) == before:
                checks.append(check_of(item))
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
                    f"expected a gate name or a mapping like {{name: ..., run: ...}}, got {kind_of(item)}")
            continue
        if not isinstance(name, str):  # `name: [a]`: reported by the field's own check
            continue
        if name in seen:
            rep.add(value.item_line(i), loc, "duplicate-gate", f"gate '{name}' is listed twice")
        elif name in RESERVED_GATES and isinstance(item, Mapping):  # the gate the engine adds would share its results
            rep.add(value.item_line(i), f"{loc}.name", "reserved", reserved(name))
        seen.add(name)
    return checks, plugin_gates


def _worker(rep: Report, raw: Mapping, where: str) -> tuple[str | None, dict | None]:
    """`worker:` a command line, or a mapping naming a coding agent, asking for a capability match or a person."""
    value = raw.get("worker")
    if value is None or isinstance(value, str):
        if isinstance(value, str) and not value.strip():
            rep.add(raw.key_line("worker"), f"{where}.worker", "type", "must not be empty")
        return value, None
    if not isinstance(value, Mapping):
        rep.add(raw.key_line("worker"), f"{where}.worker", "type",
                f"expected a command, {{agent: NAME}}, {{capabilities: [...]}} or {{kind: human}}, "
                f"got {kind_of(value)}")
        return None, None
    loc = f"{where}.worker"
    rep.fields(value, WORKER_SPEC_FIELDS, loc)
    if "agent" in value:  # a coding-agent preset: its runner is the node's command (workers/agents/run.py)
        for key in ("capabilities", "kind", "fallback_worker"):
            if key in value:
                rep.add(value.key_line(key), f"{loc}.{key}", "exclusive", f"`agent` and `{key}` exclude each other")
        command = _agent_command(rep, value, loc)
        return (command, dict(value)) if command else (None, None)
    if any(key in value for key in ("model", "args")):
        rep.add(value.line, loc, "missing", "`model` and `args` belong to an agent: add `agent: NAME`")
    if ("capabilities" in value) == ("kind" in value):
        rep.add(value.line, loc, "exclusive", "give exactly one of `agent`, `capabilities` or `kind`")
    kind = value.get("kind")
    if isinstance(kind, str) and kind not in WORKER_KINDS:
        rep.add(value.key_line("kind"), f"{loc}.kind", "enum", f"`{kind}` is not a worker kind: use {', '.join(WORKER_KINDS)}")
    if value.get("capabilities") == []:
        rep.add(value.key_line("capabilities"), f"{loc}.capabilities", "missing", "list at least one capability")
    return None, dict(value)


_OUTCOME_KEYS = frozenset([key for key, _, _ in NODE_ENUMS] + ["outputs", "on_exhausted"])


def _outcome_fields(rep: Report, raw: Mapping, where: str) -> None:
    """activation, join, on_exhausted (closed sets), outputs (readable names) and the ABANDONED opt-in."""
    if raw.keys().isdisjoint(_OUTCOME_KEYS):  # most nodes set none of them
        return
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
            if not isinstance(key, str):  # reported by the field's own check of its entries
                continue
            if not key.isidentifier():
                rep.add(line, f"{where}.outputs", "type",
                        f"`{key}` cannot be read as src.outputs.<key>: use letters, digits and `_`")
            elif key in seen:
                rep.add(line, f"{where}.outputs", "duplicate", f"`{key}` is listed twice")
            seen.add(key)
    if raw.get("on_exhausted") == "continue" and "max_rework" not in raw:
        rep.add(raw.key_line("on_exhausted"), f"{where}.on_exhausted", "missing",
                "on_exhausted: continue needs max_rework: N (how many reworks before ABANDONED)")


def looked_in(recorded: Path | None) -> str:
    """Where brief_file paths resolve, and why: beside the DAG, or, for a campaign's DAG copy (which sits in
    `.ledger/state/<topic>/`, away from the DAG it was made from), in the folder `recorded` when it opened."""
    if recorded is None:
        return _BESIDE_THE_DAG
    return (f"looked in {recorded}: a campaign's copy of its DAG resolves brief_file against the folder of the "
            "DAG its campaign was opened from, recorded when it opened, not beside the copy")


def brief_problem(path: Path, looked: str = _BESIDE_THE_DAG) -> str | None:
    """Why a brief file cannot be handed to a worker (it is read as UTF-8 text at each dispatch); None if it can.
    `looked` says where relative paths were resolved and why (`looked_in`)."""
    if path.is_dir():
        return f"is a folder, not a file ({looked})"
    import os

    from orchestrate import git_files
    try:  # a FIFO held validate (and each dispatch) forever, /dev/zero until memory ran out (rv83)
        fd, _ = git_files.open_regular(path, follow=True)
        with os.fdopen(fd, "rb") as fh:
            fh.read().decode("utf-8")
    except git_files.NotRegular as exc:
        return f"is not a regular file ({exc.kind}): name a text file"
    except FileNotFoundError:
        return f"does not exist ({looked})"
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    except UnicodeDecodeError as exc:
        return f"is not UTF-8 text (byte {exc.start}): save it as UTF-8"
    return None

