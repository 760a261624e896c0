"""What to do next inside a layer: which nodes to dispatch now, and whether the layer is done."""
from __future__ import annotations

from orchestrate.recorder.campaign import ABANDONED, ACCEPTED, DISPATCHED, INVALIDATED, LANDED, PENDING, REWORK, SKIPPED
from orchestrate.workers import handwork

SETTLED = (ACCEPTED, SKIPPED, ABANDONED)


def to_dispatch(ctx) -> list[str]:
    """The parallel set first (all at once); then the serial rest, one node at a time."""
    c, dag = ctx.campaign, ctx.dag
    layer = c.layer()
    parallel, serial = dag.partition(layer)
    waiting = (PENDING, REWORK, INVALIDATED)
    ready = [n for n in parallel if c.nodes[n].status in waiting]
    machine = [n for n in ready if not handwork.is_human(dag, n)]
    if machine:
        return machine
    if ready:  # only people's nodes are left to start: one at a time, once no worker is running
        # (a LANDED node here waits for a LOOPS_WITH peer, maybe this very person's node)
        busy = any(c.nodes[n].status == DISPATCHED for n in layer)
        return [] if busy else ready[:1]
    if any(c.nodes[n].status not in SETTLED for n in parallel):
        return []
    if any(c.nodes[n].status in (DISPATCHED, LANDED) for n in serial):
        return []
    nxt = [n for n in serial if c.nodes[n].status in waiting]
    if not nxt:
        return []
    # one at a time, except that a LOOPS_WITH group is one: its members start together
    return [m for m in dag.group_of(nxt[0]) if m in nxt]


def landed(ctx) -> list[str]:
    """Nodes ready to be judged. A LOOPS_WITH group is judged as one, so its members wait until every
    member still in play has landed; the group then appears once, as its first member."""
    c, dag = ctx.campaign, ctx.dag
    ready, seen = [], set()
    for n in c.with_status(LANDED):
        group = dag.group_of(n)
        if n in seen:
            continue
        seen.update(group)
        if len(group) > 1 and any(c.nodes[m].status not in (LANDED,) + SETTLED for m in group):
            continue
        ready.append(n)
    return ready


def layer_done(ctx) -> bool:
    return all(ctx.campaign.nodes[n].status in SETTLED for n in ctx.campaign.layer())
