"""stdout whose reader may go away (`orchestrate run | head -3`): a normal end of output, never an error.

Light on purpose: the console script's fast `status` path can use it without loading click.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager


class _Stdout:
    """stdout whose reader may go away: the first broken pipe points the descriptor at /dev/null, so
    every later write (ours, click's, rich's, the interpreter's final flush) quietly succeeds and a
    running campaign goes on to a recorded state instead of dying mid-state."""

    def __init__(self, stream) -> None:
        self._stream = stream
        self.gone = False
        self.written = False  # anything yet: an error's JSON goes to stdout only as its whole output

    def write(self, text: str) -> int:
        self.written = self.written or bool(text)
        if not self.gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._lost()
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._lost()

    def _lost(self) -> None:
        self.gone = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass  # a stream without a descriptor (a test's capture): `gone` alone silences it

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextmanager
def guarded():
    """sys.stdout wrapped for the duration of one command, and put back after."""
    real = sys.stdout
    if real is not None and not isinstance(real, _Stdout):
        sys.stdout = _Stdout(real)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stdout = real
