"""The two sample runs of seeds-other.md §4, on its example DAG with every typed-edge feature at once.

The DAG is the example's (tests/data/dags/edges/example.yaml) with two substitutions a test needs:
shell commands instead of pytest suites for the command gates, and `workers:` mapping its disciplines
to a script. N4h is worked by a person, played by the test. Its plugins (secret-scan, diff-size,
llm-review, python-coder) are throwaway distributions."""
from __future__ import annotations

from pathlib import Path

import pytest

from orchestrate.dag.model import AGENT_PRESETS
from tests.engine_helpers import campaign_repo, journal, statuses
from tests.plugin_site import gate, worker

EXAMPLE = Path(__file__).parent / "data" / "dags" / "edges" / "example.yaml"

WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  N1) mkdir -p schema src/schema; echo '{}' > schema/v2.json; echo v2 > src/schema/v2.txt
      printf '{"needs_migration": %s}' "$(cat needs-migration)" > "$ORCH_OUTPUTS" ;;
  N2) mkdir -p src/server; echo api > src/server/api.txt ;;
  N3) mkdir -p src/client; seq 1 1200 > src/client/big.txt ;;
  N5) mkdir -p tests/integration; echo suite > tests/integration/suite.txt; echo red > tests/integration/smoke-red ;;
  N6) mkdir -p docs/release; echo notes > docs/release/v2.md ;;
  N7) mkdir -p docs/review; echo split > docs/review/split.md ;;
