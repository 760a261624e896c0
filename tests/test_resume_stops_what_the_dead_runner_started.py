"""What a killed runner started outside its workers (its own git: a checkout of a whole repository takes seconds)
runs on after it dies, in a session of its own. rv76: such a `git worktree add` went on after the resume, and
when it failed git removed, by name, the admin dir the resume had just made. Everything a runner starts carries
its origin (proc.ORIGIN, also written in the campaign lock); `resume` stops what carries a dead runner's before
it reads or starts anything."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

from orchestrate import proc
from tests.engine_helpers import campaign_repo, journal

DAG = """\
topic: left
workers: {sh: "./work.sh"}
defaults: {sandbox: none}
nodes:
  - {id: A, title: a, file_surface: [a.txt], discipline: sh}
"""


def _dead_pid() -> int:
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def test_everything_orchestrate_starts_carries_its_origin():
    assert proc.run(["sh", "-c", "echo $ORCH_ORIGIN"]).stdout.strip() == proc.ORIGIN


def _left_by_a_dead_runner(tmp_path, orch):
    """A campaign paused at final acceptance, as a killed runner leaves it: its lock's holder file, and a git of its
    still running in a session of its own. (the repository, that process)"""
    repo = campaign_repo(tmp_path, DAG, "#!/bin/sh\necho a > a.txt\n")
    assert orch("run", cwd=repo).rc == 75
    (repo / ".scratch" / "locks" / "left.json").write_text(json.dumps(
        {"pid": _dead_pid(), "host": socket.gethostname(), "command": "run", "started": "2026-01-01T00:00:00Z",
         "origin": "0123abcd0123abcd"}))
    return repo, subprocess.Popen(["sleep", "120"], env={**os.environ, "ORCH_ORIGIN": "0123abcd0123abcd"},
                                  start_new_session=True)


def _orchestrate(repo, *args: str) -> subprocess.CompletedProcess:
    """In a process of its own: in this one, every child not started by proc is taken for an orphan of a run."""
    return subprocess.run([sys.executable, "-m", "orchestrate", *args], cwd=repo, capture_output=True, text=True,
                          env=dict(os.environ, CI="true"), stdin=subprocess.DEVNULL)


def test_resume_stops_what_a_dead_runner_left_running_by_its_origin(tmp_path, orch):
    repo, left = _left_by_a_dead_runner(tmp_path, orch)
    other = subprocess.Popen(["sleep", "120"], env={**os.environ, "ORCH_ORIGIN": "ffffffffffffffff"},
                             start_new_session=True)
    try:  # in a process of its own: in this one, every child not started by proc is taken for an orphan of a run
        result = subprocess.run([sys.executable, "-m", "orchestrate", "resume"], cwd=repo, capture_output=True,
                                text=True, env=dict(os.environ, CI="true"), stdin=subprocess.DEVNULL)
        assert result.returncode == 75, result.stdout + result.stderr
        left.wait(timeout=30)  # ended (its status may have been collected by the resume's own reaping), not in 120 s
        assert other.poll() is None  # another process's: left alone
        assert "stopped 1 process(es) the dead runner" in result.stdout + result.stderr
        assert any(e["kind"] == "repair" and e["context"].get("pids") == [left.pid] for e in journal(repo, "left"))
    finally:
        for p in (left, other):
            if p.poll() is None:
                p.kill()
                p.wait()


def test_a_decide_between_the_dead_runner_and_the_resume_leaves_its_leftovers_to_the_resume(tmp_path, orch):
    """rv81: `decide` (or `abandon`, `realign`) took the dead runner's lock and wrote its own holder over the dead
    one's, then removed it: the resume after it no longer knew the dead runner, and what it left, carrying its
    origin (its git, a worker's child in a session of its own), ran on through the resume. The dead runner's
    record stays for the resume."""
    repo, left = _left_by_a_dead_runner(tmp_path, orch)
    try:
        decided = _orchestrate(repo, "decide", "final-acceptance", "reject", "--note", "not yet")
        assert decided.returncode == 0, decided.stdout + decided.stderr
        assert left.poll() is None  # a decide stops nothing: what the dead runner left is the resume's to stop
        resumed = _orchestrate(repo, "resume")  # (the campaign is halted by that answer: the resume says so, and ends)
        assert "took over the lock of pid" in resumed.stdout + resumed.stderr, resumed.stdout + resumed.stderr
        left.wait(timeout=30)  # ended, not in 120 s
    finally:
        if left.poll() is None:
            left.kill()
            left.wait()


def test_abandon_stops_what_the_dead_runner_left(tmp_path, orch):
    """No resume comes after an abandon (it is refused), so it stops what the dead runner left itself."""
    repo, left = _left_by_a_dead_runner(tmp_path, orch)
    try:
        done = _orchestrate(repo, "abandon", "--note", "enough")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "stopped 1 process(es) the dead runner" in done.stdout + done.stderr
        left.wait(timeout=30)
        assert not (repo / ".scratch" / "locks" / "left.json").exists()  # nothing left for a resume to do
    finally:
        if left.poll() is None:
            left.kill()
            left.wait()
