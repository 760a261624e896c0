"""How one worker attempt is contained: whether it runs in the sandbox, and what it may write there.

The setting is the node's `sandbox:` (or the DAG's `defaults:`), else `sandbox:` in `.ledger/config.yaml`,
else `auto`. In the sandbox a worker may write its worktree, its worktree's admin dir (HEAD, index),
a private object store, its run folder (return, outputs and usage files), a private /tmp, and the
configured caches (`$HOME` unless `sandbox: {writable: [...]}` says otherwise). Everything else,
the user's checkout, `.ledger/`, other worktrees, the shared git config, hooks, refs and objects,
is read-only, and a PID namespace ends whatever it started when it returns. What judges its work in a
worktree (evaluators, checks, tripwires) runs in the same sandbox, writing that worktree alone (`judging`).

Without the sandbox a worker runs alone (no other worker at the same time) unless `unsandboxed:
parallel` says otherwise, in the DAG's `defaults:` or as `sandbox: {unsandboxed: parallel}` in the
config: workers/siblings.py says why.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from orchestrate import config, git, git_files
from orchestrate.dag.model import UNSANDBOXED
from orchestrate.workers import private_objects, sandbox
from orchestrate.workers.local import LocalExecutor

CONFIG_KEYS = ("mode", "writable", "unsandboxed", "keep_ignored")


@dataclass(frozen=True)
class Jail:
    writable: tuple[str, ...]
    readable: tuple[str, ...]  # the project and its git dir, visible even when they live under /tmp
    objects: str  # the private object store, brought in after the worker returns
    env: dict
    admin: str  # the worktree's own admin dir in the shared git dir (its HEAD and index)


def mode(ctx, node) -> str:
    """auto, bwrap or none, for this node."""
    if getattr(node, "sandbox", None):
        return node.sandbox
    return campaign_mode(ctx)


def campaign_mode(ctx) -> str:
    """The config's mode, for nodes without a `sandbox:` of their own (read anew: a person may edit it)."""
    return _configured(ctx.layout.ledger)[0]


def runs_alone(ctx) -> bool:
    """Does a worker without the sandbox run with no other worker (workers/siblings.py says why)? The DAG's
    `defaults: {unsandboxed: serial|parallel}`, else `sandbox: {unsandboxed: ...}` in `.ledger/config.yaml`,
    else serial. Only the local executor serialises: a Dask worker runs in a task folder on its own machine."""
    chosen = getattr(ctx.dag, "unsandboxed", None) or _configured(ctx.layout.ledger)[2]
    return chosen != "parallel" and isinstance(ctx.executor, LocalExecutor)


def keeps_ignored(ctx) -> bool:
    """Do ignored files (build caches) stay in a pooled working copy from one node to the next (workers/pool.py)?
    The DAG's `defaults: {keep_ignored: true}`, else `sandbox: {keep_ignored: true}` in `.ledger/config.yaml`,
    else no: what one worker leaves, even ignored, is never seen by the next."""
    chosen = getattr(ctx.dag, "keep_ignored", None)
    return _configured(ctx.layout.ledger)[3] if chosen is None else chosen


def enabled(ctx, node) -> bool:
    warned = getattr(ctx, "_sandbox_warned", False)

    def warn(reason: str) -> None:
        if not warned:
            alone = ", one at a time" if runs_alone(ctx) else ""
            ctx.out.always(f"warning: workers run without the sandbox{alone}: {reason} "
                           "(set `sandbox: none` to silence this, or install bubblewrap)")
            ctx._sandbox_warned = True
    return sandbox.resolve(mode(ctx, node), warn)


def jail(ctx, node_id: str, attempt: int, worktree: Path, run_dir: Path) -> Jail:
    common = git.git_common_dir(ctx.root)
    objects = ctx.layout.scratch / "objects" / ctx.topic / f"{node_id}+{attempt}"
    objects.mkdir(parents=True, exist_ok=True)
    admin = git.admin_dir(worktree)
    extra = _configured(ctx.layout.ledger)[1]
    writable = [str(worktree), str(admin), str(objects), str(run_dir), *extra]
    return Jail(tuple(dict.fromkeys(writable)), (str(ctx.root), str(common), *_home_read_only(ctx.root, writable)),
                str(objects), private_objects.env(objects, common / "objects"), str(admin))


