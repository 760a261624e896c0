"""What to start next, what to judge next, and whether layer k is done, under either schedule.

`layered`: layer k's parallel set starts at once, then its serial rest one node at a time; layer k+1
waits for every node of layer k (the barrier). `eager` (the default): a node starts as soon as every node
it depends on has settled (merged, skipped, abandoned) and a `--jobs` slot is free, branching from the
campaign head at that moment, whatever its layer's other nodes are doing. Layers stay the unit of the
boundary's coherence check, of reporting and of the retrospective.

Under both, a `serialize: true` node (or one rescheduled into the serial rest) runs alone, and a
person's node starts only once no worker runs. Eager adds one rule so that a serialized node is never
starved by later work: once every other node of its layer and the layers before it has settled, it is
due, and nothing else starts until it has run.
"""
from __future__ import annotations

from orchestrate.dag import graph
from orchestrate.engine import evaluations
from orchestrate.recorder.campaign import ABANDONED, ACCEPTED, DISPATCHED, INVALIDATED, LANDED, PENDING, REWORK, SKIPPED
from orchestrate.workers import handwork
from orchestrate.workers.launch import WAITING
from orchestrate.workers.returns import environment_error

SETTLED = (ACCEPTED, SKIPPED, ABANDONED)
IN_FLIGHT = (DISPATCHED, LANDED)


def eager(ctx) -> bool:
    return ctx.campaign.schedule == "eager"


def to_dispatch(ctx) -> list[str]:
    return _eager(ctx) if eager(ctx) else _layered(ctx)


def _layered(ctx) -> list[str]:
    """The parallel set first (all at once); then the serial rest, one node at a time. Workers that run
    alone (without the sandbox) start one by one, each once nothing runs: queued, each would hold a
    worktree that every return must compare (workers/siblings.py), L*L/2 comparisons a layer."""
    c, dag = ctx.campaign, ctx.dag
    layer = c.layer()
    parallel, serial = dag.partition(layer)
    ready = [n for n in parallel if c.nodes[n].status in WAITING]
    machine = [n for n in ready if not handwork.is_human(dag, n)]
    if machine:
        alone = _alone_test(ctx)
        boxed = [n for n in machine if not alone(n)]
        if boxed or running(ctx):
            return boxed
        return [m for m in dag.group_of(machine[0]) if m in machine]  # a LOOPS_WITH group starts together
    if ready:  # only people's nodes are left to start: one at a time, once no worker is running
        # (a LANDED node here waits for a LOOPS_WITH peer, maybe this very person's node)
        busy = any(c.nodes[n].status == DISPATCHED for n in layer)
        return [] if busy else ready[:1]
    if any(c.nodes[n].status not in SETTLED for n in parallel):
        return []
    if any(c.nodes[n].status in IN_FLIGHT and not _waits_for_peer(ctx, n) for n in serial):
        return []
    nxt = [n for n in serial if c.nodes[n].status in WAITING]
    if not nxt:
        return []
    # one at a time, except that a LOOPS_WITH group is one: its members start together
    return [m for m in dag.group_of(nxt[0]) if m in nxt]


def next_alone(ctx) -> bool:
    """Layered, once the running workers returned: does the layer's parallel set still hold a worker to
    start (workers without the sandbox start one by one), with nothing the environment stopped (the next
    would meet the same)? It starts before the layer is judged; a person's node comes after, as before."""
    if eager(ctx) or stopped_by_environment(ctx):
        return False
    nxt = _layered(ctx)
    return bool(nxt) and not any(handwork.is_human(ctx.dag, n) for n in nxt)


def stopped_by_environment(ctx) -> dict[str, str]:
    """Landed nodes whose worker could not start or work here (workers/returns.py), with why."""
    c = ctx.campaign
    return {n: why for n in c.with_status(LANDED) if c.nodes[n].rc not in (0, None)
            and (why := environment_error(c.nodes[n].rc, c.nodes[n].log))}


def inputs_settled(ctx, node_id: str) -> bool:
    """Has every node `node_id` waits for (a LOOPS_WITH member: its whole group's outside inputs) settled?"""
    nodes = ctx.campaign.nodes
    return all(nodes[d].status in SETTLED for d in ctx.dag.layer_deps().get(node_id, ()) if d in nodes)


def unrouted(ctx) -> list[str]:
    """Eager: pending nodes whose inputs just settled, so their incoming edges can be decided now. An
    on-demand node comes once every regular node of its layer was decided: their crossings may enable it."""
    c, dag = ctx.campaign, ctx.dag
    out = []
    for layer in c.layers[c.k:]:
        regular = [n for n in layer if dag.by_id[n].activation != "on_demand"]
        ready = [n for n in regular if c.nodes[n].status == PENDING and n not in ctx.routed
                 and inputs_settled(ctx, n)]
        out += ready
        if all(c.nodes[n].status != PENDING or n in ctx.routed for n in regular):
            out += [n for n in layer if n not in regular and c.nodes[n].status == PENDING
                    and n not in ctx.routed and inputs_settled(ctx, n) and not _may_be_rerouted_to(ctx, n)]
    return out


