"""exits.exit_fd / wait_exit with real processes: the runner sleeps until a worker exits, not a poll later."""
from __future__ import annotations

import os
import subprocess
import threading
import time

from orchestrate.workers import exits


def test_the_wait_ends_when_the_process_exits_not_at_its_timeout():
    child = subprocess.Popen(["sleep", "600"])
    fd = exits.exit_fd(child.pid)
    assert fd is not None, "pidfd_open is missing here (Linux 5.3+)"
    try:
        threading.Timer(0.1, child.kill).start()
        start = time.monotonic()
        exits.wait_exit([fd], 300)
        assert time.monotonic() - start < 60  # woken by the exit (0.1 s): the timeout is five minutes away
        assert child.wait(timeout=5) is not None
    finally:
        os.close(fd)
        child.kill()
        child.wait()


def test_the_wait_lasts_its_timeout_while_the_process_runs():
    child = subprocess.Popen(["sleep", "600"])
    fd = exits.exit_fd(child.pid)
    try:
        exits.wait_exit([fd], 0.05)
        assert child.poll() is None
    finally:
        os.close(fd)
        child.kill()
        child.wait()


def test_no_descriptor_for_a_process_that_is_not_there():
    child = subprocess.Popen(["true"])
    child.wait()  # reaped: its pid names nothing now
    assert exits.exit_fd(child.pid) is None
