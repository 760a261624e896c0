"""Node branches and worktrees: naming, creation and removal, each effect journalled as intent and result.

Attempt 1 of node D1 in topic t runs on `node/t/D1` in `.scratch/worktrees/t/D1`; a later attempt n
gets `node/t/D1+n` and its own worktree, so no branch is ever moved or deleted before it is merged
(`+` cannot appear in an id, so the names never collide). The working copy itself may be a finished
node's, re-based (workers/pool.py): the branch and the path are still new.
"""
from __future__ import annotations

import os
from pathlib import Path

from orchestrate import git, git_files
from orchestrate.errors import GitError, Halted
from orchestrate.workers import containment, pool, prepared


# Worktree path -> the real path of its admin dir, for the worktrees this campaign holds (as read when each was
# made, or from the journal after a restart): whatever a worker writes there, it never holds campaign/<topic>.
_made_here: dict[str, str] = {}


def learn(entries) -> None:
    """After a restart: the admin dirs the journal says this campaign's worktrees still held were made with."""
    for e in entries:
        if e["kind"] == "result" and e["context"].get("effect") == "worktree-add" and e["context"].get("admin"):
            _made_here[e["context"]["path"]] = os.path.realpath(e["context"]["admin"])
        elif e["kind"] == "result" and e["context"].get("effect") == "worktree-remove":
            _made_here.pop(e["context"].get("path", ""), None)


def branch_name(topic: str, node: str, attempt: int) -> str:
    return f"node/{topic}/{node}" + (f"+{attempt}" if attempt > 1 else "")


def worktree_path(worktrees: Path, node: str, attempt: int) -> Path:
    return worktrees / (node + (f"+{attempt}" if attempt > 1 else ""))


def create(ctx, node: str, attempt: int, base: str, *, detached: bool = False) -> tuple[int, str, Path]:
    """A fresh branch and worktree for `attempt`, or the next free attempt number if a crash used it.

    `detached`: the worktree's HEAD holds the commits and the branch stays at `base` until orchestrate
    moves it after the worker returns: a sandboxed worker cannot write the shared refs."""
    topic = ctx.topic
    while True:
        branch = branch_name(topic, node, attempt)
        path = worktree_path(ctx.layout.worktrees(topic), node, attempt)
        if not git.branch_exists(ctx.root, branch) and not path.exists():
            break
        attempt += 1
    ctx.emit("intent", {"effect": "worktree-add", "node": node, "branch": branch, "path": str(path), "base": base})
    path.parent.mkdir(parents=True, exist_ok=True)
    home = ctx.layout.worktrees(topic)
    if detached:
        git.create_branch(ctx.root, branch, base)
    prepared.supply(ctx.root, home)  # checkouts begun for the batch this node starts in
    reused = pool.take(ctx.root, path, home, base, None if detached else branch,
                       keep_ignored=containment.keeps_ignored(ctx))
    if not reused and detached:
        git.worktree_add_detached(ctx.root, path, base)
    elif not reused:
        git.worktree_add(ctx.root, path, branch, base)
    pool.record(path, home, base)
    admin = git.admin_dir(path)  # read before any worker runs there: its admin dir is then its to write
    if admin is not None:
        _made_here[str(path)] = os.path.realpath(admin)
    ctx.emit("result", {"effect": "worktree-add", "node": node, "branch": branch, "path": str(path),
                        **({"reused": True} if reused else {}), **({"prepared": True} if reused and reused.prepared else {}),
                        **({"admin": str(admin)} if admin else {})})
    return attempt, branch, path


def remove(ctx, node: str, path: str) -> None:
    if not path or not Path(path).exists():
        if path:
            pool.forget(Path(path))  # gone already: its record (and index copy) must not count as held
            _made_here.pop(path, None)
        return
    ctx.emit("intent", {"effect": "worktree-remove", "node": node, "path": path})
    _made_here.pop(path, None)
    home = ctx.layout.worktrees(ctx.topic)
    # no more nodes will start once the campaign closes: then everything goes
    pooled = ctx.campaign.state not in ("CLOSE", "DONE", "HALT") and Path(path).parent == home \
        and pool.keep(ctx.root, Path(path), home)
    if not pooled:
        git.worktree_remove(ctx.root, path)
        pool.forget(Path(path))
    ctx.emit("result", {"effect": "worktree-remove", "node": node, "path": path, **({"pooled": True} if pooled else {})})


