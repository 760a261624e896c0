"""Recording gate verdicts as journal entries, so every decision can cite the gates it rests on."""
from __future__ import annotations

from gates.shared.verdict import Verdict

MAX_ITEMS = 50  # keep journal entries small; the full output stays in the gate's log


def record(ctx, node: str | None, verdict: Verdict, *, source_entity: str | None = None) -> dict:
    """Journal one gate verdict; a plugin's is stamped with the plugin's identity (R5), never its own claim."""
    items = [i.line() for i in verdict.items]
    extra = {"source_entity": source_entity, "source_type": "gate"} if source_entity else {}
    recorded = {"node": node, "gate": verdict.gate, "code": verdict.code, "summary": verdict.summary,
                "items": items[:MAX_ITEMS], "more_items": max(0, len(items) - MAX_ITEMS)}
    if "outputs" in verdict.data:  # what conditions read as src.outputs.<key>
        recorded["outputs"] = verdict.data["outputs"]
    if verdict.gate == "evaluators" and verdict.data.get("results"):  # each evaluator's exit code: what
        recorded["rcs"] = {r["name"]: r["rc"] for r in verdict.data["results"]}  # conditions read as src.gates.X.rc
    return ctx.emit("gate", recorded, **extra)


def next_verdict(node, failures: int) -> str:
    """After `failures` failed attempts: rework, escalate (the protocol's default: a person decides), or
    abandon (the DAG opted in with `max_rework: N` + `on_exhausted: continue`: the node gives up after N
    reworks and the campaign goes on without it)."""
    if node.on_exhausted == "continue":
        return "abandon" if failures > node.max_rework else "rework"
    return "escalate" if failures >= node.max_attempts else "rework"


def budget(node) -> int:
    """How many failed attempts the node may have before it escalates (or, opted in, is abandoned)."""
    return node.max_rework + 1 if node.on_exhausted == "continue" else node.max_attempts


def attempt_text(attempt: int, failures: int, allowed: int) -> str:
    """`attempt 2 of 3`; after a person's rework the failures count again from zero while the attempt
    number goes on, so both are said rather than `attempt 2 of 1`."""
    if attempt == failures:
        return f"attempt {attempt} of {allowed}"
    return f"attempt {attempt}; failure {failures} of {allowed} allowed since the last rework"


def spent_text(attempt: int, failures: int, allowed: int) -> str:
    """Why a node escalates, for the realignment seam."""
    if attempt == failures:
        return f"attempts spent ({failures} of {allowed})"
    return f"attempts spent ({failures} of {allowed} since the last rework, {attempt} in all)"


def abandon(ctx, node_id: str, failures: int, feedback: str, derived_from=()) -> None:
    """Give the node up for good: ABANDONED is terminal, its worktree goes, its branch stays to read."""
    from orchestrate.recorder.campaign import ABANDONED
    from orchestrate.workers import worktrees
    ns = ctx.campaign.nodes[node_id]
    ctx.emit("node", {"node": node_id, "status": ABANDONED, "failures": failures, "feedback": feedback,
                      "verdict": "abandon"}, derived_from=derived_from)
    worktrees.remove(ctx, node_id, str(ctx.root / ns.worktree) if ns.worktree else "")
    ctx.out.line(f"{node_id}: ABANDONED after {failures} failed attempt(s) (on_exhausted: continue); "
                 f"its branch {ns.branch} is kept")


def said(v: Verdict) -> str:
    """One verdict for a failure line: its summary, which evaluators or checks failed and why, and the log
    to read (`FAIL: 1 of 2 evaluator(s) failed` alone names neither)."""
    failing = [f"{i.subject} ({i.detail})" if i.detail else i.subject for i in v.failing()][:5]
    log = v.data.get("log") if isinstance(v.data, dict) else None
    named = f": {', '.join(failing)}" if failing and v.gate in NAMED_GATES else ""
    return f"{v.summary}{named}" + (f"; log: {log}" if log else "")


NAMED_GATES = ("evaluators",)  # campaign checks run through the same gate


def cannot_start(v: Verdict, kind: str = "evaluator") -> str:
    """Which evaluators (or campaign checks) could not start, and where to read why; "" when all ran."""
    if v.gate not in NAMED_GATES or v.code != 2:
        return ""
    which = [f"`{i.subject}` ({i.detail})" for i in v.items if i.status == "ERROR"]
    log = v.data.get("log")
    return f"{kind}(s) {', '.join(which) or '?'} could not start" + (f"; log: {log}" if log else "")


def failure_text(verdicts: list[Verdict]) -> str:
    """What the next attempt's brief says about this one."""
    parts = []
    for v in verdicts:
        if v.ok:
            continue
        lines = [i.line() for i in v.failing()][:20]
        log = v.data.get("log") if isinstance(v.data, dict) else None
        parts.append(f"- {v.gate}: {v.summary}" + (f" (log: {log})" if log else "")
                     + "".join(f"\n    {ln}" for ln in lines))
    return "\n".join(parts)


def environment_stop(ctx, members: list[str], why: str) -> None:
    """The environment, not the work, failed (a worker, evaluator or check that cannot start): no attempt
    is spent. The attempt is undone (worktree and branch gone, the node as before it) and the campaign
    stops at the realignment seam (case `environment`) naming what to fix; answering rework after the fix
    starts the node again with the same attempt number."""
    from orchestrate.workers.launch import roll_back
    for node_id in members:
        roll_back(ctx, node_id, env_error=why)
        ctx.out.line(f"{node_id}: STOPPED, not an attempt: {why}")


def reads_files(ctx):
    """Which landed nodes will their judging read the worktree files of? Evaluators and gate plugins run
    in it, a LOOPS_WITH group's evaluators on its members' trees, configured project evaluators (coherence)
    in it, and premises of nodes still to start are re-checked against it (reconcile's freshness). The
    rest of judging reads commits only, so for a node none of this applies to, what is in its worktree
    after its worker returned is never read (workers/siblings.py compares only its branch then)."""
    from gates import coherence
    from orchestrate.engine import plugin_gates
    from orchestrate.recorder.campaign import ABANDONED, ACCEPTED, SKIPPED
    c, dag = ctx.campaign, ctx.dag
    settled = (ACCEPTED, SKIPPED, ABANDONED)
    if any(node.tripwires and c.nodes[node.id].status not in settled for node in dag.nodes if node.id in c.nodes) \
            or coherence.needs_checkout(ctx.layout.ledger):
        return lambda node_id: True
    return lambda node_id: bool(dag.effective_checks(node_id) or len(dag.group_of(node_id)) > 1
                                or plugin_gates.for_node(dag, node_id))
