"""CHECKPOINT: append a reconcile round to the sketch; decide whether to judge, dispatch, or close the layer."""
from __future__ import annotations

from orchestrate.engine import answers, probes, schedule
from orchestrate.engine.context import Context
from orchestrate.engine.states import Outcome
from orchestrate.recorder import sketch


def handle(ctx: Context) -> Outcome:
    c = ctx.campaign
    if c.tip != c.probed:  # the campaign head moved: landed nodes are trial-merged onto it (conflicts early)
        probes.after_merge(ctx)
    round_no = c.round + 1
    ctx.emit("round", {"round": round_no, "k": c.k, "tip": c.tip})
    lines = [f"## Round {round_no} (layer {c.k}, tip {c.tip[:12]})", ""]
    for n in c.layer():
        s = c.nodes[n]
        lines.append(f"- {n}: {s.status}, attempt {s.attempt}" + (f", merged {s.merge[:12]}" if s.merge else ""))
    path = sketch.find(ctx.layout.ledger, c.topic)
    if path:
        sketch.append(path, "\n".join(lines))
    ctx.subject = f"round {round_no}"
    if schedule.eager(ctx):
        # an answer left for the open seam first; the boundary (an incoherent layer stops what would build
        # on it); a node that needs a person is asked at once; then whatever can start (workers run while
        # the landed are judged), then the landed
        if answers.left(ctx):
            return Outcome.NEEDS_HUMAN
        if schedule.layer_done(ctx):
            return Outcome.LAYER_DONE
        if schedule.unasked(ctx):
            return Outcome.ESCALATE
        if schedule.to_dispatch(ctx) or schedule.unrouted(ctx):
            return Outcome.NEXT
        if schedule.landed(ctx):
            return Outcome.LANDED
        if c.seam is not None and not schedule.waiting_on_workers(ctx):
            return Outcome.NEEDS_HUMAN  # nothing else can progress: the open seam is asked, or the run pauses
    elif schedule.next_alone(ctx):  # after a seam mid-layer: the rest of the layer runs before it is judged
        return Outcome.NEXT
    elif schedule.landed(ctx):
        return Outcome.LANDED
    elif schedule.layer_done(ctx):
        return Outcome.LAYER_DONE
    elif c.seam is not None and not schedule.to_dispatch(ctx) and not schedule.waiting_on_workers(ctx):
        return Outcome.NEEDS_HUMAN  # layered: a seam that waited behind the one just answered is asked now
    if not schedule.to_dispatch(ctx) and not schedule.waiting_on_workers(ctx):
        stuck = {n: c.nodes[n].status for n in c.window()}
        raise AssertionError(f"layer {c.k} cannot progress: {stuck}")
    return Outcome.NEXT
