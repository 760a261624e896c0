"""Seeing a worker's process end the moment it does, without reaping it (its pid, and its group's id, stay
ours to signal until the executor waits for it): a pidfd per worker, polled by its watcher thread and by the
loop's wait (workers/local.py)."""
from __future__ import annotations

import os
import time
from typing import Sequence


def exit_fd(pid: int) -> int | None:
    """A descriptor that becomes readable when process `pid` (a child not yet reaped) exits: a pidfd
    (Linux 5.3+), so a waiter wakes the moment a worker ends instead of at its next poll. None where the
    kernel has none; the caller then sleeps between polls."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def has_exited(pid: int) -> bool:
    """Whether child `pid` has ended, without reaping it: its pid (and group id) stay ours until it is waited for."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # waited for already
        return True


def wait_exit(fds: Sequence[int], timeout: float) -> bool:
    """Sleep until a process behind `fds` (from `exit_fd`) exits (True; none is reaped) or `timeout` passes."""
    if not fds:
        time.sleep(timeout)
        return False
    import select
    waiter = select.poll()  # not select(): a descriptor past 1023 is out of its range
    for fd in fds:
        waiter.register(fd, select.POLLIN)
    ready = waiter.poll(max(0.0, timeout) * 1000)
    if any(events & select.POLLNVAL for _, events in ready):
        time.sleep(timeout)  # a descriptor closed under us: sleep rather than spin; the next poll sees why
    return bool(ready)
