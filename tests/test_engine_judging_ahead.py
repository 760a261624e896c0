"""Eager, with every worker in the sandbox: a landed node's evaluators run ahead, in a thread, while the loop
goes on taking in returns, enforcing timeouts, judging, merging and dispatching (engine/evaluations.py).
Read from the journal's order; each evaluator waits for an event the loop must make while it runs, and fails
if it never comes (the loop waiting on it would never make it)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.engine_helpers import campaign_repo, journal, statuses, until

# A's evaluator passes once C (which depends on B alone) has its brief, i.e. once B was judged and merged and
# C dispatched while A was being judged; B's second attempt comes only after its first timed out.
WAIT = 'n=0; while [ ! -f "{runs}/{node}/brief-{attempt}.md" ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n + 1)); done; ' \
       'test -f "{runs}/{node}/brief-{attempt}.md"'
WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  B) if [ "$ORCH_ATTEMPT" = 1 ] && [ -f b-hangs ]; then exec sleep 300; fi ;;
esac
d=$(echo "$ORCH_NODE" | tr A-Z a-z)
mkdir -p "$d" && echo "$ORCH_NODE" > "$d/one.txt"
"""
DAG = """\
topic: ahead
workers: {{sh: "./work.sh"}}
defaults: {{timeout: 120, max_attempts: 2, sandbox: bwrap}}
nodes:
  - {{id: A, title: judged slowly, file_surface: [a/], discipline: sh,
     evaluators: [{{name: waits, run: '{wait}'}}]}}
  - {{id: B, title: quick, file_surface: [b/], discipline: sh{b_timeout}}}
  - {{id: C, title: after quick, depends_on: [B], file_surface: [c/], discipline: sh}}
"""


@pytest.fixture(autouse=True)
def _sandbox():
    from orchestrate.workers import sandbox
    if (why := sandbox.probe()) is not None:
        pytest.skip(f"evaluators run ahead only where every worker runs in the sandbox; no sandbox here: {why}")


def _first(entries, pred) -> int:
    return next(i for i, e in enumerate(entries) if pred(e))


def _verdict(node: str):
    return lambda e: e["kind"] == "verdict" and e["context"]["node"] == node


def _dispatched(node: str, attempt: int = 1):
    return lambda e: e["kind"] == "node" and e["context"].get("node") == node \
        and e["context"].get("status") == "DISPATCHED" and e["context"].get("attempt", attempt) == attempt


def test_a_dependent_is_judged_merged_and_started_while_a_landed_nodes_evaluators_run(tmp_path, orch):
    runs = tmp_path / "repo" / ".scratch" / "runs" / "ahead"
    dag = DAG.format(wait=WAIT.format(runs=runs, node="C", attempt=1), b_timeout="")
    repo = campaign_repo(tmp_path, dag, WORKER)
    result = orch("run", "--jobs", "3", cwd=repo)
    assert result.rc == 75, result.out + result.err  # at final acceptance
    assert statuses(repo, orch, "ahead") == {"A": "ACCEPTED", "B": "ACCEPTED", "C": "ACCEPTED"}
    entries = journal(repo, "ahead")
    assert _first(entries, _verdict("B")) < _first(entries, _dispatched("C")) < _first(entries, _verdict("A"))
    assert "A: evaluators started (attempt 1)" in result.out
    # the report's timeline: A's judging began when its evaluators started, not when RECONCILE came to it
    from orchestrate.report.history import read, seconds
    history = read("ahead", entries)
    started = next(e for e in entries if e["kind"] == "result" and e["context"].get("effect") == "evaluators-start")
    judging = next(s for a in history.of("A") for s in a.spans if s.phase == "judging")
    assert judging.start == pytest.approx(seconds(started["created_at"]) - history.start)


