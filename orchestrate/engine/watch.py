"""Watching what workers must leave alone: a fingerprint before a layer's workers start, compared each time
one returns (workers/fingerprint.py says what is watched).

A change to the shared git dir is blamed on every node that ran during the interval: those attempts fail
with a message saying what changed, and planted config, hooks and attributes are put back at once, before
orchestrate's next git call. A change to the user's checkout is a warning naming the running nodes.
"""
from __future__ import annotations

from orchestrate.engine.context import Context
from orchestrate.recorder.campaign import DISPATCHED, LANDED
from orchestrate.workers import fingerprint


def arm(ctx: Context) -> None:
    """Before a layer's workers start (also after a resume: whatever happened before is not seen)."""
    ctx.watch = fingerprint.take(ctx.root, _own_refs(ctx))
    if ctx.recorder is not None:  # a foreign journal line names the nodes that were running
        ctx.recorder.suspects = lambda: list(getattr(ctx.executor, "live", ())) or _dispatched(ctx)


def check(ctx: Context, finished: list[str], running: list[str]) -> None:
    """After `finished` returned while `running` still run: blame, restore, report; then re-arm."""
    if ctx.watch is None:
        arm(ctx)
        return
    now = fingerprint.take(ctx.root, _own_refs(ctx))
    changed, checkout = fingerprint.compare(ctx.watch, now)
    suspects = sorted(set(finished) | set(running))
    if checkout:
        ctx.out.always(f"warning: the checkout changed while {', '.join(suspects)} ran: {'; '.join(checkout)} "
                       "(left as it is: it may be your own work)")
    if changed:
        put_back = fingerprint.restore(ctx.watch)
        what = "; ".join(changed) + (f" (put back: {', '.join(put_back)})" if put_back else "")
        for node in suspects:
            ctx.blamed[node] = f"node {node}: while it ran, {what}; its attempt failed"
        ctx.emit("guard", {"nodes": suspects, "changes": changed, "restored": put_back})
        ctx.out.always(f"{', '.join(suspects)}: changed what no worker may change: {what}")
    arm(ctx)


def _own_refs(ctx: Context) -> set[str]:
    c = ctx.campaign
    return {f"refs/heads/{c.nodes[n].branch}" for n in c.layer()
            if c.nodes[n].branch and c.nodes[n].status in (DISPATCHED, LANDED)}


def _dispatched(ctx: Context) -> list[str]:
    return [n for n in ctx.campaign.layer() if ctx.campaign.nodes[n].status == DISPATCHED]
