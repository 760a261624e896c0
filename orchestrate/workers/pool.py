"""Pooled working copies: a finished node's worktree is kept and re-based for the next node, so a node
costs O(what differs between the two bases), not a checkout of the whole repository.

A worker had the run of the worktree it leaves behind, so nothing in it is trusted when it is reused:
- only spares this runner pooled itself are taken (one found on disk after a restart is removed);
- the `.git` file must still name the admin dir recorded when the worktree was made, and that admin dir's
  gitdir and commondir must name the worktree and this repository back, or the spare is removed (a worker
  can point the `.git` file at a repository of its own; an evaluator, which may write the admin dir, can
  point commondir at a git dir of its making);
- the admin dir keeps only HEAD, commondir and gitdir; a merge, rebase or bisect in progress, a lock,
  a `locked` mark or a per-worktree config the worker left are deleted;
- the index is replaced by the copy taken right after orchestrate's own checkout, before the worker
  started (its hash is checked); an index the worker crafted to hide a change is never read. Every file
  touched since then (by the worker, or by what judged it: evaluators run its code) has another ctime
  than that copy records, which no unprivileged process can set back; compared to the nanosecond, each
  such file is removed, and the tracked folders get the checkout's mode back (`_undone`, converted.py).
  git's own look would not do: it compares whole seconds, takes a file its conversions clean to the same
  blob (a `$Id: ... $` holding other text, a CRLF) for unchanged and keeps it, and compares neither mode
  bits but the executable one, xattrs and hard links, nor folders at all;
- then `rebase`: a forced checkout of the new base (it writes the paths whose index entries differ and
  the files removed above, after one stat per file), then everything git does not track is removed
  (untracked.py).
A spare is moved in and out of the pool as `git worktree move` moves one (a rename, the admin dir's gitdir
rewritten) and let go of its branch by writing its HEAD where nothing needs git's judgement (a lock mark,
a submodule: git moves it, or refuses).
With `keep_ignored: true` the entries the new base's own ignore rules match are kept (build caches); an
untracked `.gitignore` is never kept, nor consulted, since it would widen what counts as ignored.
Any step that fails removes the spare and the node gets a fresh worktree, as without a pool.
"""
from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from orchestrate import atomic, git, git_batch, git_files, inert, reaping, removal
from orchestrate.workers import converted, index_file, unread, untracked, watched
from orchestrate.errors import GitError

SPARES = 8  # kept per topic at least; more only when the campaign held more worktrees at once (`_peak`)
SPARE = "spare-"  # a kept worktree, waiting for the next node
BEGUN = "prepared-"  # a checkout begun for a batch of nodes (prepared.py), not yet a spare
_KEEP = frozenset({"HEAD", "commondir", "gitdir", "index"})  # the index is then replaced by the snapshot


@dataclass(frozen=True)
class Made:
    """What orchestrate knew of a worktree when it handed it to a worker."""
    admin: Path
    snapshot: Path
    digest: str
    base: str  # the commit checked out
    prepared: bool = False  # checked out beside others for a batch of nodes (prepared.py)


_made: dict[str, Made] = {}  # worktree path -> its record, for worktrees this process made or re-based
_spares: dict[str, Made] = {}  # spare path -> record
# The most node worktrees this process held at once. A layer of the layered schedule holds each of its
# nodes' until the layer is judged, then lets them all go: keeping that many spares (disk the campaign
# already used) lets the next layer re-base them instead of checking out all but SPARES anew.
_peak = 0


def folder(worktrees: Path) -> Path:
    return worktrees / ".pool"


def record(path: Path, worktrees: Path, base: str = "", *, prepared: bool = False) -> None:
    """Remember a worktree orchestrate has just checked out (at `base`: its HEAD when not given), before any
    worker runs in it."""
    admin = git.admin_dir(path)
    if admin is None or not (admin / "index").is_file():
        return
    if not git_batch._FULL.fullmatch(base):  # the re-base's diff from it is asked of the kept differ: full ids only
        base = git.git(path, "rev-parse", "--verify", f"{base or 'HEAD'}^{{commit}}").stdout.strip()
    snapshot = folder(worktrees) / f"{path.name}.index"
    snapshot.parent.mkdir(parents=True, exist_ok=True)
    fd, st = git_files.open_regular(admin / "index")
    with os.fdopen(fd, "rb") as fh:
        data = fh.read()
    _copy(snapshot, data, st)
    _made[str(path)] = Made(admin, snapshot, hashlib.sha256(data).hexdigest(), base, prepared)
    global _peak
    _peak = max(_peak, len(_made))