def _home_read_only(root: Path, writable: list[str]) -> list[str]:
    """Your git config, attributes and excludes in $HOME and what that config names, and your start-up files
    (startup_files.existing), where they exist: read-only in the sandbox, though $HOME is writable. A worker's
    `git config --global`, or an installer's line appended to ~/.bashrc, fails there, as its own; the watch
    could not tell whose it was, and failed every attempt running beside it (rv74). One that does not exist
    yet is left to the watch: a bind would make it, empty, in your $HOME. Only files and folders: a device
    (a start-up file linking to /dev/null, GIT_CONFIG_GLOBAL=/dev/null) bound so is unusable (bwrap's binds
    are nodev), and every `> /dev/null` in the sandbox would fail."""
    from orchestrate.workers import git_named, startup_files
    out = []
    for path in [*git_named.home_files(root), *startup_files.existing()]:
        real = os.path.realpath(path)
        # never one holding a writable folder (a config naming $HOME itself as its hooks path)
        if (os.path.isfile(real) or os.path.isdir(real)) and not any(w == real or w.startswith(real.rstrip("/") + "/")
                                             for w in map(os.path.realpath, writable)):
            out.append(real)
    return list(dict.fromkeys(out))


@contextmanager
def judging(ctx, worktree: Path, nodes: tuple[str, ...] = ()):
    """`_judging`, then, when it started anything and this is the loop's thread (evaluators run ahead in
    threads are looked after by their caller), the engine's look at what no worker may change (`ctx.judged`:
    engine/watch.py after_judging): judging runs a worker's code, which the sandbox leaves `$HOME` to write,
    and without it the shared git dir; what it changed is put back and blamed on `nodes`, whose code it is,
    and on the workers running (rv34, rv35)."""
    import threading
    ran = ctx.judge_runs
    with _judging(ctx, worktree):
        yield
    hook = getattr(ctx, "judged", None)
    if hook is not None and ctx.judge_runs != ran and threading.current_thread() is threading.main_thread():
        hook(list(nodes), ran)


def judged_in_sandbox(ctx) -> bool:
    """Does judging run in the sandbox (`_judging`): whenever any node of the campaign does, or did."""
    key, cached = campaign_mode(ctx), getattr(ctx, "_judging_sandboxed", None)
    if cached is None or cached[0] is not ctx.dag or cached[1] != key:  # the DAG itself: an id can be reused
        # also once a node's worker ran in the sandbox (it had a private object store, `objects`): an edit of the
        # plan or the config that turns it off leaves code sandboxed workers wrote in worktrees and the head
        ctx._judging_sandboxed = (ctx.dag, key, any(enabled(ctx, n) for n in ctx.dag.nodes)
                                  or any(ns.objects for ns in ctx.campaign.nodes.values()))
    return ctx._judging_sandboxed[2]


def _judging(ctx, worktree: Path):
    """What judging runs in `worktree` (evaluators, campaign checks, tripwires, coherence's project evaluators,
    guardrail commands: code a worker may have written) runs in the sandbox whenever any node of the campaign
    does or did: a worktree can hold a sandboxed node's code whoever's judging runs there (a pending node's
    tripwires in a landed one's, the campaign head in the integration worktree). It may write that worktree,
    its own admin dir (the index `git status` refreshes) and the configured caches; not the object store (a
    `git add`, `git stash`, `git commit` there fails), not another node's
    worktree, not the user's checkout; and nothing it starts outlives it (the PID namespace)."""
    from orchestrate import proc
    if not judged_in_sandbox(ctx):
        return _tagged_judging(ctx)
    common = git.git_common_dir(ctx.root)  # read from the checkout: no git process per evaluator run
    # its admin dir (index, HEAD), as its worker had; not the integration worktree's, whose HEAD orchestrate reads;
    # none once the worktree's `.git` no longer names it (judging before rewrote the link: it would name the user's
    # git dir, to be bound writable here, rv57)
    own = git.admin_dir(worktree) if Path(worktree).resolve() != ctx.layout.integration(ctx.topic).resolve() \
        and git_files.linked(Path(worktree), common) else None
    writable = tuple(dict.fromkeys([str(worktree), *([str(own)] if own else []), *_configured(ctx.layout.ledger)[1]]))
    readable = (str(ctx.root), str(common), *_home_read_only(ctx.root, list(writable)))

    def wrap(argv, cwd):
        ctx.judging_ran()
        return sandbox.wrap(argv, cwd=cwd or worktree, writable=writable, readable=readable)
    return proc.confining(wrap)


