"""Worktree registrations (`.git/worktrees/<name>`): this process's adds and prunes kept apart.

`git worktree add` makes a worktree's admin dir first and marks it `locked` ("initializing") a moment later;
a `git worktree prune` that looks in between finds a registration with neither a `gitdir` nor a lock, removes
it, and the add fails ("could not open '.../locked' for writing"). Orchestrate checks a batch's working copies
out in threads (workers/prepared.py) while its own thread may prune (a spare discarded, one set aside), so a
prune waits for the adds in flight (or, a clean-up's, is left to the last of them: `later`), and an add waits
for a prune under way. Another process's prune (a second campaign's runner, the user's git) can still land in
that moment: an add that failed so is tried again (git.py `_worktree_add`).
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path

_state = threading.Condition()
_adding: dict[str, int] = {}  # repository -> adds in flight
_pruning: set[str] = set()  # repositories a prune runs in now
_due: set[str] = set()  # repositories whose prune waits for their adds to end


@contextmanager
def adding(repo: str | Path):
    """Around one `git worktree add` in `repo`: no prune of this process runs meanwhile."""
    key = _key(repo)
    with _state:
        _state.wait_for(lambda: key not in _pruning)
        _adding[key] = _adding.get(key, 0) + 1
    try:
        yield
    finally:
        with _state:
            _adding[key] -= 1
            last = not _adding[key]
            if last:
                del _adding[key]
                _state.notify_all()
            due = last and key in _due
        if due:
            prune(repo, check=False)


def prune(repo: str | Path, check: bool = True, *, later: bool = False) -> None:
    """`git worktree prune` in `repo` once no add of this process runs there; `later` (a clean-up nothing waits
    for): not waited for, run by the last add in flight instead, unchecked."""
    from orchestrate import git
    key = _key(repo)
    with _state:
        if later and key in _adding:
            _due.add(key)
            return
        _state.wait_for(lambda: key not in _adding and key not in _pruning)
        _due.discard(key)
        _pruning.add(key)
    try:
        git.git(repo, "worktree", "prune", check=check)
    finally:
        with _state:
            _pruning.discard(key)
            _state.notify_all()


def _key(repo: str | Path) -> str:
    return str(Path(repo).absolute())


def lost_race(stderr: str) -> bool:
    """Did a `git worktree add` fail for another git's doing, so that it may be tried again? git reads every
    worktree's admin dir while it adds one, and one being written at that moment fails the read (`failed to
    read .../commondir`); another process's prune removed the admin dir being made (`could not open
    '.../locked' for writing`)."""
    return "failed to read" in stderr or "/locked' for writing" in stderr
