"""A worker's timeout holds while the loop is busy with something else: the campaign checks of another node's
merge, or evaluators run where the loop waits for them (without the sandbox). The loop took in timeouts only
when it polled its workers, so a 2 s timeout fired when the checks or the evaluators ended, minutes later on a
real project. Each waits for the hung worker to be killed, and fails if that never comes while it runs. And a
worker's time ends when it exits, not when the loop next looks."""
from __future__ import annotations

import os

import pytest

from tests.engine_helpers import campaign_repo, statuses

WORKER = """#!/bin/sh
if [ "$ORCH_NODE" = B ] && [ "$ORCH_ATTEMPT" = 1 ]; then exec sleep 300; fi
d=$(echo "$ORCH_NODE" | tr A-Z a-z)
mkdir -p "$d" && echo "$ORCH_NODE" > "$d/one.txt"
"""
# passes once B's first attempt was killed; gives up (fails) after about a minute
KILLED = ('n=0; while ! grep -q "killed after" "{log}" 2>/dev/null && [ $n -lt 1200 ]; do sleep 0.05; '
          'n=$((n + 1)); done; grep -q "killed after" "{log}"')
DAG = """\
topic: busy
workers: {{sh: "./work.sh"}}
defaults: {{timeout: 120, max_attempts: 2, sandbox: {sandbox}, unsandboxed: parallel}}
{checks}nodes:
  - {{id: A, title: judged while B hangs, file_surface: [a/], discipline: sh{evaluators}}}
  - {{id: B, title: hangs, file_surface: [b/], discipline: sh, timeout: 2}}
"""


def _log(tmp_path):
    return tmp_path / "repo" / ".scratch" / "runs" / "busy" / "B" / "attempt-1.log"


