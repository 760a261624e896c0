"""Files of this process's own whose contents another process (a kept git writer) reads by name: without a
name of their own (a memfd, or an O_TMPFILE where memfds are refused), named through /proc/<pid>/fd/; in a
private temporary folder where there is no /proc.
Rewriting a file on these disks took 0.2-0.5 ms (its truncation and write journalled by the file system),
twice a recorder commit; a memfd's takes microseconds."""
from __future__ import annotations

import os
import shutil
import tempfile

KEPT = 8  # memfds kept open between uses, emptied (a recorder commit's blobs and trees); more are closed after use


class Scratch:
    def __init__(self, label: str) -> None:
        self.label = label
        self._fds: list[int] = []
        self._folder: str | None = None

    def names(self, contents: list[bytes]) -> list[str]:
        """Each content written to a file of its own; their names, valid until `release`."""
        if _PROC_FDS:
            try:
                return [self._unnamed(i, data) for i, data in enumerate(contents)]
            except OSError:  # neither a memfd nor an unnamed file: named files in a private folder
                self.close()
        if self._folder is None:
            self._folder = tempfile.mkdtemp(prefix=f"orchestrate-{self.label}-")
        return [self._on_disk(os.path.join(self._folder, str(i)), data) for i, data in enumerate(contents)]

    def _unnamed(self, i: int, data: bytes) -> str:
        """A file no one else can reach by a name to swap (a FIFO put there would stop git's read): a memfd, or
        where they are refused (a seccomp filter, an old kernel) an O_TMPFILE in the temporary folder."""
        while len(self._fds) <= i:
            try:
                fd = os.memfd_create(f"orchestrate-{self.label}", os.MFD_CLOEXEC)
            except OSError:
                fd = os.open(tempfile.gettempdir(), os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
            self._fds.append(fd)
        fd = self._fds[i]
        os.ftruncate(fd, 0)
        _write_all(fd, data)
        return f"/proc/{os.getpid()}/fd/{fd}"

    @staticmethod
    def _on_disk(path: str, data: bytes) -> str:
        """Without /proc: written anew, never through what was put at the name since (a link, a FIFO: the folder
        is private to this user, not to this process)."""
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)  # (a new file)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        return path

    def release(self) -> None:
        """The contents are read: memory given back (the memfds emptied, those past KEPT closed)."""
        for fd in self._fds[KEPT:]:
            os.close(fd)
        del self._fds[KEPT:]
        for fd in self._fds:
            os.ftruncate(fd, 0)

    def close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds = []
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


def _write_all(fd: int, data: bytes) -> None:
    view, done = memoryview(data), 0
    while done < len(data):
        done += os.pwrite(fd, view[done:], done)


_PROC_FDS = hasattr(os, "memfd_create") and hasattr(os, "O_TMPFILE") and os.path.isdir(f"/proc/{os.getpid()}/fd")
