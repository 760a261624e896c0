"""Races between the loop's thread and the threads evaluators run in (engine/evaluations.py, reconcile._prefetch),
each made to happen every time: a stand-in holds one thread at the point where the other must overtake it."""
from __future__ import annotations

import threading
import time

import pytest

from tests.engine_helpers import campaign_repo

WORKER = r"""#!/bin/sh
set -eu
d=$(echo "$ORCH_NODE" | tr A-Z a-z)
mkdir -p "$d" && echo "$ORCH_NODE" > "$d/one.txt"
"""


@pytest.fixture(autouse=True)
def _sandbox():
    from orchestrate.workers import sandbox
    if (why := sandbox.probe()) is not None:
        pytest.skip(f"evaluators run ahead only where every worker runs in the sandbox; no sandbox here: {why}")


def _in_evaluator_thread() -> bool:
    return threading.current_thread().name.startswith("evaluators")


OUTLIVES = """\
topic: window
workers: {sh: "./work.sh"}
defaults: {timeout: 120, sandbox: bwrap}
nodes:
  - {id: A, title: judged ahead, file_surface: [a/], discipline: sh, evaluators: [
      {name: long, run: 'n=0; while [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done; echo LIVED > "$HOME/lived"'}]}
"""


def test_an_evaluator_that_starts_between_the_stop_check_and_the_kill_is_stopped_too(tmp_path, orch, monkeypatch, home):
    """Interrupted while an evaluator thread had asked `stop()` (not yet set) and not yet started its process: the
    loop set the stop and killed what carried the run's tag (nothing yet), then the thread started the evaluator,
    which nothing killed: the interrupt waited for it to end (up to its timeout) and it ran to the end."""
    from orchestrate import faults, proc, reaping
    from orchestrate.engine import evaluations

    at_start, killed = threading.Event(), threading.Event()
    real_shell, real_kill, real_reach = proc.run_shell, reaping.kill_tagged, faults.reach

    def shell(*args, **kwargs):  # the evaluator thread, past `stop()`, about to start its process
        if _in_evaluator_thread() and not at_start.is_set():
            at_start.set()
            killed.wait(60)
        return real_shell(*args, **kwargs)

    def kill(tags, **kwargs):
        got = real_kill(tags, **kwargs)
        if evaluations.AHEAD_TAG in tags:
            killed.set()
        return got

    def reach(point):  # Ctrl-C, in the loop's thread, while the evaluator thread is there
        if point == "poll" and at_start.is_set() and not killed.is_set():
            raise KeyboardInterrupt
        real_reach(point)
    monkeypatch.setattr(proc, "run_shell", shell)
    monkeypatch.setattr(reaping, "kill_tagged", kill)
    monkeypatch.setattr(faults, "reach", reach)
    repo = campaign_repo(tmp_path, OUTLIVES, WORKER)
    result = orch("run", cwd=repo)
    assert result.rc == 130, result.out + result.err
    assert killed.is_set()
    assert not (home / "lived").exists(), "the evaluator started after the kill ran to its end"


TOGETHER = """\
topic: together
schedule: layered
workers: {sh: "./work.sh"}
defaults: {timeout: 120, sandbox: bwrap}
nodes:
  - {id: A, title: plants, file_surface: [a/], discipline: sh, evaluators: [
      {name: plants, run: 'echo PLANTED >> "$HOME/.bash_aliases"; n=0; while [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done'},
      {name: late, run: 'echo LATE >> "$HOME/.bash_aliases"'}]}
  - {id: B, title: quick, file_surface: [b/], discipline: sh, evaluators: [{name: ok, run: "true"}]}
"""


def test_an_interrupt_while_landed_nodes_evaluators_run_together_stops_them_and_puts_back_what_they_planted(
        tmp_path, orch, monkeypatch, home):
    """reconcile._prefetch, interrupted (Ctrl-C in the loop's thread, waiting on the threads): it killed what ran,
    but its threads had no stop, so A's next evaluator started after the kill; and no look followed, so what
    either planted in $HOME (a start-up file) stayed, unblamed, for the resume to take in as the state to guard."""
    import concurrent.futures

    class Interrupted(concurrent.futures.ThreadPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):
            future = super().submit(fn, *args, **kwargs)

            def result(timeout=None):  # Ctrl-C once A's first evaluator has planted, while it runs
                for _ in range(1200):
                    if (home / ".bash_aliases").exists():  # made anew: .bashrc is read-only there
                        raise KeyboardInterrupt
                    time.sleep(0.05)
                pytest.fail("A's first evaluator never planted")
            future.result = result
            return future
    monkeypatch.setattr(concurrent.futures, "ThreadPoolExecutor", Interrupted)
    (home / ".bashrc").write_text("# mine\n")
    repo = campaign_repo(tmp_path, TOGETHER, WORKER)
    result = orch("run", "--jobs", "2", cwd=repo)
    assert result.rc == 130, result.out + result.err
    assert (home / ".bashrc").read_text() == "# mine\n", result.out + result.err
    assert not (home / ".bash_aliases").exists(), result.out + result.err  # put back; `late` never ran
    assert "changed what no worker may change" in result.out + result.err