@contextmanager
def _tagged_judging(ctx):
    """Judging without the sandbox: its commands carry a tag of their own, and what is still alive with it
    when this judging ends (a `setsid` leftover that would go on writing a worktree while the campaign
    checks or the next judging run) is killed then, not when the run rests. Other judging running at the
    same time (eager) is spared: it carries another tag."""
    import secrets

    from orchestrate import proc, reaping
    tag, started = secrets.token_hex(8), proc.unconfined()
    with proc.tagged({"ORCH_JUDGING": tag}):
        try:
            yield
        finally:
            if proc.unconfined() != started:  # something ran (here, or in other judging): look
                ctx.judging_ran()
                reaping.kill_tagged({"ORCH_JUDGING": tag}, orphans=False)


def seals_checkout(ctx, jail: Jail | None) -> bool:
    """Does a worker in `jail` see the user's checkout read-only: its files, and its HEAD, index and refs
    in the git dir? In the sandbox it does, unless a configured writable folder lies inside one of them
    (orchestrate's `.scratch/` and the worktree's own admin dir aside: the checkout's `git status` never
    reads them) or holds one of them deeper than the read-only binds (workers/sandbox.py: the deeper bind
    wins)."""
    if jail is None:
        return False
    real = lambda p: Path(p).resolve()  # noqa: E731 - as bwrap binds them: links followed
    under = lambda a, b: a == b or b in a.parents  # noqa: E731
    # the checkout, and its git dir's HEAD and index (in the common dir when the checkout is a linked worktree)
    guarded = [real(ctx.root), real(git.admin_dir(ctx.root) or Path(ctx.root) / ".git")]
    readable = [real(r) for r in jail.readable]
    own = [real(ctx.layout.scratch), real(jail.admin)]
    for path in (real(w) for w in jail.writable):
        if any(under(path, o) for o in own):
            continue
        for guard in guarded:
            if under(path, guard):
                return False  # writable inside the checkout or its git dir
            if under(guard, path) and not any(under(guard, r) and under(r, path) and r != path for r in readable):
                return False  # holds it, and no read-only bind between them covers it
    return True


def settle(ctx, ns) -> None:
    """After a sandboxed attempt: bring its objects in, then move its branch from the base to the head the
    worktree holds (a compare-and-swap: the branch can only have stayed at the base)."""
    common = git.git_common_dir(ctx.root)
    private_objects.bring_in(ctx.root, Path(ns.objects), common / "objects")


def _configured(ledger: Path | None) -> tuple[str, list[str], str, bool]:
    """(mode, writable folders, unsandboxed, keep_ignored) from `.ledger/config.yaml`'s `sandbox:`."""
    found = config.read(ledger, "sandbox")
    value = found.value
    home = [os.path.expanduser("~")]
    if value is None:
        return "auto", home, "serial", False
    if isinstance(value, str):
        if value not in sandbox.MODES:
            found.refuse("sandbox", found.line, f"`{value}` is not a sandbox setting: use {', '.join(sandbox.MODES)}")
            return "auto", home, "serial", False
        return value, home, "serial", False
    if not isinstance(value, dict):
        found.refuse("sandbox", found.line,
                     "expected auto, bwrap, none, or {mode: ..., writable: [...], unsandboxed: ..., keep_ignored: ...}")
        return "auto", home, "serial", False
    at = lambda key: value.key_line(key) if hasattr(value, "key_line") else found.line  # noqa: E731
    for key in value:
        if key not in CONFIG_KEYS:
            found.refuse(f"sandbox.{key}", at(key), f"unknown key; keys: {', '.join(CONFIG_KEYS)}")
    chosen = value.get("mode", "auto")
    if chosen not in sandbox.MODES:
        found.refuse("sandbox.mode", at("mode"), f"`{chosen}` is not a sandbox setting: use {', '.join(sandbox.MODES)}")
        chosen = "auto"
    writable = value.get("writable", home)
    if not isinstance(writable, list) or not all(isinstance(w, str) and w.strip() for w in writable):
        found.refuse("sandbox.writable", at("writable"), "expected a list of folders")
        writable = home
    alone = value.get("unsandboxed", "serial")
    if alone not in UNSANDBOXED:
        found.refuse("sandbox.unsandboxed", at("unsandboxed"),
                     f"`{alone}` is not an unsandboxed setting: use {', '.join(UNSANDBOXED)}")
        alone = "serial"
    keep = value.get("keep_ignored", False)
    if not isinstance(keep, bool):
        found.refuse("sandbox.keep_ignored", at("keep_ignored"), f"`{keep}` is not true or false")
        keep = False
    return chosen, [os.path.expanduser(w) for w in writable], alone, keep
