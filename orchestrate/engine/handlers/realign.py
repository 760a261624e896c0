"""REALIGN: a node's premise failed or its attempts are spent; the plan needs a decision."""
from __future__ import annotations

from orchestrate.engine import judge, schedule
from orchestrate.engine.schedule import WAITING  # where an attempt the environment stopped leaves its node
from orchestrate.engine.context import Context
from orchestrate.engine.states import Outcome
from orchestrate.recorder.campaign import DISPATCHED, INVALIDATED, REWORK
from orchestrate.seams.choices import CHOICES


def handle(ctx: Context) -> Outcome:
    c = ctx.campaign
    found = _why(ctx)
    if found is None:
        return _asked_already(ctx)
    node_id, case, reason = found
    ctx.subject = node_id
    ctx.emit("seam", {"seam": "realignment", "case": case, "node": node_id, "reason": reason.splitlines()[0],
                      "show": reason.splitlines()[1:], "choices": list(CHOICES["realignment"]),
                      "bound_to": c.nodes[node_id].head or c.tip})
    ctx.out.line(f"{node_id}: realignment needed: {reason}")
    return Outcome.NEEDS_HUMAN


def _asked_already(ctx: Context) -> Outcome:
    """Every node that needs a person is one a seam asks about already, or an answer waiting to be applied
    settles: a node the environment stopped while an environment seam was open, or queued, or answered but
    not yet applied (the eager run goes on past it, so a running worker can meet the same environment
    later). Opening a second seam would ask about one fix twice; the seam that holds it settles it, so
    SEAM applies the waiting answer, goes on past the open seam, or asks it and pauses."""
    c = ctx.campaign
    held = schedule.held(ctx)
    waiting = [n for n in schedule.parked(ctx) if n in held]
    if not waiting or (c.seam is None and c.decision is None):
        raise AssertionError("REALIGN entered with nothing to realign")
    asking = c.decision if c.decision is not None else c.seam
    about = f" for {asking['node']}" if asking.get("node") else ""
    for n in waiting:
        if c.nodes[n].env_error and n != asking.get("node"):
            ctx.out.line(f"{n}: waits for the answer to seam {asking['seam']}{about}: a rework after the "
                         f"environment's fix starts it again too")
    ctx.subject = " ".join(waiting)
    return Outcome.NEEDS_HUMAN


def _why(ctx: Context) -> tuple[str, str, str] | None:
    """The first node that needs realigning and that no seam asks about yet, nor an answer waiting to be
    applied (under the eager schedule the run goes on past a node's seam, so another node may come to need
    one meanwhile); None if every one is asked about already."""
    c = ctx.campaign
    asked = schedule.held(ctx)  # (with the node of an answer recorded but not yet applied)
    order = [n for n in c.layer() + [x for x in c.nodes if x not in c.layer()] if n not in asked]
    for n in order:
        s = c.nodes[n]
        if s.env_error and s.status in WAITING:
            others = [x for x, o in c.nodes.items() if x != n and o.env_error and o.status in WAITING]
            also = f"; also stopped so, and started again with it: {', '.join(others)}" if others else ""
            return n, "environment", (
                f"{s.env_error}\nnot counted as an attempt: {n} is at attempt {s.attempt} and has no branch for it; "
                f"fix the environment (PATH, the agent's login), then answer rework (`orchestrate decide "
                f"realignment rework --note WHAT-CHANGED`) and `orchestrate resume` starts it as attempt {s.attempt + 1}{also}")
    for n in order:
        s = c.nodes[n]
        if s.status == DISPATCHED and s.freeze and s.freeze.get("freeze") == "refuted-premise":
            return n, "refuted-premise", (f"the worker refuted premise {s.freeze.get('premise')!r}\n"
                                          f"evidence: {s.freeze.get('evidence')}")
        if s.status == INVALIDATED:
            return n, "stale-premise", s.feedback or "a premise is stale"
        if s.status == REWORK and s.verdict == "escalate":
            spent = judge.spent_text(s.attempt, s.failures, judge.budget(ctx.dag.by_id[n]))
            return n, "attempts-spent", f"{spent}; the last failure:\n{s.feedback}"
    return None