TURNED = """\
topic: turned
workers: {sh: "./work.sh"}
defaults: {timeout: 120, sandbox: bwrap}
nodes:
  - {id: A, title: judged ahead, file_surface: [a/], discipline: sh, evaluators: [{name: ok, run: "true"}]}
  - {id: B, title: returns later, file_surface: [b/], discipline: sh}
  - {id: C, title: after A, depends_on: [A], file_surface: [c/], discipline: sh}
"""
RETURNS_LATER = r"""#!/bin/sh
set -eu
if [ "$ORCH_NODE" = B ]; then n=0; while [ ! -f "MARK" ] && [ $n -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done; fi
d=$(echo "$ORCH_NODE" | tr A-Z a-z)
mkdir -p "$d" && echo "$ORCH_NODE" > "$d/one.txt"
"""


def test_a_node_whose_evaluators_run_ahead_is_not_judged_again_while_they_run_once_ahead_is_turned_off(
        tmp_path, orch, monkeypatch):
    """A's evaluators ran ahead (their thread not done) when an amendment, accepted while B ran, let C run without
    the sandbox: evaluators no longer run ahead, so `pending` said A waited for nothing, and RECONCILE ran A's
    evaluators again in the loop's thread, in the same worktree, while the first run went on (the same happens
    when an amendment drops A's evaluators, gives it a budget or a LOOPS_WITH peer: A was judged, merged, its
    worktree handed on, with the old run still writing there)."""
    from orchestrate import faults
    from orchestrate.engine import evaluations

    started, release, overlapped, edited = threading.Event(), threading.Event(), [], []
    real_run, real_finished, real_reach = evaluations.run, evaluations.finished, faults.reach

    def run(ctx, node_id, stop=None):
        if _in_evaluator_thread():  # the run ahead: held until the loop either waits for it or overtakes it
            started.set()
            release.wait(60)
        elif any(node == node_id and not future.done() for (node, _), (future, _) in ctx.evaluating.items()):
            overlapped.append(node_id)  # the loop's thread runs the node's evaluators while its run ahead goes on
            release.set()
        return real_run(ctx, node_id, stop)

    def finished(ctx):  # the loop waits for evaluators that run: once the amendment is in, the run ahead may end
        if not evaluations.ahead(ctx):
            release.set()
        return real_finished(ctx)

    def reach(point):  # while A's evaluators run ahead and B runs, a person lets C run without the sandbox
        if point == "poll" and started.is_set() and not edited:
            plan = repo / ".ledger" / "state" / "turned" / "dag.yaml"
            plan.write_text(plan.read_text().replace("title: after A,", "title: after A, sandbox: none,"))
            (repo / ".scratch" / "MARK").write_text("")  # B returns: the edit is seen, and accepted
            edited.append(True)
        real_reach(point)
    monkeypatch.setattr(evaluations, "run", run)
    monkeypatch.setattr(evaluations, "finished", finished)
    monkeypatch.setattr(faults, "reach", reach)
    repo = campaign_repo(tmp_path, TURNED, RETURNS_LATER.replace("MARK", str(tmp_path / "repo" / ".scratch" / "MARK")))
    (tmp_path / "answers.yaml").write_text("dag-amendment: accept\n")
    result = orch("run", "--jobs", "2", "--answers", tmp_path / "answers.yaml", cwd=repo)
    assert edited and result.rc == 75, result.out + result.err  # at final acceptance
    assert overlapped == [], result.out + result.err


def _sandboxed_by_config(tmp_path, dag: str):
    """A campaign whose sandbox is the config's (B returns once MARK exists)."""
    repo = campaign_repo(tmp_path, dag, RETURNS_LATER.replace("MARK", str(tmp_path / "repo" / ".scratch" / "MARK")))
    config = repo / ".ledger" / "config.yaml"
    config.write_text((config.read_text() if config.exists() else "") + "sandbox: bwrap\n")
    return repo


