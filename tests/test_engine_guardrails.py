"""Guardrails on edges in a run (seeds-other §3.6, G1-G4, G8-G10): judged when a taken edge is crossed,
`block` stops at a seam a person answers with `approve/skip --edge`, `reroute` enables an on-demand
node instead, `warn` crosses and flags; results are recorded once and reused on resume."""
from __future__ import annotations

import pytest

from tests.engine_helpers import campaign_repo, journal, statuses

WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  N4) echo n4 > n4.txt; if [ -f leak ]; then mkdir -p config; echo "KEY=SECRET" > config/prod.env; fi ;;
  N3) if [ -f big ]; then seq 1 20 > n3.txt; else echo n3 > n3.txt; fi ;;
  N5) echo n5 > n5.txt; if [ -f make-red ]; then echo red > red; fi ;;
  *) echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr 'A-Z' 'a-z').txt" ;;
esac
"""

DAG = """\
topic: rails
workers: {sh: "./work.sh"}
gates:
  no-secrets: {plugin: command, run: "! git diff $ORCH_BASE $ORCH_HEAD | grep SECRET"}
  tip-green: {plugin: command, run: "test ! -f red || { echo smoke is red; exit 1; }"}
  diff-budget: {plugin: command, run: "test $(git diff --numstat $ORCH_BASE $ORCH_HEAD | awk '{s+=$1} END {print s+0}') -le 3"}
nodes:
  - {id: N3, file_surface: [n3.txt], discipline: sh}
  - {id: N4, file_surface: [n4.txt, config/], discipline: sh}
  - {id: N5, file_surface: [n5.txt, red], discipline: sh}
  - {id: N6, join: any, file_surface: [n6.txt], discipline: sh}
  - {id: N7, activation: on_demand, depends_on: [N3, N5], file_surface: [n7.txt], discipline: sh}
edges:
  - {id: e6, from: N4, to: N5, predicate: TRIGGERS, guardrails: {output: [no-secrets], on_violation: block}}
  - {id: e7, from: N5, to: N6, predicate: TRIGGERS, guardrails: {input: [tip-green], on_violation: warn}}
  - {id: e8, from: N3, to: N6, predicate: TRIGGERS,
     guardrails: {output: [diff-budget], on_violation: reroute, reroute_target: N7}}
