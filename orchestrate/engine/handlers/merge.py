"""MERGE: merge the node (or its LOOPS_WITH group, as one octopus) onto the campaign head --no-ff, and move
campaign/<topic> to the merge commit.

A single node in a campaign without checks is merged in the object store alone (`git merge-tree`, then
`git commit-tree`): O(the diff), however large the repository. Checks need the merged tree on disk, and an
octopus needs `git merge`, so those merge in the integration worktree as before. Either way the branch
moves last, by compare-and-swap, and the commit is the same: two parents (or more), one subject."""
from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

from gates import evaluators
from gates.shared.verdict import Verdict
from orchestrate import faults, git
from orchestrate.engine import judge, schedule, watch
from orchestrate.engine.context import Context
from orchestrate.engine.states import Outcome
from orchestrate.errors import GitError, Halted
from orchestrate.recorder.campaign import LANDED, REWORK
from orchestrate.workers import containment, worktrees

if TYPE_CHECKING:
    from orchestrate.proc import Completed


def handle(ctx: Context) -> Outcome:
    c = ctx.campaign
    first = accepted(ctx)  # the node (or LOOPS_WITH group) RECONCILE, or a person at a seam, just accepted
    members = [m for m in ctx.dag.group_of(first) if c.nodes[m].status == LANDED]
    ctx.subject = "+".join(members)
    changed = [m for m in members if c.nodes[m].head != c.nodes[m].base]
    if not changed:  # the workers changed nothing: git would merge nothing, so there is no commit to make
        for m in members:
            ns = c.nodes[m]
            ctx.emit("merge", {"node": m, "sha": c.tip, "branch": ns.branch, "head": ns.head, "empty": True},
                     derived_from=_cites(ns))
            worktrees.remove(ctx, m, str(ctx.root / ns.worktree))
            ctx.out.line(f"{m}: nothing to merge (the worker changed nothing); accepted at {c.tip[:12]}")
        return Outcome.MERGED
    titles = "; ".join(ctx.dag.by_id[m].title for m in members)
    label = f"node {first}" if len(members) == 1 else f"group {ctx.subject}"
    message = f"merge {label}: {titles}"
    if (sha := _merged_before_crash(ctx)) is not None:
        for m in members:
            ns = c.nodes[m]
            ctx.emit("merge", {"node": m, "sha": sha, "branch": ns.branch, "head": ns.head},
                     source_entity="orchestrate:resume", source_type="repair", derived_from=_cites(ns))
            worktrees.remove(ctx, m, str(ctx.root / ns.worktree))
        ctx.out.always(f"repair: {ctx.subject} was merged ({sha[:12]}) before the runner stopped; recorded it")
        return Outcome.MERGED
    branches = [c.nodes[m].branch for m in changed]
    if moved := _moved_after_judging(ctx, changed):
        return _rework(ctx, moved, Verdict("adherence", 1, "FAIL: the branch moved after its head was judged: "
                                           + "; ".join(_moved_text(ctx, m) for m in moved)))
    heads = [c.nodes[m].head for m in changed]
    worktrees.free_branch(ctx)
    ctx.emit("intent", {"effect": "merge", "node": first, "nodes": members, "branch": " ".join(branches),
                        "head": " ".join(c.nodes[m].head for m in changed), "onto": c.tip})
    env = git.identity_env(ctx.root)
    # The judged shas, never the branch names: a branch a worker (or its leftover child) moves after
    # judging must not carry unjudged commits into the campaign.
    merged = git.merge_tree(ctx.root, c.tip, heads[0]) if len(heads) == 1 and not ctx.dag.checks else None
    if merged is not None:  # (None: checks to run on the merged tree, a group's octopus, or a git before 2.38)
        tree, conflicts = merged
        if conflicts:
            return _conflict(ctx, first, members, branches, conflicts)
        made: str | Outcome = git.commit_tree(ctx.root, tree, [c.tip, heads[0]], message, env=env)
    else:
        made = _merge_in_worktree(ctx, first, members, branches, heads, message, env)
    if isinstance(made, Outcome):
        return made
    if not (merged and _as_judged(ctx, changed, merged[0])) and (unjudged := _unjudged(ctx, changed, made)):
        return _refused(ctx, first, members, Verdict("adherence", 1, "FAIL: the merge would change what no judged diff of "
                                             f"{ctx.subject} changes: {', '.join(unjudged[:10])}"
                                             + (f" and {len(unjudged) - 10} more" if len(unjudged) > 10 else "")
                                             + " (its history brings in other commits, or a campaign check "
                                             "changed the merged tree); nothing was merged"))
    # the merge commit itself, written ahead: the only commit a resume may adopt (what ran between the merge's
    # intent and here, the campaign checks, could have put another there and killed the runner: rv39)
    ctx.emit("intent", {"effect": "advance", "node": first, "sha": made, "onto": c.tip})
    faults.reach("merge")
    _advance(ctx, made, message)
    ctx.emit("result", {"effect": "merge", "node": first, "sha": made})
    faults.reach("merged")
    for m in members:
        ns = c.nodes[m]
        ctx.emit("merge", {"node": m, "sha": made, "branch": ns.branch, "head": ns.head}, derived_from=_cites(ns))
        worktrees.remove(ctx, m, str(ctx.root / ns.worktree))
    ctx.out.line(f"{ctx.subject}: merged into {c.branch} ({made[:12]})")
    return Outcome.MERGED