def _off_at_a_poll(monkeypatch, repo, started: threading.Event, edited: list) -> None:
    """Once A's evaluators run ahead (`started`), while B runs in the sandbox, a person edits the config to
    `sandbox: none`; then B returns: the edit is seen, and kept (only sandboxed code ran)."""
    from orchestrate import faults
    real_reach = faults.reach

    def reach(point):
        if point == "poll" and started.is_set() and not edited:
            config = repo / ".ledger" / "config.yaml"
            config.write_text(config.read_text().replace("sandbox: bwrap", "sandbox: none"))
            (repo / ".scratch" / "MARK").write_text("")
            edited.append(True)
        real_reach(point)
    monkeypatch.setattr(faults, "reach", reach)


SETTLED_BY_CONFIG = """\
topic: cfg
workers: {sh: "./work.sh"}
defaults: {timeout: 120}
nodes:
  - {id: A, title: judged ahead, file_surface: [a/], discipline: sh, evaluators: [{name: ok, run: "true"}]}
  - {id: B, title: returns later, file_surface: [b/], discipline: sh}
  - {id: C, title: after B, depends_on: [B], file_surface: [c/], discipline: sh}
"""


def test_no_worker_starts_without_the_sandbox_while_evaluators_run_ahead_after_the_config_turned_it_off(
        tmp_path, orch, monkeypatch):
    """Evaluators run ahead only while every worker runs in the sandbox (nothing else can write the worktree being
    judged). `ahead` is decided once per DAG; a person's edit of config.yaml to `sandbox: none`, kept while A's
    evaluators ran ahead (the run reads it from then on), had C start without the sandbox while they still ran."""
    from orchestrate.engine import evaluations
    from orchestrate.engine.handlers import dispatch
    from orchestrate.workers import containment

    started, release, unboxed, edited = threading.Event(), threading.Event(), [], []
    real_run, real_finished, real_start = evaluations.run, evaluations.finished, dispatch.start

    def run(ctx, node_id, stop=None):
        if _in_evaluator_thread():
            started.set()
            release.wait(60)
        return real_run(ctx, node_id, stop)

    def finished(ctx):
        if edited and not ctx.executor.running():
            release.set()
        return real_finished(ctx)

    def start(ctx, node_id, base, **kwargs):
        if not containment.enabled(ctx, ctx.dag.by_id[node_id]) and any(not f.done() for f, _ in ctx.evaluating.values()):
            unboxed.append(node_id)
        real_start(ctx, node_id, base, **kwargs)
        if unboxed:
            release.set()

    monkeypatch.setattr(evaluations, "run", run)
    monkeypatch.setattr(evaluations, "finished", finished)
    monkeypatch.setattr(dispatch, "start", start)
    _off_at_a_poll(monkeypatch, tmp_path / "repo", started, edited)
    repo = _sandboxed_by_config(tmp_path, SETTLED_BY_CONFIG)
    result = orch("run", "--jobs", "2", cwd=repo)
    assert edited and result.rc == 75, result.out + result.err
    assert unboxed == [], result.out + result.err
    assert "kept" in result.out, result.out


TURNED_OFF_LATER = """\
topic: later
workers: {sh: "./work.sh"}
defaults: {timeout: 120}
nodes:
  - {id: A, title: judged ahead, file_surface: [a/], discipline: sh, evaluators: [{name: ok, run: "true"}]}
  - {id: B, title: lands after the edit, file_surface: [b/], discipline: sh, evaluators: [{name: ok, run: "true"}]}
"""


def test_no_evaluators_start_ahead_once_a_config_edit_turned_the_sandbox_off(tmp_path, orch, monkeypatch):
    """`ahead` was decided once per DAG: after a person's kept edit of config.yaml to `sandbox: none`, B, landing
    later, still had its evaluators run ahead, beside workers that would now start without the sandbox."""
    from orchestrate.engine import evaluations

    started, release, edited = threading.Event(), threading.Event(), []
    real_run, real_finished = evaluations.run, evaluations.finished

    def run(ctx, node_id, stop=None):
        if _in_evaluator_thread() and node_id == "A":  # held until the edit has been taken in
            started.set()
            release.wait(60)
        return real_run(ctx, node_id, stop)

    def finished(ctx):
        if edited and not evaluations.ahead(ctx):
            release.set()
        return real_finished(ctx)

    monkeypatch.setattr(evaluations, "run", run)
    monkeypatch.setattr(evaluations, "finished", finished)
    _off_at_a_poll(monkeypatch, tmp_path / "repo", started, edited)
    repo = _sandboxed_by_config(tmp_path, TURNED_OFF_LATER)
    result = orch("run", "--jobs", "2", cwd=repo)
    assert edited and result.rc == 75, result.out + result.err
    assert "kept" in result.out + result.err
    assert "A: evaluators started" in result.out and "B: evaluators started" not in result.out, result.out
