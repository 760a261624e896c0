"""Nodes worked by a person (`worker: {kind: human}`): the attempt is a seam, not a process.

At dispatch the node gets its worktree, branch and brief like any other, and the run stops at the
`handwork` seam (exit 75) naming them. The person works and commits there, then answers
`orchestrate decide handwork done`: what they committed (and anything left uncommitted, committed for
them) is the attempt's result, judged by the same gates as a worker's. A freeze file written to the
brief's return path freezes the attempt as a worker's would. Such a node is started alone, after
every machine-worked node of its layer has returned, so a pause never leaves a worker running.
"""
from __future__ import annotations

from orchestrate.seams.choices import CHOICES
from orchestrate.workers.local import WorkOutcome, read_freeze

SEAM = "handwork"


def is_human(dag, node_id: str) -> bool:
    return (dag.by_id[node_id].worker_spec or {}).get("kind") == "human"


def open_seam(ctx, node_id: str, *, worktree, branch: str, brief, return_file) -> None:
    ns = ctx.campaign.nodes[node_id]
    ctx.emit("seam", {"seam": SEAM, "node": node_id, "choices": list(CHOICES[SEAM]), "bound_to": ns.base,
                      "reason": f"{node_id} is worked by a person: work and commit in {worktree} on branch {branch}, "
                                f"then answer done",
                      "show": [f"brief: {brief}", f"to stop instead, write a freeze object to {return_file}"]})
    ctx.out.line(f"{node_id}: waiting for a person in {worktree}")


def done(ctx, node_id: str) -> None:
    """Settle the person's attempt exactly as a returned worker's."""
    from orchestrate.workers.returns import returned
    ns = ctx.campaign.nodes[node_id]
    return_file = ctx.layout.runs(ctx.topic) / node_id / f"return-{ns.attempt}.json"
    freeze, error = read_freeze(return_file)
    returned(ctx, WorkOutcome(node_id, ns.attempt, 0, 0.0, log="", freeze=freeze, freeze_error=error))
