"""Resume after a dead runner, after each kind of halt and after each seam answer: what the dead runner
left running is stopped first, and no path ends in exit 70 or a traceback."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.engine_helpers import campaign_repo, journal, statuses

ORCH = [sys.executable, "-c", "import sys; from orchestrate.cli.main import main; sys.exit(main())"]
TOOL = r"""#!/bin/sh
set -eu
d=$(echo "$ORCH_NODE" | tr A-Z a-z)
mkdir -p "$d" && echo "$ORCH_NODE" > "$d/one.txt" && git add -A && git commit -qm "$ORCH_NODE"
"""


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"  # killed, not yet reaped by its adopter
    except FileNotFoundError:
        return True


def _wait_for(path, timeout=30.0) -> str:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


SLOW_EVALUATOR = """\
topic: dead
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1, timeout: 120, sandbox: none}
nodes:
  - {id: A, title: alpha, depends_on: [], file_surface: [a/], discipline: sh,
     evaluators: [{name: slow, run: "test -e \\"$MARKS/fast\\" && exit 0; echo $$ > \\"$MARKS/eval.pid\\"; exec sleep 90"}]}
"""


def test_resume_stops_the_evaluator_a_killed_runner_left_running(tmp_path, orch, monkeypatch):
    marks = tmp_path / "marks"
    marks.mkdir()
    repo = campaign_repo(tmp_path, SLOW_EVALUATOR, TOOL)
    runner = subprocess.Popen(ORCH + ["run", "--no-interactive"], cwd=repo, env={**os.environ, "MARKS": str(marks)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid = int(_wait_for(marks / "eval.pid"))
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    assert not _gone(pid)  # the evaluator outlived its runner
    (marks / "fast").touch()
    monkeypatch.setenv("MARKS", str(marks))
    r = orch("resume", "--no-interactive", "--topic", "dead", cwd=repo)
    assert r.rc == 75, r.out + r.err
    said = next(line for line in (r.err + r.out).splitlines() if f"the dead runner (pid {runner.pid}) left running:" in line)
    assert str(pid) in said.split(": ")[-1].split()  # with the evaluator's own children, in whatever order
    assert _gone(pid)
    repairs = [e["context"] for e in journal(repo, "dead") if e["kind"] == "repair"]
    assert any(x["repair"] == "leftover-kill" and pid in x["pids"] for x in repairs)
    assert statuses(repo, orch, "dead") == {"A": "ACCEPTED"}


LIFE = """\
topic: life
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1, timeout: 60}
nodes:
  - {id: A, title: alpha, depends_on: [], file_surface: [a/], discipline: sh}
  - {id: B, title: bravo, depends_on: [], file_surface: [b/], discipline: sh,
     evaluators: [{name: has-ok, run: "test -e ok"}]}