def test_a_workers_timeout_is_enforced_while_a_landed_nodes_evaluators_run(tmp_path, orch):
    runs = tmp_path / "repo" / ".scratch" / "runs" / "ahead"
    dag = DAG.format(wait=WAIT.format(runs=runs, node="B", attempt=2), b_timeout=", timeout: 2")
    repo = campaign_repo(tmp_path, dag, WORKER, files={"b-hangs": ""})
    result = orch("run", "--jobs", "3", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert "B: worker timed out" in result.out
    assert statuses(repo, orch, "ahead") == {"A": "ACCEPTED", "B": "ACCEPTED", "C": "ACCEPTED"}
    entries = journal(repo, "ahead")
    timed_out = _first(entries, lambda e: e["kind"] == "result" and e["context"].get("node") == "B"
                       and e["context"].get("rc") == 124)
    assert timed_out < _first(entries, _verdict("A"))


# A's evaluator passes once the loop, having started it as A landed, found nothing else to do and went back to
# waiting (DISPATCH running -> AWAIT): the loop then always waits for it in AWAIT and goes AWAIT returned ->
# RECONCILE. An evaluator that ended sooner (a loaded machine: the loop slow to get there) was taken in by
# DISPATCH, and the run went DISPATCH layer-done -> CHECKPOINT landed -> RECONCILE instead, two flushes more:
# the kill point read from one run was another transition in the next (rv63). On resume the entry is there.
QUICK = """\
topic: back
workers: {sh: "./work.sh"}
defaults: {timeout: 120, sandbox: bwrap}
nodes:
  - {id: A, title: judged ahead, file_surface: [a/], discipline: sh, evaluators: [{name: ok, run: 'n=0; while
     ! grep -qs "DISPATCH running -> AWAIT" "JOURNAL" && [ $n -lt 1200 ]; do sleep 0.05; n=$((n + 1)); done;
     grep -qs "DISPATCH running -> AWAIT" "JOURNAL" && test -f a/one.txt'}]}
"""


def _quick(root) -> str:
    return QUICK.replace("JOURNAL", str(root / "repo" / ".ledger" / "state" / "back" / "journal.jsonl"))


def test_a_resume_that_comes_back_in_reconcile_waits_for_the_evaluators_it_starts_again(tmp_path):
    """rv51: killed once RECONCILE was recorded, the resume started A's evaluators ahead again, found nothing ready
    to judge and raised IndexError (exit 70), at every resume."""
    from tests.engine_helpers import cli, recorder_subjects
    reference = campaign_repo(tmp_path / "ref", _quick(tmp_path / "ref"), WORKER)
    assert cli(reference, "run").returncode == 75
    flushes = recorder_subjects(reference)[1:]  # the run's commits, each a flush first (init's is not the run's)
    at = flushes.index("back: AWAIT returned -> RECONCILE")
    assert flushes[at - 3:at] == ["back: DISPATCH dispatched -> AWAIT (A)", "back: AWAIT next -> DISPATCH",
                                  "back: DISPATCH running -> AWAIT"], flushes  # one way, whatever the load
    repo = campaign_repo(tmp_path / "cut", _quick(tmp_path / "cut"), WORKER)
    assert cli(repo, "run", fault=f"flush:{at + 1}").returncode == -9
    assert journal(repo, "back")[-1]["context"].get("to") == "RECONCILE"  # killed just there
    resumed = cli(repo, "resume")
    assert resumed.returncode == 75, resumed.stdout + resumed.stderr
    assert "A: evaluators started" in resumed.stdout
    assert [e["context"]["verdict"] for e in journal(repo, "back") if e["kind"] == "verdict"] == ["accept"]


def _until_started_ahead(runner, journal) -> None:
    until(lambda: journal.exists() and '"effect":"evaluators-start"' in journal.read_text(), runner,
           "A's evaluators started ahead")


AMENDED = """\
topic: amend
workers: {sh: "./work.sh"}
defaults: {timeout: 120, max_attempts: 1, sandbox: bwrap}
nodes:
  - {id: A, title: judged ahead, file_surface: [a/], discipline: sh,
     evaluators: [{name: gate, run: 'n=0; while [ ! -f "ROOT/release" ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n + 1)); done'}]}
"""


def test_evaluators_run_ahead_under_a_dag_since_amended_are_run_again(tmp_path):
    """rv51: a person amended A's evaluators (and accepted the amendment) while the old ones ran ahead; A was
    accepted on the old ones' verdict."""
    repo = campaign_repo(tmp_path, AMENDED.replace("ROOT", str(tmp_path / "repo")), WORKER)
    (tmp_path / "answers.yaml").write_text("dag-amendment: accept\n")
    runner = subprocess.Popen([sys.executable, "-m", "orchestrate", "run", "--answers", str(tmp_path / "answers.yaml")],
                              cwd=repo, env=dict(os.environ, CI="true"), text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    live = repo / ".ledger" / "state" / "amend" / "journal.jsonl"
    try:
        _until_started_ahead(runner, live)
        copy = repo / ".ledger" / "state" / "amend" / "dag.yaml"  # the campaign's DAG, as a person edits it
        copy.write_text(copy.read_text().replace("run: 'n=0;", "run: 'exit 1; n=0;"))
        (repo / "release").write_text("")  # the old evaluator passes now
        out, err = runner.communicate(timeout=180)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.communicate()
    assert runner.returncode == 75, out + err  # at A's realignment: the amended evaluator failed
    entries = [json.loads(line) for line in live.read_text().splitlines()]
    assert [e["context"]["choice"] for e in entries if e["kind"] == "decision"] == ["accept"]  # the amendment
    assert [e["context"]["verdict"] for e in entries if e["kind"] == "verdict"] == ["escalate"], out


WITH_A_PERSON = """\
topic: hand
workers: {sh: "./work.sh"}
defaults: {timeout: 120, sandbox: bwrap}
nodes:
  - {id: A, title: judged ahead, file_surface: [a/], discipline: sh, evaluators: [{name: slow, run: "sleep 1"}]}
  - {id: H, title: a person's, file_surface: [h.txt], worker: {kind: human}}
"""


def test_a_persons_node_waits_until_what_is_judged_ahead_has_been_judged(tmp_path, orch):
    """rv51: H was handed to its person while A's evaluators ran ahead; the run paused there and A's judging
    was thrown away, to run again on resume. A person works alone, once nothing waits to be judged."""
    repo = campaign_repo(tmp_path, WITH_A_PERSON, WORKER)
    result = orch("run", "--jobs", "2", cwd=repo)
    assert result.rc == 75, result.out + result.err  # H's handwork seam
    entries = journal(repo, "hand")
    assert _first(entries, _verdict("A")) < _first(entries, _dispatched("H"))
    assert statuses(repo, orch, "hand")["A"] == "ACCEPTED"


PLANTING = """\
topic: plant
workers: {sh: "./work.sh"}
defaults: {timeout: 120, sandbox: bwrap}
nodes:
  - {id: A, title: judged ahead, file_surface: [a/], discipline: sh, evaluators: [
      {name: plants, run: 'echo PLANTED >> "$HOME/.bash_aliases"; n=0; while [ $n -lt 1200 ]; do sleep 0.05; n=$((n + 1)); done'},
      {name: late, run: 'echo LATE >> "$HOME/.bash_aliases"'}]}
"""


def test_a_sigterm_stops_evaluators_run_ahead_and_puts_back_what_they_planted(tmp_path):
    """rv51: stopped while A's first evaluator ran ahead, the runner killed it, then waited for the next one,
    which started after the kill; and what either wrote in $HOME (a start-up file: code the user's next shell
    runs) stayed, unblamed, for the resume to take in as the state to guard. (One made anew: those there are
    read-only in the sandbox.)"""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("# mine\n")
    repo = campaign_repo(tmp_path, PLANTING, WORKER)
    runner = subprocess.Popen([sys.executable, "-m", "orchestrate", "run"], cwd=repo, text=True,
                              env=dict(os.environ, CI="true", HOME=str(home)), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        for _ in range(1200):
            if (home / ".bash_aliases").exists():
                break
            assert runner.poll() is None, runner.communicate()
            time.sleep(0.05)
        else:
            pytest.fail("A's first evaluator never ran")
        runner.send_signal(signal.SIGTERM)
        out, err = runner.communicate(timeout=120)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.communicate()
    assert runner.returncode == 130, out + err
    assert (home / ".bashrc").read_text() == "# mine\n", out + err
    assert not (home / ".bash_aliases").exists(), out + err  # put back; the second evaluator never ran
    assert "A: changed what no worker may change" in out + err


def test_status_says_a_node_is_being_judged_while_its_evaluators_run_ahead(tmp_path):
    """rv47/rv51: status said "waiting to be judged" while the evaluators ran."""
    dag = AMENDED.replace("ROOT", str(tmp_path / "repo")).replace("topic: amend", "topic: busy")
    repo = campaign_repo(tmp_path, dag, WORKER)
    runner = subprocess.Popen([sys.executable, "-m", "orchestrate", "run"], cwd=repo, env=dict(os.environ, CI="true"),
                              text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    live = repo / ".ledger" / "state" / "busy" / "journal.jsonl"
    try:
        _until_started_ahead(runner, live)
        said = subprocess.run([sys.executable, "-m", "orchestrate", "status", "--json"], cwd=repo, capture_output=True,
                              text=True, timeout=60)
        (repo / "release").write_text("")
        out, err = runner.communicate(timeout=180)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.communicate()
    rows = {row["id"]: row for row in json.loads(said.stdout)["nodes"]}
    assert rows["A"]["status"] == "LANDED" and rows["A"]["waiting"] == "being judged: its evaluators run", rows
    assert runner.returncode == 75, out + err


DIVERGES = """\
topic: rd
workers: {sh: "./work.sh"}
defaults: {timeout: 120, max_attempts: 3, sandbox: bwrap}
nodes:
  - {id: A, title: reviewed, file_surface: [a/], discipline: sh, evaluators: [
      {name: r1, run: "true", review: true}, {name: r2, run: "false", review: true}]}
  - {id: W, title: waits, file_surface: [w/], discipline: sh}
"""
WAITS = r"""#!/bin/sh
if [ "$ORCH_NODE" = W ] && [ "$ORCH_ATTEMPT" = 1 ]; then
  n=0; while [ ! -f "RELEASE" ] && [ $n -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done
fi
d=$(echo "$ORCH_NODE" | tr A-Z a-z)
mkdir -p "$d" && echo "$ORCH_NODE" > "$d/one.txt"
"""


def test_a_node_whose_answer_waits_to_be_applied_is_not_judged_again_first(tmp_path, orch):
    """rv52: A's review-divergence seam was open while W ran; the runner died; `decide accept` was recorded; the
    resume started A's attempt-1 evaluators again (ahead) before applying the answer, rewriting the log the person
    answered on (and, answered rework, judging a head the person had sent back)."""
    release = tmp_path / "release"
    repo = campaign_repo(tmp_path, DIVERGES, WAITS.replace("RELEASE", str(release)))
    runner = subprocess.Popen([sys.executable, "-m", "orchestrate", "run", "--jobs", "2"], cwd=repo, text=True,
                              env=dict(os.environ, CI="true"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)
    live = repo / ".ledger" / "state" / "rd" / "journal.jsonl"
    try:  # A's seam is open and the run goes on past it (W runs on): the runner dies there
        until(lambda: live.exists() and '"outcome":"deferred"' in live.read_text(), runner, "the run went on past A's seam")
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=60)
    finally:
        release.write_text("")  # W's worker, left by the dead runner, ends whatever happens
        if runner.poll() is None:
            runner.kill()
        runner.communicate()
    log = repo / ".scratch" / "runs" / "rd" / "A" / "evaluators-1.log"
    answered_on = log.read_text()
    assert orch("decide", "review-divergence", "accept", "--note", "both fine", cwd=repo).rc == 0
    done = orch("resume", cwd=repo)
    assert done.rc == 75 and "final-acceptance" in done.out, done.out + done.err
    starts = [e for e in journal(repo, "rd") if e["kind"] == "result" and e["context"].get("effect") == "evaluators-start"
              and e["context"]["node"] == "A"]
    assert len(starts) == 1, starts  # judged once, ahead, before the seam: not again on resume
    assert log.read_text() == answered_on
    assert statuses(repo, orch, "rd") == {"A": "ACCEPTED", "W": "ACCEPTED"}


PAUSING = """\
topic: pz
workers: {sh: "./work.sh"}
defaults: {timeout: 120, sandbox: bwrap}
nodes:
  - {id: A, title: judged ahead, file_surface: [a/], discipline: sh, evaluators: [{name: gate, run: 'WAIT'}]}
  - {id: B, title: b, file_surface: [b/], discipline: sh}
  - {id: C, title: c, file_surface: [c/], discipline: sh}
"""
HELD = r"""#!/bin/sh
case "$ORCH_NODE" in B|C) n=0; while [ ! -f "MARKS-$ORCH_NODE" ] && [ $n -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done ;; esac
d=$(echo "$ORCH_NODE" | tr A-Z a-z)
mkdir -p "$d" && echo "$ORCH_NODE" > "$d/one.txt"
"""


def test_a_pause_while_workers_run_and_evaluators_run_ahead_ends(tmp_path):
    """rv52: a pause (an edited DAG) came while C ran and A's evaluators ran ahead: the runner waited for C,
    then for evaluators it never took in, for ever."""
    marks = tmp_path / "repo" / ".scratch" / "mark"  # where the sandboxed workers and evaluators can see it
    wait = f'n=0; while [ ! -f "{marks}-A" ] && [ $n -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done'
    repo = campaign_repo(tmp_path, PAUSING.replace("WAIT", wait), HELD.replace("MARKS", str(marks)))
    said = tmp_path / "run.out"
    with said.open("w") as out:
        runner = subprocess.Popen([sys.executable, "-m", "orchestrate", "run", "--jobs", "3"], cwd=repo, text=True,
                                  env=dict(os.environ, CI="true"), stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL)
    try:
        _until_started_ahead(runner, repo / ".ledger" / "state" / "pz" / "journal.jsonl")
        plan = repo / ".ledger" / "state" / "pz" / "dag.yaml"
        plan.write_text(plan.read_text().replace("title: b,", "title: b edited,"))  # a person edits the plan
        marks.parent.mkdir(exist_ok=True)
        (marks.parent / "mark-B").write_text("")  # B returns: the edit is seen, and the run pauses while C runs
        until(lambda: "to return before pausing" in said.read_text(), runner, "the run waited for its workers to pause")
        (marks.parent / "mark-C").write_text("")
        (marks.parent / "mark-A").write_text("")
        runner.wait(timeout=90)
    finally:
        for name in ("mark-A", "mark-B", "mark-C"):
            (marks.parent / name).write_text("")
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    text = said.read_text()
    assert runner.returncode == 75 and "paused at seam dag-amendment" in text, text


ENDS_AT_ONCE = """\
topic: quick
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1, sandbox: bwrap}
nodes:
  - {id: A, title: plants, file_surface: [a/], discipline: sh, evaluators: [
      {name: plants, run: 'echo PLANTED >> "$HOME/.bash_aliases"; exit 127'}]}
"""


def test_an_evaluator_run_ahead_that_started_before_the_loop_counted_is_still_looked_after(
        tmp_path, orch, monkeypatch, home):
    """CI failure of rv35's test: the loop read the count of judging's processes after handing the run to its
    thread, so an evaluator that had already started (and planted, and ended) was not looked after, and the
    planted line stayed. Here the thread's run ends before the hand-over returns: the worst case, every time."""
    from concurrent.futures import ThreadPoolExecutor

    from orchestrate.engine import evaluations

    class Finished(ThreadPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):
            future = super().submit(fn, *args, **kwargs)
            future.exception()  # wait until the run ended
            return future
    monkeypatch.setattr(evaluations, "ThreadPoolExecutor", Finished)
    (home / ".bashrc").write_text("# mine\n")
    repo = campaign_repo(tmp_path, ENDS_AT_ONCE, WORKER)
    result = orch("run", cwd=repo)
    assert result.rc == 75 and "could not start" in result.out + result.err, result.out + result.err
    assert (home / ".bashrc").read_text() == "# mine\n", result.out + result.err
    assert not (home / ".bash_aliases").exists(), result.out + result.err  # made anew: .bashrc is read-only there
    assert "A: changed what no worker may change" in result.out + result.err
