"""SURFACE_EXCEED: a worker asked for more paths; widen when they collide with nothing concurrent, else serialize.

A request is granted at most WIDEN_LIMIT times per node. Granting costs no attempt, so without a bound a
worker that freezes on every run (for a path its surface already covers, or a new path each time) was
widened and restarted forever. A request naming only paths the surface covers, or one past the limit,
is a failed attempt instead: it is judged as one, so `max_attempts` and then a person bound it. So is a request
from an attempt whose spend reached its node's budget: granted, the worker would run on past it.
"""
from __future__ import annotations

from gates import collision_check
from orchestrate.dag import rule_files, surface
from orchestrate.engine import amend, budget, schedule
from orchestrate.engine.context import Context
from orchestrate.engine.states import Outcome
from orchestrate.errors import DagInvalid
from orchestrate.recorder.campaign import LANDED, PENDING
from orchestrate.workers.launch import start
from orchestrate.workers.local import WIDEN_LIMIT  # a person's rework grants as many again (seams.rework)


def handle(ctx: Context) -> Outcome:
    c = ctx.campaign
    node_id = next(n for n in schedule.frozen(ctx) if c.nodes[n].freeze["freeze"] == "surface-exceed")
    ns = c.nodes[node_id]
    asked = list(ns.freeze["paths"])
    tokens = ctx.dag.by_id[node_id].file_surface
    # a rules file (.gitattributes, .gitignore, .gitmodules) is granted as all it reaches (surface.covering)
    grants = {p: rule_files.needed(p) for p in asked if surface.covering(tokens, p) is None}
    paths = list(dict.fromkeys(grants.values()))
    said = ", ".join(p if token == p else f"{p} (as {token}, all it reaches)" for p, token in grants.items())
    ctx.subject = node_id
    if budget.crossed(ctx, node_id):  # widened or serialized, it would run on past its budget (README, Budgets)
        return _refused(ctx, node_id, f"its worker asked for {', '.join(asked)}, but what the node spent reached "
                        f"its budget (nodes.{node_id}.budget): neither widened nor resumed")
    if not paths:
        return _refused(ctx, node_id, f"its worker asked for {', '.join(asked)}, already inside its "
                        f"surface ({', '.join(tokens)}): nothing to widen")
    if ns.widens >= WIDEN_LIMIT:
        return _refused(ctx, node_id, f"its worker asked for {said}, but its surface was widened "
                        f"{ns.widens} times already at its workers' request, the most granted to one node "
                        "(ask for every path in one freeze); a person may widen it in the plan")
    against = {n: ctx.dag.by_id[n].file_surface for n in ctx.dag.concurrent_with(node_id)}
    verdict = collision_check.check(paths, against)
    gate = ctx.emit("gate", {"node": node_id, "gate": "collision-check", "code": verdict.code,
                             "summary": verdict.summary, "items": [i.line() for i in verdict.items]})
    if verdict.code == 0:
        try:
            amend.amend_node(ctx, node_id, f"WIDEN {node_id}: the worker asked for {said}",
                             add_surface=paths)
        except DagInvalid as exc:
            ctx.out.line(f"{node_id}: widening would make the DAG invalid ({exc.problems[0]}); serializing")
        else:
            ctx.out.line(f"{node_id}: surface widened with {said}; worker resumed")
            ctx.emit("node", {"node": node_id, "freeze": None, "widens": ns.widens + 1}, derived_from=[gate["id"]])
            # told what it may still spend, as every worker started under a budget is (rv79)
            start(ctx, node_id, c.nodes[node_id].base, resume_attempt=True, extra_env=budget.worker_env(ctx, node_id))
            return Outcome.WIDEN
    amend.amend_node(ctx, node_id, f"SERIALIZE {node_id}: {said} collide with concurrent surfaces",
                     add_surface=paths, serialize=True)
    ctx.emit("node", {"node": node_id, "status": PENDING, "freeze": None, "widens": ns.widens + 1,
                      "feedback": f"you asked for {said}; they collide with work that may run "
                                  "at the same time, so you now run alone after it"},
             derived_from=[gate["id"]])
    ctx.out.line(f"{node_id}: {said} collide with a concurrent surface; rescheduled into the serial rest")
    return Outcome.SERIALIZE


def _refused(ctx: Context, node_id: str, why: str) -> Outcome:
    """The freeze is not granted: the attempt failed (rc 2, as the worker's returns mark one), and is judged so."""
    text = f"node {node_id}: {why}; its attempt failed"
    ctx.out.line(text)
    ctx.emit("node", {"node": node_id, "status": LANDED, "rc": 2, "freeze": None, "feedback": text})
    return Outcome.REFUSED