def _may_be_rerouted_to(ctx, node_id: str) -> bool:
    """Is `node_id` the reroute target of an `input` guardrail whose target waits for a slot? The guardrail
    is judged again at that dispatch if the head moved (guardrails.stale), and may enable it then. (A
    serialized target is due only once its layer settled, this node too: it is not waited for.)"""
    c, dag = ctx.campaign, ctx.dag
    return any(d in ctx.routed and c.nodes[d].status == PENDING and not _serialized(dag, d)
               for d in dag.cached("input-reroutes", lambda: _input_reroutes(dag)).get(node_id, ()))


def _input_reroutes(dag) -> dict[str, list[str]]:
    """reroute target -> the nodes an `input` guardrail may reroute to it from (once per DAG: asked every pass)."""
    found: dict[str, list[str]] = {}
    for e in dag.edges:
        if e.guardrails and e.guardrails.get("input") and e.guardrails.get("reroute_target"):
            found.setdefault(e.guardrails["reroute_target"], []).append(e.dst)
    return found


def free_slots(ctx) -> int | None:
    """`--jobs` minus the workers running or waiting for a slot; None: no limit (a cluster decides). None
    is free while a worker runs alone (without the sandbox: workers/siblings.py)."""
    jobs = getattr(ctx.executor, "jobs", None)
    if jobs is None:
        return None
    if any(getattr(run.request, "alone", False) for run in getattr(ctx.executor, "live", {}).values()):
        return 0
    return max(0, jobs - len(ctx.executor.running()))


def _alone_test(ctx, unboxed=None):
    """A test of whether a node's worker would run alone (no sandbox, `unsandboxed: serial`); `unboxed`: the
    caller's `_unboxed_test`, whose answers it shares."""
    from orchestrate.workers import containment
    return (unboxed or _unboxed_test(ctx)) if containment.runs_alone(ctx) else lambda node_id: False


def _unboxed_test(ctx):
    """A test of whether a node's worker would run without the sandbox, reading the settings once per
    setting a node can have: a layer of hundreds of ready nodes asks it of each."""
    from orchestrate.workers import containment
    unboxed: dict[str | None, bool] = {}  # a node's own `sandbox:` (None: the campaign's) -> runs without it

    def without(node_id: str) -> bool:
        node = ctx.dag.by_id[node_id]
        own = getattr(node, "sandbox", None)
        if own not in unboxed:
            unboxed[own] = not containment.enabled(ctx, node)
        return unboxed[own]
    return without


def _eager(ctx) -> list[str]:
    c, dag = ctx.campaign, ctx.dag
    window = c.window()
    flight = [n for n in window if c.nodes[n].status in IN_FLIGHT and not _waits_for_peer(ctx, n)]
    serial = {n for n in window if _serialized(dag, n)}
    if any(n in serial for n in flight):  # a serialized node runs alone
        return []
    stuck = set(parked(ctx)) | held(ctx)  # a node a seam asks about waits for its answer
    if any(c.nodes[n].env_error for n in stuck):  # the next ones would meet the same environment: none starts
        return []
    ready = [n for n in window if c.nodes[n].status in WAITING and (n in ctx.routed or c.nodes[n].status != PENDING)
             and n not in stuck and inputs_settled(ctx, n)]
    due = [n for n in ready if n in serial and _serial_due(ctx, n, serial)]
    if due:  # it waits for what is in flight to settle, and nothing else starts meanwhile
        return [] if flight else [m for m in dag.group_of(due[0]) if m in ready]
    candidates = [n for n in ready if n not in serial]
    # more ready than free slots: the head of the longest chain of dependents first (the critical path, with no
    # durations to go by), ties in the natural order; a node that heads nothing waits for one that does
    height = dag.cached("heights", lambda: graph.heights(dag.layer_deps()))
    machine = sorted((n for n in candidates if not handwork.is_human(dag, n)), key=lambda n: -height.get(n, 1))
    slots = free_slots(ctx)
    chosen: list[str] = []
    unboxed = _unboxed_test(ctx)
    alone = _alone_test(ctx, unboxed)
    for n in machine:
        if n in chosen:
            continue
        group = [m for m in dag.group_of(n) if c.nodes[m].status not in SETTLED]
        if any(m not in ready and c.nodes[m].status not in IN_FLIGHT for m in group):
            continue  # a LOOPS_WITH group starts together, once all of it can (its people's nodes after)
        unit = [m for m in group if m in machine]
        if ctx.evaluating and any(unboxed(m) for m in unit):
            continue  # it could write a worktree whose evaluators run ahead (evaluations.ahead): once they end
        if slots is not None and (slots == 0 or (chosen and len(chosen) + len(unit) > slots)):
            break
        if any(alone(m) for m in unit):  # it starts when nothing runs, and nothing with it
            if chosen or running(ctx):
                break
            return unit
        chosen += unit
    if chosen or len(machine) > 0:
        return chosen
    # a person's node: once no worker runs and nothing waits to be judged, so the person works alone
    # (a landed node waiting for this very person, its LOOPS_WITH peer, does not count)
    people = [n for n in candidates if n not in machine]
    busy = any(c.nodes[n].status == DISPATCHED for n in window) or landed(ctx) \
        or any(evaluations.pending(ctx, n) for n in c.with_status(LANDED))  # being judged ahead
    return [] if busy or not people else people[:1]


