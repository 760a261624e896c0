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
      {name: plants, run: 'echo PLANTED >> "$HOME/.bashrc"; n=0; while [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done'},
      {name: late, run: 'echo LATE >> "$HOME/.bashrc"'}]}
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
                    if "PLANTED" in (home / ".bashrc").read_text():
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
    assert (home / ".bashrc").read_text() == "# mine\n", result.out + result.err  # put back; `late` never ran
    assert "changed what no worker may change" in result.out + result.err
