"""SIGTERM stops `orchestrate run` and `resume` as Ctrl-C does (engine/terminate.py): the workers' groups are stopped,
the interruption is recorded, the runner exits 130, and `resume` goes on. Before, the runner died at once
(-15) and an unsandboxed worker ran on, adopted by init."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.engine_helpers import campaign_repo, journal

ORCH = [sys.executable, "-c", "import sys; from orchestrate.cli.main import main; sys.exit(main())"]
# The first attempt says it has started (its pid, in a marker outside the repository) and waits to be
# stopped; once the marker is there, an attempt does its work.
WORKER = r"""#!/bin/sh
set -eu
if [ -e "{mark}" ]; then
  mkdir -p out && echo done > out/one.txt
  exit 0
fi
echo $$ > "{mark}.tmp" && mv "{mark}.tmp" "{mark}"
exec sleep 600
"""
DAG = """\
topic: term
workers: {sh: "./work.sh"}
defaults: {max_attempts: 3, timeout: 900, sandbox: none}
nodes:
  - {id: one, title: one, depends_on: [], file_surface: [out/], discipline: sh}
"""


def _running(pid: int) -> bool:
    """The process is there and not a zombie waiting to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _wait_for(path: Path, runner: subprocess.Popen) -> None:
    """Until the worker has written its marker (an event, not a delay); a runner that ends first fails."""
    deadline = time.monotonic() + 120
    while not path.exists():
        assert runner.poll() is None, runner.communicate()
        assert time.monotonic() < deadline, "the worker never started"
        time.sleep(0.05)


def _recorded(repo, attempt: int) -> bool:
    """Is the worker's attempt recorded as started (DISPATCHED: the loop runs, past DISPATCH or resume's repairs)?"""
    if not (repo / ".ledger" / "state" / "term" / "journal.jsonl").exists():
        return False
    return any(e["kind"] == "node" and e["context"].get("status") == "DISPATCHED"
               and e["context"].get("attempt") == attempt for e in journal(repo, "term"))


def _stopped_by_sigterm(repo, mark: Path, command: list[str], attempt: int = 1) -> None:
    """`orchestrate COMMAND` until its worker has started and the loop recorded it, then SIGTERM to the runner
    alone (as `kill PID` or a CI timeout sends it): exit 130, the interruption said, and the worker gone with it.
    Not at the mark alone: the worker may write it before the runner recorded its start, and before that the
    signal lands elsewhere (still in DISPATCH, or, on resume, before the loop: test below), more often under load."""
    runner = subprocess.Popen(ORCH + command, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    worker = None
    try:
        _wait_for(mark, runner)
        worker = int(mark.read_text())
        assert _running(worker)
        deadline = time.monotonic() + 120
        while not _recorded(repo, attempt):
            assert runner.poll() is None, runner.communicate()
            assert time.monotonic() < deadline, f"attempt {attempt} was never recorded as started"
            time.sleep(0.05)
        runner.send_signal(signal.SIGTERM)
        out, err = runner.communicate(timeout=120)
        assert runner.returncode == 130, (runner.returncode, out, err)
        assert "interrupted in AWAIT; workers stopped" in err and "Traceback" not in err, err
        assert not _running(worker), "the worker outlived its runner"
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.communicate()
        if worker is not None and _running(worker):
            os.kill(worker, signal.SIGKILL)


@pytest.mark.parametrize("stopped", ["run", "resume"])
def test_sigterm_stops_the_workers_records_the_interruption_and_resume_goes_on(tmp_path, orch, stopped):
    mark = tmp_path / "started"
    repo = campaign_repo(tmp_path, DAG, WORKER.replace("{mark}", str(mark)))
    _stopped_by_sigterm(repo, mark, ["run", "--no-interactive"])
    if stopped == "resume":  # the next attempt waits again, and the resume running it is stopped the same way
        mark.unlink()
        _stopped_by_sigterm(repo, mark, ["resume", "--no-interactive"], attempt=2)
    assert journal(repo, "term")[-1]["kind"] == "interrupt"
    resumed = orch("resume", "--no-interactive", cwd=repo)
    assert resumed.rc == 75, resumed.err  # went on to the end: the final-acceptance seam
    assert "paused at seam final-acceptance" in resumed.out + resumed.err
    assert repo.git("show", "campaign/term:out/one.txt") == "done"


def _tagged_alive(repo: Path) -> list[int]:
    """Live processes whose environment names a folder of `repo` (a worker's ORCH_WORKTREE does)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                env = (entry / "environ").read_bytes()
            except OSError:
                continue
            if f"ORCH_WORKTREE={repo}".encode() in env and _running(int(entry.name)):
                found.append(int(entry.name))
    return found


def test_a_sigterm_right_after_resume_started_an_attempt_again_stops_that_worker(tmp_path, orch):
    # the window before the loop's own interrupt handling: resume's repair has started the cut-off attempt
    # again, and the signal comes before the loop runs; the attempt it started must not outlive the runner
    mark = tmp_path / "started"
    repo = campaign_repo(tmp_path, DAG, WORKER.replace("{mark}", str(mark)))
    _stopped_by_sigterm(repo, mark, ["run", "--no-interactive"])
    mark.unlink()
    at_repair = ("import os, signal, sys; from orchestrate.workers import siblings; "
                 "siblings.unread_after_resume = lambda ctx: os.kill(os.getpid(), signal.SIGTERM); "
                 "from orchestrate.cli.main import main; sys.exit(main())")
    try:
        done = subprocess.run([sys.executable, "-c", at_repair, "resume", "--no-interactive"], cwd=repo,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 130, (done.stdout, done.stderr)
        assert "Traceback" not in done.stderr, done.stderr
        assert _tagged_alive(repo) == [], "the attempt resume started again outlived its runner"
    finally:
        for pid in _tagged_alive(repo):
            os.kill(pid, signal.SIGKILL)
    mark.write_text("0")  # the attempt stopped may not have got as far as its marker: the next one does its work
    resumed = orch("resume", "--no-interactive", cwd=repo)  # the repairs were never recorded: made again
    assert resumed.rc == 75, resumed.err
    assert repo.git("show", "campaign/term:out/one.txt") == "done"
