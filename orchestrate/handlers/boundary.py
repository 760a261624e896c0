"""BOUNDARY: coherence over the layer's cumulative diff, and a check that nobody edited the DAG meanwhile."""
from __future__ import annotations

from gates import coherence
from orchestrate import judge, worktrees
from orchestrate.context import Context, file_hash
from orchestrate.states import Outcome


def handle(ctx: Context) -> Outcome:
    c = ctx.campaign
    integ = worktrees.integration(ctx)
    verdict = coherence.check(ctx.root, c.layer_base, c.tip, ledger=ctx.layout.ledger, dag_path=ctx.dag_file,
                              topic=c.topic, worktree=integ)
    entry = judge.record(ctx, None, verdict)
    ctx.subject = f"layer {c.k}"
    if verdict.code != 0:
        orphans = [i.line() for i in verdict.failing()]
        ctx.halt_reason = (f"layer {c.k} is incoherent: {verdict.summary}\n" + "\n".join(f"  {o}" for o in orphans)
                           + "\nfix the references on a node (or amend the DAG), then `orchestrate resume`")
        ctx.emit("halt", {"reason": ctx.halt_reason}, derived_from=[entry["id"]])
        return Outcome.INCOHERENT
    current = file_hash(ctx.dag_file)
    if current != c.dag_hash:
        ctx.emit("seam", {"seam": "dag-amendment", "node": None, "choices": ["accept", "halt"],
                          "bound_to": c.tip, "reason": f"{ctx.dag_file} changed since it was last validated",
                          "dag_hash": current}, derived_from=[entry["id"]])
        return Outcome.AMENDED
    if c.k + 1 < len(c.layers):
        ctx.emit("layer", {"k": c.k + 1, "tip": c.tip})
        return Outcome.NEXT_LAYER
    return Outcome.LAST_LAYER
