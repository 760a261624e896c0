"""README claims about seams and the watched git dir that no other test exercised (rv50):

- the terminal prompt: "the default never accepts, and Ctrl-D or Ctrl-C pauses" (Ctrl-D is in test_seams.py;
  here Ctrl-C, and an empty answer, which takes the default);
- "The shared git dir is watched": `.git/shallow`, which would have every git in your checkout see a history cut
  where a worker chose, is put back whether the worker created it or changed yours (both sandbox modes);
- "rework" at a stale premise "also updates the premise in the DAG": the tripwire's `expect` in the campaign's
  DAG becomes what holds now, and the node then runs.
"""
from __future__ import annotations

import json
import os
import sys

import pytest
import yaml

from tests import engine_helpers
from tests.engine_helpers import journal, journal_text, statuses
from tests.helpers import RepoDir

pexpect = pytest.importorskip("pexpect")


# --- the terminal prompt -------------------------------------------------------------------------------

ONE = """\
topic: t
mode: interactive
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1, sandbox: none}
nodes:
  - {id: N1, file_surface: [n1.txt], discipline: sh}
"""
OK_WORKER = "#!/bin/sh\nset -eu\necho N1 > n1.txt && git add -A && git commit -qm N1\n"


def _spawn(repo, *args):
    """`orchestrate ARGS` on a pseudo-terminal (CI unset), as a person runs it."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    return pexpect.spawn(sys.executable, ["-m", "orchestrate", *args], cwd=str(repo), env=env,
                         encoding="utf-8", timeout=60)


def _status(repo) -> dict:
    return json.loads(engine_helpers.cli(repo, "status", "--json").stdout)


@pytest.mark.parametrize("answer", ["ctrl-c", "enter"])
def test_ctrl_c_or_an_empty_answer_at_the_prompt_pauses_and_accepts_nothing(tmp_path, answer):
    """README: on a terminal "the default never accepts, and Ctrl-D or Ctrl-C pauses": Ctrl-C at the
    final-acceptance prompt is a pause (75), not an interrupt (130); Enter takes the default, which is a pause
    too. Either way no decision is journalled and the campaign is not accepted."""
    repo = engine_helpers.campaign_repo(tmp_path, ONE, OK_WORKER)
    child = _spawn(repo, "run")
    child.expect(r"decide \(accept, reject, pause\)[^:\n]*: ")  # whatever default it shows: what it does counts
    if answer == "ctrl-c":
        child.sendintr()
    else:
        child.sendline("")
    asked_for_a_note = child.expect([pexpect.EOF, r"note \(optional\)"]) == 1  # a choice was taken
    if asked_for_a_note:
        child.terminate(force=True)
    assert not asked_for_a_note, child.before
    child.close()
    assert child.exitstatus == 75, child.before
    after = _status(repo)
    assert after["state"] == "PAUSE" and not after["accepted"]
    assert not any(json.loads(x)["kind"] == "decision" for x in journal_text(repo, "t").splitlines())
    # the seam is still open: the person can answer it later
    assert engine_helpers.cli(repo, "decide", "final-acceptance", "accept", "--topic", "t", "--note",
                              "checked").returncode == 0


# --- .git/shallow is watched ---------------------------------------------------------------------------

HOSTILE = """\
topic: hostile
mode: autonomous
defaults: {max_attempts: 1, sandbox: MODE}
workers: {sh: "./work.sh"}
nodes:
  - {id: A, file_surface: [a.txt], discipline: sh}