"""


def rails(repo) -> list[tuple]:
    return [(e["context"]["edge"], e["context"]["violated"]) for e in journal(repo, "rails") if e["kind"] == "guardrail"]


def test_G1_G2_G10_a_block_stops_at_a_seam_until_a_person_approves_the_edge(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER, {"leak": "1\n"})
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert statuses(repo, orch, "rails")["N5"] == "PENDING"
    assert not any(e["kind"] == "intent" and e["context"].get("node") == "N5" for e in journal(repo, "rails"))
    status = orch("status", "--topic", "rails", cwd=repo).out
    assert "blocked: guardrail no-secrets on edge e6 (N4 -> N5): " in status

    assert orch("approve", "--edge", "e7", cwd=repo).rc == 2  # not the blocked edge: refused, nothing written
    approved = orch("approve", "--edge", "e6", "--note", "test key, not a secret", cwd=repo)
    assert approved.rc == 0, approved.out + approved.err
    decision = [e for e in journal(repo, "rails") if e["kind"] == "decision"][-1]
    guardrail = next(e for e in journal(repo, "rails") if e["kind"] == "guardrail")
    assert decision["source_entity"] == "human:test@example.com" and decision["source_type"] == "human"
    assert guardrail["id"] in decision["derived_from"]

    resumed = orch("resume", "--quiet", "--topic", "rails", cwd=repo)
    assert resumed.rc == 75, resumed.out + resumed.err  # now at final acceptance
    assert statuses(repo, orch, "rails")["N5"] == "ACCEPTED"
    assert rails(repo).count(("e6", True)) == 1  # G10: the recorded result was reused, not run again
    assert orch("doctor", "--topic", "rails", cwd=repo).rc == 0  # the guardrail and the approval are grounded


def test_G1_skip_leaves_the_blocked_edge_untaken(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER, {"leak": "1\n"})
    assert orch("run", "--quiet", cwd=repo).rc == 75
    assert orch("skip", "--edge", "e6", cwd=repo).rc == 0
    assert orch("resume", "--quiet", "--topic", "rails", cwd=repo).rc == 75
    found = statuses(repo, orch, "rails")
    assert found["N5"] == "SKIPPED" and found["N6"] == "ACCEPTED"  # N6 joins any: e8 from N3 still runs it


def test_G3_G4_warn_crosses_with_a_flag_and_reroute_enables_the_on_demand_node(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER, {"big": "1\n", "make-red": "1\n"})
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert statuses(repo, orch, "rails") == {"N3": "ACCEPTED", "N4": "ACCEPTED", "N5": "ACCEPTED", "N6": "ACCEPTED",
                                    "N7": "ACCEPTED"}
    assert sorted(rails(repo)) == [("e6", False), ("e7", True), ("e8", True)]
    entries = journal(repo, "rails")
    assert [e["context"]["node"] for e in entries if e["kind"] == "enable"] == ["N7"]
    flags = [e["context"] for e in entries if e["kind"] == "flag"]
    assert [(f["edge"], f["node"]) for f in flags] == [("e7", "N6")] and "smoke is red" in flags[0]["message"]
    assert "warning: guardrail tip-green on edge e7 (N5 -> N6)" in orch("status", "--topic", "rails", cwd=repo).out
    sketch = "".join(p.read_text() for p in (repo / ".ledger").rglob("*.md") if "rails" in p.name)
    assert "guardrail tip-green on edge e7" in sketch  # the close report lists the warning


def test_an_on_demand_node_nobody_enabled_is_skipped(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert orch("run", "--quiet", cwd=repo).rc == 75
    found = statuses(repo, orch, "rails")
    assert found["N7"] == "SKIPPED" and found["N6"] == "ACCEPTED"
    assert sorted(rails(repo)) == [("e6", False), ("e7", False), ("e8", False)]


def test_G8_a_crashing_guardrail_gate_halts_naming_it(tmp_path, orch):
    dag = DAG.replace('run: "! git diff $ORCH_BASE $ORCH_HEAD | grep SECRET"', 'run: "exit 2"')
    repo = campaign_repo(tmp_path, dag, WORKER)
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 1
    assert "guardrail gate no-secrets crashed on edge e6 (exit 2); see " in result.out + result.err
    assert "guardrails/e6-output.log" in result.out + result.err
    assert statuses(repo, orch, "rails")["N5"] == "PENDING"


def test_G9_the_guardrails_of_an_untaken_edge_never_run(tmp_path, orch):
    dag = DAG.replace("edges:\n", "params: {strict: false}\nedges:\n").replace(
        "{id: e6, from: N4, to: N5, predicate: TRIGGERS, guardrails",
        "{id: e6, from: N4, to: N5, predicate: TRIGGERS, type: conditional, when: \"params.strict\", guardrails")
    repo = campaign_repo(tmp_path, dag, WORKER, {"leak": "1\n"})
    assert orch("run", "--quiet", cwd=repo).rc == 75
    assert statuses(repo, orch, "rails")["N5"] == "SKIPPED"
    assert "e6" not in [edge for edge, _ in rails(repo)]


def test_R6_an_approval_names_a_human_or_is_refused(tmp_path, orch, monkeypatch):
    repo = campaign_repo(tmp_path, DAG, WORKER, {"leak": "1\n"})
    assert orch("run", "--quiet", cwd=repo).rc == 75
    repo.git("config", "user.email", "")
    (tmp_path / "nohome").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    before = len(journal(repo, "rails"))
    anonymous = orch("approve", "--edge", "e6", cwd=repo)
    assert anonymous.rc == 2
    assert "set git config user.email (or pass --as NAME) so the decision can be attributed" in anonymous.err
    assert len(journal(repo, "rails")) == before  # nothing written
    assert orch("approve", "--edge", "e6", "--as", "lead@example.com", cwd=repo).rc == 0
    assert journal(repo, "rails")[-1]["source_entity"] == "human:lead@example.com"


@pytest.mark.parametrize("schedule", ["eager", "layered"])
def test_a_target_its_join_already_skips_is_never_crossed_so_its_guardrails_never_run(tmp_path, orch, schedule):
    dag = DAG.replace("edges:\n", f"schedule: {schedule}\nparams: {{strict: false}}\nedges:\n").replace(
        "  - {id: e7,", "  - {id: e5c, from: N3, to: N5, predicate: TRIGGERS, type: conditional, when: \"params.strict\"}\n"
                       "  - {id: e7,")
    repo = campaign_repo(tmp_path, dag, WORKER, {"leak": "1\n"})  # e6's block would be violated
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 75 and "seam final-acceptance" in result.out, result.out + result.err  # no guardrail seam
    assert statuses(repo, orch, "rails")["N5"] == "SKIPPED"
    assert "e6" not in [edge for edge, _ in rails(repo)]


STALE_DAG = """\
topic: rails
workers: {sh: "./work.sh"}
gates:
  tip-green: {plugin: command, run: "test ! -f red || { echo smoke is red; exit 1; }"}
