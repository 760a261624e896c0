"""DISPATCH: per node, a worktree on its own branch from the campaign head, its brief, and its worker."""
from __future__ import annotations

from contextlib import nullcontext

from gates import premise
from orchestrate.engine import budget, guardrails, routing, schedule, watch
from orchestrate.engine.context import Context
from orchestrate.engine.states import Outcome
from orchestrate.recorder.campaign import INVALIDATED
from orchestrate.workers import containment, handwork, prepared, worktrees
from orchestrate.workers.launch import start
from orchestrate.workers.local import LocalExecutor


def handle(ctx: Context) -> Outcome:
    c = ctx.campaign
    if schedule.eager(ctx):  # the nodes whose inputs settled since the last decision are decided first
        stopped = routing.settle(ctx, schedule.unrouted(ctx))
        if stopped is not None:
            return stopped
    nodes = schedule.to_dispatch(ctx)
    # an `input` guardrail that passed on an older head judges again the head these nodes branch from (§3.6)
    again: set[str] = set()  # once each: an edge an amendment left untaken is not judged again, and stays stale
    while stale := [n for n in nodes if n not in again and guardrails.stale(ctx, n)]:
        again.update(stale)
        stopped = routing.settle(ctx, stale)
        if stopped is not None:
            return stopped
        nodes = schedule.to_dispatch(ctx)
    if not nodes:
        if schedule.waiting_on_workers(ctx):  # (layered too: a widened worker runs on after a freeze)
            return Outcome.RUNNING
        return Outcome.LAYER_DONE
    stopped = budget.before_dispatch(ctx, nodes)  # what returned so far is journalled
    if stopped is not None:
        return stopped
    home = ctx.layout.worktrees(c.topic)
    # their working copies, checked out several at once, begun first: the integration worktree is one too
    prepared.start(ctx.root, home, len(nodes), c.tip)
    # a worker without the sandbox (a LOOPS_WITH group's first) starts once the whole batch has its worktrees
    with ctx.executor.holding() if len(nodes) > 1 and isinstance(ctx.executor, LocalExecutor) else nullcontext():
        try:
            return _dispatch(ctx, nodes)
        finally:
            prepared.settle(ctx.root, home)


def _dispatch(ctx: Context, nodes: list[str]) -> Outcome:
    c = ctx.campaign
    # premises read the head's files: only then is the integration worktree made (a checkout of the whole
    # repository) or brought to the head
    integ = worktrees.integration(ctx) if any(ctx.dag.by_id[n].tripwires for n in nodes) else None
    if integ is not None and not containment.judged_in_sandbox(ctx):
        # without the sandbox they run code the head holds, a worker's maybe: the batch's checkouts are pooled
        # first (their indexes copied), or what it wrote in one, with an index to match, would be a node's base
        prepared.settle(ctx.root, ctx.layout.worktrees(c.topic))
    head = c.tip
    refuted = []
    for node_id in nodes:
        node = ctx.dag.by_id[node_id]
        if node.tripwires:  # premises are judged against the tip the node would branch from
            with containment.judging(ctx, integ):
                verdict = premise.check(node_id, node.tripwires, integ)
            gate = ctx.emit("gate", {"node": node_id, "gate": "premise", "code": verdict.code,
                                     "summary": verdict.summary, "items": [i.line() for i in verdict.items]})
            if verdict.code != 0:
                ctx.emit("node", {"node": node_id, "status": INVALIDATED, "feedback": verdict.summary},
                         derived_from=[gate["id"]])
                ctx.out.line(f"{node_id}: INVALIDATED before dispatch: {verdict.summary}")
                ctx.subject = node_id
                if not schedule.eager(ctx):
                    return Outcome.REFUTED_PREMISE
                ctx.refuted[node_id] = head  # eager: the others start; it waits for its realignment
                refuted.append(node_id)
    nodes = [n for n in nodes if not any(m in refuted for m in ctx.dag.group_of(n))]
    if not nodes:
        return Outcome.REFUTED_PREMISE
    watch.refresh(ctx)  # workers still running are checked first: a fresh fingerprint would absolve them
    for node_id in nodes:
        start(ctx, node_id, head, extra_env=budget.worker_env(ctx, node_id))
    ctx.subject = " ".join(nodes)
    if any(handwork.is_human(ctx.dag, n) for n in nodes):
        return Outcome.NEEDS_HUMAN
    return Outcome.DISPATCHED
