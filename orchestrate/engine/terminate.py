"""SIGTERM stops a runner as Ctrl-C does.

`kill PID`, a CI job's timeout, systemd or `docker stop` send SIGTERM to the runner alone. Left to its
default, it killed the runner on the spot: nothing recorded the interruption, and the unsandboxed workers,
each in a process group of its own, ran on (adopted by init) with nobody to judge them. Raised as
KeyboardInterrupt in the main thread instead, it takes Ctrl-C's path: the loop stops every worker's
group, records the interruption, and the command exits 130 (DESIGN §10: interrupted, state saved);
`orchestrate resume` continues.
"""
from __future__ import annotations

import functools
import signal
import threading
from typing import Callable, TypeVar

T = TypeVar("T")


def like_ctrl_c(command: Callable[..., T]) -> Callable[..., T]:
    """Run `command` (run, resume, decide) with SIGTERM raising KeyboardInterrupt; the handler before is
    put back after."""
    @functools.wraps(command)
    def guarded(*args, **kwargs) -> T:
        if threading.current_thread() is not threading.main_thread():
            return command(*args, **kwargs)  # only the main thread may set a handler; it alone runs them
        fired = False

        def interrupt(_signum, _frame) -> None:
            nonlocal fired
            if not fired:  # once: a second SIGTERM would cut short the stopping and recording the first began
                fired = True
                raise KeyboardInterrupt

        before = signal.signal(signal.SIGTERM, interrupt)
        try:
            return command(*args, **kwargs)
        finally:
            signal.signal(signal.SIGTERM, before if before is not None else signal.SIG_DFL)
    return guarded