def remove_all(ctx, named: list[tuple[str, str]]) -> None:
    """Remove every worktree of `named` ((node, path) pairs), several at once: the campaign closes, nothing is
    pooled, and on a big repository each is thousands of files to unlink (the final question waited for them
    one by one). Intents first, then the removals in threads (by descriptors: no thread changes directory),
    then one prune and the results; a crash between leaves intents without results, and CLOSE, run again,
    removes what is left."""
    from concurrent.futures import ThreadPoolExecutor
    live = [(node, path) for node, path in named if path and Path(path).exists()]
    for node, path in named:
        if (node, path) not in live:
            remove(ctx, node, path)  # gone already: its records go
    for node, path in live:
        ctx.emit("intent", {"effect": "worktree-remove", "node": node, "path": path})
        _made_here.pop(path, None)
    common = git.git_common_dir(ctx.root)
    with ThreadPoolExecutor(max_workers=max(1, min(len(live), prepared.THREADS))) as threads:
        list(threads.map(lambda path: git_files.remove_worktree(common, Path(path)), [p for _, p in live]))
    git.worktree_prune(ctx.root, check=False)
    for node, path in live:
        pool.forget(Path(path))
        ctx.emit("result", {"effect": "worktree-remove", "node": node, "path": path})


def integration(ctx) -> Path:
    """The one worktree where the campaign head is checked out (never the user's), on a detached HEAD.

    MERGE moves campaign/<topic> without this worktree when the campaign has no checks to run on the merged
    tree (merge.py), so it may be behind: whoever needs the head's files gets them here, and a worktree the
    head moved away from is brought to it first, rewriting only the paths that differ (O(the diff)). It is
    detached so that moving the branch never leaves it holding an index and files of an older head, which
    would look like uncommitted changes."""
    path = ctx.layout.integration(ctx.topic)
    tip = ctx.campaign.tip or git.resolve(ctx.root, ctx.campaign.branch)
    unlink_foreign_integration(ctx)
    if not (path / ".git").exists():
        ctx.emit("intent", {"effect": "integration-add", "path": str(path), "branch": ctx.campaign.branch})
        path.parent.mkdir(parents=True, exist_ok=True)
        try:  # no prune first: one waits for a batch's checkouts made beside it (git_admin.py)
            git.worktree_add_detached(ctx.root, path, tip)
        except GitError as exc:
            if "already registered" not in exc.stderr:  # its folder removed by hand, its registration left
                raise
            git.worktree_prune(ctx.root)
            git.worktree_add_detached(ctx.root, path, tip)
        ctx.emit("result", {"effect": "integration-add", "path": str(path)})
        return path
    head, branch = git.head_state(path)
    if branch is not None:  # made on the branch by an older orchestrate: let go of it, no file changes
        git.worktree_detach(path)
    if head != tip:
        git.worktree_bring(path, tip)
    return path


def unlink_foreign_integration(ctx) -> None:
    """Remove the integration worktree if its `.git` link no longer names this repository's admin dir for
    it: a worker without the sandbox can rewrite it, and every git call made there (detaching, bringing it
    to the head, resetting it on resume) would then act on the repository it names, the user's say."""
    path = ctx.layout.integration(ctx.topic)
    if (path / ".git").exists() and not git_files.linked(path, git.git_common_dir(ctx.root)):
        pool.discard(ctx.root, path)
        ctx.out.always(f"warning: the integration worktree {path} had its .git link rewritten; it was removed "
                       "and is made anew when needed")


def scrub_integration(ctx) -> None:
    """Back to its own HEAD with nothing else in it: a merge left staged, files a check changed or wrote
    (tracked, untracked or ignored). Judging reads this worktree again later (premises, the boundary)."""
    path = ctx.layout.integration(ctx.topic)
    git.merge_abort(path)
    git.git(path, "reset", "--quiet", "--hard")
    git.git(path, "clean", "-q", "-ffdx")


def free_branch(ctx) -> None:
    """Before campaign/<topic> moves without a checkout: a worktree holding the branch would keep the old
    head's index and files under the new head. The integration worktree lets go of it (one made by an
    older orchestrate); any other holder is the user's checkout, which orchestrate never touches, so the
    campaign halts until it is switched away. A holder in orchestrate's scratch folder is neither: a worker
    wrote its worktree's admin dir (its to write, in the sandbox too) to claim the branch, and the attempt
    fails for that HEAD when it is judged; it must not halt the campaign (rv24)."""
    ref = f"refs/heads/{ctx.campaign.branch}"
    ours = ctx.layout.integration(ctx.topic).resolve()
    scratch = ctx.layout.scratch.resolve()
    holders = git_files.checked_out(ctx.root, ref, set(_made_here.values()))  # from the HEAD files; git is asked
    # where they are odd
    found = git.worktrees(ctx.root) if holders is None else [{"branch": ref, "worktree": str(p)} for p in holders]
    for entry in found:
        if entry.get("branch") != ref:
            continue
        held = Path(entry["worktree"]).resolve()
        if held == ours:
            git.worktree_detach(ours)
        elif held.is_relative_to(scratch):
            continue
        else:
            raise Halted(f"{ctx.campaign.branch} is checked out in {entry['worktree']}: orchestrate moves it only "
                         "where no checkout holds it (that checkout's index and files would stay behind)",
                         hint=f"switch that checkout away (`git -C {entry['worktree']} switch --detach`), "
                              "then `orchestrate resume`")
