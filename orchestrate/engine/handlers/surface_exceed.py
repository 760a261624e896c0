"""SURFACE_EXCEED: a worker asked for more paths; widen when they collide with nothing concurrent, else serialize."""
from __future__ import annotations

from gates import collision_check
from orchestrate.engine import amend, schedule
from orchestrate.engine.context import Context
from orchestrate.engine.states import Outcome
from orchestrate.errors import DagInvalid
from orchestrate.recorder.campaign import PENDING
from orchestrate.workers.launch import start


def handle(ctx: Context) -> Outcome:
    c = ctx.campaign
    node_id = next(n for n in schedule.frozen(ctx) if c.nodes[n].freeze["freeze"] == "surface-exceed")
    paths = list(c.nodes[node_id].freeze["paths"])
    against = {n: ctx.dag.by_id[n].file_surface for n in ctx.dag.concurrent_with(node_id)}
    verdict = collision_check.check(paths, against)
    gate = ctx.emit("gate", {"node": node_id, "gate": "collision-check", "code": verdict.code,
                             "summary": verdict.summary, "items": [i.line() for i in verdict.items]})
    ctx.subject = node_id
    if verdict.code == 0:
        try:
            amend.amend_node(ctx, node_id, f"WIDEN {node_id}: the worker asked for {', '.join(paths)}",
                             add_surface=paths)
        except DagInvalid as exc:
            ctx.out.line(f"{node_id}: widening would make the DAG invalid ({exc.problems[0]}); serializing")
        else:
            ctx.out.line(f"{node_id}: surface widened with {', '.join(paths)}; worker resumed")
            ctx.emit("node", {"node": node_id, "freeze": None}, derived_from=[gate["id"]])
            start(ctx, node_id, c.nodes[node_id].base, resume_attempt=True)
            return Outcome.WIDEN
    amend.amend_node(ctx, node_id, f"SERIALIZE {node_id}: {', '.join(paths)} collide with concurrent surfaces",
                     add_surface=paths, serialize=True)
    ctx.emit("node", {"node": node_id, "status": PENDING, "freeze": None,
                      "feedback": f"you asked for {', '.join(paths)}; they collide with work that may run "
                                  "at the same time, so you now run alone after it"},
             derived_from=[gate["id"]])
    ctx.out.line(f"{node_id}: {', '.join(paths)} collide with a concurrent surface; rescheduled into the serial rest")
    return Outcome.SERIALIZE
