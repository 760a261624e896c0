"""Other nodes' worktrees, after a worker that ran without the sandbox returns (DESIGN §14.2).

Without the sandbox a worker can write anywhere the user can, into a sibling's worktree too, and nothing
on disk says which of two workers running at once wrote a file: the sibling would be blamed for it (its
gates fail on the foreign file, or its leftover commit carries it and its surface gate fails). So such a
worker runs alone (workers/local.py: it starts when nothing else runs, nothing starts while it runs, and
the next worker starts only after its return is settled here); then every change to another node's
worktree is its doing. When it returns, every other node worktree of the campaign holding work that is
waiting or settled is compared with what orchestrate recorded:

- a node queued for a --jobs slot: its base (for an attempt resumed after a surface-exceed freeze, the
  head it froze at);
- a node whose worker returned (LANDED with exit 0, awaiting its gates, or frozen): its recorded head;
- in each: HEAD at that commit, on the node's branch (detached for a sandboxed attempt), the branch at
  that commit, `git status` empty, and the `.git` file and admin dir still this repository's.

A landed node whose judging reads none of its worktree's files (no evaluators, gate plugins, LOOPS_WITH
group, configured project evaluators or premise left to re-check: engine/judge.py `reads_files`) is
compared by its branch alone: it is judged and merged from its recorded commit, and its worktree is
cleaned before anyone reuses it (workers/pool.py), so a write into its files reaches nothing. Comparing
its files would cost a stat of every file of every such sibling at every return (a layer of L nodes on
a repository of F files: L*L/2*F stats).

A difference fails the returned worker's attempt, naming the sibling, its worktree and the paths; the
sibling's worktree is put back to its recorded commit (a forced checkout and `git clean -ffdx`; made
anew when its git link was broken), so the sibling is judged on what it made.

Not compared: worktrees a worker runs in (there are none but with `unsandboxed: parallel` or the Dask
executor; then every worker running without the sandbox is blamed, as the shared git dir's watch does),
a person's worktree (handwork: they may still be at work in it), attempts that already failed (their
verdict never reads the worktree), other campaigns' worktrees (each runner serialises and compares its
own), and files git ignores (not in `git status`; they go when a worktree is put back). A worker that
crafts a sibling's index (`--assume-unchanged`, forged stat data) can hide a change from `git status`:
against that only the sandbox holds.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrate import git, git_files, stamps
from orchestrate.errors import GitError
from orchestrate.recorder.campaign import DISPATCHED, LANDED
from orchestrate.workers import converted, handwork, pool

SHOWN = 10  # paths named per worktree; the rest are counted
FAILED = "; its attempt failed"  # how a blame ends (engine/watch.py words it the same way)


@dataclass(frozen=True)
class Kept:
    """What a sibling's worktree must be: `sha` checked out on `branch` (detached: a sandboxed attempt's),
    nothing changed."""
    node: str
    path: Path
    where: str  # the worktree as the journal records it (relative to the project)
    sha: str
    branch: str
    detached: bool
    files: bool = True  # False: only the branch matters (see the module's docstring)
    cleared: bool = False  # a returned node's, cleared for judging: its index is orchestrate's (converted.py)

    @property
    def ref(self) -> str:
        return f"refs/heads/{self.branch}"


class Branches:
    """The campaign's node branches, read (one git process) only when a comparison needs one: an attached
    HEAD at the recorded commit already says its branch is there."""

    def __init__(self, root: Path, topic: str):
        self.root, self.topic, self._refs = root, topic, None

    def get(self, ref: str) -> str | None:
        if self._refs is None:
            self._refs = git.refs(self.root, f"refs/heads/node/{self.topic}/")
        return self._refs.get(ref)


def check(ctx, node_id: str) -> str:
    """After `node_id`'s attempt returned: compare its siblings' worktrees, put back what changed, and
    return why its attempt failed ("" when nothing changed, or when it ran in the sandbox: other
    worktrees were read-only to it). Workers still running without the sandbox share the blame through
    ctx.blamed, which fails each attempt when it returns."""
    if ctx.campaign.nodes[node_id].objects or handwork.is_human(ctx.dag, node_id):
        return ""
    kept = _kept(ctx, node_id)
    if not kept:
        return ""
    common = git.git_common_dir(ctx.root)
    branches = Branches(ctx.root, ctx.topic)
    live = getattr(ctx.executor, "live", {})
    suspects = [node_id] + sorted(n for n, run in live.items() if n != node_id and run.request.sandbox is None)
    found, victims = [], []
    for k in kept:
        if not k.files:  # its files went unread: if its judging comes to read them, `before_reading` compares
            ctx.unread.setdefault((k.node, k.sha), set()).update(suspects)
        changed = _changed(k, common, branches, ctx.root)
        if changed:
            found.append(_restored(ctx, k, changed, common, branches))
            victims.append(k.node)
    if not found:
        return ""
    what = "; ".join(found)
    ctx.emit("guard", {"nodes": suspects, "siblings": victims, "changes": found})
    ctx.out.always(f"{', '.join(suspects)}: wrote into another node's worktree: {what}")
    for other in suspects[1:]:
        ctx.blamed[other] = _blame(ctx.blamed.get(other, ""), other, what)
    return _blame(ctx.blamed.pop(node_id, ""), node_id, what)


def before_reading(ctx) -> None:
    """Before judging reads landed nodes' files (engine/handlers/reconcile.py): a node whose files went
    uncompared while workers without the sandbox returned (nothing was to read them then) but whose judging
    now reads them (config.yaml or the DAG changed since) is compared in full first, and put back if its
    files changed. The workers that ran meanwhile are named; none is failed: which of them wrote is not known."""
    if not ctx.unread:
        return
    reads, common, branches = ctx.reads_files(), git.git_common_dir(ctx.root), Branches(ctx.root, ctx.topic)
    for (node, sha), writers in list(ctx.unread.items()):
        ns = ctx.campaign.nodes.get(node)
        if ns is not None and ns.status == LANDED and ns.head == sha and (
                not reads(node) or (node, ns.attempt) in getattr(ctx, "evaluating", {})):
            continue  # still unread (or read by its evaluators now: never put back under them); asked again later
        del ctx.unread[(node, sha)]
        if ns is None or ns.status != LANDED or ns.head != sha:
            continue
        k = Kept(node, ctx.root / ns.worktree, ns.worktree, sha, ns.branch, bool(ns.objects), cleared=True)
        if changed := _changed(k, common, branches, ctx.root):
            found = _restored(ctx, k, changed, common, branches)
            ctx.emit("guard", {"nodes": sorted(writers), "siblings": [node], "changes": [found]})
            who = f"by {' or '.join(sorted(writers))}" if writers else "before this runner resumed the campaign"
            ctx.out.always(f"warning: {found}; written {who}, while its files were not compared (nothing was to "
                           "read them then)")


def unread_after_resume(ctx) -> None:
    """A runner that resumes a campaign cannot know which landed nodes' files its predecessor left
    uncompared: every landed node is compared in full before judging reads its files."""
    for ns in ctx.campaign.nodes.values():
        if ns.status == LANDED and ns.rc in (0, None) and ns.worktree and ns.head:
            ctx.unread.setdefault((ns.id, ns.head), set())


def _restored(ctx, k: Kept, changed: str, common: Path, branches: Branches) -> str:
    """Put `k`'s worktree back; the sentence that says what changed and whether it could be put back."""
    put = f"put back to {k.sha[:12]}" if _put_back(ctx, k, common, branches) else "could not be put back"
    return f"node {k.node}'s worktree {k.where} changed: {changed} ({put})"


