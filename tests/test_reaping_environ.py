"""Reading a process's environment, which decides what reaping ends (a worker's tags) and spares (a notifier's
mark): a process caught in the middle of an exec must not read as having none."""
import os
import subprocess
import sys

import pytest

from orchestrate import reaping
from orchestrate.proc import stat_fields

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_a_process_read_while_it_execs_keeps_its_environment():
    env = {"ORCH_NOTIFIER": reaping.NOTIFIER, "PATH": os.environ["PATH"]}
    reads = lost = 0
    for _ in range(150):
        child = subprocess.Popen(["sh", "-c", "exec env sh -c 'exec env sh -c \"exec true\"'"], env=env)
        while (fields := stat_fields(child.pid)) is not None and fields[0] != b"Z":
            found = reaping._environ(child.pid)
            reads += 1
            if reaping.SPARED not in found and stat_fields(child.pid)[0] != b"Z":  # not reaped: it stays a zombie
                lost += 1
        child.wait()
    assert reads and not lost, f"{lost} of {reads} reads lost the environment of a live process"


def test_a_process_started_with_no_environment_reads_as_having_none(tmp_path):
    child = subprocess.Popen(["env", "-i", "sh", "-c", "echo started; read line"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
    try:
        assert child.stdout.readline() == b"started\n"
        assert reaping._environ(child.pid) == set()
    finally:
        child.communicate(b"\n")


def test_a_process_that_is_gone_or_a_kernel_thread_has_none():
    child = subprocess.Popen(["true"])
    child.wait()
    assert reaping._environ(child.pid) == set()
    assert reaping._environ(2) == set()  # kthreadd


# Unmaps the pages its environment strings are in (any process may), then waits: its environ reads empty for
# good, though its exec is long done. The long argument keeps the stack out of the first of those pages.
UNMAPPED = r"""
import ctypes, mmap, os, sys
fields = open("/proc/self/stat", "rb").read().rsplit(b")", 1)[1].split()
page = mmap.PAGESIZE
low, high = int(fields[47]) & ~(page - 1), (int(fields[48]) + page - 1) & ~(page - 1)
libc = ctypes.CDLL(None, use_errno=True)
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
assert libc.munmap(low, high - low) == 0, ctypes.get_errno()
os.write(1, b"ready\n")
sys.stdin.read()
"""


def test_an_environment_a_process_unmapped_is_read_as_none_without_waiting_for_it(monkeypatch):
    """rv34: such a process was read 500 times, a millisecond apart, in every reaping pass (holding the lock
    that keeps processes from starting)."""
    child = subprocess.Popen([sys.executable, "-c", UNMAPPED, "x" * 9000], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env={"ORCH_NOTIFIER": reaping.NOTIFIER, "PATH": os.environ["PATH"]})
    try:
        assert child.stdout.readline() == b"ready\n"
        looks = []
        monkeypatch.setattr(reaping, "stat_fields", lambda pid: looks.append(pid) or stat_fields(pid))
        assert reaping._environ(child.pid) == set()
        assert len(looks) <= 2
    finally:
        child.communicate(b"")


@pytest.mark.parametrize("listed", [True, False], ids=["children-lists", "parents-only"])
def test_what_is_in_a_folder_or_holds_it_open_is_ended_and_nothing_else(tmp_path, monkeypatch, listed):
    """rv34: a leftover (no sandbox, its environment wiped, in a session of its own) working in a pooled
    worktree, or holding a folder of it open, would write the worktree the next node is handed. Found down the
    kernel's lists of each process's children, or, where it keeps none, from every process's parent."""
    if not listed:
        real = os.path.exists
        monkeypatch.setattr(os.path, "exists", lambda path: not str(path).endswith("/children") and real(path))
    inside = tmp_path / "spare" / "d"
    inside.mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    hold = "exec 3< d; cd ..; cd ..; echo started; read line"
    kids = {"cwd": subprocess.Popen(["sh", "-c", "echo started; read line"], cwd=inside, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE),
            "open": subprocess.Popen(["sh", "-c", hold], cwd=tmp_path / "spare", stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE),
            "outside": subprocess.Popen(["sh", "-c", "echo started; read line"], cwd=tmp_path / "elsewhere",
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)}
    try:
        assert all(kid.stdout.readline() == b"started\n" for kid in kids.values())
        killed = reaping.kill_inside(tmp_path / "spare")
        assert sorted(killed) == sorted([kids["cwd"].pid, kids["open"].pid])
        assert kids["cwd"].wait() == -9 and kids["open"].wait() == -9 and kids["outside"].poll() is None
    finally:
        for kid in kids.values():
            kid.communicate(b"\n" if kid.poll() is None else None)


def test_a_helper_the_runner_keeps_in_a_folder_is_not_ended_with_what_was_left_there(tmp_path):
    """rv35: the kept `git cat-file --batch` of a worktree works in it and moves to the pool with it."""
    from orchestrate import proc
    inside = tmp_path / "spare"
    inside.mkdir()
    kept = proc.start_pipe(["sh", "-c", f"cd '{inside}' && echo started && exec cat"])
    try:
        assert kept.stdout.readline() == b"started\n"
        assert reaping.kill_inside(inside) == [] and kept.poll() is None
    finally:
        proc.end_pipe(kept)


def test_an_empty_read_caught_by_the_next_exec_of_a_chain_is_read_again(monkeypatch):
    """The race the test above catches about once in ten thousand reads under load, made to happen: a read
    empty as one exec ends is read once more, and that read is empty too because the next exec of the chain
    has begun; it was taken for the first exec's memory let go for good, and the environment lost. /proc's
    answers are played back here: the kernel's timing cannot be asked for."""
    _played(monkeypatch, [b"", b"", b"ORCH_NOTIFIER=x\0PATH=/bin\0"],
            [(b"100", b"200", b"300"), (b"700", b"800", b"900")])  # two execs: code start, environment bounds
    assert reaping._environ(12345) == {b"ORCH_NOTIFIER=x", b"PATH=/bin", b""}


def test_an_environment_empty_twice_after_one_exec_is_gone_for_good(monkeypatch):
    _played(monkeypatch, [b"", b"", b"A=1\0"], [(b"100", b"200", b"300")] * 2)  # rv34: its pages unmapped
    assert reaping._environ(12345) == set()


def _played(monkeypatch, environ: list[bytes], execs: list[tuple[bytes, bytes, bytes]]) -> None:
    """/proc/PID/environ and /proc/PID/stat answering as `environ` and `execs` (each a finished exec) say."""
    import io
    reads, done = iter(environ), iter(execs)

    def fields(_pid):
        start, env_start, env_end = next(done)
        out = [b"0"] * 49
        out[0], out[23], out[47], out[48] = b"R", start, env_start, env_end
        return out

    monkeypatch.setattr(reaping, "open", lambda *_a, **_k: io.BytesIO(next(reads)), raising=False)
    monkeypatch.setattr(reaping, "stat_fields", fields)
