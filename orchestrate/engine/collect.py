"""Taking in what workers return: poll the executor, check what they must leave alone, record each return.

AWAIT uses it (every worker under the layered schedule, the first ones under the eager), and so does the
loop when a run pauses while workers still run (what they make is kept for the resume to judge).
"""
from __future__ import annotations

import time

from orchestrate import faults
from orchestrate.engine import answers, evaluations, schedule, watch
from orchestrate.engine.context import Context
from orchestrate.workers.launch import roll_back
from orchestrate.workers.returns import environment_error, fail_attempt, returned

POLL_FIRST, POLL_MAX = 0.002, 0.1  # quick workers are noticed at once, long ones cost little


def collect(ctx: Context, *, until_all: bool) -> None:
    """Poll the executor and take in what returns: every worker (`until_all`), or the first ones."""
    ex = ctx.executor
    pause = POLL_FIRST
    while True:
        started = list(getattr(ex, "live", ()))  # the ones running now; queued ones have not run yet
        finished = ex.poll()
        running = ex.running()
        if finished:  # suspects: what ran during the interval (evaluators running ahead too), not what poll()
            done = {o.node for o in finished}  # started just now
            watch.check(ctx, sorted(done), sorted({n for n in started if n not in done} | set(evaluations.in_flight(ctx))))
        for outcome in finished:
            returned(ctx, outcome)
            if outcome.node in ctx.blamed:
                fail_attempt(ctx, outcome, ctx.campaign.nodes[outcome.node].head, ctx.blamed.pop(outcome.node))
            if environment_error(outcome.rc, outcome.log):  # the next ones would meet the same: keep them waiting
                _unqueue(ctx, ex)
        if not until_all and (finished or evaluations.finished(ctx)):  # eager: an evaluator run that ended is
            evaluations.tick(ctx)  # taken in, and those of what just landed start (only a return lands a node)
        if not (running or (not until_all and ctx.evaluating)) or (not until_all and (
                finished or schedule.landed(ctx) or answers.left(ctx)
                or schedule.frozen(ctx, "surface-exceed", "reserved-halt"))):
            break
        ctx.out.running(running, queued=[r.node for r in getattr(ex, "queue", ())])
        faults.reach("poll")
        pause = POLL_FIRST if finished else min(pause * 2, POLL_MAX)
        if hasattr(ex, "wait"):  # the local executor wakes the moment a worker exits
            ex.wait(pause)
        else:
            time.sleep(pause)


def _unqueue(ctx: Context, ex) -> None:
    """Take back every attempt still waiting for a slot: none of it ran, so none of it counts."""
    for request in list(getattr(ex, "queue", ())):
        ex.queue.remove(request)
        roll_back(ctx, request.node)
        ctx.out.line(f"{request.node}: not started (a worker could not start); it waits as it was")
