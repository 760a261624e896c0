"""Which nodes of a layer run: conditional edges decided on their source's recorded outcome, and `join`.

At the start of each layer (seeds-other §5), for every pending node in natural id order and each
incoming ordering edge in edge-id order: a SKIPPED source means not taken; a static edge from an
accepted source is taken; a conditional edge is decided by its `when:` over the source's recorded
status, outputs, gate exit codes and rework count and the campaign's params. Each decision is
journalled once (`edge_eval`, with the inputs it read) and never evaluated again, also on resume.
`join: all` needs every incoming edge taken, `join: any` one; otherwise the node is SKIPPED, which
its own successors then see. A condition that cannot be evaluated halts the run naming the edge;
it is never silently false.
"""
from __future__ import annotations

from orchestrate.dag.condition import ConditionError, ConditionTypeError, compile_condition
from orchestrate.dag.condition_syntax import gate_named
from orchestrate.recorder.campaign import ABANDONED, ACCEPTED, PENDING, SKIPPED


class ConditionFailed(Exception):
    """An edge's condition could not be evaluated; the message names the edge."""


def decide(ctx, nodes: list[str] | None = None) -> list[str]:
    """Record the decisions of the incoming edges of `nodes` (default: layer k's pending nodes); SKIP the
    nodes that will not run. Returns the skipped node ids. Raises ConditionFailed or GuardrailCrashed (a
    halt, nothing is dispatched) or Blocked (a seam). Deciding a node twice changes nothing: every
    decision is recorded once and read back."""
    from orchestrate.engine import guardrails
    from orchestrate.workers import discovery
    c, dag = ctx.campaign, ctx.dag
    skipped = []
    pending = [n for n in (c.layer() if nodes is None else nodes) if c.nodes[n].status == PENDING]
    # on-demand nodes last: the crossings of the layer's regular nodes may enable them (seeds-other §5)
    for node_id in sorted(pending, key=lambda n: dag.by_id[n].activation == "on_demand"):
        node = dag.by_id[node_id]
        if node.activation == "on_demand" and node_id not in c.enabled:
            skipped.append(_skip(ctx, node_id, "on demand, and no reroute or fallback enabled it"))
            continue
        taken = [(e, _taken(ctx, e)) for e in dag.incoming(node_id)]
        # a guardrail runs only on an edge that is crossed: taken (G9), into a target that a `join: all` does
        # not skip already (no one is asked to let a change through to a node that will not run)
        if node.join == "any" or all(t for _, t in taken):
            taken = guardrails.cross(ctx, taken)
        runs = any(t for _, t in taken) if node.join == "any" else all(t for _, t in taken)
        if taken and not runs:
            why = ", ".join(f"{e.id} from {e.before}" for e, t in taken if not t)
            skipped.append(_skip(ctx, node_id, f"join: {node.join}; edge(s) not taken: {why}"))
            continue
        try:
            assigned = discovery.assign(ctx, node_id)
        except discovery.NoWorker as exc:
            raise ConditionFailed(str(exc)) from None
        if not assigned:
            skipped.append(node_id)
        else:
            ctx.routed.add(node_id)
    # a LOOPS_WITH group lands together or not at all: a member whose peer was skipped is skipped too (rv79),
    # also one decided in an earlier round (eager, before a guardrail seam on its peer's edge was answered)
    for node_id in dict.fromkeys(m for n in pending for m in dag.group_of(n)):
        peer = next((m for m in dag.group_of(node_id) if m != node_id and c.nodes[m].status == SKIPPED), None)
        if peer is not None and c.nodes[node_id].status == PENDING:
            ctx.routed.discard(node_id)
            skipped.append(_skip(ctx, node_id, f"its LOOPS_WITH peer {peer} is skipped, and the group lands "
                                               "together or not at all"))
    return skipped


def settle(ctx, nodes: list[str] | None):
    """`decide` for RUN_LAYER and the eager DISPATCH: None when the nodes may go on, else the outcome that
    stops the run (FAILED: a halt naming the edge; NEEDS_HUMAN: a guardrail's seam is open)."""
    from orchestrate.engine import guardrails
    from orchestrate.engine.states import Outcome
    changed_conditions(ctx)
    if nodes is not None and not nodes:
        return None
    try:
        decide(ctx, nodes)
    except (ConditionFailed, guardrails.GuardrailCrashed) as exc:
        ctx.halt_reason = str(exc)
        ctx.emit("halt", {"reason": ctx.halt_reason})
        return Outcome.FAILED
    except guardrails.Blocked as blocked:
        seam = blocked.seam
        ctx.emit("seam", seam, derived_from=seam["gates"])
        ctx.out.line(f"{seam['node']}: not dispatched, {seam['reason']}")
        ctx.subject = f"guardrail on {seam['edge']}"
        return Outcome.NEEDS_HUMAN
    return None


