"""End to end: a six-node, three-layer campaign with scripted workers, on a real repository."""
from __future__ import annotations

import json

import pytest

from tests.engine_helpers import (
    campaign_repo,
    checkout_state,
    first_parent_chain,
    journal_text,
    only_moved_forward,
    recorder_subjects,
    refs,
)

WORKER = r"""#!/bin/sh
set -eu
a=$ORCH_ATTEMPT
case "$ORCH_NODE" in
  A) mkdir -p a && echo A > a/one.txt ;;                       # leaves its work uncommitted
  B) mkdir -p b && echo B > b/one.txt
     if [ "$a" = 1 ]; then echo stray > stray.txt; fi         # attempt 1 strays outside its surface
     git add -A && git commit -qm "B attempt $a" ;;
  C) mkdir -p c
     if [ "$a" = 1 ]; then echo wrong > c/one.txt; else echo right > c/one.txt; fi
     git add -A && git commit -qm "C attempt $a" ;;
  D) if printf '%s\n' "$ORCH_SURFACE" | grep -qx 'shared/d.txt'; then
       mkdir -p d shared && echo D > d/one.txt && echo D > shared/d.txt
       git add -A && git commit -qm "D"
     else
       printf '{"freeze": "surface-exceed", "paths": ["shared/d.txt"]}' > "$ORCH_RETURN"
     fi ;;
  E) echo E >> e.txt && git add -A && git commit -qm E ;;
  F) echo F >> e.txt && git add -A && git commit -qm F ;;
esac
"""

DAG = """\
topic: six
workers: {sh: "./work.sh"}
defaults: {max_attempts: 2, timeout: 60}
nodes:
  - {id: A, title: alpha, depends_on: [], file_surface: [a/], discipline: sh,
     evaluators: [{name: one, run: "test -f a/one.txt"}]}
  - {id: B, title: bravo, depends_on: [A], file_surface: [b/], discipline: sh}
  - {id: C, title: charlie, depends_on: [A], file_surface: [c/], discipline: sh,
     evaluators: [{name: right, run: "grep -qx right c/one.txt"}]}
  - {id: D, title: delta, depends_on: [A], file_surface: [d/], discipline: sh}
  - {id: E, title: echo, depends_on: [B, C], file_surface: [e.txt], discipline: sh}
  - {id: F, title: foxtrot, depends_on: [D], file_surface: [e.txt], discipline: sh, serialize: true}
"""


@pytest.fixture
def six(tmp_path):
    return campaign_repo(tmp_path, DAG, WORKER)


