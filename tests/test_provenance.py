"""Lineage rules over the journal and `orchestrate why NODE` (seeds-other §3.8, R3, R4, R8)."""
from __future__ import annotations

import json

from orchestrate.recorder import provenance
from tests.engine_helpers import campaign_repo

DAG = """\
topic: prov
workers: {sh: "./work.sh"}
nodes:
  - {id: A, file_surface: [a.txt], discipline: sh, evaluators: [{name: has-a, run: "test -f a.txt"}]}
  - {id: B, depends_on: [A], file_surface: [b.txt], discipline: sh}
"""
WORKER = "#!/bin/sh\necho \"$ORCH_NODE\" > \"$(echo $ORCH_NODE | tr AB ab).txt\"\n"


def entry(seq: int, kind: str, derived=(), **ctx) -> dict:
    return {"id": f"t:{seq}", "seq": seq, "kind": kind, "context": ctx, "derived_from": list(derived),
            "created_at": "2026-11-23T00:00:00Z", "source_entity": "orchestrate@0.1.0", "source_type": "engine"}


def test_r8_why_prints_merge_verdict_gates_and_transitions_with_commits(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert orch("run", "--quiet", cwd=repo).rc == 75

    shown = orch("why", "A", cwd=repo)

    assert shown.rc == 0, shown.err
    lines = shown.out.splitlines()
    merge_sha = next(ln.split()[0] for ln in repo.git("log", "--first-parent", "--format=%H %s", "campaign/prov")
                     .splitlines() if "merge node A" in ln)
    assert lines[0].startswith(f"A merged as {merge_sha[:12]} from node/prov/A")
    assert lines[1].startswith("  recorded in recorder commit ")
    recorder_commit = lines[1].split()[-1]
    assert repo.git("-C", ".ledger", "log", "-1", "--format=%s", recorder_commit) == "prov: MERGE merged -> CHECKPOINT (A)"
    assert any(ln.strip().startswith("<- verdict accept") for ln in lines)
    assert any("<- gate evaluators: exit 0" in ln for ln in lines)
    assert any("DISPATCHED attempt 1 on node/prov/A" in ln for ln in lines)
    data = json.loads(orch("why", "A", "--json", cwd=repo).out)
    assert data["merge"]["context"]["sha"] == merge_sha and data["problems"] == []
    assert {g["context"]["gate"] for g in data["gates"]} == {"evaluators", "reconcile-node", "coherence"}
    unknown = orch("why", "Z", cwd=repo)
    assert unknown.rc == 2 and "no entry for node `Z`" in unknown.err


def test_r3_an_accept_without_a_passing_gate_is_a_lineage_problem():
    entries = [entry(1, "gate", node="A", gate="evaluators", code=1),
               entry(2, "verdict", ["t:1"], node="A", verdict="accept", at="h"),
               entry(3, "verdict", [], node="B", verdict="accept", at="h")]
    found = provenance.problems(entries)
    assert found == ["entry t:2: accept verdict for A without provenance: derived_from must cite at least one "
                     "passing gate entry of A",
                     "entry t:3: accept verdict for B without provenance: derived_from must cite at least one "
                     "passing gate entry of B"]


def test_r4_a_reference_to_a_missing_or_later_entry_is_a_lineage_problem():
    entries = [entry(1, "gate", ["t:9"], node="A", gate="evaluators", code=0),
               entry(2, "verdict", ["t:1"], node="A", verdict="accept", at="h")]
    assert provenance.problems(entries) == ["entry t:1: referenced t:9 does not exist before it"]


def test_a_merge_without_an_accept_at_its_head_is_reported_and_exits_one():
    entries = [entry(1, "gate", node="A", gate="evaluators", code=0),
               entry(2, "verdict", ["t:1"], node="A", verdict="accept", at="old"),
                       entry(3, "merge", ["t:2"], node="A", sha="m" * 40, branch="node/t/A", head="new")]
    found = provenance.chain(entries, "A")
    assert found.verdict is None
    assert found.problems == ["entry t:3: merge of A follows no accept verdict at new"]
    assert "lineage problem: entry t:3" in provenance.render(found)[-1]


def test_a_human_decision_must_say_who():
    bad = dict(entry(1, "decision", node="A", seam="realignment", choice="skip"), source_type="human")
    assert provenance.problems([bad]) == ["entry t:1: a human decision that does not say who took it"]


def test_a_merge_must_cite_an_accept_verdict_of_its_node():
    entries = [entry(1, "gate", node="A", gate="evaluators", code=0),
               entry(2, "verdict", ["t:1"], node="A", verdict="accept", at="h"),
               entry(3, "merge", node="A", sha="m" * 40, branch="node/t/A", head="h"),
               entry(4, "merge", ["t:2"], node="B", sha="m" * 40, branch="node/t/B", head="h")]
    assert provenance.problems(entries) == ["entry t:3: merge of A cites no accept verdict of A",
                                            "entry t:4: merge of B cites no accept verdict of B"]


def test_edge_decisions_must_cite_what_they_stand_on():
    entries = [entry(1, "merge", node="N1", sha="m" * 40),
               entry(2, "edge_eval", ["t:1"], edge="e4", **{"from": "N1"}, to="N4", taken=True),
               entry(3, "guardrail", ["t:2"], edge="e4", **{"from": "N1"}),
               entry(4, "edge_eval", edge="e5", **{"from": "N1"}, to="N5", taken=True),
               entry(5, "guardrail", ["t:4"], edge="e6", **{"from": "N1"}),
               entry(6, "discovery", edge="e5", node="N5")]
    assert provenance.problems(entries) == [
        "entry t:1: merge of N1 cites no accept verdict of N1",  # (this fixture has no verdict)
        "entry t:4: edge_eval on edge e5 cites no decision it stands on",
        "entry t:5: guardrail on edge e6 cites no decision it stands on",
        "entry t:6: discovery on edge e5 cites no decision it stands on"]
