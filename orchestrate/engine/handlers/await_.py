"""AWAIT: wait for running workers, commit what each left uncommitted, read its freeze file.

Layered: until every worker has returned. Eager: until at least one has (or at once, when a node that
returned earlier still waits to be judged), so that what landed is judged and merged, and what that
unblocks is started, while the others keep running.
"""
from __future__ import annotations

import json

from orchestrate.engine import answers, collect, schedule
from orchestrate.engine.context import Context
from orchestrate.engine.states import Outcome
from orchestrate.seams.choices import CHOICES


def handle(ctx: Context) -> Outcome:
    if ctx.fill_slots:  # resumed here: the resumed run may have more --jobs than the one it resumes, and nodes
        ctx.fill_slots = False  # that waited for a slot (or were never started) start now, not after a return
        if schedule.to_dispatch(ctx) or (schedule.eager(ctx) and schedule.unrouted(ctx)):
            return Outcome.NEXT
    collect.collect(ctx, until_all=not schedule.eager(ctx))
    return _after(ctx)


def _after(ctx: Context) -> Outcome:
    frozen = schedule.frozen(ctx)
    kinds = {ctx.campaign.nodes[n].freeze["freeze"] for n in frozen}
    ctx.subject = " ".join(frozen)
    if "reserved-halt" in kinds:
        # one seam each: the first is asked, the others wait behind it (an answer settles only its own node)
        for node in (n for n in frozen if ctx.campaign.nodes[n].freeze["freeze"] == "reserved-halt"):
            ns = ctx.campaign.nodes[node]
            ctx.emit("seam", {"seam": "reserved-halt", "node": node, "reason": ns.freeze.get("reason", ""),
                              "show": [f"freeze report: {json.dumps(ns.freeze)}", f"worker log: {ns.log}"],
                              "choices": list(CHOICES["reserved-halt"]), "bound_to": ns.head})
        return Outcome.RESERVED_HALT
    if schedule.eager(ctx) and answers.left(ctx):  # left by `decide` while these workers ran
        return Outcome.NEEDS_HUMAN
    if "refuted-premise" in kinds and not schedule.eager(ctx):
        return Outcome.REFUTED_PREMISE
    if "surface-exceed" in kinds:
        return Outcome.SURFACE_EXCEED
    if "refuted-premise" in kinds and not schedule.landed(ctx):  # eager: what landed is judged first
        return Outcome.REFUTED_PREMISE
    if not schedule.landed(ctx):  # they wait for a LOOPS_WITH peer that has yet to start (a person's node)
        return Outcome.NEXT
    if schedule.next_alone(ctx):  # layered: the next worker to run alone starts before the layer is judged
        return Outcome.NEXT
    return Outcome.RETURNED