def _merge_in_worktree(ctx: Context, first: str, members: list[str], branches: list[str], heads: list[str],
                       message: str, env: dict[str, str]) -> str | Outcome:
    """Merge in the integration worktree (detached at the campaign head) and run the campaign checks on the
    merged tree: the merge commit, or the outcome of a refusal. A group lands as one octopus merge: all of
    it or none of it, and never a half-merged campaign branch."""
    c = ctx.campaign
    integ = worktrees.integration(ctx)
    done = git.git(integ, "merge", "--no-ff", "--no-commit", "--no-edit", *heads, check=False, env=env)
    if done.rc != 0:
        conflicts = git.conflicted_paths(integ)
        git.merge_abort(integ)
        if not conflicts and not _heads_conflict(done):
            _halt_unmerged(ctx, done)
        return _conflict(ctx, first, members, branches, conflicts)
    staged = git.out(integ, "write-tree")  # the merge as git made it, before any check ran
    if ctx.dag.checks:
        ns = c.nodes[first]
        with containment.judging(ctx, integ, tuple(members)):  # the nodes' code: what it changes is theirs
            checks = evaluators.check(ctx.dag.checks, integ, log_path=ctx.layout.runs(c.topic) / first /
                                      f"checks-{ns.attempt}.log", env=ctx.runner_tags())
        blamed = [v for m in members if (v := watch.judged_blame(ctx, m))]
        # The checks ran code a worker wrote with the worktree writable, its `.git` link included: the link is
        # checked before any git call there, nothing they left is read again, and the commit is made of the
        # tree staged before they ran, in the repository itself
        worktrees.unlink_foreign_integration(ctx)
        if not (integ / ".git").exists():
            return _refused(ctx, first, members, Verdict("adherence", 1, "FAIL: the campaign checks rewrote the integration "
                                                 "worktree's .git link; nothing was merged"))
        changed = git.out(integ, "write-tree") != staged
        worktrees.scrub_integration(ctx)
        entries = [judge.record(ctx, m, checks)["id"] for m in members]
        if why := judge.cannot_start(checks, "campaign check"):
            ctx.emit("result", {"effect": "merge", "node": first, "aborted": True, "gate": entries[0]})
            judge.environment_stop(ctx, members, why)
            return Outcome.ESCALATE
        if blamed:
            ctx.emit("result", {"effect": "merge", "node": first, "aborted": True, "gate": entries[0]})
            return _rework(ctx, members, Verdict("watch", 1, f"{blamed[0].summary} (the campaign checks ran)"))
        if not checks.ok and not _pre_existing(ctx, checks):
            ctx.emit("result", {"effect": "merge", "node": first, "aborted": True, "gate": entries[0]})
            since = _merged_since(ctx, members)
            return _rework(ctx, members, Verdict(checks.gate, checks.code, "campaign check(s) failed on the merged "
                                                 f"tree: {judge.said(checks)}" + (f"; {since}" if since else ""),
                                                 checks.items, checks.data))
        if changed:
            return _refused(ctx, first, members, Verdict("adherence", 1, "FAIL: the campaign checks changed what was staged "
                                                 "to merge; nothing was merged"))
    else:
        git.merge_abort(integ)  # the worktree goes back to the head: the commit is made of the staged tree
    return git.commit_tree(ctx.root, staged, [c.tip, *heads], message, env=env)


