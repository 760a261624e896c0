"""ABANDONED (seeds-other §2): a node that opted in with `max_rework: N` + `on_exhausted: continue` gives
up after N reworks instead of halting the campaign; static edges from it are not taken, a conditional
edge on `src.status == 'ABANDONED'` routes to a recovery node. Without the opt-in the protocol's
escalation stands."""
from __future__ import annotations

from tests.engine_helpers import campaign_repo, journal, statuses

WORKER = r"""#!/bin/sh
set -eu
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr 'A-Z' 'a-z').txt"
"""

DAG = """\
topic: gaveup
workers: {sh: "./work.sh"}
nodes:
  - {id: N1, file_surface: [n1.txt], discipline: sh, max_rework: 1, on_exhausted: continue,
     evaluators: [{name: never, run: "false"}]}
  - {id: N2, depends_on: [N1], file_surface: [n2.txt], discipline: sh}
  - {id: N3, file_surface: [n3.txt], discipline: sh}
  - {id: N9, file_surface: [n9.txt], discipline: sh}
edges:
  - {id: e3, from: N1, to: N3, predicate: TRIGGERS, type: conditional, when: "src.status == 'ABANDONED'"}
"""


def test_an_exhausted_node_is_abandoned_and_the_campaign_goes_on(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER, {})
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 75, result.out + result.err  # the final-acceptance seam, not a halt
    assert statuses(repo, orch, "gaveup") == {"N1": "ABANDONED", "N2": "SKIPPED", "N3": "ACCEPTED", "N9": "ACCEPTED"}
    entries = journal(repo, "gaveup")
    verdicts = [e["context"]["verdict"] for e in entries if e["kind"] == "verdict" and e["context"]["node"] == "N1"]
    assert verdicts == ["rework", "abandon"]  # max_rework: 1 -> one rework, then abandoned
    evals = [e["context"] for e in entries if e["kind"] == "edge_eval"]
    assert [(e["edge"], e["taken"], e["inputs"]) for e in evals] == [("e3", True, {"src.status": "ABANDONED"})]
    tree = repo.git("ls-tree", "--name-only", "campaign/gaveup").split()
    assert "n1.txt" not in tree and "n2.txt" not in tree and "n3.txt" in tree
    assert repo.git("branch", "--list", "node/gaveup/N1+2").strip()  # the abandoned work stays readable
    assert evals and orch("doctor", "--topic", "gaveup", cwd=repo).rc == 0  # e3's decision cites the abandonment


def test_without_the_opt_in_the_node_escalates_as_before(tmp_path, orch):
    dag = DAG.replace("max_rework: 1, on_exhausted: continue,", "max_attempts: 1,").replace(
        """  - {id: e3, from: N1, to: N3, predicate: TRIGGERS, type: conditional, when: "src.status == 'ABANDONED'"}\n""", "")
    repo = campaign_repo(tmp_path, dag.replace("edges:\n", ""), WORKER, {})
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 75
    assert "realignment" in result.out
    assert statuses(repo, orch, "gaveup")["N1"] == "REWORK"
