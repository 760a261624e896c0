"""Whether files changed, told from their stat data alone (as git's index tells it), and when that holds.

A stat stands for a file's content once the file has been left alone for longer than its filesystem's
timestamp tick: a second write within the tick of the first could leave size, mtime and ctime as they were
(git calls such an index entry racily clean). Timestamps with sub-second digits come from the kernel's
clock, which ticks every few milliseconds, so FINE is safe; whole seconds mean a coarse filesystem (FAT,
some network ones), and COARSE is.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

FINE = 0.025
COARSE = 2.0
_SECOND = 1_000_000_000


def key(st: os.stat_result) -> tuple:
    """What a write, a replacement or a change of mode moves."""
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def settled(st: os.stat_result, now_ns: int | None = None) -> bool:
    """Has the file been left alone long enough that its stat will show the next write?"""
    coarse = st.st_mtime_ns % _SECOND == 0 and st.st_ctime_ns % _SECOND == 0
    margin = int((COARSE if coarse else FINE) * _SECOND)
    return max(st.st_mtime_ns, st.st_ctime_ns) < (time.time_ns() if now_ns is None else now_ns) - margin


def files(*paths: Path) -> tuple | None:
    """A stamp of each of `paths` (links not followed; an absent one as absent), or None when one has not
    settled yet: equal stamps mean none of them was written, created, removed or replaced in between."""
    now = time.time_ns()
    found = []
    for path in paths:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            found.append(None)
            continue
        except OSError:
            return None
        if not settled(st, now):
            return None
        found.append(key(st))
    return tuple(found)


def tree(path: Path, *extra: Path) -> tuple | None:
    """A stamp of `path` and everything under it (symbolic links not followed), and of the `extra` files
    (absent ones included as absent): equal stamps mean nothing was written, created, removed or renamed
    in between. None when an entry has not settled yet (see the module's docstring) or cannot be read."""
    now = time.time_ns()
    found: list = []
    newest = coarse = 0
    try:
        for one in (path, *extra):
            try:
                st = os.lstat(one)
            except FileNotFoundError:
                found.append((str(one), None))
                continue
            found.append((str(one), key(st)))
            newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
            coarse |= st.st_mtime_ns % _SECOND == 0
        todo = [str(path)]
        while todo:  # every entry's stat in one flat list: this runs once per waiting worktree per return
            with os.scandir(todo.pop()) as entries:
                for e in entries:
                    st = e.stat(follow_symlinks=False)
                    mtime, ctime = st.st_mtime_ns, st.st_ctime_ns
                    found += (e.path, st.st_ino, st.st_size, mtime, ctime, st.st_mode)
                    if mtime > newest or ctime > newest:
                        newest = max(mtime, ctime)
                    if e.is_dir(follow_symlinks=False):
                        todo.append(e.path)
    except OSError:
        return None
    margin = int((COARSE if coarse else FINE) * _SECOND)
    return tuple(found) if newest < now - margin else None
