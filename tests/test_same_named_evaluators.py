"""Inline evaluators are named per node (DESIGN §4), so two nodes may each have an `exists` of their own.
A hub judged by its spokes' gates (COMPOSES), a LOOPS_WITH group judged by the union of its members'
gates, and a guardrail naming its source's evaluator must run the check that was meant, each one, not
the first check anywhere in the DAG that carries the name."""
from __future__ import annotations

import pytest

from tests.engine_helpers import campaign_repo, journal, statuses

# The hub H breaks what its spoke S checks; the group member Q breaks its own check; N's edge guardrail
# names N's own `exists`, which fails on an edge, while the first `exists` in the DAG (H's) passes.
WORKER = r"""#!/bin/sh
set -eu
n=$(echo "$ORCH_NODE" | tr 'A-Z' 'a-z')
echo ok > "$n.txt"
case "$ORCH_NODE" in
  H|Q) echo bad > "$n.txt" ;;
esac
"""

HEAD = """\
topic: names
schedule: SCHEDULE
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1, timeout: 60}
nodes:
"""
COMPOSES = HEAD + """\
  - {id: H, file_surface: [h.txt], discipline: sh, evaluators: [{name: exists, run: "true"}]}
  - {id: S, file_surface: [s.txt], discipline: sh, evaluators: [{name: exists, run: "! grep -q bad h.txt"}]}
edges:
  - {id: e1, from: H, to: S, predicate: COMPOSES}
"""
GROUP = HEAD + """\
  - {id: P, file_surface: [p.txt], discipline: sh, evaluators: [{name: exists, run: "test -f p.txt"}]}
  - {id: Q, file_surface: [q.txt], discipline: sh, evaluators: [{name: exists, run: "! grep -q bad q.txt"}]}
edges:
  - {id: e2, from: P, to: Q, predicate: LOOPS_WITH}
"""
GUARDRAIL = HEAD + """\
  - {id: H, file_surface: [h.txt], discipline: sh, evaluators: [{name: exists, run: "true"}]}
  - {id: N, file_surface: [n.txt], discipline: sh, evaluators: [{name: exists, run: "test -z \\"$ORCH_EDGE\\""}]}
  - {id: M, file_surface: [m.txt], discipline: sh}
  - {id: R, activation: on_demand, depends_on: [N], file_surface: [r.txt], discipline: sh}
edges:
  - {id: e3, from: N, to: M, predicate: TRIGGERS, guardrails: {input: [exists], on_violation: reroute,
     reroute_target: R}}
"""
SCHEDULES = pytest.mark.parametrize("schedule", ["eager", "layered"])


def run(tmp_path, orch, dag: str, schedule: str):
    repo = campaign_repo(tmp_path, dag.replace("SCHEDULE", schedule), WORKER)
    assert orch("validate", cwd=repo).rc == 0
    result = orch("run", "--quiet", cwd=repo)
    return repo, statuses(repo, orch, "names"), result.out + result.err


@SCHEDULES
def test_a_hub_runs_its_spokes_check_that_shares_a_name_with_its_own(tmp_path, orch, schedule):
    repo, got, said = run(tmp_path, orch, COMPOSES, schedule)
    assert got == {"H": "REWORK", "S": "ACCEPTED"}, said
    log = (repo / ".scratch" / "runs" / "names" / "H" / "evaluators-1.log").read_text()
    assert "== exists: `true`" in log and "== exists (S): `! grep -q bad h.txt`" in log
    assert "FAIL       exists (S)  <- rc 1" in said


@SCHEDULES
def test_a_group_runs_each_members_check_that_shares_a_name(tmp_path, orch, schedule):
    repo, got, said = run(tmp_path, orch, GROUP, schedule)
    assert "ACCEPTED" not in got.values(), said
    log = (repo / ".scratch" / "runs" / "names" / "P" / "group-1.log").read_text()
    assert "== exists: `test -f p.txt`" in log and "== exists (Q): `! grep -q bad q.txt`" in log


@SCHEDULES
def test_a_guardrail_runs_its_sources_evaluator_not_the_first_of_that_name(tmp_path, orch, schedule):
    repo, got, said = run(tmp_path, orch, GUARDRAIL, schedule)
    assert got == {"H": "ACCEPTED", "N": "ACCEPTED", "M": "SKIPPED", "R": "ACCEPTED"}, said
    rails = [e["context"] for e in journal(repo, "names") if e["kind"] == "guardrail"]
    assert [(r["edge"], r["violated"]) for r in rails] == [("e3", True)]
