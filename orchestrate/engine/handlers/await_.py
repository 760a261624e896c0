"""AWAIT: wait for every running worker, commit what it left uncommitted, read its freeze file."""
from __future__ import annotations

import json
import time

from orchestrate import faults
from orchestrate.engine import schedule, watch
from orchestrate.engine.context import Context
from orchestrate.engine.states import Outcome
from orchestrate.recorder.campaign import DISPATCHED
from orchestrate.seams.choices import CHOICES
from orchestrate.workers.launch import roll_back
from orchestrate.workers.returns import environment_error, fail_attempt, returned

POLL_FIRST, POLL_MAX = 0.002, 0.1  # quick workers are noticed at once, long ones cost little


def handle(ctx: Context) -> Outcome:
    ex = ctx.executor
    pause = POLL_FIRST
    while True:
        started = list(getattr(ex, "live", ()))  # the ones running now; queued ones have not run yet
        finished = ex.poll()
        running = ex.running()
        if finished:  # suspects: what ran during the interval, not what poll() started just now
            done = {o.node for o in finished}
            watch.check(ctx, sorted(done), [n for n in started if n not in done])
        for outcome in finished:
            returned(ctx, outcome)
            if outcome.node in ctx.blamed:
                fail_attempt(ctx, outcome, ctx.campaign.nodes[outcome.node].head, ctx.blamed.pop(outcome.node))
            if environment_error(outcome.rc, outcome.log):  # the next ones would meet the same: keep them waiting
                _unqueue(ctx, ex)
        if not running:
            break
        ctx.out.running(running, queued=[r.node for r in getattr(ex, "queue", ())])
        faults.reach("poll")
        pause = POLL_FIRST if finished else min(pause * 2, POLL_MAX)
        time.sleep(pause)
    frozen = [n for n in ctx.campaign.layer() if ctx.campaign.nodes[n].status == DISPATCHED
              and ctx.campaign.nodes[n].freeze]
    kinds = {ctx.campaign.nodes[n].freeze["freeze"] for n in frozen}
    ctx.subject = " ".join(frozen)
    if "reserved-halt" in kinds:
        node = next(n for n in frozen if ctx.campaign.nodes[n].freeze["freeze"] == "reserved-halt")
        ns = ctx.campaign.nodes[node]
        ctx.emit("seam", {"seam": "reserved-halt", "node": node, "reason": ns.freeze.get("reason", ""),
                          "show": [f"freeze report: {json.dumps(ns.freeze)}", f"worker log: {ns.log}"],
                          "choices": list(CHOICES["reserved-halt"]), "bound_to": ns.head})
        return Outcome.RESERVED_HALT
    if "refuted-premise" in kinds:
        return Outcome.REFUTED_PREMISE
    if "surface-exceed" in kinds:
        return Outcome.SURFACE_EXCEED
    if not schedule.landed(ctx):  # they wait for a LOOPS_WITH peer that has yet to start (a person's node)
        return Outcome.NEXT
    return Outcome.RETURNED


def _unqueue(ctx: Context, ex) -> None:
    """Take back every attempt still waiting for a slot: none of it ran, so none of it counts."""
    for request in list(getattr(ex, "queue", ())):
        ex.queue.remove(request)
        roll_back(ctx, request.node)
        ctx.out.line(f"{request.node}: not started (a worker could not start); it waits as it was")