def test_a_workers_timeout_fires_while_another_nodes_campaign_checks_run(tmp_path, orch):
    checks = "checks: [{name: waits, run: '" + KILLED.format(log=_log(tmp_path)) + "'}]\n"
    repo = campaign_repo(tmp_path, DAG.format(sandbox="auto", checks=checks, evaluators=""), WORKER)
    result = orch("run", "--jobs", "2", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert "B: worker timed out" in result.out
    assert "A: ACCEPT (attempt 1)" in result.out  # its evaluator saw B killed while it ran
    assert statuses(repo, orch, "busy") == {"A": "ACCEPTED", "B": "ACCEPTED"}
    said = (repo / ".scratch" / "runs" / "busy" / "A" / "checks-1.log").read_text()
    assert "rc 0," in said, said  # the check saw B killed while it ran (not a failure found on the head too)


def test_a_workers_timeout_fires_while_evaluators_the_loop_waits_for_run(tmp_path, orch):
    evaluators = ", evaluators: [{name: waits, run: '" + KILLED.format(log=_log(tmp_path)) + "'}]"
    repo = campaign_repo(tmp_path, DAG.format(sandbox="none", checks="", evaluators=evaluators), WORKER)
    result = orch("run", "--jobs", "2", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert "B: worker timed out" in result.out
    assert "A: ACCEPT (attempt 1)" in result.out  # its evaluator saw B killed while it ran
    assert statuses(repo, orch, "busy") == {"A": "ACCEPTED", "B": "ACCEPTED"}


def test_a_workers_seconds_end_when_it_exits_not_when_the_loop_next_looks(tmp_path, monkeypatch):
    """The loop took in a return after another node's merge or evaluators, and counted the time in between as
    the worker's: in `worker exited 0 after Ns`, the report and the retrospective's seconds a node. Here the
    clock jumps an hour between the exit and the poll."""
    import time

    from orchestrate.workers import exits, local
    if (fd := exits.exit_fd(os.getpid())) is None:
        pytest.skip("no pidfd here: a worker's end is seen at the next poll")
    os.close(fd)
    ex = local.LocalExecutor(1)
    ex.start(local.WorkRequest("A", 1, "true", tmp_path, dict(os.environ), tmp_path / "runs" / "attempt-1.log",
                               tmp_path / "runs" / "r.json", 7200.0))
    ex.live["A"].watcher.join(60)  # it saw the exit
    real = time.monotonic
    monkeypatch.setattr(local.time, "monotonic", lambda: real() + 3600)
    [outcome] = ex.poll()
    assert outcome.rc == 0 and outcome.seconds < 3600, outcome


def _request(tmp_path, command, timeout):
    from orchestrate.workers import local
    return local.WorkRequest("A", 1, command, tmp_path, dict(os.environ), tmp_path / "runs" / "attempt-1.log",
                             tmp_path / "runs" / "r.json", timeout)


def test_without_an_exit_descriptor_a_worker_that_exited_in_time_is_not_called_timed_out(tmp_path, monkeypatch):
    """Where there is no pidfd (an old kernel, a seccomp filter, no descriptor left), the watcher only sleeps out
    the timeout. A worker that had exited by then (its return not yet taken in: the loop busy elsewhere) was
    'killed', said so in its log, and reported as timed out (124) instead of its exit status."""
    import threading

    from orchestrate.workers import exits, local
    monkeypatch.setattr(exits, "exit_fd", lambda pid: None)

    class Late(threading.Event):  # the timeout passes after the worker exited, before the loop looks
        def __init__(self, pid):
            super().__init__()
            self.pid = pid

        def wait(self, timeout=None):
            os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)  # it has exited (not reaped)
            return False

    watch = local._Running.watch

    def late(run):
        run.done = Late(run.popen.pid)
        watch(run)
    monkeypatch.setattr(local._Running, "watch", late)
    ex = local.LocalExecutor(1)
    ex.start(_request(tmp_path, "true", 7200.0))
    ex.live["A"].watcher.join(60)
    [outcome] = ex.poll()
    assert (outcome.rc, outcome.timed_out) == (0, False), outcome
    assert "killed after" not in (tmp_path / "runs" / "attempt-1.log").read_text()


def test_a_worker_killed_at_its_timeout_is_counted_until_it_was_killed_not_until_the_loop_next_looks(tmp_path,
                                                                                                    monkeypatch):
    """The watcher kills a hung worker on time, but its `seconds` ran on to the loop's next poll: an hour later
    here, where the clock jumps between the kill and the poll."""
    import time

    from orchestrate.workers import local
    ex = local.LocalExecutor(1)
    ex.start(_request(tmp_path, "exec sleep 300", 0.5))
    ex.live["A"].watcher.join(60)  # it killed the worker
    real = time.monotonic
    monkeypatch.setattr(local.time, "monotonic", lambda: real() + 3600)
    [outcome] = ex.poll()
    assert (outcome.rc, outcome.timed_out) == (124, True), outcome
    assert outcome.seconds < 3600, outcome


def test_a_ctrl_c_just_after_a_worker_was_reaped_sends_its_group_no_signal(tmp_path, monkeypatch):
    """Ctrl-C (or SIGTERM, raised as KeyboardInterrupt) lands in poll after the worker was reaped but before it
    left `live` (here in kill_tagged, which reads every process's environment): cancel_all then signalled its
    process group though its pid was free to be reused."""
    from orchestrate import proc, reaping
    from orchestrate.workers import local
    ex = local.LocalExecutor(1)
    ex.start(_request(tmp_path, "true", 7200.0))
    pid = ex.live["A"].popen.pid
    ex.live["A"].watcher.join(60)  # it exited

    def interrupted(tags, **kw):
        raise KeyboardInterrupt
    monkeypatch.setattr(reaping, "kill_tagged", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ex.poll()
    assert ex.live["A"].popen.returncode == 0  # reaped: its pid may be another process's now
    monkeypatch.setattr(reaping, "kill_tagged", lambda tags, **kw: [])
    signalled = []
    monkeypatch.setattr(proc, "kill_group", lambda pid, grace=0.0: signalled.append(pid))
    ex.cancel_all()
    assert pid not in signalled
    assert not ex.live


def test_a_watcher_that_cannot_start_leaves_the_worker_to_the_loop_and_cancel_all_stops_it(tmp_path, monkeypatch):
    """One thread per worker: where none can be had (a container's pids limit, reached by the workers' own
    processes), watch() raised after the worker had started: its pid was never journalled (on_spawn comes
    after), and cancel_all, joining a thread never started, raised before it stopped it or any other."""
    import threading

    from orchestrate.workers import local
    start = threading.Thread.start

    def refused(thread):
        if thread.name.startswith("worker-"):
            raise RuntimeError("can't start new thread")
        start(thread)
    monkeypatch.setattr(threading.Thread, "start", refused)
    spawned = []
    ex = local.LocalExecutor(2, on_spawn=lambda request, pid: spawned.append(pid))
    try:
        ex.start(_request(tmp_path, "exec sleep 300", 7200.0))
        assert len(spawned) == 1  # journalled
        popen = ex.live["A"].popen
        ex.cancel_all()
        assert popen.returncode is not None and not ex.live
    finally:  # a failure here leaves no sleep behind
        for run in ex.live.values():
            run.popen.kill()
            run.popen.wait()
