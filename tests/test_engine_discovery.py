"""Discovery in a run (seeds-other §3.4, D1, D3, D4, D7): the worker that runs a node is chosen among
installed worker plugins by capability when the node is crossed, recorded with every candidate, never
chosen again; no match enables the declared on-demand fallback, or halts naming what is installed."""
from __future__ import annotations

import shutil

from orchestrate.dag.model import AGENT_PRESETS
from tests.engine_helpers import campaign_repo, journal, statuses
from tests.plugin_site import worker

MIGRATE = """def command(self, node_id, config):
    return "mkdir -p migrations && echo %s > migrations/" + node_id.lower() + ".sql\""""

WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  N4h) mkdir -p migrations; echo by-hand > migrations/n4h.sql ;;
  *) echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr 'A-Z' 'a-z').txt" ;;
esac
"""

DAG = """\
topic: disc
workers: {sh: "./work.sh"}
gates:
  stop: {plugin: command, run: "exit 1"}
nodes:
  - {id: N2, file_surface: [n2.txt], discipline: sh}
  - {id: N4, file_surface: [migrations/n4.sql], discipline: core}
  - {id: N4h, activation: on_demand, depends_on: [N2], file_surface: [migrations/n4h.sql], discipline: sh}
  - {id: N4z, file_surface: [n4z.txt], discipline: sh}
  - {id: N5, join: any, file_surface: [n5.txt], discipline: sh}
edges:
  - {id: e5, from: N2, to: N4, predicate: TRIGGERS, type: discovery,
     discover: {kind: worker, capabilities: [python, alembic]}, fallback: N4h}
  - {id: e6, from: N4, to: N5, predicate: TRIGGERS}
  - {id: e6h, from: N4h, to: N5, predicate: TRIGGERS}
  - {id: e7, from: N2, to: N4z, predicate: TRIGGERS}
