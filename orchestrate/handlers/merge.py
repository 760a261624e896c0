"""MERGE: trial-merge the node into the integration worktree, run the campaign checks, commit --no-ff."""
from __future__ import annotations

from gates import evaluators
from gates.core import git
from gates.core.verdict import Verdict
from orchestrate import faults, judge, worktrees
from orchestrate.campaign import REWORK
from orchestrate.context import Context
from orchestrate.states import Outcome


def handle(ctx: Context) -> Outcome:
    c = ctx.campaign
    node_id = next(n for n in c.layer() if c.nodes[n].status == "LANDED")
    ctx.subject = node_id
    ns = c.nodes[node_id]
    node = ctx.dag.by_id[node_id]
    integ = worktrees.integration(ctx)
    env = git.identity_env(integ)
    if ns.head == ns.base:  # the worker changed nothing: git would merge nothing, so there is no commit to make
        ctx.emit("merge", {"node": node_id, "sha": c.tip, "branch": ns.branch, "head": ns.head, "empty": True})
        worktrees.remove(ctx, node_id, str(ctx.root / ns.worktree))
        ctx.out.line(f"{node_id}: nothing to merge (the worker changed nothing); accepted at {c.tip[:12]}")
        return Outcome.MERGED
    if git.is_ancestor(ctx.root, ns.head, c.branch):  # merged before a crash, not yet recorded
        sha = git.out(ctx.root, "rev-parse", c.branch)
        ctx.emit("merge", {"node": node_id, "sha": sha, "branch": ns.branch, "head": ns.head},
                 source_entity="orchestrate:resume", source_type="repair")
        worktrees.remove(ctx, node_id, str(ctx.root / ns.worktree))
        ctx.out.always(f"repair: {node_id} was merged ({sha[:12]}) before the runner stopped; recorded it")
        return Outcome.MERGED
    ctx.emit("intent", {"effect": "merge", "node": node_id, "branch": ns.branch, "head": ns.head, "onto": c.tip})
    done = git.git(integ, "merge", "--no-ff", "--no-commit", "--no-edit", ns.branch, check=False, env=env)
    if done.rc != 0:
        conflicts = git.conflicted_paths(integ)
        git.merge_abort(integ)
        ctx.emit("result", {"effect": "merge", "node": node_id, "aborted": True, "conflicts": conflicts})
        summary = f"CONFLICT: merging {ns.branch} onto the campaign head conflicts in {', '.join(conflicts) or '?'}"
        return _rework(ctx, node_id, Verdict("trial-merge", 3, summary))
    if ctx.dag.checks:
        checks = evaluators.check(ctx.dag.checks, integ, log_path=ctx.layout.runs(c.topic) / node_id /
                                  f"checks-{ns.attempt}.log")
        entry = judge.record(ctx, node_id, checks)
        if not checks.ok and not _pre_existing(ctx, integ, checks):
            git.merge_abort(integ)
            ctx.emit("result", {"effect": "merge", "node": node_id, "aborted": True, "gate": entry["id"]})
            return _rework(ctx, node_id, checks)
    faults.reach("merge")
    git.git(integ, "commit", "-q", "--no-verify", "-m", f"merge node {node_id}: {node.title}", env=env)
    sha = git.out(integ, "rev-parse", "HEAD")
    ctx.emit("result", {"effect": "merge", "node": node_id, "sha": sha})
    ctx.emit("merge", {"node": node_id, "sha": sha, "branch": ns.branch, "head": ns.head})
    worktrees.remove(ctx, node_id, str(ctx.root / ns.worktree))
    ctx.out.line(f"{node_id}: merged into {c.branch} ({sha[:12]})")
    return Outcome.MERGED


def _pre_existing(ctx: Context, integ, checks: Verdict) -> bool:
    """Do the failing checks fail on the campaign head alone too? Then the node did not break them."""
    failing = {i.subject for i in checks.failing()}
    stash = [c for c in ctx.dag.checks if c.name in failing]
    probe = ctx.layout.scratch / "probe" / ctx.topic
    if probe.exists():
        git.worktree_remove(ctx.root, probe)
    probe.parent.mkdir(parents=True, exist_ok=True)
    git.worktree_add_detached(ctx.root, probe, ctx.campaign.tip)
    try:
        alone = evaluators.check(stash, probe)
    finally:
        git.worktree_remove(ctx.root, probe)
    return alone.code == 1 and {i.subject for i in alone.failing()} >= failing


def _rework(ctx: Context, node_id: str, verdict: Verdict) -> Outcome:
    ns = ctx.campaign.nodes[node_id]
    node = ctx.dag.by_id[node_id]
    failures = ns.failures + 1
    feedback = judge.failure_text([verdict])
    decided = judge.next_verdict(node, failures)
    ctx.out.line(f"{node_id}: merge refused ({verdict.summary}); {decided.upper()}")
    if decided == "abandon":
        judge.abandon(ctx, node_id, failures, feedback)
        return Outcome.ABANDONED
    ctx.emit("node", {"node": node_id, "status": REWORK, "failures": failures, "feedback": feedback,
                      "verdict": decided})
    return Outcome.ESCALATE if decided == "escalate" else Outcome.REWORK
