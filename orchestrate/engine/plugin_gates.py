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
    """The `gates:` instances of a plugin other than `command`, by name: what a node or a guardrail names."""
    return dag.cached("plugin-gates", lambda: {
        name: PluginGate(name, spec["plugin"], {k: v for k, v in spec.items() if k != "plugin"})
        for name, spec in dag.gates.items() if spec.get("plugin") != "command"})


def _actions(dag) -> dict[str, list[PluginGate]]:
    """node -> the gates its EXTENDS edges define, each run by the edge's plugin with the action's config."""
    found: dict[str, list[PluginGate]] = {}
    for e in dag.edges:
        if e.predicate == "EXTENDS":
            found.setdefault(e.src, []).extend(PluginGate(a["name"], e.plugin, {k: v for k, v in a.items() if k != "name"})
                                               for a in e.actions)
    return found


def for_node(dag, node_id: str) -> list[PluginGate]:
    """The plugin gates judging `node_id`, by name. An EXTENDS action belongs to its node (and the hubs that
    compose it): another node's action of the same name, with its own persona, or a node's command gate of
    that name, is not it. Along the effective-gates walk the first definition of a name wins, the node's own
    first."""
    if not dag.cached("plugin-gated", lambda: bool(of_dag(dag)) or any(e.predicate == "EXTENDS" for e in dag.edges)):
        return []  # most DAGs: no walk per node
    return dag.cached(f"plugin-gates:{node_id}", lambda: _for_node(dag, node_id))


def _for_node(dag, node_id: str) -> list[PluginGate]:
    instances, actions = of_dag(dag), dag.cached("extends-actions", lambda: _actions(dag))
    found: dict[str, PluginGate | None] = {}
    for m, as_peer in dag.walked(node_id):
        node = dag.by_id[m]
        for c in node.evaluators:  # a command gate: not the plugin's
            found.setdefault(c.name, None)
        for name in node.plugin_gates:
            found.setdefault(name, instances[name])
        for gate in () if as_peer else actions.get(m, ()):  # a peer brings its own gates only
            found.setdefault(gate.name, gate)
    return [found[name] for name in sorted(found) if found[name] is not None]


def load(dag, warn: Callable[[str], None], *, discovered=None) -> dict:
    """{plugin name: Plugin} for every gate plugin the DAG names; PluginError for one that cannot be used."""
    from orchestrate import plugins
    names = sorted({g.plugin for g in of_dag(dag).values()} | {e.plugin for e in dag.edges if e.predicate == "EXTENDS"})
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
