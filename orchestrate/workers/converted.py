"""Tracked files that compare equal to the commit though they hold other bytes, written anew from orchestrate's
index before a node is judged (rv31, rv32, rv33).

git compares a worktree file with its blob after converting it as the attributes and config say: `ident`
cleans any `$Id: ... $` to `$Id$` (a line of code hidden in one), `text`/`eol`/`core.autocrlf` take a CR away
(a backslash before a CR no longer continues a shell line), `working-tree-encoding` re-encodes. What converts
can come from a `.gitattributes` the worker left ignored (removed only after the look), a config in `$HOME`,
the environment, a relative `core.attributesFile` in the worktree: guessing where a conversion may apply
missed some, so none is guessed. Every tracked file whose stat differs from its entry in orchestrate's index
(written since orchestrate's checkout: a ctime cannot be set back) is removed and checked out again, as a
checkout of the head writes it; removed first, so that git's own stat check (which `core.trustctime=false`
weakens) cannot pass it over, and a hard link to it is broken. What the worker put at a path orchestrate's
index marks skip-worktree (a sparse checkout: nothing of it is checked out, git neither lists nor compares it)
is removed. One lstat a tracked file, compared with the index's bytes in the same pass: 68 ms for 20,000 files
(a tuple an entry took 86), where a `git status` takes 34 ms; git compares whole seconds, so its check cannot
stand in for this one.
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from orchestrate import git, removal
from orchestrate.errors import GitError
from orchestrate.workers import index_file, quoted, watched


def rewrite(path: Path, head: str, root: Path) -> list[str]:
    """Remove and check out again, from the worktree's index (orchestrate's, at commit `head`), every tracked file
    whose stat differs from its entry and whose bytes are not the blob's (read by the reader kept for `root`, the
    repository), and remove what is at a skip-worktree path; the paths written. GitError
    when git cannot write them; OSError when the index cannot be read or a path reached."""
    admin = git.admin_dir(path)
    if admin is None:
        raise GitError(["read", str(path / ".git")], 1, "", "the worktree's git admin dir is not known")
    stale = remove_changed(path, (admin / "index").read_bytes(), len(head) // 2, root)
    if stale:
        git.git(path, *index_file.STAT_CHECKS, "checkout-index", "--force", "--stdin",
                input="".join(quoted.quote(n) + "\n" for n in stale))
    return stale


def remove_changed(path: Path, data: bytes, hash_size: int, root: Path, *, like: Path | None = None) -> list[str]:
    """Remove every tracked file of index `data` whose stat differs from its entry and whose bytes are not the
    blob's, and what is at a skip-worktree path; the tracked files removed (to be written again). A folder on
    the way that is not one (`mv d e; ln -s e d`: read through the link, the files are the ones recorded) is
    removed and the files below it count as removed. With `like` (a worktree going to another node: the folder
    it is in), every file whose stat moved goes, its bytes the blob's or not (a mode, an xattr, a hard link move
    the ctime and nothing git compares), and the worktree and each tracked folder get that folder's mode and
    lose the `user.` xattrs and ACLs it does not have (git tracks none of them; a default ACL would decide the
    modes of what the next node makes). OSError when the index cannot be read or a path reached."""
    top = os.fsencode(os.path.join(path, ""))
    stale, sparse, gone, last, wrong = [], [], [], b"", None
    folders: dict[bytes, bytes | None] = {}
    model = None if like is None else model_of(like)
    _wrong_folder(top, b"", folders, model)
    lstat, recorded, billion, cut = os.lstat, index_file.STAT.unpack_from, 1_000_000_000, index_file.CUT
    for name, at, skipped in index_file.records(data, hash_size):  # inline: a call an entry costs 10 ms on 20,000
        if skipped:
            if os.path.lexists(top + name):
                sparse.append(os.fsdecode(name))
            continue
        if not name.startswith(last) or b"/" in name[len(last):]:  # in another folder than the last entry
            last = name[:name.rfind(b"/") + 1]
            wrong = _wrong_folder(top, last[:-1], folders, model)
        if wrong is not None:
            gone += [] if wrong in gone else [wrong]
            stale.append(os.fsdecode(name))
            continue
        try:  # unchanged: its ctime and mtime to the nanosecond (git keeps 32 bits of seconds, enough until
            st = lstat(top + name)  # 2106; git itself compares whole seconds), inode, size, whether a link
            cs, cn, ms, mn, ino, mode, length = recorded(data, at)
            if (st.st_ctime_ns == cs * billion + cn and st.st_mtime_ns == ms * billion + mn and st.st_ino & cut == ino
                    and st.st_size & cut == length and (st.st_mode & 0o170000 == 0o120000) == (mode >> 12 == 0o12)):
                continue
        except OSError:
            pass
        if like is not None or not _holds(top + name, data[at + 26] >> 4 == 0o12,
                                          data[at + 40:at + 40 + hash_size].hex(), root):
            stale.append(os.fsdecode(name))
            removal.remove_below(path, stale[-1])  # by descriptors, one folder at a time: never through a link
    for name in [os.fsdecode(f) for f in gone] + sparse:
        removal.remove_below(path, name)
    return stale


_CLEARED = ("user.", "system.posix_acl_")  # notes for the next node's tools; ACLs (a default one sets new modes)


def _wrong_folder(top: bytes, folder: bytes, known: dict[bytes, bytes | None],
                  model: tuple[int, set[str]] | None) -> bytes | None:
    """The outermost folder on the way to `folder` (itself included; b"" is the worktree) that is not a folder,
    None when all are; each looked at once (`known`), and with `model` (a mode and the xattrs to keep), given
    that mode and cleared of the `_CLEARED` xattrs it lacks."""
    if folder not in known:
        known[folder] = _wrong_folder(top, folder[:max(folder.rfind(b"/"), 0)], known, model) if folder else None
        if known[folder] is None:
            place = top + folder if folder else top[:-1]
            try:
                st = os.lstat(place)
                if not stat.S_ISDIR(st.st_mode):
                    known[folder] = folder
                elif model is not None:
                    make_like(place, st, model)
            except FileNotFoundError:
                pass  # nothing there: the checkout makes it
    return known[folder]


def model_of(folder: Path | str) -> tuple[int, set[str]]:
    """What `make_like` gives a folder: `folder`'s mode and the xattrs it has."""
    return stat.S_IMODE(os.stat(folder).st_mode), set(_xattrs(os.fsencode(folder)))


