"""Every recorded state resumes or ends cleanly: a halt answer, abandon, clean, bounds, a closed stdout."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.engine_helpers import campaign_repo, journal

WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  A) mkdir -p a && echo A > a/one.txt && git add -A && git commit -qm A ;;
  B) mkdir -p b && echo B > b/one.txt && git add -A && git commit -qm B ;;
esac
"""
DAG = """\
topic: life
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1, timeout: 60}
nodes:
  - {id: A, title: alpha, depends_on: [], file_surface: [a/], discipline: sh}
  - {id: B, title: bravo, depends_on: [], file_surface: [b/], discipline: sh,
     evaluators: [{name: never, run: "false"}]}
"""
ORCH = [sys.executable, "-c", "import sys; from orchestrate.cli.main import main; sys.exit(main())"]


@pytest.fixture
def life(tmp_path):
    return campaign_repo(tmp_path, DAG, WORKER)


def _paused_at_realignment(life, orch):
    r = orch("run", "--no-interactive", cwd=life)
    assert r.rc == 75, r.err
    return r


def test_resume_after_a_halt_answer_says_halted_every_time_and_never_crashes(life, orch):
    _paused_at_realignment(life, orch)
    assert orch("decide", "realignment", "halt", "--note", "not now", cwd=life).rc == 0
    assert orch("resume", cwd=life).rc == 1
    before = journal(life, "life")
    for _ in range(2):
        again = orch("resume", cwd=life)
        assert again.rc == 1
        assert "campaign life is halted" in again.err and "orchestrate abandon" in again.err
        assert "Traceback" not in again.err
    assert journal(life, "life") == before  # saying so writes nothing


def test_interactive_flag_asks_even_without_a_terminal(life, orch, monkeypatch):
    import io
    monkeypatch.setattr(sys, "stdin", io.StringIO("halt\nenough\n"))
    r = orch("run", "--interactive", cwd=life)
    assert r.rc == 1
    decided = [e for e in journal(life, "life") if e["kind"] == "decision"]
    assert [(d["context"]["choice"], d["context"]["note"], d["source_type"]) for d in decided] == [
        ("halt", "enough", "human")]


def test_abandon_ends_the_campaign_and_clean_keeps_unmerged_heads(life, orch):
    _paused_at_realignment(life, orch)
    assert orch("abandon", "--note", "", cwd=life).rc == 2  # a reason is required; nothing written
    done = orch("abandon", "--as", "lead@example.com", "--note", "superseded", cwd=life)
    assert done.rc == 0, done.err
    entries = journal(life, "life")
    assert [(e["kind"], e["source_type"]) for e in entries[-2:]] == [("abandon", "human"), ("close", "engine")]
    assert entries[-2]["context"]["who"] == "lead@example.com"
    assert "no campaign is in flight" in orch("resume", cwd=life).err
    refused = orch("resume", "--topic", "life", cwd=life)
    assert refused.rc == 1 and "abandoned by lead@example.com" in refused.err
    branches = set(life.git("for-each-ref", "--format=%(refname:short)", "refs/heads/node/life/").split())
    assert branches == {"node/life/A", "node/life/B"}
    dry = orch("clean", "--dry-run", "--json", cwd=life)
    import json
    plan = json.loads(dry.out)
    assert set(plan["branches"]) == {"node/life/A"} and "node/life/B" in plan["kept"]
    assert set(life.git("for-each-ref", "--format=%(refname:short)", "refs/heads/node/life/").split()) == branches
    assert orch("clean", cwd=life).rc == 0
    assert life.git("for-each-ref", "--format=%(refname:short)", "refs/heads/node/life/").split() == ["node/life/B"]
    assert not [w for w in life.git("worktree", "list").splitlines() if "/.scratch/" in w]
    assert life.git("rev-parse", "--verify", "campaign/life")  # the campaign's own branch is never touched


def test_clean_refuses_a_campaign_in_flight(life, orch):
    _paused_at_realignment(life, orch)
    r = orch("clean", "--topic", "life", cwd=life)
    assert r.rc == 2 and "still in flight" in r.err
    unknown = orch("clean", "--topic", "nope", cwd=life)
    assert unknown.rc == 2 and "no campaign `nope` in " in unknown.err and "(its campaigns: life)" in unknown.err
    assert "abandon" not in unknown.err


