"""Atomic file writes: a temp file in the same folder, fsync, rename, fsync of the folder.

A reader sees the old content or the new, never a torn file. Temp files are named `.<name>.*.tmp`
so a crash's leftovers can be recognised and swept. And logs opened in a folder a worker can write too.
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from orchestrate import removal


def write_atomic(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    _put(path, data, _mode_for(path), None, durable=True)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def replace(path: Path, data: str | bytes, *, mode: int | None = None, times: os.stat_result | None = None) -> None:
    """Put a file at `path` by a rename, without fsync: for git's own files (an admin dir's HEAD, an index),
    which git does not fsync either. The file is made anew (a temp name only this call opened), so a link,
    FIFO or folder a worker planted at the name is replaced, never written through. `mode`: its permissions
    (default: those of the file there now, as `write_atomic` keeps them); `times`: a stat whose access and
    modification times it takes (git's racy-timestamp check reads an index's mtime)."""
    if path.is_dir() and not path.is_symlink():
        removal.remove(path)
    _put(path, data, _mode_for(path) if mode is None else mode, times, durable=False)


def _put(path: Path, data: str | bytes, mode: int, times: os.stat_result | None, *, durable: bool) -> None:
    """A temp file beside `path` with `data`, `mode` (mkstemp makes it 0600 whatever the umask: a report to
    share, .git/info/exclude) and `times`, renamed onto `path`; fsync'ed first when `durable`."""
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = _mkstemp(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
            if times is not None:
                os.utime(fh.fileno(), ns=(times.st_atime_ns, times.st_mtime_ns))
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _mkstemp(path: Path) -> tuple[int, str]:
    """A temp file beside `path`, opened by this process only (O_EXCL); tempfile imported here, not at start:
    `status` and the other readers never write (it and its `random` are 5 ms of their start)."""
    import tempfile
    return tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)


def _mode_for(path: Path) -> int:
    """The permissions the file has now (a write must not narrow or widen them), else what a plain
    `open()` would give a new file under the process's umask."""
    try:
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode):
            return stat.S_IMODE(st.st_mode)
    except OSError:
        pass
    return 0o666 & ~_umask()


def _umask() -> int:
    try:  # read, not set and reset: os.umask would change it for every thread of the runner meanwhile
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def sweep_temp_files(folder: Path) -> list[Path]:
    """Remove temp files a crash left behind (call only while holding the campaign lock)."""
    if not folder.exists():
        return []
    stale = [p for p in folder.rglob(".*.tmp") if p.is_file()]
    for p in stale:
        p.unlink(missing_ok=True)
    return stale


def open_log(path: Path, *, append: bool = False):
    """Open a log orchestrate writes in a folder a worker may write too (its run folder, in the sandbox as
    well), for writing bytes: never through a link, into a FIFO, or into a file hard-linked elsewhere that
    the worker planted at its name (the runner writes as the user, outside the sandbox): such an entry is
    removed and the log made anew. Truncated only once it is known to be a file of its own."""
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_APPEND if append else 0)
    for _ in range(10):
        try:
            fd = os.open(path, flags, 0o666)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENXIO, errno.EISDIR, errno.EEXIST):
                raise
            removal.remove(path)
            continue
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
            os.set_blocking(fd, True)
            if not append:
                os.ftruncate(fd, 0)
            return os.fdopen(fd, "ab" if append else "wb")
        os.close(fd)
        removal.remove(path)
    raise OSError(errno.EAGAIN, f"{path} was replaced again and again while it was opened")
