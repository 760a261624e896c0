"""stdout whose reader may go away (`orchestrate run | head -3`): a normal end of output, never an error; stdout
that cannot be written (a full disk, a descriptor closed before the start): output lost, the command goes on, and
its exit code says so.

Light on purpose: the console script's fast `status` path can use it without loading click.
"""
from __future__ import annotations

import errno
import os
import sys
from contextlib import contextmanager


class _Stdout:
    """stdout whose reader may go away: the first broken pipe points the descriptor at /dev/null, so
    every later write (ours, click's, rich's, the interpreter's final flush) quietly succeeds and a
    running campaign goes on to a recorded state instead of dying mid-state."""

    def __init__(self, stream, *, absent: bool = False) -> None:
        self._stream = stream
        self.absent = absent  # no stdout from the start (`>&-`): what is written is lost, as on a full disk
        self.gone = False
        self.written = False  # anything yet: an error's JSON goes to stdout only as its whole output
        self.failed: OSError | None = None  # a write that failed otherwise than by the reader going away

    def write(self, text: str) -> int:
        self.written = self.written or bool(text)
        if self.absent and text and self.failed is None:
            self.failed = OSError(errno.EBADF, os.strerror(errno.EBADF))
        if not self.gone:
            try:
                return self._stream.write(text)
            except OSError as exc:
                self._lost(exc)
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except OSError as exc:
                self._lost(exc)

    def _lost(self, exc: OSError) -> None:
        self.gone = True
        if not isinstance(exc, BrokenPipeError):
            self.failed = exc
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass  # a stream without a descriptor (a test's capture): `gone` alone silences it

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def standard_descriptors() -> None:
    """Descriptors 0, 1 and 2, when closed (`orchestrate run >&-`), opened on /dev/null: else the first file
    orchestrate opens takes the number, and a child's or a stray write meant for the terminal lands in it."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


@contextmanager
def guarded():
    """sys.stdout wrapped for the duration of one command, and put back after; yields the wrapper (None when an
    outer command already wrapped it), for `settled`. A stdout or stderr Python found closed at start-up is
    written to /dev/null."""
    standard_descriptors()
    real, errors = sys.stdout, sys.stderr
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the command's whole duration
    elif not isinstance(sys.stderr, _Stdout):  # `2>/dev/full`: an error line that cannot be written is lost,
        sys.stderr = _Stdout(sys.stderr)      # never a second failure that replaces the command's exit code
    wrapper = None
    if not isinstance(real, _Stdout):
        wrapper = sys.stdout = _Stdout(real) if real is not None else \
            _Stdout(open(os.devnull, "w"), absent=True)  # noqa: SIM115 - for the command's whole duration
    try:
        yield wrapper
    finally:
        sys.stdout.flush()
        sys.stdout, sys.stderr = real, errors


def settled(wrapper: _Stdout | None, rc: int) -> int:
    """The command's exit code, once its output is known: a stdout that could not be written (not a reader gone)
    is said on stderr in one line, and a command that otherwise succeeded exits 1, since what it printed is
    incomplete."""
    if wrapper is None or wrapper.failed is None:
        return rc
    said = wrapper.failed.strerror or str(wrapper.failed)
    try:
        print(f"orchestrate: error: the output could not be written ({said}); what was printed is incomplete",
              file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
    return rc or 1
