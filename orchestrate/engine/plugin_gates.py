"""Gates run by plugins: `gates:` instances of any plugin but `command`, and the actions of EXTENDS edges.

A DAG that names a plugin needs it loaded and protocol-compatible before anything runs (`validate` and
DERIVE check it); plugins it does not name may be broken without consequence. At RECONCILE each plugin
gate among the node's effective gates runs in the node's worktree with ORCH_BASE/ORCH_HEAD set; its
result is journalled as written by `plugin:<name>@<version>`, whatever the plugin would claim.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from gates.shared.verdict import Verdict


@dataclass(frozen=True)
class PluginGate:
    name: str
    plugin: str
    config: dict


def of_dag(dag) -> dict[str, PluginGate]:
    """Every plugin gate the DAG names, by gate name (EXTENDS actions of earlier nodes first)."""
    return dag.cached("plugin-gates", lambda: _collect(dag))


def _collect(dag) -> dict[str, PluginGate]:
    from orchestrate.dag import graph
    found: dict[str, PluginGate] = {}
    for name, spec in dag.gates.items():
        if spec.get("plugin") != "command":
            found[name] = PluginGate(name, spec["plugin"], {k: v for k, v in spec.items() if k != "plugin"})
    for e in sorted((e for e in dag.edges if e.predicate == "EXTENDS"), key=lambda e: graph.natural_key(e.src)):
        for action in e.actions:
            found.setdefault(action["name"], PluginGate(action["name"], e.plugin,
                                                        {k: v for k, v in action.items() if k != "name"}))
    return found


def for_node(dag, node_id: str) -> list[PluginGate]:
    every = of_dag(dag)
    return [every[name] for name in dag.effective_gates(node_id) if name in every]


def load(dag, warn: Callable[[str], None], *, discovered=None) -> dict:
    """{plugin name: Plugin} for every gate plugin the DAG names; PluginError for one that cannot be used."""
    from orchestrate import plugins
    names = sorted({g.plugin for g in of_dag(dag).values()})
    if not names:
        return {}
    listed = discovered if discovered is not None else plugins.discover(("gate",))
    loaded = {}
    for name in names:
        try:
            plugin = plugins.require(listed, "gate", name)
        except plugins.PluginError as exc:
            exc.plugin = name  # for `problems`, which points at the line naming it
            raise
        if plugin.state == "warning":
            warn(plugin.reason)
        loaded[name] = plugin
    return loaded


def problems(dag, warn: Callable[[str], None]) -> tuple[dict, list]:
    """`load`, with a plugin that cannot be used said as a problem at the line of the DAG naming it (rv83: one line
    without file or line, and `validate --json` printed an error object instead of its list of problems)."""
    from orchestrate import plugins
    try:
        return load(dag, warn), []
    except plugins.PluginError as exc:
        from orchestrate.dag.load import plugin_problem
        return {}, [plugin_problem(dag, getattr(exc, "plugin", ""), exc.message)]


def run(ctx, gate: PluginGate, cwd, env: dict[str, str]) -> tuple[Verdict, str]:
    """(verdict, source entity) of one plugin gate, of those loaded for `ctx`; a crash or a bad answer is a
    failing verdict, code 2. Counted as judging that ran something: a plugin is Python in the runner, and
    what it starts itself (the node's code, say) is neither sandboxed nor counted by `proc`, so without it
    the watch would not look after it (workers/containment.judging)."""
    plugin = ctx.gate_plugins[gate.plugin]
    ctx.judging_ran()
    entity = f"plugin:{plugin.name}@{plugin.shown_version}"
    try:
        answer = plugin.obj.check(dict(gate.config), str(cwd), dict(env))
        rc, output = answer
        if not isinstance(rc, int) or isinstance(rc, bool) or not isinstance(output, str):
            raise TypeError(f"check() must return (int, str), got {answer!r:.80}")
    except Exception as exc:  # noqa: BLE001 - a plugin's failure is reported, never our crash
        return Verdict(gate.name, 2, f"ERROR: gate plugin '{plugin.name}' crashed: {type(exc).__name__}: {exc}"), entity
    first = output.strip().splitlines()[0] if output.strip() else ""
    if rc == 0:
        return Verdict(gate.name, 0, f"PASS ({plugin.name}){': ' + first if first else ''}"), entity
    if rc == 1:
        return Verdict(gate.name, 1, f"FAIL ({plugin.name}){': ' + first if first else ''}"), entity
    return Verdict(gate.name, 2, f"ERROR: gate plugin '{plugin.name}' crashed (exit {rc})"
                   f"{': ' + first if first else ''}"), entity
