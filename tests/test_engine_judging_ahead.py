"""Eager, with every worker in the sandbox: a landed node's evaluators run ahead, in a thread, while the loop
goes on taking in returns, enforcing timeouts, judging, merging and dispatching (engine/evaluations.py).
Read from the journal's order; each evaluator waits for an event the loop must make while it runs, and fails
if it never comes (the loop waiting on it would never make it)."""
from __future__ import annotations

import pytest

from tests.engine_helpers import campaign_repo, journal, statuses

# A's evaluator passes once C (which depends on B alone) has its brief, i.e. once B was judged and merged and
# C dispatched while A was being judged; B's second attempt comes only after its first timed out.
WAIT = 'n=0; while [ ! -f "{runs}/{node}/brief-{attempt}.md" ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n + 1)); done; ' \
       'test -f "{runs}/{node}/brief-{attempt}.md"'
WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  B) if [ "$ORCH_ATTEMPT" = 1 ] && [ -f b-hangs ]; then exec sleep 300; fi ;;
esac
d=$(echo "$ORCH_NODE" | tr A-Z a-z)
mkdir -p "$d" && echo "$ORCH_NODE" > "$d/one.txt"
"""
DAG = """\
topic: ahead
workers: {{sh: "./work.sh"}}
defaults: {{timeout: 120, max_attempts: 2, sandbox: bwrap}}
nodes:
  - {{id: A, title: judged slowly, file_surface: [a/], discipline: sh,
     evaluators: [{{name: waits, run: '{wait}'}}]}}
  - {{id: B, title: quick, file_surface: [b/], discipline: sh{b_timeout}}}
  - {{id: C, title: after quick, depends_on: [B], file_surface: [c/], discipline: sh}}
"""


@pytest.fixture(autouse=True)
def _sandbox():
    from orchestrate.workers import sandbox
    if (why := sandbox.probe()) is not None:
        pytest.skip(f"evaluators run ahead only where every worker runs in the sandbox; no sandbox here: {why}")


def _first(entries, pred) -> int:
    return next(i for i, e in enumerate(entries) if pred(e))


def _verdict(node: str):
    return lambda e: e["kind"] == "verdict" and e["context"]["node"] == node


def _dispatched(node: str, attempt: int = 1):
    return lambda e: e["kind"] == "node" and e["context"].get("node") == node \
        and e["context"].get("status") == "DISPATCHED" and e["context"].get("attempt", attempt) == attempt


def test_a_dependent_is_judged_merged_and_started_while_a_landed_nodes_evaluators_run(tmp_path, orch):
    runs = tmp_path / "repo" / ".scratch" / "runs" / "ahead"
    dag = DAG.format(wait=WAIT.format(runs=runs, node="C", attempt=1), b_timeout="")
    repo = campaign_repo(tmp_path, dag, WORKER)
    result = orch("run", "--jobs", "3", cwd=repo)
    assert result.rc == 75, result.out + result.err  # at final acceptance
    assert statuses(repo, orch, "ahead") == {"A": "ACCEPTED", "B": "ACCEPTED", "C": "ACCEPTED"}
    entries = journal(repo, "ahead")
    assert _first(entries, _verdict("B")) < _first(entries, _dispatched("C")) < _first(entries, _verdict("A"))
    assert "A: evaluators started (attempt 1)" in result.out
    # the report's timeline: A's judging began when its evaluators started, not when RECONCILE came to it
    from orchestrate.report.history import read, seconds
    history = read("ahead", entries)
    started = next(e for e in entries if e["kind"] == "result" and e["context"].get("effect") == "evaluators-start")
    judging = next(s for a in history.of("A") for s in a.spans if s.phase == "judging")
    assert judging.start == pytest.approx(seconds(started["created_at"]) - history.start)


def test_a_workers_timeout_is_enforced_while_a_landed_nodes_evaluators_run(tmp_path, orch):
    runs = tmp_path / "repo" / ".scratch" / "runs" / "ahead"
    dag = DAG.format(wait=WAIT.format(runs=runs, node="B", attempt=2), b_timeout=", timeout: 2")
    repo = campaign_repo(tmp_path, dag, WORKER, files={"b-hangs": ""})
    result = orch("run", "--jobs", "3", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert "B: worker timed out" in result.out
    assert statuses(repo, orch, "ahead") == {"A": "ACCEPTED", "B": "ACCEPTED", "C": "ACCEPTED"}
    entries = journal(repo, "ahead")
    timed_out = _first(entries, lambda e: e["kind"] == "result" and e["context"].get("node") == "B"
                       and e["context"].get("rc") == 124)
    assert timed_out < _first(entries, _verdict("A"))
