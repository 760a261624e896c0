"""Which worker runs a node that asks for capabilities instead of naming a command (seeds-other §3.4).

A node asks through its incoming discovery edge (`type: discovery, discover: {kind, capabilities},
fallback: N`) or its own `worker: {capabilities: [...]}`. At the node's crossing, once its join says it
runs, the installed worker plugins are matched exactly (highest priority, then name); the resolution is
journalled with every candidate and why each lost, and is never made again: on resume the recorded
plugin must still be installed. No match: the node is SKIPPED and the edge's fallback (an on-demand
node) enabled; without a fallback the run halts with what is installed. Only worker plugins compete,
also for `kind: any`: a gate plugin cannot run a node (`run` refuses `kind: gate` up front).
"""
from __future__ import annotations

from orchestrate import plugins
from orchestrate.recorder.campaign import SKIPPED


class NoWorker(plugins.PluginError):
    """Nothing can run the node: no match and no fallback, or its recorded worker is gone."""


def request(dag, node_id: str):
    """(capabilities, discovery edge or None) the node asks for, or (None, None) when it names its command."""
    edge = next((e for e in dag.incoming(node_id) if e.type == "discovery"), None)
    if edge is not None:
        return list(edge.discover["capabilities"]), edge
    spec = dag.by_id[node_id].worker_spec or {}
    if spec.get("capabilities"):
        return list(spec["capabilities"]), None
    return None, None


def assign(ctx, node_id: str) -> bool:
    """Resolve and record the node's worker; False when the node was SKIPPED for its fallback."""
    c = ctx.campaign
    wanted, edge = request(ctx.dag, node_id)
    if wanted is None:
        return True
    if node_id in c.workers:  # decided before: never re-resolved, but it must still be there (D7)
        _older(ctx, _installed(c.workers[node_id], node_id))
        return True
    found = plugins.discover(("worker",))
    resolution = plugins.resolve(found, wanted, kind="worker")
    via = edge.id if edge else f"nodes.{node_id}.worker"
    record = resolution.to_json()
    ctx.emit("discovery", {"node": node_id, "edge": edge.id if edge else None, "capabilities": wanted, **record},
             source_type="decision", derived_from=_cites(c, edge))
    for cand in record["candidates"]:
        ctx.out.line(f"  {cand['name']} {cand['version']}: {cand['excluded'] or 'chosen'}")
    if resolution.chosen is not None:
        _older(ctx, resolution.chosen)
        ctx.out.line(f"{node_id}: worker {resolution.chosen.name} {resolution.chosen.shown_version} "
                     f"provides [{', '.join(wanted)}] ({via})")
        return True
    fallback = edge.fallback if edge else None
    if fallback is None:
        raise NoWorker(plugins.no_match_message(node_id, via, wanted, found))
    why = f"no worker provides [{', '.join(wanted)}] (edge {edge.id}); fallback {fallback} enabled"
    ctx.emit("node", {"node": node_id, "status": SKIPPED, "feedback": f"skipped: {why}"})
    ctx.emit("enable", {"node": fallback, "edge": edge.id, "reason": f"fallback for {node_id}: {why}"})
    ctx.out.line(f"{node_id} skipped: {why}")
    return False


def forget(ctx, node_id: str, who: str, note: str) -> dict:
    """A person sets a recorded resolution aside (the plugin is gone for good, say); the next crossing
    resolves again. Only before the node's first dispatch: an attempt's worker never changes mid-node."""
    from orchestrate.errors import UsageError
    from orchestrate.recorder.campaign import PENDING
    c = ctx.campaign
    if node_id not in c.nodes:
        raise UsageError(f"campaign {c.topic} has no node `{node_id}`")
    chosen = c.workers.get(node_id)
    if chosen is None:
        raise UsageError(f"{node_id} has no recorded worker resolution to set aside",
                         hint="only nodes that ask for capabilities are resolved, once, when their layer starts")
    if c.nodes[node_id].status != PENDING:
        raise UsageError(f"{node_id} is {c.nodes[node_id].status} after {c.nodes[node_id].attempt} attempt(s); its "
                         "worker can change only before its first dispatch")
    entry = next(e for e in reversed(ctx.recorder.read()) if e["kind"] == "discovery"
                 and e["context"].get("node") == node_id)
    ctx.emit("rediscover", {"node": node_id, "dropped": chosen, "who": who, "note": note},
             source_entity=f"human:{who}", source_type="human", derived_from=[entry["id"]])
    return chosen


def command(ctx, node_id: str) -> str:
    """The shell command that runs the node: its own, or the one its assigned worker plugin gives."""
    chosen = ctx.campaign.workers.get(node_id)
    node = ctx.dag.by_id[node_id]
    if chosen is None:
        return node.worker or ""
    plugin = _installed(chosen, node_id)
    try:
        line = plugin.obj.command(node_id, {})
    except Exception as exc:  # noqa: BLE001 - a plugin's failure is reported, never our crash
        raise plugins.PluginError(f"worker plugin '{plugin.name}' failed to give a command for {node_id}: "
                                  f"{type(exc).__name__}: {exc}") from None
    if not isinstance(line, str) or not line.strip():
        raise plugins.PluginError(f"worker plugin '{plugin.name}' gave no command for {node_id} (got {line!r:.60})")
    return line


def _installed(chosen: dict, node_id: str) -> plugins.Plugin:
    listed = plugins.discover(("worker",))
    match = next((p for p in listed if p.name == chosen["name"] and p.usable), None)
    if match is None:
        raise NoWorker(f"{node_id} was assigned worker {chosen['name']} {chosen['version']}, which is no longer "
                       f"installed; reinstall it or run 'orchestrate realign --rediscover {node_id}'")
    return match


def _older(ctx, plugin: plugins.Plugin) -> None:
    """A worker of an older protocol runs, with the warning a gate plugin's load gives (X3), once a run."""
    if plugin.state == "warning" and plugin.name not in ctx.warned:
        ctx.warned.add(plugin.name)
        ctx.out.always(f"warning: {plugin.reason}")


def _cites(c, edge) -> list[str]:
    if edge is None:
        return []
    for key in (c.guardrails.get(edge.id), c.edges.get(edge.id)):
        if key and key.get("entry"):
            return [key["entry"]]
    src = c.nodes.get(edge.src)  # none for a `complete: true` source: it settled before the campaign
    return [src.settled_entry] if src is not None and src.settled_entry else []