@pytest.mark.parametrize("field,value,message", [
    ("timeout", "99999999999999999999", "must be 1 s to 604,800 s"),
    ("timeout", "0", "must be 1 s to 604,800 s"),
    ("max_attempts", "101", "must be 1 to 100"),
    ("max_rework", "1000", "must be 1 to 100"),
])
def test_absurd_values_are_refused_at_validation(life, orch, field, value, message):
    dag = life / "bad.yaml"
    dag.write_text(DAG.replace("discipline: sh}", f"discipline: sh, {field}: {value}}}", 1))
    r = orch("validate", "--dag", dag, cwd=life)
    assert r.rc == 1 and message in r.out + r.err
    assert orch("run", "--dag", dag, cwd=life).rc == 1  # refused before anything is written, no OverflowError


def test_a_closed_stdout_neither_breaks_the_run_nor_prints_a_traceback(life):
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line: `orchestrate run | head -0`
    done = subprocess.run(ORCH + ["run", "--no-interactive"], cwd=life, stdout=write, stderr=subprocess.PIPE,
                          text=True)
    os.close(write)
    assert done.returncode == 75, done.stderr  # it went on to the seam, a recorded state
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr
    assert journal(life, "life")[-1]["kind"] in ("transition", "seam", "checkpoint")
    read, write = os.pipe()
    os.close(read)
    shown = subprocess.run(ORCH + ["status", "--topic", "life"], cwd=life, stdout=write, stderr=subprocess.PIPE,
                           text=True)
    os.close(write)
    assert shown.returncode == 0 and shown.stderr == ""


def test_a_stdout_closed_from_the_start_or_full_is_no_bug(life):
    """rv45: with descriptor 1 closed before the start (`>&-`) Python has no sys.stdout, and the flush at the end
    raised (exit 1 for the run's 75); a full disk's write error was a bug's traceback (exit 70)."""
    closed = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *ORCH, "run", "--no-interactive"], cwd=life,
                            stderr=subprocess.PIPE, text=True)
    assert closed.returncode == 75 and "Traceback" not in closed.stderr, closed.stderr
    assert journal(life, "life")[-1]["kind"] in ("transition", "seam", "checkpoint")
    with open("/dev/full", "w") as full:
        shown = subprocess.run(ORCH + ["status", "--topic", "life"], cwd=life, stdout=full, stderr=subprocess.PIPE,
                               text=True)
    assert shown.returncode == 1 and "Traceback" not in shown.stderr, shown.stderr
    assert shown.stderr == ("orchestrate: error: the output could not be written (No space left on device); "
                            "what was printed is incomplete\n")
    for args in (["status", "--topic", "life"], ["--version"]):  # rv46: closed from the start, it exited 0
        lost = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *ORCH, *args], cwd=life, stderr=subprocess.PIPE,
                              text=True)
        assert lost.returncode == 1 and "the output could not be written (Bad file descriptor)" in lost.stderr, args
    console = os.path.join(os.path.dirname(sys.executable), "orchestrate")  # the console script's quick paths
    for args in (["--version"], ["status"]):
        with open("/dev/full", "w") as full:
            quick = subprocess.run([console, *args], cwd=life, stdout=full, stderr=subprocess.PIPE, text=True)
        assert quick.returncode == 1 and "Traceback" not in quick.stderr, (args, quick.stderr)


@pytest.mark.parametrize("who", ["", "  ", "alice\nSigned-off-by: mallory"])
def test_an_empty_or_multi_line_as_is_refused_not_recorded(life, orch, who):
    """rv45: `--as ""` (a variable left unset) was taken for no --as, and the decision recorded as git's user."""
    _paused_at_realignment(life, orch)
    before = journal(life, "life")
    said = orch("decide", "realignment", "halt", "--as", who, "--note", "n", cwd=life)
    assert said.rc == 2 and "not a name a decision can be recorded under" in said.err, said.err
    assert journal(life, "life") == before


@pytest.mark.parametrize("choice", ["rework", "skip", "halt"])
def test_resume_after_each_realignment_answer_never_crashes(life, orch, choice):
    _paused_at_realignment(life, orch)
    assert orch("decide", "realignment", choice, "--note", "n", cwd=life).rc == 0
    expected = {"rework": 75, "skip": 75, "halt": 1}[choice]  # B fails again; final acceptance; halted
    for _ in range(3):
        r = orch("resume", "--no-interactive", "--topic", "life", cwd=life)
        assert r.rc == expected, r.out + r.err
        assert "Traceback" not in r.err and "internal error" not in r.err


