"""rv83: a `complete: true` node "counts as satisfied" (DESIGN §4), yet every node depending on it was SKIPPED
(`edge(s) not taken: A->B from A`): the node has no state in the campaign, which routing read as not taken."""
from __future__ import annotations

import pytest

from tests.engine_helpers import campaign_repo, statuses

WORKER = """#!/bin/sh
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr A-Z a-z).txt"
"""
DAG = """\
topic: done
schedule: {schedule}
workers: {{sh: "./work.sh"}}
nodes:
  - {{id: A, file_surface: [a.txt], discipline: sh, complete: true}}
  - {{id: B, file_surface: [b.txt], discipline: sh, depends_on: [A]}}
  - {{id: C, file_surface: [c.txt], discipline: sh}}
edges: [{{id: e, from: A, to: C, predicate: TRIGGERS}}]
"""


@pytest.mark.parametrize("schedule", ["eager", "layered"])
def test_nodes_after_a_complete_node_run(tmp_path, orch, schedule):
    repo = campaign_repo(tmp_path, DAG.format(schedule=schedule), WORKER)
    done = orch("run", "--no-interactive", cwd=repo)
    assert done.rc == 75, done.out + done.err
    assert statuses(repo, orch, "done") == {"B": "ACCEPTED", "C": "ACCEPTED"}
    assert repo.git("show", "campaign/done:b.txt") == "B"


def test_a_conditional_edge_from_a_complete_node_is_refused(tmp_path, orch):
    """It was never decided: its target was skipped at once, without an edge_eval or a word on why."""
    dag = DAG.format(schedule="eager").replace("predicate: TRIGGERS}", "predicate: TRIGGERS, type: conditional,\n"
                                               "         when: \"src.status == 'ACCEPTED'\"}")
    repo = campaign_repo(tmp_path, dag, WORKER)
    done = orch("validate", cwd=repo)
    assert done.rc == 1, done.out
    assert ("dag.yaml:9: edges[0].when: A is complete: true, never run, so it records no outcome for a condition to "
            "read") in done.out, done.out


def test_guardrails_on_an_edge_from_a_complete_node_are_refused(tmp_path, orch):
    """Once such an edge was taken, crossing it looked up the source's state: KeyError, exit 70."""
    dag = DAG.format(schedule="eager").replace(
        "discipline: sh, complete: true}", "discipline: sh, complete: true, evaluators: [{name: unit, run: 'true'}]}"
    ).replace("predicate: TRIGGERS}", "predicate: TRIGGERS, guardrails: {output: [unit], on_violation: block}}")
    repo = campaign_repo(tmp_path, dag, WORKER)
    done = orch("run", "--no-interactive", cwd=repo)
    assert done.rc == 1, done.out + done.err
    assert "dag.yaml:8: edges[0].guardrails: A is complete: true, never run or merged" in done.out + done.err


def test_a_discovery_edge_from_a_complete_node_falls_back(tmp_path, orch):
    """Taken at last, the edge's discovery cited the source's settling entry: KeyError, exit 70."""
    dag = DAG.format(schedule="eager").replace(
        "{id: C, file_surface: [c.txt], discipline: sh}",
        "{id: C, file_surface: [c.txt], discipline: zz}\n"
        "  - {id: H, file_surface: [h.txt], discipline: sh, activation: on_demand, depends_on: [A]}").replace(
        "predicate: TRIGGERS}", "predicate: TRIGGERS, type: discovery, discover: {kind: worker, capabilities: "
                                "[nosuch]}, fallback: H}")
    repo = campaign_repo(tmp_path, dag, WORKER)
    done = orch("run", "--no-interactive", cwd=repo)
    assert done.rc == 75, done.out + done.err
    assert statuses(repo, orch, "done") == {"B": "ACCEPTED", "C": "SKIPPED", "H": "ACCEPTED"}


def test_a_loops_with_group_holding_a_complete_node_is_refused(tmp_path, orch):
    """Routing the group's other member looked up the complete node's state: KeyError, exit 70, on every resume."""
    repo = campaign_repo(tmp_path, DAG.format(schedule="eager").replace("predicate: TRIGGERS}", "predicate: LOOPS_WITH}"),
                         WORKER)
    done = orch("run", "--no-interactive", cwd=repo)
    assert done.rc == 1, done.out + done.err
    assert "dag.yaml:8: edges[0]: A is complete: true, never run, so it cannot be reconciled with its LOOPS_WITH " \
           "peer" in done.out + done.err