"""
# The worker writes the shared git dir's `shallow` (its own head: every git in your checkout would then stop
# the history there), and otherwise does its work well.
SHALLOW_WORKER = ('#!/bin/sh\necho a > a.txt\n'
                  'git rev-parse HEAD > "$(git rev-parse --path-format=absolute --git-common-dir)/shallow"\n')


@pytest.fixture(params=["bwrap", "none"])
def mode(request):
    if request.param == "bwrap":
        from orchestrate.workers import sandbox
        if (why := sandbox.probe()) is not None:
            pytest.skip(f"no sandbox here: {why}")
    return request.param


@pytest.mark.parametrize("yours", [False, True], ids=["created", "changed"])
def test_a_shallow_file_a_worker_writes_in_the_shared_git_dir_fails_the_node_and_is_put_back(
        tmp_path, orch, mode, yours):
    """README: `.git/shallow` is among the watched files of the shared git dir. Without the sandbox the
    write fails the node's attempt naming it, and the file is put back as it was: removed when the worker
    created it, your bytes again when it changed yours. In the sandbox the write itself is refused."""
    repo = engine_helpers.campaign_repo(tmp_path, HOSTILE.replace("MODE", mode), SHALLOW_WORKER)
    shallow = repo / ".git" / "shallow"
    root = repo.git("rev-list", "--max-parents=0", "HEAD")
    if yours:  # a boundary at the root commit: git sees the same history, and the file is yours
        shallow.write_text(root + "\n")
    history = repo.git("rev-list", "HEAD")
    result = orch("run", cwd=repo)
    text = result.out + result.err
    assert result.rc == 75, text
    if yours:
        assert shallow.read_text() == root + "\n", text
    else:
        assert not shallow.exists(), text
    assert repo.git("rev-list", "HEAD") == history  # your checkout sees the whole history still
    assert statuses(repo, orch, "hostile")["A"] != "ACCEPTED"
    assert "a.txt" not in repo.git("ls-tree", "-r", "--name-only", "campaign/hostile")
    if mode == "none":
        said = ".git/shallow was changed" if yours else ".git/shallow was created"
        assert f"A: changed what no worker may change: {said} (put back: .git/shallow)" in text, text
    else:  # the shared git dir is read-only there: the write failed, and with it the worker
        log = (repo / ".scratch" / "runs" / "hostile" / "A" / "attempt-1.log").read_text()
        assert "read-only" in log.lower(), log


# --- rework at a stale premise updates it in the DAG -----------------------------------------------------

STALE = """\
topic: t
mode: interactive
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1, sandbox: none}
nodes:
  - {id: D, file_surface: [d.txt], discipline: sh}
  - {id: T, depends_on: [D], file_surface: [t.txt], discipline: sh,
     tripwires: [{run: "test ! -e d.txt", why: "T was planned before d.txt existed"}]}
"""
EACH_WORKER = ('#!/bin/sh\nset -eu\nf=$(echo "$ORCH_NODE" | tr A-Z a-z).txt\n'
               'echo "$ORCH_NODE" > "$f" && git add -A && git commit -qm "$ORCH_NODE"\n')


def _tripwires(dag_file) -> list[dict]:
    data = yaml.safe_load(dag_file.read_text())
    return next(n for n in data["nodes"] if n["id"] == "T")["tripwires"]


def test_rework_at_a_stale_premise_updates_the_premise_in_the_dag(tmp_path):
    """README: "rework" puts the note in the next brief; "on a stale premise it also updates the premise in
    the DAG". T's tripwire expected `test ! -e d.txt` to pass; D landed d.txt, so it is stale and the
    realignment seam opens. Answered rework, the campaign's DAG now expects the exit the tripwire gives on the
    current tip (1), the change is journalled and committed in the recorder, and T runs on it."""
    repo = engine_helpers.campaign_repo(tmp_path, STALE, EACH_WORKER)
    run = engine_helpers.cli(repo, "run")
    assert run.returncode == 75, run.stdout + run.stderr
    assert "seam realignment for node T" in run.stdout and "1 stale premise" in run.stdout, run.stdout
    copy = repo / ".ledger" / "state" / "t" / "dag.yaml"  # README: the campaign's own copy, amended by realignment
    before = copy.read_text()
    assert _tripwires(copy) == [{"run": "test ! -e d.txt", "why": "T was planned before d.txt existed"}]  # expect 0

    decided = engine_helpers.cli(repo, "decide", "realignment", "rework", "--topic", "t", "--note",
                                 "d.txt exists now, and that is fine")
    assert decided.returncode == 0, decided.stdout + decided.stderr
    resumed = engine_helpers.cli(repo, "resume")
    assert resumed.returncode == 75 and "final-acceptance" in resumed.stdout, resumed.stdout + resumed.stderr

    assert copy.read_text() != before
    assert _tripwires(copy) == [{"run": "test ! -e d.txt", "why": "T was planned before d.txt existed", "expect": 1}]
    recorded = RepoDir(repo / ".ledger").git("show", "HEAD:state/t/dag.yaml")  # committed in the recorder too
    assert yaml.safe_load(recorded) == yaml.safe_load(copy.read_text())
    amended = [e["context"] for e in journal(repo, "t") if e["kind"] == "dag"]
    assert [(a["node"], a["expect"]) for a in amended] == [("T", {"0": 1})], amended
    assert "t.txt" in repo.git("ls-tree", "-r", "--name-only", "campaign/t")  # T ran on the updated premise
    assert "d.txt exists now, and that is fine" in (repo / ".scratch" / "runs" / "t" / "T" / "brief-1.md").read_text()
