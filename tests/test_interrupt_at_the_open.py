"""An interrupt (Ctrl-C, SIGTERM) landing while a recorder commit is made, once its entries are in the journal: the
run stops, and the recorder keeps that commit under its own subject. Before, the interrupt's commit took its place: a
campaign stopped so as it opened had no `log: open <topic>` commit, one stopped so as it closed no `log: close`, and
CLOSE then halted on close-check ("never opened", "no close entry") at every resume."""
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


def test_an_interrupt_as_the_campaign_closes_keeps_its_close_commit_and_resume_asks_for_acceptance(tmp_path, orch):
    """The same for `log: close`, committed inside CLOSE: its entry was in the journal, the interrupt's commit took
    it in, and each resume, finding the campaign closed, halted on close-check ("no close entry")."""
    repo = campaign_repo(tmp_path, DAG, WORKER)
    # open, RUN_LAYER -> DISPATCH, -> AWAIT, -> RECONCILE, -> MERGE, -> CHECKPOINT, -> BOUNDARY, -> CLOSE, log: close
    stopped = cli(repo, "run", fault="commit:9:term", timeout=120)
    assert stopped.returncode == 130, stopped.stdout + stopped.stderr
    assert recorder_subjects(repo)[-2:] == ["log: close opened retrospective", "opened: interrupted in CLOSE"]
    done = orch("resume", "--topic", "opened", cwd=repo)
    assert done.rc == 75 and "final-acceptance" in done.out, done.out + done.err
    assert orch("gate", "close-check", "--topic", "opened", cwd=repo).rc == 0


def test_an_interrupt_before_a_journal_append_leaves_no_gap_in_its_numbering(tmp_path, orch):
    """The entries of an append the interrupt cut off before it was written had taken their seq numbers: the
    interruption's own entry came one further on, and `doctor` (seq counts up by one) found the journal damaged."""
    from tests.engine_helpers import journal
    repo = campaign_repo(tmp_path, DAG, WORKER)
    stopped = cli(repo, "run", fault="append:10:term", timeout=120)
    assert stopped.returncode == 130, stopped.stdout + stopped.stderr
    entries = journal(repo, "opened")
    assert entries[-1]["kind"] == "interrupt"
    assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
    assert orch("doctor", "--topic", "opened", cwd=repo).rc == 0
    assert orch("resume", "--topic", "opened", cwd=repo).rc == 75
    assert orch("doctor", "--topic", "opened", cwd=repo).rc == 0
