"""bubblewrap failing to set the sandbox up (its chdir into the worktree, a bind) before the worker starts is
the environment's fault, as a worker command that cannot be found is (DESIGN §14.5): no attempt is spent, the
node stops at the realignment seam (case environment) with bwrap's line, and runs as attempt 1 once fixed. It
was a failed attempt (`the worker exited 1`), reworked until its attempts were spent."""
from __future__ import annotations

import json
import os

import pytest

from orchestrate.workers import sandbox
from tests.engine_helpers import campaign_repo, journal

REASON = sandbox.probe()
DAG = """\
topic: sb
workers: {sh: "./work.sh"}
defaults: {sandbox: bwrap, max_attempts: 2}
nodes:
  - {id: N1, file_surface: [n1.txt], discipline: sh}
"""


@pytest.mark.skipif(REASON is not None, reason=f"bubblewrap does not work here: {REASON}")
@pytest.mark.skipif(os.geteuid() != 0, reason="only root's runner makes worktrees in a folder of mode 000")
def test_a_sandbox_that_cannot_enter_the_worktree_is_no_attempt(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, "#!/bin/sh\necho 1 > n1.txt\n")
    (repo / ".scratch").mkdir(exist_ok=True)
    (repo / ".scratch").chmod(0)
    try:
        stopped = orch("run", "--no-interactive", cwd=repo)
    finally:
        (repo / ".scratch").chmod(0o755)
    assert stopped.rc == 75, stopped.out + stopped.err
    assert "REWORK" not in stopped.out and "attempt 2" not in stopped.out, stopped.out
    seam = [e["context"] for e in journal(repo, "sb") if e["kind"] == "seam"][-1]
    assert (seam["seam"], seam["case"]) == ("realignment", "environment"), seam
    assert "the sandbox could not start the worker `./work.sh`" in seam["reason"], seam["reason"]
    assert "bwrap: Can't chdir to" in seam["reason"], seam["reason"]
    status = json.loads(orch("status", "--json", "--topic", "sb", cwd=repo).out)
    assert [(n["id"], n["attempt"]) for n in status["nodes"]] == [("N1", 0)]
    assert orch("decide", "realignment", "rework", "--note", "fixed .scratch", cwd=repo).rc == 0
    done = orch("resume", "--no-interactive", "--topic", "sb", cwd=repo)
    assert done.rc == 75 and "final-acceptance" in done.out, done.out + done.err
    status = json.loads(orch("status", "--json", "--topic", "sb", cwd=repo).out)
    assert [(n["id"], n["status"], n["attempt"]) for n in status["nodes"]] == [("N1", "ACCEPTED", 1)]


def test_only_the_last_run_of_an_attempt_says_whether_the_sandbox_started_it(tmp_path):
    """An attempt stopped by the environment runs again with its number, appending to the same log: bwrap's line
    from the first run says nothing about a second run that exited 1 without a word."""
    from orchestrate.workers.returns import environment_error
    log = tmp_path / "attempt-1.log"
    first = "# orchestrate: node N1 attempt 1: ./work.sh\nbwrap: Can't chdir to /x: Permission denied\n"
    log.write_text(first)
    assert environment_error(1, str(log)) == ("the sandbox could not start the worker `./work.sh` (exit 1): "
                                              "bwrap: Can't chdir to /x: Permission denied")
    log.write_text(first + "# orchestrate: node N1 attempt 1: ./work.sh\n")
    assert environment_error(1, str(log)) == ""
    log.write_text("# orchestrate: node N1 attempt 1: ./work.sh\nbwrap: said by the worker\nit failed\n")
    assert environment_error(1, str(log)) == ""
