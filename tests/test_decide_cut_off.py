"""`decide` killed after it wrote its answer to the journal and before its recorder commit (the crash tests'
`flush` point). rv75 found the answer in the journal for `status` ("answer recorded", "accepted") and for the
topic picker (a final acceptance made the campaign count as ended, so plain `resume` and `decide` said
"every one has ended"), while the next rebuild dropped it as a torn state and asked again. The answer stands
now: it is committed by the next command, and applied."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.engine_helpers import campaign_repo, journal

DAG = """\
topic: cut
workers: {sh: "./work.sh"}
defaults: {timeout: 60, max_attempts: 1}
nodes:
  - {id: N, title: n, file_surface: [n/], discipline: sh, evaluators: [{name: noted, run: "test -f n/noted"}]}
"""
WORKER = r"""#!/bin/sh
mkdir -p n && echo N > n/x
if grep -q NOTE-FIX "$ORCH_BRIEF"; then echo ok > n/noted; fi
"""


def _decide_killed_at_flush(repo, *args: str) -> None:
    env = {**os.environ, "ORCHESTRATE_FAULT": "flush:1"}
    done = subprocess.run([sys.executable, "-m", "orchestrate", "decide", *args], cwd=repo, env=env,
                          capture_output=True, text=True)
    assert done.returncode == -9, done.stdout + done.stderr


def test_an_answer_whose_decide_was_killed_before_its_commit_is_applied_not_asked_again(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert orch("run", "--no-interactive", cwd=repo).rc == 75  # N's attempts are spent: realignment
    _decide_killed_at_flush(repo, "realignment", "rework", "--note", "NOTE-FIX")
    assert json.loads(orch("status", "--json", cwd=repo).out)["decision"]["choice"] == "rework"

    resumed = orch("resume", "--no-interactive", cwd=repo)  # the answer is applied: N passes with the note
    assert resumed.rc == 75 and "final-acceptance" in resumed.out, resumed.out + resumed.err
    decisions = [e["context"] for e in journal(repo, "cut") if e["kind"] == "decision"]
    assert [(d["seam"], d["choice"]) for d in decisions] == [("realignment", "rework")]

    _decide_killed_at_flush(repo, "final-acceptance", "accept", "--note", "read it")
    assert json.loads(orch("status", "--json", cwd=repo).out)["state"] == "PAUSE"
    done = orch("resume", cwd=repo)  # no --topic: the campaign has not ended until its acceptance is applied
    assert done.rc == 0 and "is done" in done.out, done.out + done.err
    data = json.loads(orch("status", "--json", cwd=repo).out)
    assert (data["state"], data["accepted"]) == ("DONE", True)
    finals = [e for e in journal(repo, "cut") if e["kind"] == "decision" and e["context"]["seam"] == "final-acceptance"]
    assert len(finals) == 1
