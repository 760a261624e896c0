"""An interrupt (Ctrl-C, SIGTERM) landing while the transition it interrupts is committed, once that transition is in
the journal: the run stops in the state it records, and the recorder keeps that transition's own commit. Before, the
interrupt's commit took its place: a campaign stopped so as it opened had no `log: open <topic>` commit, and its
CLOSE then halted on close-check ("never opened") at every resume."""
from __future__ import annotations

import json

from tests.engine_helpers import campaign_repo, cli, recorder_subjects

WORKER = """#!/bin/sh
echo "$ORCH_NODE" > "$ORCH_NODE.txt"
"""

DAG = """\
topic: opened
workers: {sh: "./work.sh"}
nodes:
  - {id: A, title: alpha, file_surface: [A.txt], discipline: sh}
"""


def test_an_interrupt_as_the_campaign_opens_keeps_its_open_commit_and_the_campaign_closes(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    stopped = cli(repo, "run", fault="commit:1:term", timeout=120)  # the first recorder commit: `log: open`
    assert stopped.returncode == 130, stopped.stdout + stopped.stderr
    assert recorder_subjects(repo)[1:] == ["log: open opened (1 nodes, 1 layers)", "opened: interrupted in RUN_LAYER"]
    done = orch("resume", "--topic", "opened", cwd=repo)
    assert done.rc == 75 and "final-acceptance" in done.out, done.out + done.err
    status = json.loads(orch("status", "--json", "--topic", "opened", cwd=repo).out)
    assert [(n["id"], n["status"]) for n in status["nodes"]] == [("A", "ACCEPTED")]
    assert orch("gate", "close-check", "--topic", "opened", cwd=repo).rc == 0