def keep(root: Path, path: Path, worktrees: Path, *, capped: bool = True) -> bool:
    """Move a finished worktree into the pool instead of removing it; False when it must be removed.
    `capped`: not when the pool holds enough spares (one checked out for a node about to start always goes)."""
    made = _made.pop(str(path), None)
    pool = folder(worktrees)
    if made is None or (capped and len(_spares_in(pool)) >= max(SPARES, _peak)):
        return False
    spare = spare_place(pool, path)
    # scrubbed first: a `locked` mark or a half-done merge the worker left would refuse the move
    if spare.exists() or not _trusted(path, made) or not _reset_admin(made, path) or not _move(root, made, path, spare):
        return False
    try:  # the branch let go of, so that it can be checked out elsewhere (a rework's fresh worktree)
        git_files.detach(made.admin, git_files.worktree_head(root, spare))
    except (git_files.Unusable, OSError, ValueError):
        git.worktree_detach(spare)
    _spares[str(spare)] = made
    return True


def take(root: Path, path: Path, worktrees: Path, base: str, branch: str | None, *,
         keep_ignored: bool = False) -> Made | None:
    """Re-base a spare as `path` (on `branch`, or detached at `base`): the spare's record, or None when there
    was none to use. `keep_ignored`: files the new base's ignore rules match stay (warm build caches)."""
    for spare in _spares_in(folder(worktrees)):
        made = _spares.pop(str(spare), None)
        if made is None:  # pooled by another process: its history is unknown here
            discard(root, spare)
            continue
        reaping.kill_inside(spare, made.admin)  # a leftover of the last node (no sandbox) would write the next one's
        # the admin dir cleared first: what was planted there since (a FIFO at the index) would hang git's move
        if _trusted(spare, made) and _reset_admin(made, spare) and _move(root, made, spare, path):
            if _undone(root, path, made, base) and rebase(path, base, branch, keep_ignored):
                made.snapshot.unlink(missing_ok=True)
                return made
            discard(root, path)
            if os.path.lexists(path):  # what could not be removed must not hold the place the caller checks out
                removal.set_aside(path, folder(worktrees))
                git.worktree_prune(root, check=False)  # its admin dir names the place it left
        else:
            discard(root, spare)
        made.snapshot.unlink(missing_ok=True)
        return None
    return None


