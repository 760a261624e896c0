"""RUN_LAYER: decide which nodes of layer k run (edges, guardrails, discovery), then split them into
the parallel set and the serial rest."""
from __future__ import annotations

from orchestrate.engine.context import Context
from orchestrate.engine.states import Outcome


def handle(ctx: Context) -> Outcome:
    from orchestrate.engine import guardrails, routing
    try:
        routing.decide(ctx)
    except (routing.ConditionFailed, guardrails.GuardrailCrashed) as exc:
        ctx.halt_reason = str(exc)
        ctx.emit("halt", {"reason": ctx.halt_reason})
        return Outcome.FAILED
    except guardrails.Blocked as blocked:
        seam = blocked.seam
        ctx.emit("seam", seam, derived_from=seam["gates"])
        ctx.out.line(f"{seam['node']}: not dispatched, {seam['reason']}")
        ctx.subject = f"guardrail on {seam['edge']}"
        return Outcome.NEEDS_HUMAN
    layer = ctx.campaign.layer()
    parallel, serial = ctx.dag.partition(layer)
    ctx.out.line(f"layer {ctx.campaign.k}: parallel {' '.join(parallel) or '-'}"
                 + (f"; serial {' '.join(serial)}" if serial else ""))
    ctx.subject = f"layer {ctx.campaign.k}"
    return Outcome.READY
