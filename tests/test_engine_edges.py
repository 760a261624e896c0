"""Typed edges the engine runs: COMPOSES (the hub is judged by its spokes' gates too), PRODUCES (the
producer must deliver its payload), and the refusal of what validates but does not run yet."""
from __future__ import annotations

import json

from tests.engine_helpers import campaign_repo, journal_text

WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  S) echo spoke > s.txt ;;
  H) echo hub > h.txt ;;
  P) mkdir -p p; echo x > p/notes.txt
     if [ "$ORCH_ATTEMPT" -gt 1 ]; then echo '{}' > p/schema.json; fi ;;
  C) echo consumer > c.txt ;;
esac
"""

DAG = """\
topic: typed
workers: {sh: "./work.sh"}
defaults: {max_attempts: 2, timeout: 60}
nodes:
  - {id: S, file_surface: [s.txt], discipline: sh, evaluators: [{name: spoke-ok, run: "test -f s.txt"}]}
  - {id: H, file_surface: [h.txt], discipline: sh, evaluators: [{name: hub-ok, run: "test -f h.txt"}]}
  - {id: P, file_surface: [p/], discipline: sh}
  - {id: C, file_surface: [c.txt], discipline: sh}
edges:
  - {id: e1, from: H, to: S, predicate: COMPOSES}
  - {id: e2, from: P, to: C, predicate: PRODUCES, payload: [p/schema.json]}
"""


def gates_of(repo, node: str) -> list[tuple[str, int]]:
    journal = journal_text(repo, "typed").splitlines()
    return [(e["context"]["gate"], e["context"]["code"]) for e in map(json.loads, journal)
            if e["kind"] == "gate" and e["context"].get("node") == node]


def test_composes_orders_the_spoke_first_and_judges_the_hub_by_its_gates(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert json.loads(orch("layers", "--json", cwd=repo).out)["layers"] == [["P", "S"], ["C", "H"]]

    result = orch("run", "--quiet", cwd=repo)

    assert result.rc == 75, result.out + result.err
    status = {n["id"]: (n["status"], n["attempt"]) for n in json.loads(orch("status", "--json", cwd=repo).out)["nodes"]}
    assert status == {"S": ("ACCEPTED", 1), "H": ("ACCEPTED", 1), "P": ("ACCEPTED", 2), "C": ("ACCEPTED", 1)}
    assert ("evaluators", 0) in gates_of(repo, "H")
    log = (repo / ".scratch" / "runs" / "typed" / "H" / "evaluators-1.log").read_text()
    assert "spoke-ok" in log and "hub-ok" in log


def test_p13_a_producer_without_its_payload_is_reworked_with_the_contract_named(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    orch("run", "--quiet", cwd=repo)
    assert gates_of(repo, "P").count(("payload-present(e2)", 1)) == 1
    assert gates_of(repo, "P").count(("payload-present(e2)", 0)) == 1
    journal = journal_text(repo, "typed")
    assert "P must produce p/schema.json for C (edge e2); not found at" in journal


def test_what_validates_but_cannot_run_is_refused_before_anything_is_written(tmp_path, orch):
    dag = DAG + "  - {id: e3, from: S, to: C, predicate: TRIGGERS, type: discovery, discover: {kind: gate, capabilities: [x]}}\n"
    repo = campaign_repo(tmp_path, dag, WORKER)
    assert orch("validate", cwd=repo).rc == 0

    result = orch("run", cwd=repo)

    assert result.rc == 1
    assert "edges[2].discover.kind: a discovery edge finds the worker that runs its target, and a gate plugin " \
           "cannot run a node; use kind: worker" in result.out + result.err
    assert "nothing was written" in result.out + result.err
    assert not (repo / ".ledger" / "state" / "typed").exists()


def test_the_hub_brief_lists_the_checks_it_will_be_judged_by(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    orch("run", "--quiet", cwd=repo)
    brief = (repo / ".scratch" / "runs" / "typed" / "H" / "brief-1.md").read_text()
    assert "  - hub-ok: `test -f h.txt`" in brief and "  - spoke-ok: `test -f s.txt`" in brief
    spoke = (repo / ".scratch" / "runs" / "typed" / "S" / "brief-1.md").read_text()
    assert "hub-ok" not in spoke


def test_a_node_whose_worker_changes_nothing_is_accepted_without_a_merge_commit(tmp_path, orch):
    dag = """\
topic: empty
workers: {sh: "./work.sh"}
nodes:
  - {id: A, file_surface: [a.txt], discipline: sh}
  - {id: B, depends_on: [A], file_surface: [b.txt], discipline: sh}
"""
    repo = campaign_repo(tmp_path, dag, "#!/bin/sh\nif [ \"$ORCH_NODE\" = B ]; then echo b > b.txt; fi\n")
    baseline = repo.head()
    result = orch("run", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert "A: nothing to merge (the worker changed nothing)" in result.out
    assert "repair:" not in result.out + result.err
    status = {n["id"]: n["status"] for n in json.loads(orch("status", "--json", cwd=repo).out)["nodes"]}
    assert status == {"A": "ACCEPTED", "B": "ACCEPTED"}
    assert repo.git("log", "--first-parent", "--format=%s", f"{baseline}..campaign/empty").splitlines() == [
        "merge node B: B"]
    assert orch("why", "A", cwd=repo).out.startswith("A had nothing to merge")