def make_like(place: bytes, st: os.stat_result, model: tuple[int, set[str]]) -> None:
    """The folder at `place` (lstat `st`) given `model`'s mode, and cleared of the `_CLEARED` xattrs it lacks."""
    if stat.S_IMODE(st.st_mode) != model[0]:  # by a descriptor: lchmod is missing before glibc 2.32
        watched.chmod_folder(place, model[0])
    for attribute in _xattrs(place):
        if attribute.startswith(_CLEARED) and attribute not in model[1]:
            os.removexattr(place, attribute, follow_symlinks=False)


def _xattrs(folder: bytes) -> list[str]:
    """The folder's extended attributes; none where the file system keeps none (NFSv3, some FUSE mounts)."""
    try:
        return os.listxattr(folder, follow_symlinks=False)
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            return []
        raise


def _holds(file: bytes, link: bool, blob: str, repo: Path) -> bool:
    """Whether `file` holds exactly the blob's bytes, unconverted (a file the node changed, whose entry has no
    stat data yet, usually does): read by the kept reader, no process; False when either cannot be read."""
    from orchestrate import git_batch
    try:
        found = git_batch.read(repo, blob)
        if found is None:
            return False
        if link:
            return os.readlink(file) == found[2]
        fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            return stat.S_ISREG(os.fstat(fd).st_mode) and fh.read(len(found[2]) + 1) == found[2]
    except (OSError, git_batch.Unusable):
        return False
