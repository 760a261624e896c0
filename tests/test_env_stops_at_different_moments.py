"""Two nodes the environment stops at different moments (the second after the first one's environment seam
opened, the eager run going on past it) end at a seam, exit 75, never an internal error (exit 70): one fix
of the environment answers them both, as README's "Environment errors are not attempts" promises, so the
later one waits for that seam's answer instead of asking again; a resume pauses there too; a rework starts
both again, and a skip of the first asks about the second on its own. The second worker returns only once
the first one's seam is in the journal, so the order is the journal's, not the clock's."""
from __future__ import annotations

import json
import os
from types import SimpleNamespace

from tests.engine_helpers import campaign_repo, journal

TOOL = r"""#!/bin/sh
set -eu
d=$(echo "$ORCH_NODE" | tr A-Z a-z)
mkdir -p "$d" && echo "$ORCH_NODE" > "$d/one.txt" && git add -A && git commit -qm "$ORCH_NODE"
"""
# sandbox none and unsandboxed parallel: both workers run at once, and E's can read the journal
DAG = """\
topic: env2
defaults: {{max_attempts: 1, timeout: 60, sandbox: none, unsandboxed: parallel}}
nodes:
  - {{id: D, title: delta, file_surface: [d/], worker: 'orch-env2-tool'}}
  - {{id: E, title: echo, file_surface: [e/], worker: 'until grep -rqs "\\"kind\\":\\"seam\\"" {state}; do sleep 0.05; done; orch-env2-tool'}}
"""


def _repo(tmp_path):
    state = tmp_path / "repo" / ".ledger" / "state" / "env2"
    return campaign_repo(tmp_path, DAG.format(state=state), "#!/bin/sh\n")


def _seams(repo) -> list[dict]:
    return [e["context"] for e in journal(repo, "env2") if e["kind"] == "seam"]


def _status(repo, orch) -> dict:
    shown = json.loads(orch("status", "--json", "--topic", "env2", cwd=repo).out)
    return {n["id"]: (n["status"], n["attempt"]) for n in shown["nodes"]}


def _install_tool(tmp_path, monkeypatch) -> None:
    tool = tmp_path / "bin" / "orch-env2-tool"
    tool.parent.mkdir()
    tool.write_text(TOOL)
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")


def _stopped_apart(tmp_path, orch):
    """Run until both are stopped: D first, its seam open, then E."""
    repo = _repo(tmp_path)
    r = orch("run", "--no-interactive", "--jobs", "2", cwd=repo)
    assert r.rc == 75, r.out + r.err
    assert "Traceback" not in r.err and "internal error" not in r.err, r.err
    stops = [e["context"]["node"] for e in journal(repo, "env2")
             if e["kind"] == "node" and e["context"].get("env_error")]
    assert stops == ["D", "E"], stops  # apart: E was stopped after D's seam opened
    assert [(s["node"], s["case"]) for s in _seams(repo)] == [("D", "environment")]
    assert "E: waits for the answer to seam realignment for D" in r.out, r.out
    return repo


def test_a_node_stopped_after_an_environment_seam_opened_waits_for_its_answer_and_rework_starts_both(
        tmp_path, orch, monkeypatch):
    repo = _stopped_apart(tmp_path, orch)
    assert _status(repo, orch) == {"D": ("PENDING", 0), "E": ("PENDING", 0)}  # neither stop is an attempt
    again = orch("resume", "--no-interactive", "--topic", "env2", cwd=repo)
    assert again.rc == 75 and "paused at seam realignment for node D" in again.out, again.out + again.err
    assert len(_seams(repo)) == 1  # asked once, not once a resume
    _install_tool(tmp_path, monkeypatch)
    assert orch("decide", "realignment", "rework", "--note", "installed the tool", cwd=repo).rc == 0
    done = orch("resume", "--no-interactive", "--topic", "env2", cwd=repo)
    assert done.rc == 75 and "final-acceptance" in done.out, done.out + done.err
    assert _status(repo, orch) == {"D": ("ACCEPTED", 1), "E": ("ACCEPTED", 1)}


def test_skipping_the_first_asks_about_the_second_without_naming_the_skipped_one(tmp_path, orch, monkeypatch):
    repo = _stopped_apart(tmp_path, orch)
    assert orch("decide", "realignment", "skip", "--note", "not needed", cwd=repo).rc == 0
    asked = orch("resume", "--no-interactive", "--topic", "env2", cwd=repo)
    assert asked.rc == 75 and "paused at seam realignment for node E" in asked.out, asked.out + asked.err
    seam = _seams(repo)[-1]
    assert (seam["node"], seam["case"]) == ("E", "environment")
    assert "also stopped so" not in "\n".join(seam["show"]), seam["show"]  # D was skipped: no rework starts it
    _install_tool(tmp_path, monkeypatch)
    assert orch("decide", "realignment", "rework", "--note", "installed the tool", cwd=repo).rc == 0
    done = orch("resume", "--no-interactive", "--topic", "env2", cwd=repo)
    assert done.rc == 75 and "final-acceptance" in done.out, done.out + done.err
    assert _status(repo, orch) == {"D": ("SKIPPED", 0), "E": ("ACCEPTED", 1)}


def test_an_environment_answer_waiting_to_be_applied_holds_a_node_stopped_since(tmp_path):
    """`decide` answered D's environment seam while no runner applied it yet (the seam is closed, the answer
    waits): E, stopped by the same environment, is what that answer's rework starts again, so REALIGN asks
    nothing about it (a seam of its own would still ask once E ran again) and SEAM applies the answer."""
    from orchestrate.dag.load import load_dag
    from orchestrate.engine import schedule
    from orchestrate.engine.handlers import realign
    from orchestrate.recorder.campaign import Campaign, apply
    dag_file = tmp_path / "dag.yaml"
    dag_file.write_text("topic: t\nnodes:\n  - {id: D, title: d, file_surface: [d/], worker: 'true', brief: d}\n"
                        "  - {id: E, title: e, file_surface: [e/], worker: 'true', brief: e}\n")
    c = Campaign(layers=[["D", "E"]], schedule="eager")
    apply(c, {"kind": "node", "id": "t:1", "context": {"node": "D", "status": "PENDING", "env_error": "no tool"}})
    apply(c, {"kind": "seam", "id": "t:2", "context": {"seam": "realignment", "case": "environment", "node": "D",
                                                        "choices": ["rework", "skip", "halt"]}})
    apply(c, {"kind": "decision", "id": "t:3", "context": {"seam": "realignment", "node": "D", "choice": "rework"}})
    apply(c, {"kind": "node", "id": "t:4", "context": {"node": "E", "status": "PENDING", "env_error": "no tool"}})
    ctx = SimpleNamespace(campaign=c, dag=load_dag(dag_file), routed=set())
    assert c.seam is None and c.decision["case"] == "environment"
    assert schedule.held(ctx) == {"D", "E"}
    assert realign._why(ctx) is None
