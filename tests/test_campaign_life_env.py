"""Environment errors and queued nodes are not attempts; attempt messages are right (DESIGN §14.5)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.engine_helpers import campaign_repo, journal, journal_text

TOOL = r"""#!/bin/sh
set -eu
d=$(echo "$ORCH_NODE" | tr A-Z a-z)
mkdir -p "$d" && echo "$ORCH_NODE" > "$d/one.txt" && git add -A && git commit -qm "$ORCH_NODE"
"""
DAG = """\
topic: env
workers: {sh: "orch-life-tool"}
defaults: {max_attempts: 1, timeout: 60, sandbox: none}
nodes:
  - {id: A, title: alpha, depends_on: [], file_surface: [a/], discipline: sh}
  - {id: B, title: bravo, depends_on: [], file_surface: [b/], discipline: sh}
  - {id: C, title: charlie, depends_on: [], file_surface: [c/], discipline: sh}
"""
ORCH = [sys.executable, "-c", "import sys; from orchestrate.cli.main import main; sys.exit(main())"]


def _node_branches(repo, topic="env"):
    return set(repo.git("for-each-ref", "--format=%(refname:short)", f"refs/heads/node/{topic}/").split())


def _status(repo, orch, topic="env"):
    shown = json.loads(orch("status", "--json", "--topic", topic, cwd=repo).out)
    return {n["id"]: (n["status"], n["attempt"]) for n in shown["nodes"]}


def _seam(repo, topic="env"):
    return [e["context"] for e in journal(repo, topic) if e["kind"] == "seam"][-1]


@pytest.mark.parametrize("schedule", ["eager", "layered"])
def test_a_worker_command_not_found_is_no_attempt_and_runs_as_attempt_1_once_fixed(tmp_path, orch, monkeypatch,
                                                                                   schedule):
    repo = campaign_repo(tmp_path, DAG, "#!/bin/sh\n")
    r = orch("run", "--no-interactive", "--jobs", "1", "--schedule", schedule, cwd=repo)
    assert r.rc == 75, r.err
    spawned = [e for e in journal(repo, "env") if e["kind"] == "result" and e["context"].get("effect") == "worker-spawn"]
    assert len(spawned) == 1, spawned  # the next ones would meet the same environment: none starts
    assert "REWORK" not in r.out and "attempt 2" not in r.out
    seam = _seam(repo)
    assert (seam["seam"], seam["case"]) == ("realignment", "environment")
    assert "`orch-life-tool` was not found (exit 127)" in seam["reason"] and "not found" in seam["reason"]
    assert all(attempt == 0 for _, attempt in _status(repo, orch).values())
    assert _node_branches(repo) == set()  # no branch for an attempt that never was
    shown = orch("status", "--topic", "env", cwd=repo).out
    assert "not found (exit 127)" in shown, shown
    tool = tmp_path / "bin" / "orch-life-tool"
    tool.parent.mkdir()
    tool.write_text(TOOL)
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")
    assert orch("decide", "realignment", "rework", "--note", "installed the tool", cwd=repo).rc == 0
    done = orch("resume", "--no-interactive", "--topic", "env", cwd=repo)
    assert done.rc == 75, done.err  # at final acceptance
    assert _status(repo, orch) == {n: ("ACCEPTED", 1) for n in "ABC"}
    assert _node_branches(repo) == {"node/env/A", "node/env/B", "node/env/C"}
    starts = [e["context"]["attempt"] for e in journal(repo, "env")
              if e["kind"] == "result" and e["context"].get("effect") == "worker-spawn"]
    assert starts.count(1) == 3 + len(starts) - 3 and set(starts) == {1}


def test_an_agent_that_is_not_logged_in_stops_the_node_with_its_line(tmp_path, orch):
    worker = "#!/bin/sh\necho 'working...'\necho 'orchestrate: claude is not logged in; run `claude login`'\nexit 69\n"
    repo = campaign_repo(tmp_path, DAG.replace('"orch-life-tool"', '"./work.sh"'), worker)
    assert orch("run", "--no-interactive", cwd=repo).rc == 75
    seam = _seam(repo)
    assert seam["case"] == "environment"
    assert "`./work.sh` cannot work here (exit 69): orchestrate: claude is not logged in" in seam["reason"]
    assert {a for _, a in _status(repo, orch).values()} == {0} and _node_branches(repo) == set()


def test_a_worker_that_exits_69_without_saying_why_is_an_ordinary_failure(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG.replace('"orch-life-tool"', '"./work.sh"'), "#!/bin/sh\nexit 69\n")
    assert orch("run", "--no-interactive", cwd=repo).rc == 75
    assert _seam(repo)["case"] == "attempts-spent"


def test_an_evaluator_or_check_that_cannot_start_is_no_attempt(tmp_path, orch):
    one = DAG.replace('"orch-life-tool"', '"./work.sh"').split("  - {id: B")[0]
    dag = one.replace("discipline: sh}", 'discipline: sh, evaluators: [{name: unit, run: "no-such-evaluator --x"}]}')
    repo = campaign_repo(tmp_path, dag, TOOL)
    assert orch("run", "--no-interactive", cwd=repo).rc == 75
    seam = _seam(repo)
    assert seam["case"] == "environment"
    assert "evaluator(s) `unit`" in seam["reason"] and "could not start" in seam["reason"]
    assert "evaluators-1.log" in seam["reason"]
    assert _status(repo, orch)["A"] == ("PENDING", 0) and _node_branches(repo) == set()

    checked = one + "checks: [{name: lint, run: no-such-linter}]\n"
    repo2 = campaign_repo(tmp_path / "two", checked.replace("topic: env", "topic: envc"), TOOL)
    assert orch("run", "--no-interactive", cwd=repo2).rc == 75
    seam = _seam(repo2, "envc")
    assert seam["case"] == "environment" and "campaign check(s) `lint`" in seam["reason"]
    assert "checks-1.log" in seam["reason"]
    assert _status(repo2, orch, "envc")["A"] == ("PENDING", 0)


SLOW = r"""#!/bin/sh
set -eu
d=$(echo "$ORCH_NODE" | tr A-Z a-z)
echo "$ORCH_NODE $ORCH_ATTEMPT" >> "$MARKS/started"
[ -e "$MARKS/fast" ] || sleep 30
mkdir -p "$d" && echo "$ORCH_NODE" > "$d/one.txt" && git add -A && git commit -qm "$ORCH_NODE"
"""


def _wait_for(path, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists() and path.read_text().strip():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


def _wait_for_await(repo, timeout=30.0):
    """Until DISPATCH is recorded as done: the queued nodes are queued, not being set up."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if '"from":"DISPATCH"' in journal_text(repo, "env"):
            return
        time.sleep(0.05)
    raise AssertionError("DISPATCH never ended")