def _waits_for_peer(ctx, node_id: str) -> bool:
    """A landed LOOPS_WITH member whose peer waits to start again (sent back to run serialized, say): it is
    judged with the peer, so the serialized peer must not wait for it to settle, or neither ever moves."""
    c = ctx.campaign
    return c.nodes[node_id].status == LANDED and any(c.nodes[m].status in WAITING for m in ctx.dag.group_of(node_id))


def _serialized(dag, node_id: str) -> bool:
    return any(dag.by_id[m].serialize for m in dag.group_of(node_id))


def _serial_due(ctx, node_id: str, serial: set[str]) -> bool:
    """Every other node of its layer and the layers before it has settled (the layered order's promise)."""
    c = ctx.campaign
    for layer in c.layers[c.k:]:
        if any(c.nodes[m].status not in SETTLED for m in layer if m not in serial):
            return False
        if node_id in layer:
            return True
    return False


def frozen(ctx, *kinds: str) -> list[str]:
    """Nodes whose worker returned frozen (a freeze file; of `kinds`, if given) and wait for a decision
    that no seam asks yet."""
    c = ctx.campaign
    asked = held(ctx)
    return [n for n in c.with_status(DISPATCHED) if c.nodes[n].freeze and n not in asked
            and (not kinds or c.nodes[n].freeze.get("freeze") in kinds)]


def held(ctx) -> set[str]:
    """Nodes a seam (open, or queued behind the open one) asks about: they wait for its answer, and the rest
    goes on; and the node of an answer recorded but not yet applied (`decide` after an eager runner died):
    nothing judges, starts or merges it before SEAM applies it. An environment seam, or its answer waiting
    to be applied, holds every node the environment stopped, before it or since: one fix answers them all
    (SEAM's rework starts them all again), so none is asked about on its own meanwhile."""
    c = ctx.campaign
    seams = ([c.seam] if c.seam else []) + c.queued
    out = {s["node"] for s in seams if s.get("node")}
    if c.decision is not None and c.decision.get("node"):
        out.add(c.decision["node"])
    if any(s.get("case") == "environment" for s in seams + ([c.decision] if c.decision else [])):
        out.update(n for n in c.window() if c.nodes[n].env_error)
    return out


def waiting_on_workers(ctx) -> bool:
    """Nothing to judge, but workers run, evaluators run ahead (engine/evaluations.py) or a frozen return the
    engine settles itself (a surface-exceed freeze) waits: AWAIT has the next move."""
    return (running(ctx) or bool(ctx.evaluating) or bool(frozen(ctx, "surface-exceed"))) and not landed(ctx)


def parked(ctx) -> list[str]:
    """Eager: nodes waiting for a person's realignment, which comes once nothing else can progress: attempts
    spent (escalated), a premise found stale at dispatch against the current head, an attempt the
    environment stopped, a worker that froze refuting a premise."""
    c = ctx.campaign
    out = []
    for n in c.window():
        ns = c.nodes[n]
        if (ns.status in WAITING and ns.env_error) or (ns.status == REWORK and ns.verdict == "escalate") \
                or (ns.status == INVALIDATED and ctx.refuted.get(n) == c.tip) \
                or (ns.status == DISPATCHED and (ns.freeze or {}).get("freeze") == "refuted-premise"):
            out.append(n)
    return out


def unasked(ctx) -> list[str]:
    """Eager: parked nodes that no seam asks about yet (REALIGN opens one for the first)."""
    asked = held(ctx)
    return [n for n in parked(ctx) if n not in asked]


def can_progress(ctx) -> bool:
    """Eager: is there anything to do that does not wait for a person?"""
    return bool(to_dispatch(ctx) or unrouted(ctx) or landed(ctx)) or waiting_on_workers(ctx)


def running(ctx) -> bool:
    """Is any worker of this runner running or waiting for a slot?"""
    return bool(ctx.executor.running())


def landed(ctx) -> list[str]:
    """Nodes ready to be judged. A LOOPS_WITH group is judged as one, so its members wait until every
    member still in play has landed; the group then appears once, as its first member. A node whose
    evaluators run ahead is ready once they are done (engine/evaluations.py)."""
    c, dag = ctx.campaign, ctx.dag
    ready, seen = [], set()
    for n in held(ctx) if (c.seam or c.queued or c.decision) else ():  # a seam about a group holds all of it
        seen.update(dag.group_of(n))
    for n in c.with_status(LANDED):
        if n in seen or evaluations.pending(ctx, n):
            continue
        group = dag.group_of(n)
        seen.update(group)
        if len(group) > 1 and any(c.nodes[m].status not in (LANDED,) + SETTLED for m in group):
            continue
        ready.append(n)
    return ready


def layer_done(ctx) -> bool:
    return all(ctx.campaign.nodes[n].status in SETTLED for n in ctx.campaign.layer())
