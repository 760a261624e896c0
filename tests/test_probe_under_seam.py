"""A conflict probe (engine/probes.py) never reworks a node that an open seam asks about (rv77).

Eager: C lands first and its reviewer evaluators disagree (seam review-divergence, the run goes on); B, which
waits until that seam is in the journal, then moves d/ to e/ and merges, and C's judged head now conflicts
with the head (git's directory-rename detection: e/three.txt). The probe used to send C to REWORK under the
open seam; the person's `accept` then entered MERGE with no landed node: an AssertionError (exit 70) at every
resume, the campaign stuck. The conflict now stays pending until the answer: accept merges, MERGE finds the
conflict and reworks C from the new head.
"""
from __future__ import annotations

import json

from tests.engine_helpers import campaign_repo, journal

WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  B) n=0
     while ! grep -q review-divergence "$JOURNAL" 2>/dev/null && [ "$n" -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done
     git mv d e ;;
  C) if [ -d d ]; then echo "C $ORCH_ATTEMPT" > d/three.txt; else mkdir -p e && echo "C $ORCH_ATTEMPT" > e/three.txt; fi ;;
esac
git add -A && git commit -qm "$ORCH_NODE attempt $ORCH_ATTEMPT"
"""

DAG = """\
topic: rd
workers: {sh: "./work.sh"}
defaults: {max_attempts: 3, timeout: 150}
nodes:
  - {id: B, title: bravo, file_surface: [d/one.txt, d/two.txt, e/one.txt, e/two.txt], discipline: sh}
  - id: C
    title: charlie
    file_surface: [d/three.txt, e/three.txt]
    discipline: sh
    evaluators:
      - {name: r1, run: "true", review: true}
      - {name: r2, run: "! grep -qx 'C 1' */three.txt", review: true}
"""

FILES = {"d/one.txt": "one: the first file of d\n", "d/two.txt": "two: the second file of d\n"}


def test_a_probe_leaves_a_node_under_an_open_seam_to_its_answer(tmp_path, orch):
    worker = WORKER.replace("$JOURNAL", str(tmp_path / "repo" / ".ledger" / "state" / "rd" / "journal.jsonl"))
    repo = campaign_repo(tmp_path, DAG, worker, FILES)
    result = orch("run", "--no-interactive", "--jobs", "2", cwd=repo)
    assert result.rc == 75, result.out + result.err
    status = json.loads(orch("status", "--json", "--topic", "rd", cwd=repo).out)
    assert {n["id"]: n["status"] for n in status["nodes"]} == {"B": "ACCEPTED", "C": "LANDED"}
    assert status["seams"][0]["seam"] == "review-divergence" and status["seams"][0]["node"] == "C"
    assert status["conflicts"]["C"]["paths"] == ["e/three.txt"]  # pending, shown, not yet acted on
    assert "not reworked now, as a seam asks about it" in result.out
    assert orch("decide", "review-divergence", "accept", "--topic", "rd", cwd=repo).rc == 0
    result = orch("resume", "--topic", "rd", "--no-interactive", cwd=repo)
    assert result.rc == 75, result.out + result.err  # final acceptance, not an internal error
    entries = journal(repo, "rd")
    aborted = [e["context"] for e in entries if e["kind"] == "result" and e["context"].get("aborted")]
    assert aborted == [{"effect": "merge", "node": "C", "aborted": True, "conflicts": ["e/three.txt"]}]
    status = json.loads(orch("status", "--json", "--topic", "rd", cwd=repo).out)
    assert {n["id"]: (n["status"], n["attempt"]) for n in status["nodes"]} == {"B": ("ACCEPTED", 1),
                                                                              "C": ("ACCEPTED", 2)}
    assert status["conflicts"] == {}
    assert repo.git("show", "campaign/rd:e/three.txt") == "C 2"