@pytest.mark.parametrize("how", ["ctrl-c", "kill-9"])
def test_queued_nodes_are_not_attempts_after_an_interrupt(tmp_path, orch, monkeypatch, how):
    marks = tmp_path / "marks"
    marks.mkdir()
    # layered: the layer's nodes are all dispatched at once and wait for the one --jobs slot (eager starts
    # a node only when a slot is free, so nothing would be queued; so does layered for workers that run
    # alone, hence `unsandboxed: parallel`)
    repo = campaign_repo(tmp_path, DAG.replace('"orch-life-tool"', '"./work.sh"')
                         .replace("sandbox: none}", "sandbox: none, unsandboxed: parallel}"), SLOW)
    env = {**os.environ, "MARKS": str(marks)}
    runner = subprocess.Popen(ORCH + ["run", "--no-interactive", "--jobs", "1", "--schedule", "layered"], cwd=repo,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    _wait_for(marks / "started")
    _wait_for_await(repo)
    runner.send_signal(signal.SIGINT if how == "ctrl-c" else signal.SIGKILL)
    out, _ = runner.communicate(timeout=60)
    if how == "ctrl-c":
        assert runner.returncode == 130, out
        assert "B: queued attempt 1" in out and "C: queued attempt 1" in out
        assert "B: started" not in out
        assert _status(repo, orch)["B"] == ("PENDING", 0)  # says so at once, not "worker running"
    else:  # the dead runner's record: B was queued, never started
        row = next(ln for ln in orch("status", "--topic", "env", cwd=repo).out.splitlines() if " B " in ln)
        assert "queued for a --jobs slot when its runner stopped" in row and "worker running" not in row, row
    (marks / "fast").touch()
    monkeypatch.setenv("MARKS", str(marks))
    done = orch("resume", "--no-interactive", "--topic", "env", cwd=repo)
    assert done.rc == 75, done.out + done.err
    shown = _status(repo, orch)
    assert shown["B"] == shown["C"] == ("ACCEPTED", 1)  # max_attempts: 1 was never exceeded
    assert not any("+" in b for b in _node_branches(repo) if not b.startswith("node/env/A"))
    started = (marks / "started").read_text().split("\n")
    assert "B 1" in started and "C 1" in started and "B 2" not in started and "C 2" not in started


ESCALATING = """\
topic: msg
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1, timeout: 60, sandbox: none}
nodes:
  - {id: B, title: bravo, depends_on: [], file_surface: [b/], discipline: sh,
     evaluators: [{name: never, run: "echo the answer is wrong; false"}]}
"""


def test_attempt_messages_after_a_rework_are_true_in_the_campaign_output(tmp_path, orch):
    repo = campaign_repo(tmp_path, ESCALATING, TOOL)
    first = orch("run", "--no-interactive", cwd=repo)
    assert "B: ESCALATE (attempt 1 of 1): FAIL: 1 of 1 evaluator(s) failed: never (rc 1: the answer is wrong)" \
        in first.out
    assert "evaluators-1.log" in first.out  # the failure line names the evaluator and its log
    assert _seam(repo, "msg")["reason"] == "attempts spent (1 of 1); the last failure:"
    assert orch("decide", "realignment", "rework", "--note", "try again", cwd=repo).rc == 0
    again = orch("resume", "--no-interactive", "--topic", "msg", cwd=repo)
    assert "ESCALATE (attempt 2; failure 1 of 1 allowed since the last rework)" in again.out
    assert "attempt 2 of 1" not in again.out
    assert _seam(repo, "msg")["reason"] == "attempts spent (1 of 1 since the last rework, 2 in all); the last failure:"


def test_a_worker_script_that_is_not_executable_is_no_attempt(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG.replace('"orch-life-tool"', '"./plain.sh"'), TOOL, {"plain.sh": TOOL})
    assert orch("run", "--no-interactive", cwd=repo).rc == 75
    seam = _seam(repo)
    assert seam["case"] == "environment" and "`./plain.sh` could not be executed (exit 126)" in seam["reason"]
    assert "Permission denied" in seam["reason"]
    assert {a for _, a in _status(repo, orch).values()} == {0} and _node_branches(repo) == set()


def test_a_worker_that_cannot_be_spawned_at_all_is_reported_as_the_environments(tmp_path):
    from orchestrate.workers.local import LocalExecutor, WorkRequest
    from orchestrate.workers.returns import environment_error
    ex = LocalExecutor(1)
    log = tmp_path / "runs" / "attempt-1.log"
    ex.start(WorkRequest("A", 1, "./work.sh", tmp_path / "no-such-worktree", {}, log, tmp_path / "runs" / "r.json",
                         30.0))
    assert ex.running() == [("A", 0.0)]  # AWAIT still collects it
    [outcome] = ex.poll()
    assert (outcome.node, outcome.rc) == ("A", 127)
    why = environment_error(outcome.rc, outcome.log)
    assert why.startswith("the worker command `./work.sh` was not found (exit 127): orchestrate: cannot start")
