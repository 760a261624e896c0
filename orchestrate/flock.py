"""Exclusive advisory locks on files, with flock(2): the kernel drops one when its holder dies, so a crashed
runner never leaves a lock behind to clear by hand.

filelock does the same on POSIX, but importing it costs ~15 ms of every `orchestrate` start (it pulls in
logging, inspect, secrets and more; measured with `python -X importtime`), as much as everything a
one-node campaign journals before its first worker starts. Only POSIX is supported (bubblewrap, /proc),
so flock is all of it that was used.
"""
from __future__ import annotations

import errno
import fcntl
import math
import os
import time
from pathlib import Path

from orchestrate.errors import OrchestrateError, UsageError

POLL = 0.02  # seconds between tries while another process holds the lock


class Busy(Exception):
    """The lock was still held by another process when the wait ran out."""


class FileLock:
    """`with FileLock(path, timeout):` holds an exclusive flock on `path` (created when missing) for the
    block (its folder too). timeout 0 tries once; math.inf waits in the kernel, without polling. The
    descriptor is not inherited by child processes (PEP 446), so a worker the holder starts, or an orphan
    it leaves, never keeps the lock alive after the holder is gone. A link at `path` is refused."""

    def __init__(self, path: str | Path, timeout: float = 0.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self._fd: int | None = None

    def acquire(self) -> "FileLock":
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):  # a link to nothing, or a file, where a folder goes
            raise in_the_way(self.path.parent) or UsageError(f"{self.path.parent} cannot be made") from None
        deadline = time.monotonic() + self.timeout
        while True:
            # not through a link: `.scratch/locks/` is writable by a worker without the sandbox, and a link
            # planted there would send the lock (and the file it creates) wherever it points
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
            except OSError as exc:
                if exc.errno != errno.ELOOP:
                    raise
                raise OrchestrateError(f"{self.path} is a symbolic link, not a lock file",
                                       hint="remove it (nothing of orchestrate's is a link there)") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if self.timeout == math.inf else fcntl.LOCK_NB))
                if os.fstat(fd).st_nlink:  # else the file was deleted under its holder: lock the new one
                    self._fd = fd
                    return self
            except BlockingIOError:
                pass
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
            if time.monotonic() >= deadline:
                raise Busy(str(self.path))
            time.sleep(POLL)

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> "FileLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def in_the_way(folder: Path) -> UsageError | None:
    """Why `folder` cannot be made, as input that cannot be used (exit 2): the outermost of it and its parents
    that is there but is no folder, named with the way to move it aside. None when nothing is in its way."""
    blocker = next((p for p in reversed((folder, *folder.parents)) if not p.is_dir() and (p.exists() or p.is_symlink())),
                   None)
    if blocker is None:
        return None
    if not blocker.exists():
        return UsageError(f"{blocker}: a link to {os.readlink(blocker)}, which is gone, where orchestrate keeps a "
                          f"folder; {folder} cannot be made", hint=f"remove the link (`rm {blocker}`), or make the "
                                                                   "folder it leads to")
    return UsageError(f"{blocker}: a file where orchestrate keeps a folder; {folder} cannot be made",
                      hint=f"move it aside (`mv {blocker} {blocker}.moved`), then run the command again")
