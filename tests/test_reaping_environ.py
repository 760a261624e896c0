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
    env = {"ORCH_NOTIFIER": "1", "PATH": os.environ["PATH"]}
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