def _kept(ctx, node_id: str) -> list[Kept]:
    """The worktrees holding waiting or settled work of other nodes, each with the commit it must hold."""
    queued = {r.node for r in getattr(ctx.executor, "queue", ())}
    reads = None  # which landed nodes' judging reads their files: asked once a landed sibling is found
    kept = []
    for ns in ctx.campaign.nodes.values():
        if ns.id == node_id or not ns.worktree or not ns.branch:
            continue
        if (ns.status == LANDED and ns.rc in (0, None)) or (ns.status == DISPATCHED and ns.freeze):
            if (ns.id, ns.attempt) in getattr(ctx, "evaluated", {}):  # judged ahead (the eager schedule): what
                continue  # its evaluators left is theirs, and their verdict was read before this worker returned
            sha, cleared = ns.head, not ns.freeze
            reads = reads or ctx.reads_files()
            files = bool(ns.freeze) or reads(ns.id)  # a frozen worker goes on in it
        elif ns.status == DISPATCHED and ns.id in queued:  # a resumed attempt's process ran before: its head
            sha = ns.head if ns.spawned >= ns.attempt and ns.head else ns.base
            files, cleared = True, False
        else:
            continue
        if sha and not handwork.is_human(ctx.dag, ns.id):  # a person may still be at work in theirs
            kept.append(Kept(ns.id, ctx.root / ns.worktree, ns.worktree, sha, ns.branch, bool(ns.objects), files,
                             cleared))
    return kept