def _heads_conflict(done: Completed) -> bool:
    """Did a failed `git merge` that left no path unmerged still find a conflict? Only the octopus strategy
    does that: when two of a group's heads conflict before the last one, it gives up and git puts the index
    back as it was. Its words are read in the C locale every git call here runs in (git.command)."""
    return "Should not be doing an octopus" in done.stdout + done.stderr


def _halt_unmerged(ctx: Context, done: Completed) -> NoReturn:
    """`git merge` failed without a conflict (a setting git refuses, a full disk, a lock): the environment's
    failure, not the node's, so no attempt is spent on it. It halts naming git's own words, as merge-tree's
    failure does on the other path, with the worktree back at the head; `resume` merges again once it is fixed."""
    try:
        worktrees.scrub_integration(ctx)
    except GitError:  # the merge's failure is the one to report (and resume clears what is left)
        pass
    raise GitError(list(done.cmd), done.rc, done.stdout, done.stderr)


def _refused(ctx: Context, first: str, members: list[str], verdict: Verdict) -> Outcome:
    """A merge made (or staged) but refused: its intent gets its result, as a conflict's does, then rework."""
    ctx.emit("result", {"effect": "merge", "node": first, "aborted": True})
    return _rework(ctx, members, verdict)


def _conflict(ctx: Context, first: str, members: list[str], branches: list[str], conflicts: list[str]) -> Outcome:
    ctx.emit("result", {"effect": "merge", "node": first, "aborted": True, "conflicts": conflicts})
    summary = (f"CONFLICT: merging {', '.join(branches)} onto the campaign head conflicts in "
               f"{', '.join(conflicts) or '?'}")
    return _rework(ctx, members, Verdict("trial-merge", 3, summary))


def _advance(ctx: Context, sha: str, message: str) -> None:
    """Move campaign/<topic> from the head the merge was made on to the merge commit, only if it is still
    there: anything else moved it, and merging on would hide what it did."""
    c = ctx.campaign
    if not git.update_ref(ctx.root, f"refs/heads/{c.branch}", sha, c.tip, reason=f"commit (merge): {message}"):
        now = git.rev_parse(ctx.root, c.branch) or "nothing"
        if now == c.tip:  # not moved, yet not movable: a lock another git process holds or a dead one left
            raise Halted(f"{c.branch} could not be moved from {c.tip[:12]} to the merge commit {sha[:12]}",
                         hint="`orchestrate resume` removes a lock a killed git left behind")
        raise Halted(f"{c.branch} points at {now[:12]}, not at the campaign head {c.tip[:12]} it was merged onto: "
                     "something other than orchestrate moved it",
                     hint=f"`orchestrate gate adherence --topic {c.topic}` names what is on it; put it back "
                          f"(`git update-ref refs/heads/{c.branch} {c.tip}`), then `orchestrate resume`")