"""


def install(site, *which: str) -> None:
    if "py-pro" in which:
        site.add("orchestrate-py-pro", "1.4.0", worker("py-pro", body=MIGRATE % "by-py-pro", version="1.4.0",
                                                       capabilities=["python", "alembic"], priority=5), call=False)
    if "python-coder" in which:
        caps = ["python", "pytest", "alembic"] if "py-pro" in which else ["python", "pytest"]
        site.add("orchestrate-coder", "2.0.0", worker("python-coder", body=MIGRATE % "by-coder", version="2.0.0",
                                                      capabilities=caps), call=False)


def test_D1_the_highest_priority_match_runs_the_node_and_every_candidate_is_recorded(tmp_path, site, orch):
    install(site, "py-pro", "python-coder")
    repo = campaign_repo(tmp_path, DAG, WORKER)
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 75, result.out + result.err
    found = [e for e in journal(repo, "disc") if e["kind"] == "discovery"]
    assert len(found) == 1 and found[0]["context"]["chosen"]["name"] == "py-pro"
    # the built-in agent presets are worker plugins too: candidates that lack the capabilities
    assert [(c["name"], c["excluded"]) for c in found[0]["context"]["candidates"]
            if c["name"] not in AGENT_PRESETS] == [("py-pro", ""), ("python-coder", "lower priority than py-pro (5)")]
    assert repo.git("show", "campaign/disc:migrations/n4.sql").strip() == "by-py-pro"
    assert statuses(repo, orch, "disc") == {"N2": "ACCEPTED", "N4": "ACCEPTED", "N4h": "SKIPPED", "N4z": "ACCEPTED",
                                    "N5": "ACCEPTED"}


def test_D3_no_match_skips_the_node_and_enables_its_fallback(tmp_path, site, orch):
    install(site, "python-coder")
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert orch("run", "--quiet", cwd=repo).rc == 75
    assert statuses(repo, orch, "disc") == {"N2": "ACCEPTED", "N4": "SKIPPED", "N4h": "ACCEPTED", "N4z": "ACCEPTED",
                                    "N5": "ACCEPTED"}
    status = orch("status", "--topic", "disc", cwd=repo).out
    line = next(ln for ln in status.splitlines() if " N4 " in ln)
    assert line.endswith("SKIPPED     attempt 0  <- skipped: no worker provides [python, alembic] (edge e5); "
                         "fallback N4h enabled")
    assert repo.git("show", "campaign/disc:migrations/n4h.sql").strip() == "by-hand"


def test_D4_no_match_and_no_fallback_halts_naming_what_is_installed(tmp_path, site, orch):
    install(site, "python-coder")
    dag = DAG.replace(", fallback: N4h}", "}").replace(
        "  - {id: N4h, activation: on_demand, depends_on: [N2], file_surface: [migrations/n4h.sql], discipline: sh}\n",
        "").replace("  - {id: e6h, from: N4h, to: N5, predicate: TRIGGERS}\n", "")
    repo = campaign_repo(tmp_path, dag, WORKER)
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 1
    said = result.out + result.err
    assert "no installed worker provides [python, alembic] for N4 (edge e5) and no fallback is declared; " in said
    assert "python-coder (python, pytest)" in said and "claude-code (agent, agent:claude-code)" in said
    assert statuses(repo, orch, "disc")["N4"] == "PENDING"


def test_D7_a_recorded_worker_that_was_uninstalled_halts_before_dispatch(tmp_path, site, orch):
    install(site, "py-pro")
    dag = DAG.replace("{id: e7, from: N2, to: N4z, predicate: TRIGGERS}",
                      "{id: e7, from: N2, to: N4z, predicate: TRIGGERS, guardrails: {output: [stop], on_violation: block}}")
    repo = campaign_repo(tmp_path, dag, WORKER)
    assert orch("run", "--quiet", cwd=repo).rc == 75  # N4 resolved, then the layer stops at N4z's guardrail
    assert [e["context"]["chosen"]["name"] for e in journal(repo, "disc") if e["kind"] == "discovery"] == ["py-pro"]
    for info in site.root.glob("orchestrate_py_pro-*.dist-info"):
        shutil.rmtree(info)
    assert orch("skip", "--edge", "e7", cwd=repo).rc == 0
    result = orch("resume", "--quiet", "--topic", "disc", cwd=repo)
    assert result.rc == 1
    assert ("N4 was assigned worker py-pro 1.4.0, which is no longer installed; reinstall it or run "
            "'orchestrate realign --rediscover N4'" in result.out + result.err)
    assert not any(e["kind"] == "intent" and e["context"].get("node") == "N4" for e in journal(repo, "disc"))
    assert len([e for e in journal(repo, "disc") if e["kind"] == "discovery"]) == 1  # never resolved again


def test_D7_realign_rediscover_sets_a_vanished_worker_aside_and_resume_chooses_again(tmp_path, site, orch):
    test_D7_a_recorded_worker_that_was_uninstalled_halts_before_dispatch(tmp_path, site, orch)
    repo = tmp_path / "repo"
    assert orch("realign", "--rediscover", "N2", cwd=repo).rc == 2  # nothing recorded for it
    done = orch("realign", "--rediscover", "N4", "--note", "py-pro was retired", cwd=repo)
    assert done.rc == 0, done.out + done.err
    entry = [e for e in journal(repo, "disc") if e["kind"] == "rediscover"][0]
    assert entry["source_entity"] == "human:test@example.com" and entry["context"]["dropped"]["name"] == "py-pro"
    result = orch("resume", "--quiet", "--topic", "disc", cwd=repo)
    assert result.rc == 75, result.out + result.err
    resolutions = [e["context"]["chosen"] for e in journal(repo, "disc") if e["kind"] == "discovery"]
    assert resolutions[0]["name"] == "py-pro" and resolutions[1] is None  # nothing installed now: the fallback
    assert statuses(repo, orch, "disc")["N4"] == "SKIPPED" and statuses(repo, orch, "disc")["N4h"] == "ACCEPTED"
    assert orch("realign", "--rediscover", "N4", cwd=repo).rc == 2  # settled now: no resolution to set aside


def test_X3_a_worker_of_an_older_protocol_runs_the_node_with_a_warning(tmp_path, site, orch):
    site.add("orchestrate-py-pro", "1.4.0", worker("py-pro", body=MIGRATE % "by-py-pro", version="1.4.0",
                                                   capabilities=["python", "alembic"], protocol_version=0), call=False)
    repo = campaign_repo(tmp_path, DAG, WORKER)
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 75, result.out + result.err
    warning = ("warning: worker plugin 'py-pro' uses protocol version 0 (current: 1); loading it for backward "
               "compatibility")
    assert (result.out + result.err).count(warning) == 1
    assert repo.git("show", "campaign/disc:migrations/n4.sql").strip() == "by-py-pro"
