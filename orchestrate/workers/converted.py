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

import os
import stat
import struct
from pathlib import Path
from typing import Iterator

from orchestrate import git, removal
from orchestrate.errors import GitError
from orchestrate.workers import pool, quoted

def rewrite(path: Path, head: str, root: Path) -> list[str]:
    """Remove and check out again, from the worktree's index (orchestrate's, at commit `head`), every tracked file
    whose stat differs from its entry and whose bytes are not the blob's (read by the reader kept for `root`, the
    repository), and remove what is at a skip-worktree path; the paths written. GitError
    when git cannot write them; OSError when the index cannot be read or a path reached."""
    admin = git.admin_dir(path)
    if admin is None:
        raise GitError(["read", str(path / ".git")], 1, "", "the worktree's git admin dir is not known")
    top, size = os.fsencode(os.path.join(path, "")), len(head) // 2
    data = (admin / "index").read_bytes()
    stale, sparse = [], []
    lstat, recorded, billion = os.lstat, _STAT.unpack_from, 1_000_000_000
    for name, at, skipped in _records(data, size):  # inline: a call an entry costs 10 ms on 20,000
        if skipped:
            if os.path.lexists(top + name):
                sparse.append(os.fsdecode(name))
            continue
        try:  # unchanged: its ctime and mtime to the nanosecond (git keeps 32 bits of seconds, enough until
            st = lstat(top + name)  # 2106; git itself compares whole seconds), inode, size, whether a link
            cs, cn, ms, mn, ino, mode, length = recorded(data, at)
            if (st.st_ctime_ns == cs * billion + cn and st.st_mtime_ns == ms * billion + mn and st.st_ino & _CUT == ino
                    and st.st_size & _CUT == length and (st.st_mode & 0o170000 == 0o120000) == (mode >> 12 == 0o12)):
                continue
        except OSError:
            pass
        if not _holds(top + name, data[at + 26] >> 4 == 0o12, data[at + 40:at + 40 + size].hex(), root):
            stale.append(os.fsdecode(name))
    for name in stale + sparse:  # by descriptors, one folder at a time: never through a link
        removal.remove_below(path, name)
    if stale:
        git.git(path, *pool.STAT_CHECKS, "checkout-index", "--force", "--stdin",
                input="".join(quoted.quote(n) + "\n" for n in stale))
    return stale


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


_CUT = 0xFFFFFFFF
_STAT = struct.Struct(">4I4x2I8xI")  # of an entry: ctime, mtime (seconds, nanoseconds), ino, mode, size
_SKIP_WORKTREE = 0x4000  # in an entry's extended flags (index version 3 and up)


def _records(data: bytes, hash_size: int) -> Iterator[tuple[bytes, int, bool]]:
    """(path, where its entry starts, whether it is skip-worktree) for each file or link entry of an index
    (versions 2 to 4); a gitlink has no file to compare. OSError when it is not an index git wrote whole."""
    if data[:4] != b"DIRC" or int.from_bytes(data[4:8], "big") not in (2, 3, 4):
        raise OSError(0, "not an index git writes", "index")
    version, count = int.from_bytes(data[4:8], "big"), int.from_bytes(data[8:12], "big")
    at, name, fixed = 12, b"", 40 + hash_size  # the stat data and the id; then the flags
    try:
        for _ in range(count):
            start, flags = at, (data[at + fixed] << 8) | data[at + fixed + 1]
            at += fixed + 2
            extended = 0
            if version >= 3 and flags & 0x4000:
                extended, at = (data[at] << 8) | data[at + 1], at + 2
            if version == 4:
                cut, at = _varint(data, at)
                end = data.index(b"\0", at)
                name, at = name[:len(name) - cut] + data[at:end], end + 1
            else:  # the name's length is in the flags, up to 4094; NUL-padded to a multiple of 8
                end = at + (flags & 0xFFF) if flags & 0xFFF < 0xFFF else data.index(b"\0", at)
                name = data[at:end]
                if data[end]:
                    raise ValueError(f"no NUL after the name at byte {end}")
                at = start + ((end - start + 8) & ~7)
            if data[start + 26] >> 4 in (0o10, 0o12):  # the mode's type bits: a file or a link, not a gitlink
                yield name, start, bool(extended & _SKIP_WORKTREE)
    except (struct.error, ValueError, IndexError) as exc:  # cut short: not an index git wrote whole
        raise OSError(0, f"an index cut short ({exc})", "index") from None


def _entries(data: bytes, hash_size: int) -> list[tuple[str, tuple[int, ...], bool, str]]:
    """(path, its recorded ctime, mtime, inode, size and whether it is a link, whether it is skip-worktree, its
    blob's id) for each file or link entry: the index as `rewrite` reads it, spelled out (tests compare it with
    `git ls-files --debug`)."""
    found = []
    for name, at, skipped in _records(data, hash_size):
        cs, cn, ms, mn, ino, kind, size = _STAT.unpack_from(data, at)
        found.append((os.fsdecode(name), (cs * 10**9 + cn, ms * 10**9 + mn, ino, size, kind >> 12 == 0o12), skipped,
                      data[at + 40:at + 40 + hash_size].hex()))
    return found


def _varint(data: bytes, at: int) -> tuple[int, int]:
    byte = data[at]
    value, at = byte & 127, at + 1
    while byte & 128:
        byte = data[at]
        value, at = ((value + 1) << 7) | (byte & 127), at + 1
    return value, at
