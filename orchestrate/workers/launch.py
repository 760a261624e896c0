"""Starting one worker attempt: worktree (unless the same attempt resumes), brief, environment, executor."""
from __future__ import annotations

from orchestrate.atomic import write_atomic
from orchestrate.engine import plugin_gates as plugingates
from orchestrate.recorder.campaign import DISPATCHED, INVALIDATED, PENDING, REWORK
from orchestrate.workers import brief, containment, discovery, fingerprint, handwork, worktrees
from orchestrate.workers.local import LocalExecutor, WorkRequest


def start(ctx, node_id: str, base: str, *, resume_attempt: bool = False, extra_env: dict[str, str] | None = None) -> None:
    """Create the node's worktree (unless resuming the same attempt), write its brief, start its worker."""
    c = ctx.campaign
    ns = c.nodes[node_id]
    node = ctx.dag.by_id[node_id]
    command = discovery.command(ctx, node_id)  # before any effect: a vanished worker plugin changes nothing
    ctx.blamed.pop(node_id, None)  # an earlier attempt's, or its judging's, which its verdict never read (rv35)
    human = handwork.is_human(ctx.dag, node_id)
    jailed = not human and isinstance(ctx.executor, LocalExecutor) and containment.enabled(ctx, node)
    prior = ns.prior
    if resume_attempt:
        attempt, branch, path = ns.attempt, ns.branch, ctx.root / ns.worktree
        base = ns.base
        jailed = jailed and bool(ns.objects)  # a resumed attempt keeps the way it started
    else:
        prior = {k: getattr(ns, k) for k in PRIOR}
        if ns.status not in WAITING:  # an attempt a crash cut off, replaced: it is over, as after a rework
            prior["status"] = REWORK
        attempt, branch, path = worktrees.create(ctx, node_id, ns.attempt + 1, base, detached=jailed)
    run_dir = ctx.layout.runs(c.topic) / node_id
    run_dir.mkdir(parents=True, exist_ok=True)
    jail = containment.jail(ctx, node_id, attempt, path, run_dir) if jailed else None
    return_file = run_dir / f"return-{attempt}.json"
    # this run's report only: what an earlier run of the same attempt (frozen and now resumed, or stopped by the
    # environment and run again) reported was journalled with its result, and would be read, and counted, again
    brief.usage_path(run_dir, attempt).unlink(missing_ok=True)
    brief_path = run_dir / f"brief-{attempt}.md"
    write_atomic(brief_path, brief.brief_text(node, topic=c.topic, attempt=attempt, worktree=path, branch=branch,
                                           base=base, return_file=return_file, brief_dir=ctx.brief_dir,
                                           feedback=ns.feedback, checks=ctx.dag.effective_checks(node_id),
                                           plugin_gates=tuple(g.name for g in plugingates.for_node(ctx.dag, node_id)),
                                           related=_related(ctx.dag, node_id)))
    env = brief.worker_env(node, topic=c.topic, attempt=attempt, worktree=path, branch=branch, base=base,
                           brief=brief_path, return_file=return_file)
    env.update(ctx.runner_tags())
    env.update(extra_env or {})  # e.g. what the node may still spend (engine/budget.py): workers may not import the engine
    if jail is not None:
        env.update(jail.env)
    ctx.emit("node", {"node": node_id, "status": DISPATCHED, "attempt": attempt, "branch": branch,
                      "worktree": str(path.relative_to(ctx.root)), "base": base, "freeze": None, "rc": None,
                      "objects": jail.objects if jail else "", "prior": prior, "env_error": ""})
    if human:
        handwork.open_seam(ctx, node_id, worktree=path, branch=branch, brief=brief_path, return_file=return_file)
        return
    request = WorkRequest(node_id, attempt, command, path, env, run_dir / f"attempt-{attempt}.log",
                          return_file, float(node.timeout), sandbox=jail.writable if jail else None,
                          readable=jail.readable if jail else (), alone=jail is None and containment.runs_alone(ctx))
    ctx.emit("intent", {"effect": "worker-start", "node": node_id, "attempt": attempt, "command": command,
                        "log": str(request.log)})
    before_spawn(ctx, node_id, sealed=containment.seals_checkout(ctx, jail))
    ctx.launching = node_id
    try:
        ctx.executor.start(request)
    finally:
        ctx.launching = ""
    if node_id in getattr(ctx.executor, "live", {node_id: None}):
        ctx.out.line(f"{node_id}: started attempt {attempt} on {branch}")
    else:  # no --jobs slot is free: not an attempt until its process starts (the spawn hook says so)
        alone = request.alone or any(r.request.alone for r in ctx.executor.live.values())
        why = "workers without the sandbox run one at a time" if alone else "waiting for a free --jobs slot"
        ctx.out.line(f"{node_id}: queued attempt {attempt} on {branch} ({why})")


def before_spawn(ctx, node_id: str, *, sealed: bool) -> None:
    """What the watch (engine/watch.py) needs before `node_id`'s worker starts: whether it can write the
    user's checkout, and if it can, a look at the checkout to tell its changes from what was there."""
    if sealed:
        ctx.sealed.add(node_id)
    else:
        ctx.sealed.discard(node_id)
        fingerprint.look_before_start(ctx.watch, ctx.root)


# What a node goes back to when the attempt it was given never ran, or the environment stopped it.
WAITING = (PENDING, REWORK, INVALIDATED)
PRIOR = ("status", "attempt", "branch", "worktree", "base", "head", "rc", "log", "objects", "spawned")


def never_ran(ns) -> bool:
    """A DISPATCHED node whose attempt is still queued: no process of it was ever started."""
    return ns.status == DISPATCHED and not ns.freeze and bool(ns.prior) and ns.spawned < ns.attempt


def roll_back(ctx, node_id: str, *, env_error: str = "") -> None:
    """Undo an attempt that does not count: its worktree and branch go, the node is as it was before it
    (its attempt number too). With `env_error`, the environment stopped it and a person must decide."""
    ns = ctx.campaign.nodes[node_id]
    prior = dict(ns.prior) or {"status": PENDING, "attempt": ns.attempt - 1, "branch": "", "worktree": "",
                               "base": "", "head": "", "rc": None, "log": "", "objects": "", "spawned": 0}
    branch, worktree, head = ns.branch, ns.worktree, ns.head
    if worktree:
        worktrees.remove(ctx, node_id, str(ctx.root / worktree))
    if branch and branch != prior.get("branch"):
        from orchestrate import git
        at = git.rev_parse(ctx.root, branch)
        if at is not None:
            ctx.emit("intent", {"effect": "branch-delete", "node": node_id, "branch": branch, "sha": at})
            git.delete_branch(ctx.root, branch, at)
            ctx.emit("result", {"effect": "branch-delete", "node": node_id, "branch": branch,
                                "head": head or at})
    ctx.emit("node", {"node": node_id, **prior, "prior": {}, "freeze": None, "env_error": env_error})


def _related(dag, node_id: str) -> tuple:
    """Whose briefs this worker should read, each once: its LOOPS_WITH peers, then the spokes it COMPOSES."""
    seen = {node_id}
    found = []
    pairs = [(p, "LOOPS_WITH peer, judged together with you") for p in dag.group_of(node_id)]
    pairs += [(e.dst, "COMPOSES spoke, its gates also judge you") for e in dag.outgoing(node_id)
              if e.predicate == "COMPOSES"]
    for other, how in pairs:
        if other not in seen:
            seen.add(other)
            found.append((dag.by_id[other], how))
    return tuple(found)
