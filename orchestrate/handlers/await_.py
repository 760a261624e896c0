"""AWAIT: wait for every running worker, commit what it left uncommitted, read its freeze file."""
from __future__ import annotations

import time

from gates.core import git
from orchestrate.campaign import DISPATCHED, LANDED
from orchestrate.context import Context
from orchestrate.states import Outcome

POLL_SECONDS = 0.05


def handle(ctx: Context) -> Outcome:
    ex = ctx.executor
    while True:
        for outcome in ex.poll():
            _returned(ctx, outcome)
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


def _returned(ctx: Context, outcome) -> None:
    ns = ctx.campaign.nodes[outcome.node]
    path = ctx.root / ns.worktree
    ctx.emit("result", {"effect": "worker-start", "node": outcome.node, "attempt": outcome.attempt,
                        "rc": outcome.rc, "timed_out": outcome.timed_out, "seconds": round(outcome.seconds, 3)},
             source_entity=f"worker:{outcome.node}", source_type="worker")
    if path.exists() and git.has_changes(path):
        ctx.emit("intent", {"effect": "leftover-commit", "node": outcome.node})
        git.commit_all(path, f"node {outcome.node}: changes left uncommitted by the worker",
                       env=git.identity_env(path))
        ctx.emit("result", {"effect": "leftover-commit", "node": outcome.node})
        ctx.out.line(f"{outcome.node}: committed changes the worker left uncommitted")
    head = git.out(path, "rev-parse", "HEAD") if path.exists() else ns.base
    update = {"node": outcome.node, "head": head, "rc": outcome.rc, "log": outcome.log,
              "seconds": round(ns.seconds + outcome.seconds, 3)}
    if outcome.freeze_error:
        ctx.out.line(f"{outcome.node}: malformed freeze file: {outcome.freeze_error}")
        update.update(status=LANDED, rc=2, feedback=f"node {outcome.node}: malformed freeze file: "
                      f"{outcome.freeze_error}")
    elif outcome.freeze:
        update.update(freeze=outcome.freeze)
        ctx.out.line(f"{outcome.node}: froze ({outcome.freeze['freeze']})")
    else:
        update.update(status=LANDED)
        how = "timed out" if outcome.timed_out else f"exited {outcome.rc}"
        ctx.out.line(f"{outcome.node}: worker {how} after {outcome.seconds:.1f}s")
    ctx.emit("node", update)
