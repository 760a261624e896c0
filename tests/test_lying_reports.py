"""What a worker reports cannot corrupt the campaign (rv79): a usage file with NaN, Infinity or a number too
large for the sums is malformed (a warning), so a NaN cannot switch a budget off and a 400-digit cost cannot
crash every later step; outputs and usage nested too deep for the parser are malformed, not an internal
error."""
from __future__ import annotations

import pytest

from tests.engine_helpers import campaign_repo, journal, statuses

BUDGET_DAG = """\
topic: lie
budget: {cost_usd: 1}
workers: {sh: "./work.sh"}
nodes:
  - {id: N1, file_surface: [N1.txt], discipline: sh}
  - {id: N2, depends_on: [N1], file_surface: [N2.txt], discipline: sh}
  - {id: N3, depends_on: [N2], file_surface: [N3.txt], discipline: sh}
"""

# N1 reports the lie read from `lie` in the repository; every other node honestly reports $5
WORKER = r"""#!/bin/sh
echo "$ORCH_NODE" > "$ORCH_NODE.txt"
if [ "$ORCH_NODE" = N1 ]; then
  printf '{"usage": {"input_tokens": 1, "output_tokens": 1, "cost_usd": %s}}' "$(cat lie)" > "$ORCH_USAGE"
else
  printf '{"usage": {"input_tokens": 1, "output_tokens": 1, "cost_usd": 5}}' > "$ORCH_USAGE"
fi
"""


@pytest.mark.parametrize("lie", ["NaN", "Infinity", "9" * 400, '[' * 5000 + ']' * 5000])
def test_a_lying_usage_report_is_a_warning_and_the_budget_still_stops_the_campaign(tmp_path, orch, lie):
    repo = campaign_repo(tmp_path, BUDGET_DAG, WORKER, {"lie": lie + "\n"})
    result = orch("run", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert "N1: warning: malformed usage file usage-1.json" in result.out
    assert "the campaign spent $5.0000, reaching its budget of $1.0000" in result.out
    assert statuses(repo, orch, "lie") == {"N1": "ACCEPTED", "N2": "ACCEPTED", "N3": "PENDING"}
    assert ":NaN" not in (repo / ".ledger" / "state" / "lie" / "journal.jsonl").read_text()  # no JSON NaN


OUTPUTS_DAG = """\
topic: deep
workers: {sh: "./work.sh"}
nodes:
  - {id: N1, file_surface: [n1.txt], discipline: sh, outputs: [go], max_attempts: 1}
  - {id: N2, file_surface: [n2.txt], discipline: sh}
edges:
  - {id: e1, from: N1, to: N2, predicate: TRIGGERS, type: conditional, when: "src.outputs.go == true"}
"""

OUTPUTS_WORKER = r"""#!/bin/sh
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr A-Z a-z).txt"
[ "$ORCH_NODE" != N1 ] || cat outputs.txt > "$ORCH_OUTPUTS"
"""


@pytest.mark.parametrize("content, why", [
    ('{"go": ' + "[" * 40000 + "}", "nested too deeply"),
    ('{"go": NaN}', "NaN is not a JSON number"),
])
def test_outputs_nested_too_deep_or_not_json_numbers_fail_outputs_present(tmp_path, orch, content, why):
    repo = campaign_repo(tmp_path, OUTPUTS_DAG, OUTPUTS_WORKER, {"outputs.txt": content})
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc != 70, result.out + result.err
    gates = [e["context"] for e in journal(repo, "deep")
             if e["kind"] == "gate" and e["context"]["gate"] == "outputs-present"]
    assert gates and gates[0]["code"] == 1 and why in gates[0]["summary"], gates
    assert not any(e["kind"] == "edge_eval" for e in journal(repo, "deep"))



@pytest.mark.parametrize("model, kept", [("m" * 200, True), ("m" * 201, False), ("x" * (1 << 19), False)])
def test_a_model_name_longer_than_a_name_is_a_malformed_usage_file(tmp_path, model, kept):
    """rv79: a 1 MiB `model` string was journalled as it was, and shown in every report."""
    import json
    from types import SimpleNamespace

    from orchestrate.recorder.paths import Layout
    from orchestrate.workers.local import WorkOutcome
    from orchestrate.workers.returns import reported_usage
    layout = Layout(tmp_path)
    (layout.runs("t") / "N1").mkdir(parents=True)
    (layout.runs("t") / "N1" / "usage-1.json").write_text(json.dumps({"usage": {"cost_usd": 1, "model": model}}))
    said: list[str] = []
    ctx = SimpleNamespace(layout=layout, topic="t", out=SimpleNamespace(line=said.append))
    found = reported_usage(ctx, WorkOutcome("N1", 1, 0, 0.0))
    assert ("usage" in found) is kept and ("usage_error" in found) is not kept, found
    assert len(json.dumps(found)) < 1000
