"""REALIGN: a node's premise failed or its attempts are spent; the plan needs a decision."""
from __future__ import annotations

from orchestrate.campaign import DISPATCHED, INVALIDATED, REWORK
from orchestrate.context import Context
from orchestrate.states import Outcome


def handle(ctx: Context) -> Outcome:
    c = ctx.campaign
    node_id, reason = _why(ctx)
    ctx.subject = node_id
    ctx.emit("seam", {"seam": "realignment", "node": node_id, "reason": reason,
                      "choices": ["rework", "skip", "halt"], "bound_to": c.nodes[node_id].head or c.tip})
    ctx.out.line(f"{node_id}: realignment needed: {reason}")
    return Outcome.NEEDS_HUMAN


def _why(ctx: Context) -> tuple[str, str]:
    c = ctx.campaign
    for n in c.layer() + [x for x in c.nodes if x not in c.layer()]:
        s = c.nodes[n]
        if s.status == DISPATCHED and s.freeze and s.freeze.get("freeze") == "refuted-premise":
            return n, f"the worker refuted premise {s.freeze.get('premise')!r}: {s.freeze.get('evidence')}"
        if s.status == INVALIDATED:
            return n, s.feedback or "a premise is stale"
        if s.status == REWORK and s.verdict == "escalate":
            return n, f"attempts spent ({s.failures}):\n{s.feedback}"
    raise AssertionError("REALIGN entered with nothing to realign")
