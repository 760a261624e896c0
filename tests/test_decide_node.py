"""`decide --node NODE` answers only a seam about NODE. Under eager, seams of one name (realignment) open
one after another: rv75 found a second `decide realignment skip`, meant for a node whose question had just
been answered, settle the next node's question instead (skipping it and its dependents), with nothing said."""
from __future__ import annotations

import json

from tests.engine_helpers import campaign_repo, journal

DAG = """\
topic: two
workers: {sh: "./work.sh"}
defaults: {timeout: 60, max_attempts: 1}
nodes:
  - {id: A, title: a, file_surface: [a/], discipline: sh, evaluators: [{name: never, run: "false"}]}
  - {id: C, title: c, file_surface: [c/], discipline: sh, evaluators: [{name: never, run: "false"}]}
"""
WORKER = r"""#!/bin/sh
d=$(echo "$ORCH_NODE" | tr AC ac); mkdir -p "$d" && echo x > "$d/x"
"""


def test_an_answer_bound_to_a_node_is_refused_for_another_nodes_seam_and_nothing_is_recorded(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert orch("run", "--no-interactive", cwd=repo).rc == 75
    data = json.loads(orch("status", "--json", cwd=repo).out)
    assert (data["seams"][0]["node"], [q["node"] for q in data["queued_seams"]]) == ("A", ["C"])

    wrong = orch("decide", "realignment", "skip", "--node", "C", "--note", "not needed", cwd=repo)
    assert wrong.rc == 2 and "seam realignment is open for node A, not for node C" in wrong.err, wrong.out + wrong.err
    assert not any(e["kind"] == "decision" for e in journal(repo, "two"))

    right = orch("decide", "realignment", "skip", "--node", "A", "--note", "not needed", cwd=repo)
    assert right.rc == 0, right.out + right.err
    decisions = [e["context"] for e in journal(repo, "two") if e["kind"] == "decision"]
    assert [(d["node"], d["choice"]) for d in decisions] == [("A", "skip")]


def test_a_decide_a_moment_after_the_seam_was_answered_is_told_who_answered_it(tmp_path, orch):
    """rv75: with a runner holding the campaign, a second person's answer to a seam answered a moment ago was
    told "being run by pid ... wait for it" (exit 4), as if waiting would let it answer."""
    from orchestrate.recorder.lock import CampaignLock
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert orch("run", "--no-interactive", cwd=repo).rc == 75
    assert orch("decide", "realignment", "skip", "--node", "A", "--note", "first", cwd=repo).rc == 0
    with CampaignLock(repo / ".scratch" / "locks", "two"):  # as the runner that applies it holds it
        late = orch("decide", "realignment", "skip", "--node", "A", "--note", "second", cwd=repo)
    assert late.rc == 2, late.out + late.err
    assert "seam realignment is not open: it was answered skip for node A by " in late.err, late.err
    assert [e["context"]["note"] for e in journal(repo, "two") if e["kind"] == "decision"] == ["first"]
