"""With more ready nodes than `--jobs` slots, the eager schedule starts the head of the longest chain of
dependents first (rv74: slots went by node id, and a node on the critical path waited 8.5 s behind
lower-numbered leaves). Read from the journal's order, never from timing."""
from __future__ import annotations

import pytest

from orchestrate.dag.graph import heights
from tests.engine_helpers import campaign_repo, journal

DAG = """\
topic: prio
schedule: {schedule}
workers: {{sh: "./work.sh"}}
defaults: {{timeout: 60}}
nodes:
  - {{id: A1, title: leaf, file_surface: [a1/], discipline: sh}}
  - {{id: A2, title: leaf, file_surface: [a2/], discipline: sh}}
  - {{id: Z1, title: head, file_surface: [z1/], discipline: sh}}
  - {{id: Z2, title: next, depends_on: [Z1], file_surface: [z2/], discipline: sh}}
  - {{id: Z3, title: last, depends_on: [Z2], file_surface: [z3/], discipline: sh}}
"""
WORKER = '#!/bin/sh\nmkdir -p "$(echo "$ORCH_NODE" | tr A-Z a-z)" && echo x > "$(echo "$ORCH_NODE" | tr A-Z a-z)/f"\n'


def _starts(repo) -> list[str]:
    return [e["context"]["node"] for e in journal(repo, "prio")
            if e["kind"] == "node" and e["context"].get("status") == "DISPATCHED"]


def test_the_head_of_the_longest_chain_starts_first_when_slots_are_few(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG.format(schedule="eager"), WORKER)
    result = orch("run", "--jobs", "1", cwd=repo)
    assert result.rc == 75 and "final-acceptance" in result.out, result.out + result.err
    assert _starts(repo)[0] == "Z1"  # not A1, first by id: Z1 heads three nodes
    assert sorted(_starts(repo)) == ["A1", "A2", "Z1", "Z2", "Z3"]


def test_the_layered_schedule_keeps_the_natural_order(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG.format(schedule="layered"), WORKER)
    result = orch("run", "--jobs", "1", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert _starts(repo)[:3] == ["A1", "A2", "Z1"]


@pytest.mark.parametrize("deps, expected", [
    ({"a": (), "b": ("a",), "c": ("b",), "d": (), "e": ("a", "d")}, {"a": 3, "b": 2, "c": 1, "d": 2, "e": 1}),
    ({"x": ()}, {"x": 1}),
    ({"p": ("q",), "q": ("p",), "r": ()}, {"r": 1}),  # a cycle: left out
])
def test_heights_count_the_longest_chain_of_dependents(deps, expected):
    assert heights(deps) == expected
