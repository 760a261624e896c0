"""orchestrate/flock.py against real processes: flock(2) is per open file, so the other holder is a child."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from orchestrate.flock import Busy, FileLock

HOLD = """
import fcntl, sys
f = open(sys.argv[1], "a")
fcntl.flock(f, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()
"""


def holder(path):
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    assert child.stdout.readline() == "held\n"
    return child


def let_go_later(child):
    """The holder exits once it reads a line. The timer thread only writes that line, and the test joins it
    before touching the child again: a timer that ran communicate() read the child's stdout while the test
    closed it, and the descriptor number, reused by the next test's pipe, was then read by the stale thread
    (CI hung 300 s on that once)."""
    def say():
        child.stdin.write("go\n")
        child.stdin.flush()
    timer = threading.Timer(0.2, say)
    timer.start()
    return timer


def test_a_lock_held_elsewhere_is_busy_at_once_with_no_wait(tmp_path):
    path = tmp_path / "x.lock"
    child = holder(path)
    try:
        with pytest.raises(Busy):
            FileLock(path, timeout=0).acquire()
    finally:
        child.communicate("")
    with FileLock(path) as lock:
        assert lock.held
    assert not lock.held


def test_a_waiting_lock_is_taken_when_the_holder_lets_go(tmp_path):
    path = tmp_path / "x.lock"
    child = holder(path)
    timer = let_go_later(child)
    with FileLock(path, timeout=30) as lock:  # the holder exits after 0.2 s; the wait is far longer
        assert lock.held
    timer.join()
    child.communicate()
    assert child.returncode == 0


def test_the_kernel_drops_the_lock_of_a_holder_that_dies(tmp_path):
    path = tmp_path / "x.lock"
    child = holder(path)
    child.kill()
    child.communicate()
    FileLock(path, timeout=5).acquire().release()


def test_a_child_started_while_the_lock_is_held_does_not_keep_it(tmp_path):
    """A worker (or an orphan it leaves) must not hold the runner's lock once the runner is gone."""
    path = tmp_path / "x.lock"
    holder = subprocess.run([sys.executable, "-c", "import subprocess, sys; from orchestrate.flock import FileLock;"
                             "FileLock(sys.argv[1]).acquire();"
                             "print(subprocess.Popen(['sleep', '60'], close_fds=False, stdout=subprocess.DEVNULL, "
                             "stderr=subprocess.DEVNULL).pid)", str(path)],
                            capture_output=True, text=True, check=True)  # exits holding it: never released
    orphan = int(holder.stdout)
    try:
        FileLock(path, timeout=5).acquire().release()  # the orphan lives on; had it inherited the lock, Busy
    finally:
        os.kill(orphan, signal.SIGKILL)


def test_a_lock_file_deleted_under_its_holder_is_not_shared(tmp_path, monkeypatch):
    """A lock taken on a file that was deleted meanwhile (`rm -rf .scratch` while a runner holds its lock)
    locks nothing anyone else can see: the lock is taken again on the file the path now names."""
    import fcntl
    from orchestrate import flock
    path = tmp_path / "x.lock"
    calls = []
    original = fcntl.flock

    def deleting(fd, op):  # the file goes between this process's open and its flock, the first time
        if not calls:
            path.unlink()
        calls.append(op)
        return original(fd, op)
    monkeypatch.setattr(flock.fcntl, "flock", deleting)
    lock = FileLock(path, timeout=5).acquire()
    try:
        assert len(calls) >= 2 and os.fstat(lock._fd).st_nlink == 1 and path.exists()
    finally:
        monkeypatch.undo()
        lock.release()


def test_a_link_where_the_lock_file_goes_is_refused(tmp_path):
    from orchestrate.errors import OrchestrateError
    target = tmp_path / "elsewhere"
    (tmp_path / "x.lock").symlink_to(target)
    with pytest.raises(OrchestrateError, match="symbolic link"):
        FileLock(tmp_path / "x.lock").acquire()
    assert not target.exists()


def test_a_wait_without_end_takes_the_lock_when_the_holder_lets_go(tmp_path):
    import math
    path = tmp_path / "x.lock"
    child = holder(path)
    timer = let_go_later(child)
    with FileLock(path, timeout=math.inf) as lock:
        assert lock.held
    timer.join()
    child.communicate()
    assert child.returncode == 0


def test_the_lock_file_and_its_folders_are_made_when_missing(tmp_path):
    path = tmp_path / "a" / "b" / "x.lock"
    with FileLock(path):
        assert path.is_file()


def test_the_wait_gives_up_after_its_timeout(tmp_path):
    path = tmp_path / "x.lock"
    child = holder(path)
    try:
        start = time.monotonic()
        with pytest.raises(Busy):
            FileLock(path, timeout=0.1).acquire()
        assert time.monotonic() - start >= 0.1
    finally:
        child.communicate("")


def test_a_link_leading_nowhere_where_the_locks_folder_goes_is_one_line_naming_it(tmp_path):
    """A `.scratch` that is a link to a folder that is gone (a moved disk, or a worker's doing without the sandbox)
    ended `run` with a traceback (FileExistsError)."""
    from orchestrate.errors import OrchestrateError
    (tmp_path / ".scratch").symlink_to(tmp_path / "gone")
    with pytest.raises(OrchestrateError, match=r"\.scratch: a link to .*gone, which is gone, where orchestrate keeps a folder"):
        FileLock(tmp_path / ".scratch" / "locks" / "x.lock").acquire()
