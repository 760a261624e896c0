"""A person's DAG edit is approved before it is used, the seams show what the decision needs, and the
retrospective and failure lines say where the time went and what failed (issues 20 and 21)."""
from __future__ import annotations

import re

from tests.engine_helpers import campaign_repo, journal

TOOL = r"""#!/bin/sh
set -eu
sleep 0.2
d=$(echo "$ORCH_NODE" | tr A-Z a-z)
mkdir -p "$d" && echo "$ORCH_NODE" > "$d/one.txt" && git add -A && git commit -qm "$ORCH_NODE"
"""
DAG = """\
topic: plan
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1, timeout: 60}
nodes:
  - {id: A, title: alpha, depends_on: [], file_surface: [a/], discipline: sh}
  - {id: B, title: bravo, depends_on: [], file_surface: [b/], discipline: sh,
     evaluators: [{name: has-ok, run: "test -e b/ok"}]}
"""


def _seams(repo, topic):
    return [e["context"] for e in journal(repo, topic) if e["kind"] == "seam"]


def test_an_edited_dag_opens_the_amendment_seam_before_anything_uses_it(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, TOOL)
    assert orch("run", "--no-interactive", cwd=repo).rc == 75  # B escalates: realignment
    copy = repo / ".ledger" / "state" / "plan" / "dag.yaml"
    edited = "# reviewed by a person\n\n" + copy.read_text().replace("file_surface: [b/]", "file_surface: [b/, c/]")
    copy.write_text(edited)
    assert orch("decide", "realignment", "rework", "--note", "widen", cwd=repo).rc == 0
    before = len(journal(repo, "plan"))
    r = orch("resume", "--no-interactive", "--topic", "plan", cwd=repo)
    assert r.rc == 75, r.err
    after = journal(repo, "plan")[before:]
    seam = _seams(repo, "plan")[-1]
    assert seam["seam"] == "dag-amendment"
    assert seam["show"] == ['node B: file_surface ["b/"] -> ["b/", "c/"]']  # the 2-line shift is no change
    assert not any(e["kind"] == "intent" and e["context"].get("effect") == "worker-start" for e in after)
    assert "next layer boundary" not in r.out + r.err
    assert orch("decide", "dag-amendment", "accept", "--note", "ok", cwd=repo).rc == 0
    again = orch("resume", "--no-interactive", "--topic", "plan", cwd=repo)
    assert "B: started attempt 2" in again.out
    spawned = [e for e in journal(repo, "plan") if e["kind"] == "intent" and e["context"].get("node") == "B"
               and e["context"].get("effect") == "worker-start"]
    assert len(spawned) == 2


def test_final_acceptance_lists_what_was_not_accepted_and_why(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, TOOL)
    assert orch("run", "--no-interactive", cwd=repo).rc == 75
    assert orch("decide", "realignment", "skip", "--as", "lead@example.com", "--note", "later", cwd=repo).rc == 0
    r = orch("resume", "--no-interactive", "--topic", "plan", cwd=repo)
    assert r.rc == 75, r.err
    seam = _seams(repo, "plan")[-1]
    assert seam["seam"] == "final-acceptance"
    assert "complete" not in seam["reason"] and "without 1 of 2 node(s): B (SKIPPED)" in seam["reason"]
    assert seam["show"][0] == "not accepted: B: skipped by lead@example.com at the realignment seam: later"
    assert "not accepted: B" in r.out


FLAKY = """\
topic: flaky
workers: {sh: "./work.sh"}
defaults: {max_attempts: 2, timeout: 60, sandbox: none}  # its evaluator keeps a mark in $MARKS
checks: [{name: slow-check, run: "sleep 0.3"}]
nodes:
  - {id: F, title: flaky, depends_on: [], file_surface: [f/], discipline: sh,
     evaluators: [{name: coin, run: "sleep 0.3; if [ -e \\"$MARKS/once\\" ]; then exit 0; fi; touch \\"$MARKS/once\\"; exit 1"}]}
"""


def test_the_retrospective_times_each_phase_and_flags_a_flaky_evaluator(tmp_path, orch, monkeypatch):
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("MARKS", str(marks))
    repo = campaign_repo(tmp_path, FLAKY, TOOL)
    r = orch("run", "--no-interactive", cwd=repo)
    assert r.rc == 75 and "F: REWORK (attempt 1 of 2)" in r.out, r.out + r.err
    sketch = next((repo / ".ledger").rglob("*flaky*.md")).read_text()
    assert "| node | status | attempts | worker s | judging s | merge s | merge |" in sketch
    row = next(line for line in sketch.splitlines() if line.startswith("| F |"))
    worker, judging, merge = (float(x) for x in row.split("|")[4:7])
    assert judging >= 0.6  # two runs of an evaluator that sleeps 0.3 s, once per attempt
    assert merge >= 0.3 and worker >= 0.2  # the campaign check sleeps 0.3 s, the worker 0.2 s
    assert re.search(r"F: attempt 2 was accepted with the same change attempt 1 was refused for .*evaluators.*"
                     r"likely a flaky evaluator", sketch)


def test_an_honest_retry_is_not_called_flaky(tmp_path, orch, monkeypatch):
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("MARKS", str(marks))
    different = TOOL.replace('echo "$ORCH_NODE" > ', 'echo "$ORCH_NODE $ORCH_ATTEMPT" > ')
    assert different != TOOL
    repo = campaign_repo(tmp_path, FLAKY, different)
    assert orch("run", "--no-interactive", cwd=repo).rc == 75
    sketch = next((repo / ".ledger").rglob("*flaky*.md")).read_text()
    assert "Nodes that needed more than one attempt deserve a closer look: F." in sketch
    assert "likely a flaky evaluator" not in sketch


CHECKED = """\
topic: merged
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1, timeout: 60}
checks: [{name: not-both, run: "! test -e a/one.txt -a -e b/one.txt"}]
nodes:
  - {id: A, title: alpha, depends_on: [], file_surface: [a/], discipline: sh}
  - {id: B, title: bravo, depends_on: [], file_surface: [b/], discipline: sh}
"""


def test_a_check_failing_on_the_merged_tree_names_the_check_its_log_and_what_merged_since(tmp_path, orch):
    # Two slots: A and B both branch from the base, so the one merged second has the other merged since its
    # base (left to the default, one CPU ran them one after the other and B's base already held A). Which
    # returns first is a race: the other is the one refused.
    repo = campaign_repo(tmp_path, CHECKED, TOOL)
    r = orch("run", "--no-interactive", "--jobs", "2", cwd=repo)
    assert r.rc == 75, r.err
    line = next(ln for ln in r.out.splitlines() if "merge refused" in ln)
    refused = line.split()[1].rstrip(":")
    first = {"A": "B", "B": "A"}[refused]
    assert f"{first}: merged into campaign/merged" in r.out, r.out
    assert "campaign check(s) failed on the merged tree" in line and "not-both (rc 1)" in line
    assert "checks-1.log" in line and f"merged since its base: {first}" in line
    assert "ESCALATE (attempt 1 of 1)" in line