"""


def _clean(r):
    assert "Traceback" not in r.err + r.out and "internal error" not in r.err, r.err
    assert r.rc != 70
    return r


def _resume(orch, repo, topic="life"):
    return _clean(orch("resume", "--no-interactive", "--topic", topic, cwd=repo))


def test_resume_after_an_adherence_halt_says_why_until_fixed_then_goes_on(tmp_path, orch):
    repo = campaign_repo(tmp_path, LIFE, TOOL)
    assert orch("run", "--no-interactive", cwd=repo).rc == 75
    tip = repo.git("rev-parse", "campaign/life")
    integration = tmp_path / "forger"  # the campaign head, checked out (detached), where a commit is forged
    repo.git("worktree", "add", "-q", "--detach", str(integration), "campaign/life")
    (integration / "x.txt").write_text("not a node\n")
    repo.git("-C", str(integration), "add", "x.txt")
    repo.git("-C", str(integration), "commit", "-qm", "a commit no node made")
    repo.git("update-ref", "refs/heads/campaign/life", repo.git("-C", str(integration), "rev-parse", "HEAD"), tip)
    repo.commit("the evaluator's file", {"ok": "1\n"})
    assert orch("decide", "realignment", "rework", "--note", "again", cwd=repo).rc == 0
    for _ in range(2):
        halted = _resume(orch, repo)
        assert halted.rc == 1 and "breaks adherence" in halted.out + halted.err
    repo.git("update-ref", "refs/heads/campaign/life", tip)
    assert _resume(orch, repo).rc in (1, 75)


def test_resume_after_an_invalid_amendment_halts_then_reopens_the_seam_once_fixed(tmp_path, orch):
    repo = campaign_repo(tmp_path, LIFE, TOOL)
    assert orch("run", "--no-interactive", cwd=repo).rc == 75
    copy = repo / ".ledger" / "state" / "life" / "dag.yaml"
    good = copy.read_text()
    copy.write_text(good.replace("depends_on: [], file_surface: [b/]", "depends_on: [Z], file_surface: [b/]"))
    assert orch("decide", "realignment", "rework", "--note", "again", cwd=repo).rc == 0
    opened = _resume(orch, repo)
    assert opened.rc == 75
    seam = [e["context"] for e in journal(repo, "life") if e["kind"] == "seam"][-1]
    assert seam["seam"] == "dag-amendment" and seam["show"][0] == "the edited DAG is invalid:"
    assert orch("decide", "dag-amendment", "accept", "--note", "oops", cwd=repo).rc == 0
    halted = _resume(orch, repo)
    assert halted.rc == 1 and "the amended DAG is invalid" in halted.out + halted.err
    copy.write_text(good.replace("file_surface: [b/]", "file_surface: [b/, ok]"))
    again = _resume(orch, repo)
    assert again.rc == 75
    seam = [e["context"] for e in journal(repo, "life") if e["kind"] == "seam"][-1]
    assert seam["seam"] == "dag-amendment" and seam["show"] == ['node B: file_surface ["b/"] -> ["b/", "ok"]']
    assert orch("decide", "dag-amendment", "halt", "--note", "enough", cwd=repo).rc == 0
    applied = _resume(orch, repo)
    assert applied.rc == 1 and "chose to halt at seam dag-amendment: enough" in applied.out
    ended = _resume(orch, repo)
    assert ended.rc == 1 and "campaign life is halted" in ended.err


RAILS = """\
topic: rails
workers: {sh: "./work.sh"}
gates:
  smoke: {plugin: command, run: "exit 2"}
nodes:
  - {id: A, title: alpha, depends_on: [], file_surface: [a/], discipline: sh}
  - {id: B, title: bravo, depends_on: [], file_surface: [b/], discipline: sh}
edges:
  - {id: e1, from: A, to: B, predicate: TRIGGERS, guardrails: {output: [smoke], on_violation: block}}
"""


def test_resume_after_a_guardrail_halt_and_after_each_guardrail_answer(tmp_path, orch):
    repo = campaign_repo(tmp_path, RAILS, TOOL)
    crashed = _clean(orch("run", "--no-interactive", cwd=repo))
    assert crashed.rc == 1 and "guardrail gate smoke crashed" in crashed.out + crashed.err
    assert _resume(orch, repo, "rails").rc == 1  # the same halt, said again
    copy = repo / ".ledger" / "state" / "rails" / "dag.yaml"
    copy.write_text(copy.read_text().replace('run: "exit 2"', 'run: "exit 1"'))  # now it blocks
    assert _resume(orch, repo, "rails").rc == 75  # the edit is approved first
    assert orch("decide", "dag-amendment", "accept", "--note", "fixed the gate", cwd=repo).rc == 0
    blocked = _resume(orch, repo, "rails")
    assert blocked.rc == 75 and "guardrail" in blocked.out
    assert orch("skip", "--edge", "e1", "--note", "not now", cwd=repo).rc == 0
    done = _resume(orch, repo, "rails")
    assert done.rc == 75 and statuses(repo, orch, "rails") == {"A": "ACCEPTED", "B": "SKIPPED"}


@pytest.mark.parametrize("answer", ["accept", "halt"])
def test_resume_after_each_amendment_answer(tmp_path, orch, answer):
    repo = campaign_repo(tmp_path, LIFE, TOOL)
    assert orch("run", "--no-interactive", cwd=repo).rc == 75
    copy = repo / ".ledger" / "state" / "life" / "dag.yaml"
    copy.write_text(copy.read_text().replace("title: bravo", "title: bravo-renamed"))
    assert orch("decide", "realignment", "skip", "--note", "later", cwd=repo).rc == 0
    assert _resume(orch, repo).rc == 75
    assert orch("decide", "dag-amendment", answer, "--note", "n", cwd=repo).rc == 0
    for _ in range(2):
        r = _resume(orch, repo)
        assert r.rc == (75 if answer == "accept" else 1)
