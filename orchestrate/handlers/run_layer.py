"""RUN_LAYER: take layer k and split it into its parallel set and serial rest."""
from __future__ import annotations

from orchestrate.context import Context
from orchestrate.states import Outcome


def handle(ctx: Context) -> Outcome:
    from orchestrate import routing
    try:
        routing.decide(ctx)
    except routing.ConditionFailed as exc:
        ctx.halt_reason = str(exc)
        ctx.emit("halt", {"reason": ctx.halt_reason})
        return Outcome.FAILED
    layer = ctx.campaign.layer()
    parallel, serial = ctx.dag.partition(layer)
    ctx.out.line(f"layer {ctx.campaign.k}: parallel {' '.join(parallel) or '-'}"
                 + (f"; serial {' '.join(serial)}" if serial else ""))
    ctx.subject = f"layer {ctx.campaign.k}"
    return Outcome.READY
