"""The usage contract: a worker reports what it spent to $ORCH_USAGE; it is journalled with its attempt,
shown by `why` per attempt and in total, and summed in the retrospective; a malformed file is a warning."""
from __future__ import annotations

from tests.engine_helpers import campaign_repo, journal

WORKER = r"""#!/bin/sh
echo "$ORCH_NODE" > "$ORCH_NODE.txt"
case "$ORCH_NODE" in
  N1) printf '{"usage": {"input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.042, "model": "m-1"}}' \
        > "$ORCH_USAGE" ;;
  N2) printf '{"usage": {"input_tokens": "many"}}' > "$ORCH_USAGE" ;;
esac
"""

DAG = """\
topic: use
workers: {sh: "./work.sh"}
nodes:
  - {id: N1, title: one, depends_on: [], file_surface: [N1.txt], discipline: sh}
  - {id: N2, title: two, depends_on: [], file_surface: [N2.txt], discipline: sh}
  - {id: N3, title: three, depends_on: [], file_surface: [N3.txt], discipline: sh}
"""


def _results(repo) -> dict:
    return {e["context"]["node"]: e["context"] for e in journal(repo, "use")
            if e["kind"] == "result" and e["context"].get("effect") == "worker-start"}


def test_usage_is_journalled_per_attempt_and_a_malformed_file_is_only_a_warning(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    result = orch("run", cwd=repo)
    assert result.rc == 75, result.out + result.err  # all three accepted: a bad usage file fails nothing
    assert "final-acceptance" in result.out
    results = _results(repo)
    assert results["N1"]["usage"] == {"input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.042, "model": "m-1"}
    assert "usage-1.json" in results["N2"]["usage_error"] and "input_tokens" in results["N2"]["usage_error"]
    assert "usage" not in results["N3"] and "usage_error" not in results["N3"]
    assert "N2: warning: malformed usage file usage-1.json" in result.out
    env_path = repo / ".scratch" / "runs" / "use" / "N1" / "usage-1.json"
    assert env_path.exists()  # $ORCH_USAGE named a file in the attempt's run folder


def test_why_shows_usage_per_attempt_and_total(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert orch("run", cwd=repo).rc == 75
    shown = orch("why", "N1", "--topic", "use", cwd=repo)
    assert "usage attempt 1: 1200 in / 300 out tokens, $0.0420 (m-1)" in shown.out
    assert "usage total: 1200 in / 300 out tokens, $0.0420" in shown.out
    bad = orch("why", "N2", "--topic", "use", cwd=repo)
    assert "usage attempt 1: malformed usage file: usage-1.json" in bad.out
    import json
    data = json.loads(orch("why", "N1", "--topic", "use", "--json", cwd=repo).out)
    assert data["usage"]["total"] == {"input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.042}


def test_the_retrospective_sums_usage_per_node_and_for_the_campaign(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert orch("run", cwd=repo).rc == 75
    sketch = next((repo / ".ledger" / "log").glob("*-use.md")).read_text()
    usage = sketch[sketch.index("## Usage"):]
    assert "| N1 | 1 | 1200 in / 300 out tokens, $0.0420 (m-1) |" in usage
    assert "| N2 | 1 | malformed usage file (warning) |" in usage
    assert "| N1 | all | 1200 in / 300 out tokens, $0.0420 |" in usage
    assert "Campaign total: 1200 in / 300 out tokens, $0.0420." in usage
    assert "| N3 |" not in usage  # reported nothing, so it has no row
