"""What to do next inside a layer: which nodes to dispatch now, and whether the layer is done."""
from __future__ import annotations

from orchestrate.campaign import ABANDONED, ACCEPTED, DISPATCHED, INVALIDATED, LANDED, PENDING, REWORK, SKIPPED

SETTLED = (ACCEPTED, SKIPPED, ABANDONED)


def to_dispatch(ctx) -> list[str]:
    """The parallel set first (all at once); then the serial rest, one node at a time."""
    c, dag = ctx.campaign, ctx.dag
    layer = c.layer()
    parallel, serial = dag.partition(layer)
    waiting = (PENDING, REWORK, INVALIDATED)
    ready = [n for n in parallel if c.nodes[n].status in waiting]
    if ready:
        return ready
    if any(c.nodes[n].status not in SETTLED for n in parallel):
        return []
    if any(c.nodes[n].status in (DISPATCHED, LANDED) for n in serial):
        return []
    nxt = [n for n in serial if c.nodes[n].status in waiting]
    return nxt[:1]


def landed(ctx) -> list[str]:
    return ctx.campaign.with_status(LANDED)


def layer_done(ctx) -> bool:
    return all(ctx.campaign.nodes[n].status in SETTLED for n in ctx.campaign.layer())