nodes:
  - {id: N1, file_surface: [n1.txt], discipline: sh}
  - {id: N2, file_surface: [n2.txt, red], discipline: sh}
  - {id: N3, file_surface: [n3.txt], discipline: sh}
edges:
  - {id: e3, from: N1, to: N3, predicate: TRIGGERS, guardrails: {input: [tip-green], on_violation: block}}
"""

STALE_WORKER = r"""#!/bin/sh
set -eu
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr 'A-Z' 'a-z').txt"
if [ "$ORCH_NODE" = N2 ]; then echo red > red; fi
"""


@pytest.mark.parametrize("schedule", ["eager", "layered"])
def test_an_input_guardrail_judges_the_head_its_target_branches_from_not_an_older_one(tmp_path, orch, schedule):
    # --jobs 1, eager: N1 first (it heads N3), e3 passes on N1's merge; then N2 (before N3 in the natural
    # order) merges `red`; N3 would branch from that head, on which tip-green fails
    repo = campaign_repo(tmp_path, STALE_DAG.replace("edges:\n", f"schedule: {schedule}\nedges:\n"), STALE_WORKER)
    result = orch("run", "--quiet", "--jobs", "1", cwd=repo)
    assert result.rc == 75, result.out + result.err
    started = [e["context"]["node"] for e in journal(repo, "rails") if e["context"].get("effect") == "worker-start"]
    assert list(dict.fromkeys(started)) == ["N1", "N2"] and statuses(repo, orch, "rails")["N3"] == "PENDING"
    assert rails(repo)[-1] == ("e3", True)
    assert "blocked: guardrail tip-green on edge e3 (N1 -> N3): smoke is red" in \
        orch("status", "--topic", "rails", cwd=repo).out
    assert orch("approve", "--edge", "e3", cwd=repo).rc == 0
    resumed = orch("resume", "--quiet", "--topic", "rails", cwd=repo)
    assert resumed.rc == 75 and statuses(repo, orch, "rails")["N3"] == "ACCEPTED", resumed.out + resumed.err


def test_a_reroute_judged_again_at_dispatch_still_enables_its_on_demand_target(tmp_path, orch):
    # as above, but e3 reroutes: its target N7 must not be decided (skipped, nobody enabled it) while N3's
    # input guardrail may still be judged again at N3's dispatch
    dag = STALE_DAG.replace("on_violation: block", "on_violation: reroute, reroute_target: N7").replace(
        "edges:\n", "  - {id: N7, activation: on_demand, depends_on: [N1], file_surface: [n7.txt], discipline: sh}\n"
                    "edges:\n")
    repo = campaign_repo(tmp_path, dag, STALE_WORKER)
    result = orch("run", "--quiet", "--jobs", "1", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert rails(repo)[-1] == ("e3", True)
    found = statuses(repo, orch, "rails")
    assert found["N3"] == "SKIPPED" and found["N7"] == "ACCEPTED", found


@pytest.mark.parametrize("answer,n6", [("skip", "SKIPPED"), ("approve", "ACCEPTED")])
def test_a_block_and_a_reroute_into_one_node_the_block_asks_first(tmp_path, orch, answer, n6):
    # e8 (reroute) is crossed before e9 (block) in edge order; most severe wins: nothing is enabled until
    # the block's seam is answered; then the reroute acts as it would alone (e8 untaken, N7 enabled)
    dag = DAG.replace("{id: e7, from: N5, to: N6, predicate: TRIGGERS, guardrails: {input: [tip-green], "
                      "on_violation: warn}}",
                      "{id: e9, from: N5, to: N6, predicate: TRIGGERS, guardrails: {input: [tip-green], "
                      "on_violation: block}}")
    repo = campaign_repo(tmp_path, dag, WORKER, {"big": "1\n", "make-red": "1\n"})
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 75 and "blocked: guardrail tip-green on edge e9" in result.out, result.out + result.err
    assert sorted(rails(repo)) == [("e6", False), ("e8", True), ("e9", True)]  # all results recorded
    assert not [e for e in journal(repo, "rails") if e["kind"] == "enable"]
    assert statuses(repo, orch, "rails")["N7"] == "PENDING"
    assert orch(answer, "--edge", "e9", cwd=repo).rc == 0
    resumed = orch("resume", "--quiet", "--topic", "rails", cwd=repo)
    assert resumed.rc == 75, resumed.out + resumed.err
    found = statuses(repo, orch, "rails")
    assert found["N6"] == n6 and found["N7"] == "ACCEPTED", found
    assert [e["context"]["node"] for e in journal(repo, "rails") if e["kind"] == "enable"] == ["N7"]