esac
"""

SIZE = """def check(self, config, cwd, env):
    import subprocess
    out = subprocess.run(['git', 'diff', '--numstat', env['ORCH_BASE'], env['ORCH_HEAD']], cwd=cwd,
                         capture_output=True, text=True, check=True).stdout
    lines = sum(int(row.split()[0]) for row in out.splitlines())
    return (1, f'{lines} lines > {config["max_lines"]}') if lines > config['max_lines'] else (0, f'{lines} lines')"""
SECRETS = """def check(self, config, cwd, env):
    import subprocess
    out = subprocess.run(['git', 'diff', env['ORCH_BASE'], env['ORCH_HEAD']], cwd=cwd,
                         capture_output=True, text=True, check=True).stdout
    return (1, 'a secret in the diff') if 'SECRET' in out else (0, 'no secrets')"""
REVIEW = """def check(self, config, cwd, env):
    return 0, 'reviewed as ' + config['persona']"""
CODER = """def command(self, node_id, config):
    return './work.sh'"""


def example_dag() -> str:
    text = EXAMPLE.read_text()
    for suite, command in (("pytest -q tests/unit", "true"), ("pytest -q tests/schema", "test -f schema/v2.json"),
                           ("pytest -q tests/client", "test -f src/server/api.txt"),
                           ("pytest -q -x tests/smoke", "test ! -f tests/integration/smoke-red")):
        text = text.replace(suite, command)
    return text.replace("gates:   ", 'workers: {core: "./work.sh", doc: "./work.sh"}\ngates:   ', 1)


@pytest.fixture
def installed(site):
    site.add("orchestrate-secrets", "1.0", gate("secret-scan", body=SECRETS), call=False)
    site.add("orchestrate-diff-size", "1.0", gate("diff-size", body=SIZE), call=False)
    site.add("orchestrate-llm", "0.3.0", gate("llm-review", body=REVIEW, version="0.3.0"), call=False)
    site.add("orchestrate-python-coder", "2.0", worker("python-coder", body=CODER, capabilities=["python", "pytest"]),
             call=False)
    return site


def run(tmp_path, orch, needs_migration: str):
    repo = campaign_repo(tmp_path, example_dag(), WORKER, {"needs-migration": needs_migration + "\n"})
    assert orch("validate", cwd=repo).rc == 0
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 75, result.out + result.err
    if "seam handwork for node N4h" in result.out:  # the person writes the migration by hand
        work = repo / next(e["context"]["worktree"] for e in journal(repo, "api-v2")
                           if e["kind"] == "node" and e["context"].get("node") == "N4h" and e["context"].get("worktree"))
        (work / "migrations").mkdir()
        (work / "migrations" / "0001.sql").write_text("ALTER TABLE t;\n")
        assert orch("decide", "handwork", "done", "--topic", "api-v2", cwd=repo).rc == 0
        result = orch("resume", "--quiet", "--topic", "api-v2", cwd=repo)
        assert result.rc == 75, result.out + result.err
    assert "seam final-acceptance" in result.out
    doctor = orch("doctor", "--topic", "api-v2", cwd=repo)
    assert doctor.rc == 0, doctor.out  # every guardrail, discovery, enable and flag entry has its provenance
    return repo


def kinds(repo, kind: str) -> list[dict]:
    return [e["context"] for e in journal(repo, "api-v2") if e["kind"] == kind]


def test_sample_run_with_a_migration(tmp_path, installed, orch):
    repo = run(tmp_path, orch, "true")
    assert statuses(repo, orch, "api-v2") == {"N1": "ACCEPTED", "N2": "ACCEPTED", "N3": "ACCEPTED", "N4": "SKIPPED",
                                              "N4h": "ACCEPTED", "N5": "ACCEPTED", "N6": "ACCEPTED", "N7": "ACCEPTED"}
    # N1's worker was discovered; e4 was taken on its reported output
    assert [d["chosen"]["name"] for d in kinds(repo, "discovery") if d["node"] == "N1"] == ["python-coder"]
    assert [(e["edge"], e["taken"]) for e in kinds(repo, "edge_eval")] == [("e4", True)]
    # the group N2+N3 was judged on one combined tree and landed as one merge
    group = [(v["node"], v["verdict"]) for v in kinds(repo, "verdict") if v.get("group_id") == "N2+N3"]
    assert group == [("N2", "accept"), ("N3", "accept")]
    # e5 found no worker with alembic: N4 skipped, its fallback N4h enabled and run
    e5 = next(d for d in kinds(repo, "discovery") if d["node"] == "N4")
    ours = [c for c in e5["candidates"] if c["name"] not in AGENT_PRESETS]  # the built-in presets lack both
    assert e5["chosen"] is None and ours[0]["excluded"] == "missing capabilities: alembic"
    assert [(d["seam"], d["choice"]) for d in kinds(repo, "decision")] == [("handwork", "done")]  # N4h by hand
    assert repo.git("show", "campaign/api-v2:migrations/0001.sql").strip() == "ALTER TABLE t;"
    # e8: N3's diff is 1,200 lines: rerouted to N7; e6h's no-secrets passed; e7's smoke failed: a warning
    rails = {g["edge"]: (g["violated"], g["action"]) for g in kinds(repo, "guardrail")}
    assert rails == {"e6h": (False, "block"), "e7": (True, "warn"), "e8": (True, "reroute")}
    assert [(x["node"], x["edge"]) for x in kinds(repo, "enable")] == [("N4h", "e5"), ("N7", "e8")]
    assert [f["edge"] for f in kinds(repo, "flag")] == ["e7"]
    # N5 was judged by its own gates, N2's (COMPOSES, with N2's peer's) and the EXTENDS action
    n5 = {g["gate"] for g in kinds(repo, "gate") if g["node"] == "N5"}
    assert {"evaluators", "security-review"} <= n5
    # N3 landed in its group's one merge commit, so what it contributed includes N2's one line
    assert "1201 lines > 800" in next(g for g in kinds(repo, "guardrail") if g["edge"] == "e8")["message"]


def test_sample_run_without_a_migration(tmp_path, installed, orch):
    repo = run(tmp_path, orch, "false")
    found = statuses(repo, orch, "api-v2")
    assert found["N4"] == "SKIPPED" and found["N4h"] == "SKIPPED" and found["N5"] == "ACCEPTED"
    assert [(e["edge"], e["taken"]) for e in kinds(repo, "edge_eval")] == [("e4", False)]
    # a skipped target's discovery is never attempted, and N4h was never enabled
    assert [d["node"] for d in kinds(repo, "discovery")] == ["N1"]
    assert "N4h" not in [x["node"] for x in kinds(repo, "enable")]
    assert "e6" not in {g["edge"] for g in kinds(repo, "guardrail")}
