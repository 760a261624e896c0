"""RUN_LAYER: decide which nodes of layer k run (edges, guardrails, discovery), then split them into
the parallel set and the serial rest. Under the eager schedule only the nodes whose inputs have settled
are decided here; DISPATCH decides the others as their inputs settle."""
from __future__ import annotations

from orchestrate.engine import routing, schedule
from orchestrate.engine.context import Context
from orchestrate.engine.states import Outcome


def handle(ctx: Context) -> Outcome:
    stopped = routing.settle(ctx, schedule.unrouted(ctx) if schedule.eager(ctx) else None)
    if stopped is not None:
        return stopped
    layer = ctx.campaign.layer()
    parallel, serial = ctx.dag.partition(layer)
    ctx.out.line(f"layer {ctx.campaign.k}: parallel {' '.join(parallel) or '-'}"
                 + (f"; serial {' '.join(serial)}" if serial else ""))
    ctx.subject = f"layer {ctx.campaign.k}"
    return Outcome.READY