def test_six_node_campaign_end_to_end(six, orch):
    before_checkout = checkout_state(six)
    before_refs = refs(six)
    baseline = six.head()

    result = orch("run", "--jobs", "2", cwd=six)
    assert result.rc == 75, result.out + result.err  # paused at the final-acceptance seam
    assert "final-acceptance" in result.out

    status = json.loads(orch("status", "--json", "--topic", "six", cwd=six).out)
    assert {n["id"]: n["status"] for n in status["nodes"]} == dict.fromkeys("ABCDEF", "ACCEPTED")
    attempts = {n["id"]: n["attempt"] for n in status["nodes"]}
    assert attempts["B"] == 2 and attempts["C"] == 2 and attempts["A"] == 1 and attempts["D"] == 1

    # one --no-ff merge per node on the first-parent chain, and nothing else
    chain = first_parent_chain(six, baseline, "campaign/six")
    assert len(chain) == 6
    assert all(len(parents.split()) == 2 for parents, _ in chain)
    assert sorted(s for _, s in chain) == sorted(f"merge node {n}: {t}" for n, t in zip(
        "ABCDEF", ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]))
    tree = six.git("ls-tree", "-r", "--name-only", "campaign/six").splitlines()
    assert {"a/one.txt", "b/one.txt", "c/one.txt", "d/one.txt", "shared/d.txt", "e.txt"} <= set(tree)
    assert "stray.txt" not in tree
    assert six.git("show", "campaign/six:e.txt").splitlines() == ["E", "F"]
    assert six.git("show", "campaign/six:c/one.txt") == "right"
    # A left its work uncommitted; the engine committed it with the documented message
    assert "node A: changes left uncommitted by the worker" in six.git("log", "--format=%s", "node/six/A")

    assert orch("gate", "adherence", "--topic", "six", "--base", baseline, cwd=six).rc == 0

    subjects = recorder_subjects(six)
    assert subjects[0] == "log: init recorder"
    assert subjects[1].startswith("log: open six")
    assert "log: close six retrospective" in subjects
    transitions = [s for s in subjects if s.startswith("six: ")]
    assert any("SURFACE_EXCEED widen -> AWAIT" in s for s in transitions)
    assert any("RECONCILE rework -> DISPATCH (B)" in s for s in transitions)
    assert any("RECONCILE rework -> DISPATCH (C)" in s for s in transitions)
    journal = journal_text(six, "six").splitlines()
    entries = [json.loads(line) for line in journal]
    assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
    assert all({"id", "seq", "created_at", "source_entity", "source_type", "kind", "derived_from", "context"}
               <= set(e) for e in entries)
    n_transitions = sum(1 for e in entries if e["kind"] == "transition")
    assert n_transitions == len(transitions) + 1  # the open commit carries DERIVE's transition
    dag_text = (six / ".ledger" / "state" / "six" / "dag.yaml").read_text()
    assert "shared/d.txt" in dag_text  # WIDEN recorded in the recorder's DAG

    # DESIGN §13 invariants 1-4
    assert checkout_state(six) == before_checkout
    assert six.git("remote") == ""
    after_refs = refs(six)
    for ref, sha in before_refs.items():
        assert after_refs[ref] == sha or ref.startswith("refs/heads/campaign/")
    for ref in after_refs:
        if ref.startswith("refs/heads/"):
            assert only_moved_forward(six, ref), ref
    created = {e["context"]["branch"] for e in entries if e["kind"] == "intent"
               and e["context"]["effect"] == "worktree-add"}
    assert created and all(f"refs/heads/{b}" in after_refs for b in created)
    assert six.git("worktree", "list", "--porcelain").count("worktree ") == 1
    assert not (six / ".ledger" / "active-dag").exists()
    assert RepoDirStatus(six / ".ledger") == ""


def RepoDirStatus(path) -> str:
    from tests.helpers import RepoDir
    return RepoDir(path).git("status", "--porcelain")


def test_invalid_dag_halts_before_writing_anything(six, orch):
    (six / ".ledger" / "state" / "dag.yaml").write_text(DAG.replace("serialize: true", "serialize: false"))
    subjects = recorder_subjects(six)
    result = orch("run", cwd=six)
    assert result.rc == 1
    assert "F" in result.out and "e.txt" in result.out
    assert recorder_subjects(six) == subjects
    assert "campaign/six" not in six.git("branch", "--list")


def test_a_topic_cannot_run_twice(six, orch):
    assert orch("run", cwd=six).rc == 75
    again = orch("run", cwd=six)
    assert again.rc == 2 and "campaign/six already exists" in again.err


def test_running_a_closed_topic_again_says_what_its_campaign_waits_for(six, orch):
    assert orch("run", cwd=six).rc == 75  # closed, waiting at final acceptance: not ended
    waiting = orch("run", cwd=six)
    assert waiting.rc == 2 and "campaign/six already exists and waits at final acceptance" in waiting.err
    assert "orchestrate decide final-acceptance accept --topic six" in waiting.err
    assert "orchestrate status --topic six" in waiting.err and "choose another topic" not in waiting.err
    assert orch("decide", "final-acceptance", "reject", "--note", "not yet", cwd=six).rc == 0
    refused = orch("run", cwd=six)
    assert refused.rc == 2 and "refused at final acceptance" in refused.err
    assert "orchestrate abandon --topic six" in refused.err
    assert orch("abandon", "--topic", "six", "--note", "superseded", cwd=six).rc == 0
    ended = orch("run", cwd=six)
    assert ended.rc == 2 and "campaign/six already exists (choose another topic with --topic)" in ended.err