def _skip(ctx, node_id: str, why: str) -> str:
    ctx.emit("node", {"node": node_id, "status": SKIPPED, "feedback": f"skipped ({why})"})
    ctx.out.line(f"{node_id}: SKIPPED ({why})")
    return node_id


def _taken(ctx, edge) -> bool:
    c = ctx.campaign
    src = c.nodes.get(edge.before)
    if src is None and edge.type != "conditional" and getattr(ctx.dag.by_id.get(edge.before), "complete", False):
        return True  # `complete: true` landed before the campaign, counts as satisfied (DESIGN §4); it has no state
    if src is None or src.status == SKIPPED:
        return False
    if edge.type != "conditional":
        return src.status == ACCEPTED
    if src.status not in (ACCEPTED, ABANDONED):
        return False
    recorded = c.edges.get(edge.id)
    if recorded is not None:
        _changed(ctx, edge, recorded)
        return bool(recorded["taken"])
    result, inputs = _evaluate(ctx, edge, src)
    ctx.emit("edge_eval", {"edge": edge.id, "from": edge.src, "to": edge.dst, "when": edge.when, "taken": result,
                           "inputs": inputs}, source_type="decision",
             derived_from=[src.settled_entry] if src.settled_entry else [])
    ctx.out.line(f"edge {edge.id} ({edge.src} -> {edge.dst}): {'taken' if result else 'not taken'} "
                 f"({', '.join(f'{k}={v!r}' for k, v in inputs.items())})")
    return result


def changed_conditions(ctx) -> None:
    """C13: every recorded decision whose edge's `when` was edited since (on resume, after an amendment) is
    named, though its target was decided long ago and is never crossed again: the edit changes nothing."""
    ctx.dag.cached("conditions-named", lambda: _name_changed(ctx))  # once per DAG (a reload or an amendment)


def _name_changed(ctx) -> bool:
    for edge in ctx.dag.edges:
        if edge.type == "conditional" and edge.id in ctx.campaign.edges:
            _changed(ctx, edge, ctx.campaign.edges[edge.id])
    return True


def _changed(ctx, edge, recorded: dict) -> None:
    if recorded.get("when") != edge.when and (edge.id, edge.when) not in ctx.warned:
        ctx.warned.add((edge.id, edge.when))
        ctx.out.always(f"warning: edge {edge.id} condition changed since it was evaluated (entry "
                       f"{recorded.get('entry')}); the recorded decision stands; re-plan with a new node or "
                       "topic to change it")


def _evaluate(ctx, edge, src) -> tuple[bool, dict]:
    dag = ctx.dag
    node = dag.by_id[edge.src]
    where = f"edge {edge.id} ({edge.src} -> {edge.dst})"
    try:
        cond = compile_condition(edge.when, outputs=node.outputs, params=dag.params,
                                 gates=dag.effective_gates(edge.src), source=edge.src,
                                 can_abandon=node.on_exhausted == "continue")
        values = {}
        for name in cond.names:
            value = _value(name, src, dag.params, dag.effective_gates(edge.src))
            if value is not _MISSING:
                values[name] = value
        return cond.evaluate(values)
    except (ConditionError, ConditionTypeError) as exc:
        said = getattr(exc, "message", None) or str(exc)
        if src.status == ABANDONED and said.startswith("no recorded value for src."):  # what to do about it (rv79)
            said += (f" ({edge.src} was abandoned and left none): read src.status first, as in `src.status == "
                     f"'ACCEPTED' and ...`, in {ctx.dag_file}, then `orchestrate resume`")
        raise ConditionFailed(f"{where}: {said}; nothing was dispatched") from None


_MISSING = object()


def _value(name: str, src, params: dict, gates=()):
    """The recorded value a condition's `name` reads; `gates`: the source's declared gates, by which a name
    written with `_` for `-` is resolved (never by the gates that happen to have run: rv80)."""
    parts = name.split(".")
    if name == "src.status":
        return src.status
    if name == "src.rework_count":
        return src.failures
    if parts[:2] == ["src", "outputs"]:
        return src.outputs.get(parts[2], _MISSING)
    if parts[:2] == ["src", "gates"]:  # (a gate named with `-` is written with `_` in a condition)
        return src.gate_rcs.get(gate_named(parts[2], gates) or parts[2], _MISSING)
    if parts[0] == "params":
        return params.get(parts[1], _MISSING)
    return _MISSING