def _merged_since(ctx: Context, members: list[str]) -> str:
    """Which nodes were merged onto the campaign head after these members branched: what a check that
    passed on their own trees may have met only on the merged one."""
    c = ctx.campaign
    bases = {c.nodes[m].base for m in members}
    since = [n for n in c.merged if n not in members and c.nodes[n].merge
             and not all(git.is_ancestor(ctx.root, c.nodes[n].merge, b) for b in bases if b)]
    if not since:
        return ""
    return f"merged since {'their' if len(members) > 1 else 'its'} base: {', '.join(since)}"


def _merged_before_crash(ctx: Context) -> str | None:
    """The campaign head when a runner that died after moving the branch to this merge left it there: the very
    commit its write-ahead intent named (a commit id fixes the tree, the parents and the message). Nothing else
    on the branch is adopted, and the merge's own move then finds the branch moved and halts (`_advance`):
    a worker without the sandbox can put a commit with the merge's parents and any tree there while a judged
    node waits (rv36), or the exact merge (rv38); a campaign check can make the exact merge and kill the
    runner (rv39). And nothing is adopted where a process without the sandbox ran in the campaign: it could
    have written the journal's unsealed tail, intent included, before killing the runner (rv40)."""
    sha = left_by_stopped_runner(ctx)
    return sha if sha is not None and all_sandboxed(ctx) else None


def refuse_unadopted(ctx: Context) -> None:
    """The runner stopped between moving the campaign branch to its merge and recording it, in a campaign where
    that merge is not adopted: halt before any attempt starts again, or the move is taken for the work of what
    this run starts or judges next (their attempts failed, the node merged again, and then a halt on adherence)."""
    if (sha := left_by_stopped_runner(ctx)) is None or all_sandboxed(ctx):
        return
    c = ctx.campaign
    raise Halted(f"{c.branch} is at {sha[:12]}, the merge the stopped runner was making, not at {c.tip[:12]}, the "
                 "campaign head it recorded: a node runs without the sandbox, so a worker or a check could have "
                 "written the journal's intent naming that merge; it is not adopted",
                 hint=f"`orchestrate gate adherence --topic {c.topic}` names what is on it; put it back "
                      f"(`git update-ref refs/heads/{c.branch} {c.tip}`), then `orchestrate resume`")


def left_by_stopped_runner(ctx: Context) -> str | None:
    """The merge a runner moved the campaign branch to and stopped before recording it (its advance intent the
    journal's last), or None: what MERGE adopts where every node runs in the sandbox, and only there."""
    c = ctx.campaign
    now = git.rev_parse(ctx.root, c.branch)
    return now if now not in (None, c.tip) and _cut_off(ctx, now) else None


def _cut_off(ctx: Context, sha: str) -> bool:
    """Did a runner die after moving the branch to `sha`: is the journal's last advance intent the one naming
    `sha`, from the tip, with at most the merge's own result after it (a runner killed after writing the result,
    before its transition was recorded: the merge entries held for it were lost)?"""
    for entry in reversed(ctx.recorder.written() if ctx.recorder is not None else []):
        said = entry["context"]
        if entry["kind"] == "result" and said.get("effect") == "merge" and said.get("sha") == sha:
            continue
        if said.get("effect") in ("merge", "advance"):
            return entry["kind"] == "intent" and said.get("effect") == "advance" and said.get("sha") == sha \
                and said.get("onto") == ctx.campaign.tip
    return False


def all_sandboxed(ctx: Context) -> bool:
    """Does every node of the campaign run in the sandbox (and so what judges them: workers/containment.py)?"""
    return all(containment.enabled(ctx, n) for n in ctx.dag.nodes)


def _as_judged(ctx: Context, changed: list[str], tree: str) -> bool:
    """The merge holds exactly the tree one node's head holds, onto the base that node was judged against:
    the merge then changes what its judged diff changes, by identity, and `_unjudged` needs no diff (the
    common case when no other node merged since it branched). The head's tree is read through the kept reader."""
    from orchestrate import git_batch
    ns = ctx.campaign.nodes[changed[0]]
    return len(changed) == 1 and ns.base == ctx.campaign.tip and git_batch.tree_of(ctx.root, ns.head) == tree


