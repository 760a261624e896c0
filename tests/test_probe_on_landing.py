"""Eager: a node that lands after a merge moved the head past its base is probed before it is judged (rv77).

Probes ran only as the head moved (CHECKPOINT after a merge), so a node still running then was never probed:
it was judged in full (its evaluators, its gates, its accept) and only MERGE found its conflict. Under the
eager schedule that is the common case: B and C start together, B returns and merges, C lands after. C waits
until B's merge is in the journal, so the order is the engine's, not the workers' timing.
"""
from __future__ import annotations

import json

from tests.engine_helpers import campaign_repo, journal

WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  B) mkdir -p e && git mv d/on?.txt d/tw?.txt e/ ;;
  C) n=0
     while ! grep -q '"kind":"merge"' "$JOURNAL" 2>/dev/null && [ "$n" -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done
     mkdir -p d && echo "C" > d/three.txt ;;
esac
git add -A && git commit -qm "$ORCH_NODE attempt $ORCH_ATTEMPT"
"""

DAG = """\
topic: late
workers: {sh: "./work.sh"}
defaults: {max_attempts: 3, timeout: 150}
nodes:
  - {id: B, title: bravo, file_surface: [d/one.txt, d/two.txt, e/one.txt, e/two.txt], discipline: sh}
  - {id: C, title: charlie, file_surface: [d/three.txt, e/three.txt], discipline: sh,
     evaluators: [{name: there, run: "test -f d/three.txt"}]}
"""

FILES = {"d/one.txt": "one: the first file of d\n", "d/two.txt": "two: the second file of d\n"}


def test_a_node_landing_after_the_head_moved_is_probed_before_it_is_judged(tmp_path, orch):
    worker = WORKER.replace("$JOURNAL", str(tmp_path / "repo" / ".ledger" / "state" / "late" / "journal.jsonl"))
    repo = campaign_repo(tmp_path, DAG, worker, FILES)
    result = orch("run", "--no-interactive", "--jobs", "2", cwd=repo)
    assert result.rc == 75, result.out + result.err
    entries = journal(repo, "late")
    merged_b = next(i for i, e in enumerate(entries) if e["kind"] == "merge" and e["context"]["node"] == "B")
    probe = next(i for i, e in enumerate(entries) if e["kind"] == "probe")
    assert merged_b < probe
    assert entries[probe]["context"]["node"] == "C" and entries[probe]["context"]["conflicts"] == ["e/three.txt"]
    # C's first attempt was never judged nor merged: the probe reworked it
    first_gate = next(i for i, e in enumerate(entries) if e["kind"] == "gate" and e["context"].get("node") == "C")
    assert probe < first_gate
    assert not [e for e in entries if e["kind"] == "result" and e["context"].get("aborted")]
    # nor were its evaluators run ahead for it (sandboxed): the probe, at its landing, knew it starts again
    started = [e["context"]["attempt"] for e in entries
               if e["kind"] == "result" and e["context"].get("effect") == "evaluators-start"
               and e["context"]["node"] == "C"]
    assert 1 not in started
    rework = next(e for e in entries[probe:] if e["kind"] == "node" and e["context"].get("status") == "REWORK")
    assert rework["context"]["node"] == "C" and rework["derived_from"] == [entries[probe]["id"]]
    assert "C: conflict found before its turn (e/three.txt with node B); REWORK" in result.out
    status = json.loads(orch("status", "--json", "--topic", "late", cwd=repo).out)
    assert {n["id"]: (n["status"], n["attempt"]) for n in status["nodes"]} == {"B": ("ACCEPTED", 1),
                                                                              "C": ("ACCEPTED", 2)}
    assert status["conflicts"] == {}