def test_resume_after_a_refused_final_acceptance_says_halted(life, orch):
    passing = DAG.replace('discipline: sh,\n     evaluators: [{name: never, run: "false"}]}', "discipline: sh}")
    assert passing != DAG
    (life / ".ledger" / "state" / "dag.yaml").write_text(passing)
    assert orch("run", "--no-interactive", cwd=life).rc == 75
    assert orch("decide", "final-acceptance", "reject", "--note", "no", cwd=life).rc == 0
    for _ in range(2):
        r = orch("resume", "--topic", "life", cwd=life)
        assert r.rc == 1 and "Traceback" not in r.err, r.err
    assert "campaign life is halted" in r.err



@pytest.mark.parametrize("refused", [False, True])
def test_a_campaign_at_final_acceptance_or_refused_there_can_be_abandoned_as_resume_says(life, orch, refused):
    passing = DAG.replace('discipline: sh,\n     evaluators: [{name: never, run: "false"}]}', "discipline: sh}")
    (life / ".ledger" / "state" / "dag.yaml").write_text(passing)
    assert orch("run", "--no-interactive", cwd=life).rc == 75
    if refused:
        assert orch("decide", "final-acceptance", "reject", "--note", "no", cwd=life).rc == 0
        told = orch("resume", "--topic", "life", cwd=life).err
        assert "`orchestrate abandon --topic life --note WHY` ends it" in told
    ended = orch("abandon", "--as", "lead@example.com", "--note", "not wanted", cwd=life)  # no --topic: picked
    assert ended.rc == 0, ended.err
    again = orch("abandon", "--topic", "life", "--note", "twice", cwd=life)
    assert again.rc == 2 and "campaign life has already ended" in again.err
    before = journal(life, "life")
    late = orch("decide", "--topic", "life", "final-acceptance", "accept", "--note", "after all", cwd=life)
    assert late.rc == 2 and "campaign life was abandoned by lead@example.com at " in late.err
    assert journal(life, "life") == before
    shown = orch("status", "--topic", "life", cwd=life).out.splitlines()
    assert shown[0].startswith("campaign life: abandoned in ") and shown[1].startswith("abandoned by lead@example.com at ")
    assert shown[1].endswith(": not wanted") and not [ln for ln in shown if ln.startswith("open seam")]
    assert "no campaign is in flight or paused (every one has ended)" in orch("resume", cwd=life).err
    assert orch("clean", "--dry-run", cwd=life).rc == 0


def test_an_abandon_cut_off_before_its_commit_has_not_happened_for_clean_or_abandon(life, orch):
    _paused_at_realignment(life, orch)
    env = dict(os.environ, CI="true", ORCHESTRATE_FAULT="flush:1")  # killed once its lines are written
    cut = subprocess.run(ORCH + ["abandon", "--topic", "life", "--note", "cut"], cwd=life, env=env,
                         capture_output=True, text=True)
    assert cut.returncode != 0 and '"abandoned":true' in (life / ".ledger/state/life/journal.jsonl").read_text()
    branches = life.git("for-each-ref", "--format=%(refname:short)", "refs/heads/node/life/")
    refused = orch("clean", "--topic", "life", cwd=life)
    assert refused.rc == 2 and "holds entries the recorder has not committed" in refused.err
    assert "nothing to clean: no campaign has ended" in orch("clean", cwd=life).out
    assert life.git("for-each-ref", "--format=%(refname:short)", "refs/heads/node/life/") == branches
    again = orch("abandon", "--topic", "life", "--note", "again", cwd=life)  # the cut-off lines are dropped first
    assert again.rc == 0, again.err
    assert [e["context"]["note"] for e in journal(life, "life") if e["kind"] == "abandon"] == ["again"]
    assert orch("clean", "--topic", "life", cwd=life).rc == 0

def test_clean_keeps_a_worktree_whose_git_link_names_another_repository_and_runs_no_git_in_it(life, orch):
    _paused_at_realignment(life, orch)
    assert orch("abandon", "--as", "lead@example.com", "--note", "superseded", cwd=life).rc == 0
    odd = life / ".scratch" / "worktrees" / "life" / "X"
    life.git("worktree", "add", "-q", "-b", "node/life/X", str(odd))
    (odd / "stray.txt").write_text("x\n")
    (odd / ".git").write_text(f"gitdir: {life / '.git'}\n")  # `git status` there would read the user's index
    index = (life / ".git" / "index").stat().st_mtime_ns
    import json
    plan = json.loads(orch("clean", "--dry-run", "--json", cwd=life).out)
    assert plan["kept"][str(odd)].startswith("its .git link names another repository"), plan
    assert orch("clean", cwd=life).rc == 0
    assert odd.is_dir() and (life / ".git" / "index").stat().st_mtime_ns == index
