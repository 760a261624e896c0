"""DISPATCH: per node, a worktree on its own branch from the campaign head, its brief, and its worker."""
from __future__ import annotations

from gates import premise
from orchestrate.engine import budget, schedule, watch
from orchestrate.engine.context import Context
from orchestrate.engine.states import Outcome
from orchestrate.recorder.campaign import INVALIDATED
from orchestrate.workers import handwork, worktrees
from orchestrate.workers.launch import start


def handle(ctx: Context) -> Outcome:
    c = ctx.campaign
    nodes = schedule.to_dispatch(ctx)
    if not nodes:
        return Outcome.LAYER_DONE
    stopped = budget.before_dispatch(ctx, nodes)  # every worker has returned: what they spent is journalled
    if stopped is not None:
        return stopped
    integ = worktrees.integration(ctx)
    head = c.tip
    for node_id in nodes:
        node = ctx.dag.by_id[node_id]
        if node.tripwires:  # premises are judged against the tip the node would branch from
            verdict = premise.check(node_id, node.tripwires, integ)
            gate = ctx.emit("gate", {"node": node_id, "gate": "premise", "code": verdict.code,
                                     "summary": verdict.summary, "items": [i.line() for i in verdict.items]})
            if verdict.code != 0:
                ctx.emit("node", {"node": node_id, "status": INVALIDATED, "feedback": verdict.summary},
                         derived_from=[gate["id"]])
                ctx.out.line(f"{node_id}: INVALIDATED before dispatch: {verdict.summary}")
                ctx.subject = node_id
                return Outcome.REFUTED_PREMISE
    watch.arm(ctx)
    for node_id in nodes:
        start(ctx, node_id, head, extra_env=budget.worker_env(ctx, node_id))
    ctx.subject = " ".join(nodes)
    if any(handwork.is_human(ctx.dag, n) for n in nodes):
        return Outcome.NEEDS_HUMAN
    return Outcome.DISPATCHED
