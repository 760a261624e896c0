"""An `output` guardrail on a conditional edge taken from an ABANDONED source (`when: "src.status ==
'ABANDONED'"`) judges what that source contributed: nothing, since it merged nothing. Its gates see
ORCH_BASE = ORCH_HEAD = the campaign head, and a `block` seam is bound to that head (rv79: they ran
`git rev-parse ^1` on the empty merge sha and the campaign could never go on)."""
from __future__ import annotations

import pytest

from tests.engine_helpers import campaign_repo, journal, statuses

WORKER = r"""#!/bin/sh
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr A-Z a-z).txt"
[ "$ORCH_NODE" != N1 ]
"""

DAG = """\
topic: ab
workers: {{sh: "./work.sh"}}
gates:
  g: {{plugin: command, run: "test \\"$ORCH_BASE\\" = \\"$ORCH_HEAD\\" && git diff --quiet $ORCH_BASE $ORCH_HEAD && {tail}"}}
nodes:
  - {{id: N1, file_surface: [n1.txt], discipline: sh, max_rework: 1, on_exhausted: continue}}
  - {{id: N2, file_surface: [n2.txt], discipline: sh}}
edges:
  - {{id: e1, from: N1, to: N2, predicate: TRIGGERS, type: conditional, when: "src.status == 'ABANDONED'",
     guardrails: {{output: [g], on_violation: block}}}}
"""


@pytest.mark.parametrize("schedule", ["eager", "layered"])
def test_an_output_guardrail_from_an_abandoned_source_sees_no_contribution(tmp_path, orch, schedule):
    repo = campaign_repo(tmp_path, DAG.format(tail="true").replace("topic: ab", f"topic: ab\nschedule: {schedule}"),
                         WORKER)
    result = orch("run", cwd=repo)
    assert result.rc == 75 and "final-acceptance" in result.out, result.out + result.err
    assert statuses(repo, orch, "ab") == {"N1": "ABANDONED", "N2": "ACCEPTED"}
    rails = [e["context"] for e in journal(repo, "ab") if e["kind"] == "guardrail"]
    assert [(r["violated"], r["results"][0]["rc"]) for r in rails] == [(False, 0)]


def test_a_block_from_an_abandoned_source_is_a_seam_bound_to_the_campaign_head(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG.format(tail="exit 1"), WORKER)
    result = orch("run", cwd=repo)
    assert result.rc == 75 and "blocked: guardrail g on edge e1 (N1 -> N2)" in result.out, result.out + result.err
    seam = [e["context"] for e in journal(repo, "ab") if e["kind"] == "seam"][-1]
    assert seam["bound_to"] == repo.git("rev-parse", "campaign/ab")
    assert orch("approve", "--edge", "e1", "--as", "t@x", cwd=repo).rc == 0
    assert orch("resume", "--topic", "ab", cwd=repo).rc == 75
    assert statuses(repo, orch, "ab") == {"N1": "ABANDONED", "N2": "ACCEPTED"}


OUTPUTS_DAG = """\
topic: ao
workers: {sh: "./work.sh"}
nodes:
  - {id: N1, file_surface: [n1.txt], discipline: sh, outputs: [go], max_rework: 1, on_exhausted: continue}
  - {id: N2, file_surface: [n2.txt], discipline: sh}
edges:
  - {id: e1, from: N1, to: N2, predicate: TRIGGERS, type: conditional, when: "src.outputs.go == true"}
"""


def test_a_condition_reading_what_an_abandoned_source_never_left_says_what_to_do(tmp_path, orch):
    """rv79: the run halted with "no recorded value for src.outputs.go", and every resume halted the same way,
    with nothing said about why there was none or how to go on."""
    repo = campaign_repo(tmp_path, OUTPUTS_DAG, WORKER)
    result = orch("run", cwd=repo)
    text = result.out + result.err
    assert result.rc != 0 and "no recorded value for src.outputs.go (N1 was abandoned and left none)" in text, text
    assert "read src.status first, as in `src.status == 'ACCEPTED' and ...`" in text, text
