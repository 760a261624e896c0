"""Whether a running campaign takes the answers `decide` leaves for it (seams/inbox.py), and whether an
answer waits to be applied.

Only a campaign whose machine workers all run in the sandbox takes them: a worker without it can write
anything its user can, including an answer to its own seam.
"""
from __future__ import annotations

from orchestrate.seams import inbox
from orchestrate.workers import containment, handwork


def taken(ctx) -> bool:
    dag = ctx.dag
    if dag is None:
        return False
    return all(containment.enabled(ctx, node) for node in dag.nodes if not handwork.is_human(dag, node.id))


def left(ctx) -> bool:
    """An answer waits to be applied: one the journal holds already, or one left for the open seam that this
    campaign takes. The journal holds one when `decide` recorded it after an eager runner stopped mid-run
    with a node seam open: the resume enters wherever that runner stopped, not at SEAM, and the answer
    must be applied before anything asks that node's question again."""
    if ctx.campaign.decision is not None:
        return True
    seam = ctx.campaign.seam
    return seam is not None and inbox.path(ctx.layout, ctx.topic).exists() and taken(ctx) \
        and inbox.has_answer(ctx.layout, ctx.topic, seam)
