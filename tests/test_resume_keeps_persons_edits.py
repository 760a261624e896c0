"""`resume` after a crash puts back what the dead runner half-wrote in the recorder, and only that: a
person's edits made while no runner ran (the settings, the default DAG, the campaign's DAG copy) are
theirs. rv75 found every one silently put back to the recorder's last commit; a DAG edit then never
reached the dag-amendment seam, and nothing said it was gone."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from tests.engine_helpers import campaign_repo
from tests.helpers import RepoDir

DAG = """\
topic: kept
workers: {sh: "./work.sh"}
defaults: {timeout: 120, max_attempts: 2}
nodes:
  - {id: N, title: waits, file_surface: [n/], discipline: sh}
"""
# the first attempt waits for the test (which kills the runner meanwhile); the one resume starts does not
WORKER = r"""#!/bin/sh
if [ "$ORCH_ATTEMPT" = 1 ]; then sleep 120; fi
mkdir -p n && echo N > n/x
"""


def _recorded(repo, subject: str, runner: subprocess.Popen) -> None:
    ledger = RepoDir(repo / ".ledger")
    deadline = time.monotonic() + 60  # bounds a failure only
    while subject not in ledger.git("log", "-1", "--format=%s"):
        assert runner.poll() is None and time.monotonic() < deadline, f"no commit {subject!r}"
        time.sleep(0.05)


def test_a_persons_edits_made_while_no_runner_ran_survive_resume_and_the_dag_edit_is_asked(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    runner = subprocess.Popen([sys.executable, "-m", "orchestrate", "run", "--no-interactive"], cwd=repo,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    try:
        _recorded(repo, "DISPATCH dispatched -> AWAIT", runner)  # its step committed: nothing half-done
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait()
    ledger = repo / ".ledger"
    copy, default, config = ledger / "state" / "kept" / "dag.yaml", ledger / "state" / "dag.yaml", ledger / "config.yaml"
    copy.write_text(copy.read_text().replace("title: waits", "title: waits longer"))
    default.write_text(default.read_text() + "# the next campaign\n")
    config.write_text(config.read_text() + "# a note of mine\n")

    result = orch("resume", "--no-interactive", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert "title: waits longer" in copy.read_text()
    assert default.read_text().endswith("# the next campaign\n")
    assert config.read_text().endswith("# a note of mine\n")
    seam = json.loads(orch("status", "--json", cwd=repo).out)["seams"][0]
    assert seam["seam"] == "dag-amendment", seam
    assert any('title "waits" -> "waits longer"' in line for line in seam["show"]), seam