def _undone(root: Path, path: Path, made: Made, base: str) -> bool:
    """Every tracked file changed since the index snapshot (by the worker, by what judged it: its evaluators run
    its code) removed, for the checkout to write, and each tracked folder given the mode a checkout gives it:
    git's own look compares whole seconds, and passes over a file rewritten at the same size that its
    conversions clean to the same blob (a `$Id: ... $` holding other text), a file whose mode bits (but the
    executable one), xattrs or hard links changed, and a folder's mode, all of which the next node would then
    take for part of its base (rv34)."""
    from orchestrate import git_batch
    try:
        found, snapshot = git_batch.read(root, base), _snapshot(made)
        if found is None or snapshot is None:
            return False
        converted.remove_changed(path, snapshot[0], len(found[0]) // 2, root, like=path.parent)
        if (new := _new_folders(root, made.base, found[0])) is None:
            return False
        for name in new:
            removal.remove_below(path, name)
    except (OSError, git_batch.Unusable):
        return False
    return True


def _new_folders(root: Path, old: str, new: str) -> list[str] | None:
    """The outermost folders commit `new` tracks and `old` does not. A spare holds them when the node that had
    it made them (then merged): the checkout would write into them as they are, with the mode, `user.` xattrs
    and default ACL that node gave them (the ACL decides the modes of what the next node makes there, rv57);
    removed, they are made anew, as a fresh checkout makes them (ignored files in them go, `keep_ignored` or
    not). O(the diff): one read of the kept reader for each folder on the way. None when git cannot say."""
    from orchestrate import git_batch, git_diffs
    changed = git_diffs.changed(root, old, new)
    if changed is None or any("\ufffd" in name for _, name in changed):  # a name not UTF-8 is not the one on disk
        return None
    known: dict[str, bool] = {}
    found: list[str] = []
    for code, name in changed:
        if code != "A":  # a path `old` holds: its folders were there
            continue
        parts = name.split("/")[:-1]
        for cut in range(1, len(parts) + 1):
            folder = "/".join(parts[:cut])
            if folder not in known:
                held = git_batch.read(root, f"{old}:{folder}")
                known[folder] = held is not None and held[1] == "tree"
            if not known[folder]:
                found += [] if folder in found else [folder]
                break
    return found


def unseen(path: Path, base: str, head: str, *, pass_converted: bool = True, install: bool = False) -> list[str] | None:
    """What in the worktree is not what `head` holds: tracked files whose content differs, and files `git add
    -A` would add. Judged by an index of orchestrate's own: the copy of the index its checkout at `base`
    wrote, moved to `head` (`read-tree -m` keeps the stat data of what did not change). The worker's own
    index is never consulted: in it a change can be hidden by a flag (assume-unchanged, skip-worktree), by
    stat data written to match, or by an untracked-file cache written to leave a file out, and the
    evaluators would then read what is never merged. A file's ctime cannot be set back, so a file written
    since the checkout is read and compared (O(what changed), one stat per file). One `git status` does it,
    the look for leftovers included. `pass_converted`: changed files a configured clean filter converts are
    passed over (after the leftover commit; see below). `install`: when nothing is found, the index it judged
    by becomes the worktree's (`own_index`, with no second read-tree). None: no copy of this worktree's index
    (an earlier runner made it). GitError when git cannot compare (it passed something over: `unread`), or
    the copy is not what was recorded."""
    made = _made.get(str(path))
    if made is None:
        return None
    if (snapshot := _snapshot(made)) is None:  # not a downgrade to the flags alone: the check cannot be made
        raise GitError(["read", str(made.snapshot)], 1, "", "orchestrate's copy of the index its checkout wrote "
                       "was changed or removed (by a worker without the sandbox?)")
    judged = made.snapshot.with_name(made.snapshot.name + ".judged")
    _copy(judged, *snapshot)
    try:
        env = {"GIT_INDEX_FILE": str(judged)}
        git.git(path, "read-tree", "-m", "-i", base, head, env=env)
        said = unread.checked(git.git(path, *index_file.STAT_CHECKS, "-c", "core.untrackedCache=false", "status",
                                      "--porcelain=v1", "-z", "--no-renames", "--untracked-files=all",
                                      *git.NO_SUBMODULE_DIRT, env={**env, "GIT_OPTIONAL_LOCKS": "0"}), path, env)
        found = [(entry[:2], entry[3:]) for entry in said.split("\0") if entry]
        changed = [name for code, name in found if code != "??"]
        if changed and pass_converted and (defined := inert.filters(path)):
            # a file a configured clean filter converts (git-lfs, nbstripout) cannot match here, where filters
            # are off: such files are passed over. The filter must be named by the committed attributes
            # (--cached: the judged index) and defined in a config git reads, not by an ignored .gitattributes
            said = git.git(path, "check-attr", "--cached", "-z", "--stdin", "filter",
                           input="".join(f + "\0" for f in changed), env=env).stdout.split("\0")
            converted = {said[i] for i in range(0, len(said) - 2, 3) if said[i + 2] in defined}
            return [name for code, name in found if name not in converted or code == "??"]
        if install and not found and (admin := git.admin_dir(path)) is not None:
            os.replace(judged, admin / "index")  # a rename: what is at the name is replaced, never written through
        return [name for _, name in found]
    finally:
        removal.remove(judged)  # nothing there once installed


def own_index(path: Path, base: str, head: str) -> None:
    """The worktree's index made orchestrate's own, at `head`: its copy of the index its checkout wrote, moved
    to `head` as `unseen` does. What the worker staged and did not commit (a `git add -f` of an ignored file)
    is then untracked, and cleared with the rest; the stat data of the worker's index is never trusted. A
    worktree an earlier runner made has no copy: its own index is moved to `head` (stat data kept)."""
    made = _made.get(str(path))
    snapshot = _snapshot(made) if made is not None else None
    admin = git.admin_dir(path)
    if snapshot is None or admin is None:
        git.git(path, "read-tree", "-m", head)
        return
    fresh = made.snapshot.with_name(made.snapshot.name + ".own")
    _copy(fresh, *snapshot)
    git.git(path, "read-tree", "-m", "-i", base, head, env={"GIT_INDEX_FILE": str(fresh)})
    os.replace(fresh, admin / "index")  # a rename: what is at the name is replaced, never written through


def forget(path: Path) -> None:
    """A worktree (or spare) that was removed: drop its record and its index copy; the pool folder goes
    with the last spare or index copy it held."""
    if (made := _made.pop(str(path), None) or _spares.pop(str(path), None)) is not None:
        made.snapshot.unlink(missing_ok=True)
        try:  # its admin dir left behind: a worker rewrote its gitdir to name a file that is there (git keeps
            # such an admin dir, and with it the branch its HEAD names, campaign/<topic> even: rv24)
            if not os.path.lexists(path) and made.admin.is_dir() and not made.admin.is_symlink():
                removal.remove(made.admin)
        except OSError:
            pass
    # never while it holds the index copy of a worktree still held (a node running): it goes with the last
    pool = path.parent if path.parent.name == ".pool" else folder(path.parent)
    held = {str(m.snapshot) for m in (*_made.values(), *_spares.values())}
    if pool.name == ".pool" and pool.is_dir() and not any(p.is_dir() or str(p) in held for p in pool.iterdir()):
        try:
            removal.remove(pool)
        except OSError:  # something a worker put there meanwhile: it goes with the next spare
            pass


def discard(root: Path, path: Path) -> None:
    """Remove a worktree git may no longer recognise as one (its .git file rewritten), by descriptors, and an
    admin dir a worker swapped for a link as a link (git would empty the folder it names): git.worktree_remove."""
    git.worktree_remove(root, path)


def drop_left(root: Path, worktrees: Path) -> None:
    """Remove the spares an earlier runner left (resume): nothing about them is known here (`take` would
    discard them), and one a runner killed mid-`keep` moved into the pool without letting go of its branch
    would keep that branch from being checked out again; checkouts begun for a batch of nodes (prepared.py)
    that it never pooled; and what `take` set aside, once more."""
    home = folder(worktrees)
    begun = sorted(p for p in home.iterdir() if p.name.startswith(BEGUN)) if home.is_dir() else []
    for spare in _spares_in(home) + begun + removal.set_aside_in(home):
        _spares.pop(str(spare), None)
        discard(root, spare)


def spares(worktrees: Path) -> int:
    """How many spares this process pooled are there to take."""
    return sum(str(spare) in _spares for spare in _spares_in(folder(worktrees)))


def spare_place(pool: Path, path: Path) -> Path:
    """Where worktree `path` waits in the pool folder `pool` as a spare."""
    return pool / f"{SPARE}{path.name}"


def _spares_in(pool: Path) -> list[Path]:
    return sorted(p for p in pool.iterdir() if p.is_dir() and p.name.startswith(SPARE)) if pool.is_dir() else []


def _trusted(spare: Path, made: Made) -> bool:
    """What cannot be read (a worktree made `chmod 000`, as any user but root) is not trusted: removed."""
    dot = spare / ".git"
    try:
        if dot.is_symlink() or not dot.is_file():
            return False
        # the admin dir's commondir and gitdir too (`linked`): judging runs with the admin dir writable, and a
        # commondir naming a copy of the git dir would have the re-base read that copy's config (core.worktree)
        return dot.read_text(errors="replace").strip() == f"gitdir: {made.admin}" and made.admin.is_dir() \
            and git_files.linked(spare, made.admin.parent.parent) \
            and _snapshot(made) is not None
    except OSError:
        return False


def _move(root: Path, made: Made, src: Path, dst: Path) -> bool:
    """Move a worktree: by hand where nothing needs git's judgement (git_files.move_worktree), else by git."""
    return git_files.move_worktree(src, dst, made.admin) or git.worktree_move(root, src, dst)


def _reset_admin(made: Made, tree: Path) -> bool:
    """The admin dir of worktree `tree` cleared to what git needs, its index the snapshot; the admin dir given
    the mode and xattrs of the folder git made it in, and its files and `tree`'s `.git` written anew (their
    modes kept): the worker could write all of them (a default ACL on the admin dir would decide the mode of
    every index written there, a `user.` xattr or a hard link is a note to the next node, rv57). False (the
    spare is then removed) when it cannot."""
    try:
        if _scrub(made.admin) or (snapshot := _snapshot(made)) is None:  # a link or a FIFO at HEAD or the index
            return False                                                 # (the spare is removed), or no snapshot
        converted.make_like(os.fsencode(made.admin), os.lstat(made.admin), converted.model_of(made.admin.parent))
        for name in ("HEAD", "commondir", "gitdir"):  # their modes kept (a shared repository's are git's choice)
            atomic.replace(made.admin / name, git_files.small(made.admin / name))
        atomic.replace(tree / ".git", f"gitdir: {made.admin}\n")  # `_trusted` read it so
        _copy(made.admin / "index", *snapshot)
    except OSError:
        return False
    return True


def scrub_admin(path: Path) -> str:
    """Before orchestrate's own git runs in a worktree a worker had (the leftover commit): its admin dir is
    the worker's to write, in the sandbox too, and git writes there through what it finds (a link at
    COMMIT_EDITMSG or logs/HEAD would have the commit write a file of the user's; a FIFO at the index would
    hang it). Everything but HEAD, commondir, gitdir and the index goes; '' when those are plain files,
    else what is wrong (the attempt then fails). OSError when the admin dir cannot be cleared."""
    admin = git.admin_dir(path)
    return _scrub(admin, own=True) if admin is not None and admin.is_dir() else ""


def _scrub(admin: Path, *, own: bool = False) -> str:
    """`own`: the worktree stays its node's, so a split index's shared part and the git dirs of the submodules
    checked out in it (`modules/`) stay too: orchestrate's git reads the first and never enters the second.
    A spare going to another node keeps neither."""
    wrong = ""
    for entry in admin.iterdir():
        if own and not entry.is_symlink() and ((entry.name.startswith("sharedindex.") and entry.is_file())
                                               or (entry.name == "modules" and entry.is_dir())):
            continue
        if entry.name in _KEEP:
            if entry.is_symlink() or not entry.is_file():
                wrong = wrong or f"{entry.name} in its worktree's git admin dir is not a file"
            continue
        removal.remove(entry)
    return wrong


def _snapshot(made: Made) -> tuple[bytes, os.stat_result] | None:
    """The index snapshot's bytes and stat, when it is still the file recorded (its hash); read without
    following a link or waiting on a FIFO, once: what is copied is what was checked."""
    try:
        fd, st = git_files.open_regular(made.snapshot)
        with os.fdopen(fd, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return (data, st) if hashlib.sha256(data).hexdigest() == made.digest else None


def _copy(path: Path, data: bytes, st: os.stat_result) -> None:
    """An index written at `path` as a copy of one whose stat is `st`: its mode, and its mtime, which git's
    racy-timestamp check reads. Made anew, so that what a worker without the sandbox planted at the name (the
    pool's folder is in the repository) is replaced, never written through."""
    atomic.replace(path, data, mode=stat.S_IMODE(st.st_mode), times=st)


def rebase(path: Path, base: str, branch: str | None, keep_ignored: bool = False) -> bool:
    """The worktree exactly at `base` (on `branch`, or detached), nothing else in it but, with
    `keep_ignored`, ignored files. True when it is; False (the spare is then removed) when git refused
    or said anything about what it could not read."""
    switch = ["checkout", "--quiet", "--force"] + (["-B", branch, base] if branch else ["--detach", base])
    try:  # the folder's own mode as a checkout makes it (its parent's): a worker's `chmod 000 .` is not the next's
        watched.chmod_folder(path, stat.S_IMODE(os.stat(path.parent).st_mode))
    except OSError:
        return False
    if not git.git(path, *index_file.STAT_CHECKS, *switch, check=False):
        return False
    try:
        untracked.clear(path, base, keep_ignored)
    except (OSError, GitError):
        return False
    return True