def _changed(k: Kept, common: Path, branches: Branches, root: Path | None = None) -> str:
    """What differs from what `k` must be, or "". A worktree found unchanged whose files, index, HEAD and
    branch have not been written since (orchestrate.stamps) is not asked of git again: a layer of L
    landed nodes was L*L/2 `git status` processes, one per sibling per return."""
    if not k.files:
        return _by_branch(k, common, branches)
    stamp = _stamp(k, common)  # its .git link and what that names are in it: `git_files.linked` held for that stamp
    if stamp is not None and _clean.get(str(k.path)) == stamp:
        return ""
    if not k.path.is_dir():
        return "it was removed"
    if not git_files.linked(k.path, common):  # git would run in whatever repository the link names: never ask it
        return "its .git link or admin dir was replaced"
    found = _asked(k, branches) or (_cleaned_alike(k, root) if k.cleared else "")
    if not found and stamp is not None:  # taken before git looked: a write since shows in the next stamp
        if len(_clean) > 4096:
            _clean.clear()
        _clean[str(k.path)] = stamp
    return found


# Worktrees git found as they must be, with the stamp taken just before: (what it must hold, files, git's).
_clean: dict[str, tuple] = {}
STAMPED = 5000  # tracked files, at most, of a worktree whose stamp stands for `git status`


def _entries(index: Path) -> int:
    """How many entries a git index holds (its header: signature, version, count), or a lot if unreadable."""
    try:
        head = git_files.small(index, 12)
    except OSError:  # gone, or not a file (a worker's FIFO would block a plain read)
        return 1 << 31
    return int.from_bytes(head[8:12], "big") if len(head) == 12 and head[:4] == b"DIRC" else 1 << 31


def _stamp(k: Kept, common: Path) -> tuple | None:
    """What `k`'s worktree holds and the stat stamps of its files, its index and HEAD, and its branch (a
    detached sibling's branch is read by git: it is not HEAD's). None past STAMPED files: a walk in Python
    costs more than `git status` there (20,000 files: 44 ms against 28-38 ms)."""
    if k.detached:
        return None
    admin = git.admin_dir(k.path)
    if admin is None or _entries(admin / "index") > STAMPED:
        return None
    files = stamps.tree(k.path, admin / "HEAD", admin / "index", admin / "gitdir", admin / "commondir",
                        common / k.ref, common / "packed-refs")
    return None if files is None else (k.sha, k.branch, files)


def _asked(k: Kept, branches: Branches) -> str:
    try:
        sha, branch, paths = git.head_and_changes(k.path)
    except GitError as exc:
        return f"git cannot read it ({exc.said()})"
    found = []
    if sha != k.sha:
        found.append(f"HEAD moved from {k.sha[:12]} to {(sha or 'no commit')[:12]}")
    want = None if k.detached else k.branch
    if branch != want:
        found.append(f"HEAD is on {branch or 'no branch'}, not {want or 'a detached HEAD'}")
    if (branch != want or k.detached) and branches.get(k.ref) != k.sha:  # else HEAD's check covered the branch
        found.append(f"branch {k.branch} moved")
    if paths:
        more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
        found.append(", ".join(paths[:SHOWN]) + more)
    return "; ".join(found)