def _unjudged(ctx: Context, changed: list[str], made: str) -> list[str]:
    """Paths the merge commit changes on the campaign head that no member's judged diff (its base to its head,
    what the surface gate saw) changes. A node's history can make git merge more than that diff: a merge of
    another node's branch makes that branch's head the merge base, and what was merged since looks removed."""
    c = ctx.campaign
    judged = {path for m in changed for _, path in git.changed_paths(ctx.root, c.nodes[m].base, c.nodes[m].head)}
    return sorted(path for _, path in git.changed_paths(ctx.root, c.tip, made) if path not in judged)


def _moved_after_judging(ctx: Context, members: list[str]) -> list[str]:
    c = ctx.campaign
    return [m for m in members if git.rev_parse(ctx.root, c.nodes[m].branch) not in (c.nodes[m].head, None)]


def _moved_text(ctx: Context, node_id: str) -> str:
    ns = ctx.campaign.nodes[node_id]
    now = git.rev_parse(ctx.root, ns.branch) or "?"
    return f"{ns.branch} was judged at {ns.head[:12]} and now points at {now[:12]} (nothing of it was merged)"


def accepted(ctx: Context) -> str:
    """The first landed node (or group) whose judged head carries an accept verdict. Under the eager schedule
    other nodes land while one is judged, or while a person settles a review divergence: those were not
    judged, and never merge here."""
    c = ctx.campaign
    for n in schedule.landed(ctx):
        if all(c.nodes[m].accepted_at == c.nodes[m].head for m in ctx.dag.group_of(n) if c.nodes[m].status == LANDED):
            return n
    raise AssertionError(f"MERGE entered with no accepted head among {schedule.landed(ctx)}")


def _cites(ns) -> list[str]:
    """A merge cites the accept verdict it carries out (seeds-other §3.8)."""
    return [ns.accept_entry] if ns.accept_entry else []


def _pre_existing(ctx: Context, checks: Verdict) -> bool:
    """Do the failing checks fail on the campaign head alone too? Then the node did not break them."""
    failing = {i.subject for i in checks.failing()}
    stash = [c for c in ctx.dag.checks if c.name in failing]
    probe = ctx.layout.scratch / "probe" / ctx.topic
    if probe.exists():
        git.worktree_remove(ctx.root, probe)
    probe.parent.mkdir(parents=True, exist_ok=True)
    git.worktree_add_detached(ctx.root, probe, ctx.campaign.tip)
    try:
        with containment.judging(ctx, probe):
            alone = evaluators.check(stash, probe, env=ctx.runner_tags())
    finally:
        git.worktree_remove(ctx.root, probe)
    return alone.code == 1 and {i.subject for i in alone.failing()} >= failing


def _rework(ctx: Context, members: list[str], verdict: Verdict) -> Outcome:
    """The merge was refused: every member of what was merging gets another attempt (or gives up)."""
    worst = Outcome.REWORK
    for node_id in members:
        ns = ctx.campaign.nodes[node_id]
        node = ctx.dag.by_id[node_id]
        failures = ns.failures + 1
        feedback = judge.failure_text([verdict])
        decided = judge.next_verdict(node, failures)
        ctx.out.line(f"{node_id}: merge refused ({verdict.summary}); {decided.upper()} "
                     f"({judge.attempt_text(ns.attempt, failures, judge.budget(node))})")
        if decided == "abandon":
            judge.abandon(ctx, node_id, failures, feedback)
            worst = Outcome.ABANDONED if worst is Outcome.REWORK else worst
            continue
        ctx.emit("node", {"node": node_id, "status": REWORK, "failures": failures, "feedback": feedback,
                          "verdict": decided})
        if decided == "escalate":
            worst = Outcome.ESCALATE
    return worst
