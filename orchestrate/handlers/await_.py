"""AWAIT: wait for every running worker, commit what it left uncommitted, read its freeze file."""
from __future__ import annotations

import time

from orchestrate.campaign import DISPATCHED
from orchestrate.context import Context
from orchestrate.returns import returned
from orchestrate.states import Outcome

POLL_SECONDS = 0.05


def handle(ctx: Context) -> Outcome:
    ex = ctx.executor
    while True:
        for outcome in ex.poll():
            returned(ctx, outcome)
        running = ex.running()
        if not running:
            break
        ctx.out.running(running)
        time.sleep(POLL_SECONDS)
    ctx.out.stop_live()
    frozen = [n for n in ctx.campaign.layer() if ctx.campaign.nodes[n].status == DISPATCHED
              and ctx.campaign.nodes[n].freeze]
    kinds = {ctx.campaign.nodes[n].freeze["freeze"] for n in frozen}
    ctx.subject = " ".join(frozen)
    if "reserved-halt" in kinds:
        return Outcome.RESERVED_HALT
    if "refuted-premise" in kinds:
        return Outcome.REFUTED_PREMISE
    if "surface-exceed" in kinds:
        return Outcome.SURFACE_EXCEED
    return Outcome.RETURNED