def _cleaned_alike(k: Kept, root: Path | None) -> str:
    """Files `git status` passed over though they hold other bytes than their blob (git compares whole seconds,
    and after conversions: `$Id: <code> $` under `ident`), found against the worktree's index (orchestrate's,
    installed when its node was cleared for judging) to the nanosecond, and removed for the put-back to write
    (rv34); "" when none."""
    admin = git.admin_dir(k.path)
    if admin is None:
        return "its git admin dir is not known"
    try:
        stale = converted.remove_changed(k.path, (admin / "index").read_bytes(), len(k.sha) // 2, root or k.path)
    except OSError as exc:
        return f"its files could not be compared ({exc.strerror or exc})"
    more = f" and {len(stale) - SHOWN} more" if len(stale) > SHOWN else ""
    return f"{', '.join(stale[:SHOWN])}{more} (other bytes that git cleans to the same blob)" if stale else ""


def _by_branch(k: Kept, common: Path, branches: Branches) -> str:
    """What differs in a sibling whose files nothing reads: what git acts on when it is merged, removed or
    reused (its `.git` link, its HEAD, its branch). Once found as it must be, six `stat`s stand for it
    until one of those files is written (`_seen`)."""
    seen = _seen.get(str(k.path))
    if seen is not None and seen[0] == _git_reads(k, common, seen[1]):
        return ""
    if not k.path.is_dir():
        return "it was removed"
    admin = git.admin_dir(k.path)
    stamp = _git_reads(k, common, admin) if admin else None  # before the reads: a write since shows next time
    if not git_files.linked(k.path, common):
        return "its .git link or admin dir was replaced"
    found = [] if _head_at(k) else [f"HEAD is not {'at ' + k.sha[:12] if k.detached else 'on ' + k.branch}"]
    if not _branch_at(k, common, branches):
        found.append(f"branch {k.branch} moved")
    if not found and stamp is not None:
        if len(_seen) > 4096:
            _seen.clear()
        _seen[str(k.path)] = (stamp, admin)
    return "; ".join(found)


# Siblings compared by branch found as they must be: worktree -> (the stamp of what git reads there, admin dir).
_seen: dict[str, tuple] = {}


def _git_reads(k: Kept, common: Path, admin: Path) -> tuple | None:
    return stamps.files(k.path / ".git", admin / "gitdir", admin / "commondir", admin / "HEAD", common / k.ref,
                        common / "packed-refs")


def _head_at(k: Kept) -> bool:
    """Does the worktree's HEAD file name its branch (or, detached, its recorded commit)?"""
    try:
        text = git_files.small(git.admin_dir(k.path) / "HEAD", 256).decode().strip()
    except (OSError, TypeError, UnicodeDecodeError):
        return False
    return text == (k.sha if k.detached else f"ref: {k.ref}")


def _branch_at(k: Kept, common: Path, branches: Branches) -> bool:
    """Is `k`'s branch at `k.sha`? Its loose ref file read first (one read, no process); git decides
    anything else (a packed ref, a symbolic one, none)."""
    try:
        if git_files.small(common / k.ref, 128).strip().decode() == k.sha:
            return True
    except (OSError, UnicodeDecodeError):
        pass
    return branches.get(k.ref) == k.sha


def _put_back(ctx, k: Kept, common: Path, branches: Branches) -> bool:
    """The worktree at `k.sha` on its branch (or detached) with nothing else in it: checked out again, or,
    when its git link is broken, removed and added anew. False when git refused."""
    _clean.pop(str(k.path), None)
    _seen.pop(str(k.path), None)
    try:
        if not k.files and k.path.is_dir() and git_files.linked(k.path, common) and _head_at(k):
            git.update_ref(ctx.root, k.ref, k.sha, reason=f"put back node {k.node}'s branch")  # its files: unread
            return True
        if k.path.is_dir() and git_files.linked(k.path, common):
            if k.detached and branches.get(k.ref) != k.sha:  # an attached checkout -B moves the branch itself
                git.update_ref(ctx.root, k.ref, k.sha, reason=f"put back node {k.node}'s branch")
            # its admin dir first: judging wrote it (an index that is a link to the user's would be written
            # through by the checkout, rv68); one that cannot be cleared is removed with the worktree below
            if _admin_cleared(k.path) and pool.rebase(k.path, k.sha, None if k.detached else k.branch):
                return True
        pool.discard(ctx.root, k.path)
        pool.forget(k.path)  # never pooled: the record of how orchestrate made it no longer holds
        git.update_ref(ctx.root, k.ref, k.sha, reason=f"put back node {k.node}'s branch")
        if k.detached:
            git.worktree_add_detached(ctx.root, k.path, k.sha)
        else:
            git.worktree_add(ctx.root, k.path, k.branch, "", new_branch=False)
    except GitError:
        return False
    return True


def _blame(before: str, node: str, what: str) -> str:
    """The failure text of `node`'s attempt, after what the shared-git-dir watch already said, if anything."""
    if before.endswith(FAILED):
        return f"{before.removesuffix(FAILED)}; {what}{FAILED}"
    return f"node {node}: while it ran, {what}{FAILED}"


def _admin_cleared(path: Path) -> bool:
    try:
        return pool.scrub_admin(path) == ""
    except OSError:
        return False
