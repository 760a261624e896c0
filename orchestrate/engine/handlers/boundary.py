"""BOUNDARY: coherence over the layer's cumulative diff, and a check that nobody edited the DAG meanwhile."""
from __future__ import annotations

from contextlib import nullcontext

from gates import coherence
from orchestrate.engine import amend, judge, schedule
from orchestrate.engine.context import Context
from orchestrate.engine.states import Outcome
from orchestrate.recorder.approved import file_hash
from orchestrate.workers import containment, worktrees


def handle(ctx: Context) -> Outcome:
    c = ctx.campaign
    if not schedule.layer_done(ctx):  # an amendment accepted mid-layer: back to the layer's work
        ctx.subject = f"layer {c.k}: its work goes on under the amended DAG"
        return Outcome.NEXT_LAYER
    # Only project gates and coherence evaluators read files on disk: the rest of coherence reads commits.
    # Without them the integration worktree is neither made nor brought to the head (O(the repository) the
    # first time, O(the layer's diff) after).
    integ = worktrees.integration(ctx) if coherence.needs_checkout(ctx.layout.ledger) else None
    with containment.judging(ctx, integ) if integ is not None else nullcontext():
        verdict = coherence.check(ctx.root, c.layer_base, c.tip, ledger=ctx.layout.ledger, dag_path=ctx.dag_file,
                                  topic=c.topic, worktree=integ, brief_dir=ctx.brief_dir)
    entry = judge.record(ctx, None, verdict)
    ctx.subject = f"layer {c.k}"
    if verdict.code != 0:
        orphans = [i.line() for i in verdict.failing()]
        ctx.halt_reason = (f"layer {c.k} is incoherent: {verdict.summary}\n" + "\n".join(f"  {o}" for o in orphans)
                           + "\nfix the references on a node (or amend the DAG), then `orchestrate resume`")
        ctx.emit("halt", {"reason": ctx.halt_reason}, derived_from=[entry["id"]])
        return Outcome.INCOHERENT
    if not ctx.dag_file.exists() or file_hash(ctx.dag_file) != c.dag_hash:
        amend.open_seam(ctx, derived_from=[entry["id"]])
        return Outcome.AMENDED
    if c.k + 1 < len(c.layers):
        ctx.subject = f"layer {c.k + 1}"  # the layer entered, counted from 0 like everywhere else
        ctx.emit("layer", {"k": c.k + 1, "tip": c.tip})
        return Outcome.NEXT_LAYER
    return Outcome.LAST_LAYER
