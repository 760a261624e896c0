"""Working copies for a batch of nodes, checked out several at once.

Nodes dispatched together (a layer, the first `--jobs` nodes of an eager run) each need a working copy; with no
spare in the pool each is a checkout of the whole repository, and made one after another, while nothing else
moves, the last of them starts several checkouts late (rv74: 1.3-1.9 s each on 3,000 files; 3-15 s each on
20,000 files on these machines, nearly all of it the kernel's time writing files, which cores share out). So
when a batch needs two or more and the repository is big enough for it to pay, they are checked out in
threads, as many at once as there are cores (at most `THREADS`), each into the pool's folder as a spare; each
node then takes one as it takes any spare (pool.take: at the same base nothing is rewritten), the first node
as soon as the first checkout is done. A spare's take costs passes over the tree a checkout of its own does
not, hence `FROM_FILES`.

Only git runs in the threads; whatever the engine records is done in its own thread. No thread outlives the
dispatch that started it (`settle`), so nothing else the engine does runs beside them; what a crash leaves
goes with the pool's other leftovers (pool.drop_left).
"""
from __future__ import annotations

import os
import secrets
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path

from orchestrate import git, git_files
from orchestrate.errors import GitError
from orchestrate.workers import pool

THREADS = min(os.cpu_count() or 1, 4)  # checkouts at once: more than the cores only delays the first node
FROM_FILES = 1000  # files in the user's index from which a batch is checked out at once

_pending: dict[Future, tuple[Path, str]] = {}  # checkout -> (its place in the pool's folder, its base)


def start(root: Path, worktrees: Path, count: int, base: str) -> None:
    """Begin checking out, at `base`, the working copies `count` nodes about to start need beyond the pool's
    spares, when that is two or more and the repository holds `FROM_FILES` files."""
    need = count - pool.spares(worktrees)
    if need < 2 or THREADS < 2 or _tracked(root) < FROM_FILES:
        return
    home = pool.folder(worktrees)
    home.mkdir(parents=True, exist_ok=True)
    threads = ThreadPoolExecutor(max_workers=min(need, THREADS), thread_name_prefix="checkouts")
    for place in _places(home, need, secrets.token_hex(4)):
        _pending[threads.submit(git.worktree_add_detached, root, place, base)] = (place, base)
    threads.shutdown(wait=False)  # its threads end with the last checkout


def supply(root: Path, worktrees: Path) -> None:
    """Before a node looks for a spare: the checkouts done so far become spares, and with none in the pool
    while some are still being made, the first to finish is waited for."""
    if not _pending:
        return
    if not pool.spares(worktrees):
        wait(list(_pending), return_when=FIRST_COMPLETED)
    for future in [f for f in _pending if f.done()]:
        _pool(root, worktrees, future)


def settle(root: Path, worktrees: Path) -> None:
    """Every checkout begun is waited for and pooled: what the batch did not take stays a spare."""
    if _pending:
        wait(list(_pending))
    for future in list(_pending):
        _pool(root, worktrees, future)


def _pool(root: Path, worktrees: Path, future: Future) -> None:
    place, base = _pending.pop(future)
    if future.exception() is None:
        try:
            pool.record(place, worktrees, base, prepared=True)
            if pool.keep(root, place, worktrees, capped=False):
                return
        except (OSError, GitError, git_files.Unusable):
            pass
    if os.path.lexists(place):  # a checkout git gave up half way (a full disk), or one the pool refused
        pool.discard(root, place)
    pool.forget(place)


def _places(home: Path, count: int, batch: str) -> list[Path]:
    """`count` names in the pool's folder nothing holds (a crash's leftover is removed on resume), each new to
    this batch (`batch`, drawn for it): a checkout a SIGKILLed runner left running goes on after the resume
    removed its folder, fails, and git then removes the folder and admin dir it was given, by name; the
    resumed run's checkouts, named as those were, would lose theirs (git names an admin dir after its folder)."""
    found: list[Path] = []
    n = 0
    while len(found) < count:
        n += 1
        place = home / f"{pool.BEGUN}{batch}-{n}"
        if not os.path.lexists(place) and not os.path.lexists(pool.spare_place(home, place)) \
                and all(p != place for p, _ in _pending.values()):
            found.append(place)
    return found


def _tracked(root: Path) -> int:
    """How many entries the user's index holds (its header says so: nothing else is read), 0 when it cannot
    be read: the campaign's trees are the user's project, near enough for deciding whether to bother."""
    dot = Path(root) / ".git"
    index = dot / "index" if dot.is_dir() else (git.admin_dir(root) or Path("/nonexistent")) / "index"
    try:  # never waiting on a FIFO a worker without the sandbox put there
        fd, _ = git_files.open_regular(index)
        with os.fdopen(fd, "rb") as fh:
            head = fh.read(12)
    except (OSError, git_files.Unusable):
        return 0
    return int.from_bytes(head[8:12], "big") if len(head) == 12 and head[:4] == b"DIRC" else 0
