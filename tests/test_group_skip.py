"""A LOOPS_WITH group lands together or not at all (README, seeds-other §3.2), so when a condition (or a
guardrail answered `skip`) skips one member, its peers are skipped too rather than merged alone (rv79),
under either schedule."""
from __future__ import annotations

import pytest

from tests.engine_helpers import campaign_repo, statuses

WORKER = r"""#!/bin/sh
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr A-Z a-z).txt"
[ "$ORCH_NODE" != N1 ] || printf '{"go": %s}' "$(cat flag)" > "$ORCH_OUTPUTS"
"""

DAG = """\
topic: grp
schedule: {schedule}
workers: {{sh: "./work.sh"}}
nodes:
  - {{id: N1, file_surface: [n1.txt], discipline: sh, outputs: [go]}}
  - {{id: N2, file_surface: [n2.txt], discipline: sh}}
  - {{id: N3, depends_on: [N1], file_surface: [n3.txt], discipline: sh}}
  - {{id: N4, depends_on: [N3], file_surface: [n4.txt], discipline: sh}}
edges:
  - {{id: e1, from: N1, to: N2, predicate: TRIGGERS, type: conditional, when: "src.outputs.go == true"}}
  - {{id: e2, from: N2, to: N3, predicate: LOOPS_WITH}}
"""


@pytest.mark.parametrize("schedule", ["eager", "layered"])
def test_a_member_skipped_by_a_condition_skips_its_group(tmp_path, orch, schedule):
    repo = campaign_repo(tmp_path, DAG.format(schedule=schedule), WORKER, {"flag": "false\n"})
    result = orch("run", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert "N3: SKIPPED (its LOOPS_WITH peer N2 is skipped" in result.out
    assert statuses(repo, orch, "grp") == {"N1": "ACCEPTED", "N2": "SKIPPED", "N3": "SKIPPED", "N4": "SKIPPED"}
    assert "n3.txt" not in repo.git("ls-tree", "--name-only", "campaign/grp").split()


@pytest.mark.parametrize("schedule", ["eager", "layered"])
def test_a_group_whose_edges_are_taken_lands_together(tmp_path, orch, schedule):
    repo = campaign_repo(tmp_path, DAG.format(schedule=schedule), WORKER, {"flag": "true\n"})
    assert orch("run", cwd=repo).rc == 75
    assert set(statuses(repo, orch, "grp").values()) == {"ACCEPTED"}


BLOCKED = """\
topic: grp
schedule: {schedule}
workers: {{sh: "./work.sh"}}
gates:
  never: {{plugin: command, run: "exit 1"}}
nodes:
  - {{id: S, file_surface: [s.txt], discipline: sh}}
  - {{id: P, depends_on: [S], file_surface: [p.txt], discipline: sh}}
  - {{id: Q, file_surface: [q.txt], discipline: sh}}
edges:
  - {{id: e1, from: P, to: Q, predicate: LOOPS_WITH}}
  - {{id: e2, from: S, to: Q, predicate: TRIGGERS, guardrails: {{output: [never], on_violation: block}}}}
"""


@pytest.mark.parametrize("schedule", ["eager", "layered"])
def test_a_member_whose_blocked_edge_is_skipped_in_the_same_run_skips_its_decided_peer(tmp_path, orch, schedule):
    repo = campaign_repo(tmp_path, BLOCKED.format(schedule=schedule), WORKER)
    (tmp_path / "answers.yaml").write_text("guardrail: skip\n")  # answered in this run: P was decided before
    result = orch("run", "--quiet", "--answers", str(tmp_path / "answers.yaml"), cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert statuses(repo, orch, "grp") == {"S": "ACCEPTED", "P": "SKIPPED", "Q": "SKIPPED"}
    assert "p.txt" not in repo.git("ls-tree", "--name-only", "campaign/grp").split()
