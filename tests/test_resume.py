"""Resume: the same state from checkpoints or the journal alone, checkpoint refusals, the campaign lock,
the recorder's compare-and-swap, and Ctrl-C."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from orchestrate.engine.resume import rebuild
from orchestrate.recorder import checkpoints
from orchestrate.recorder.journal import Recorder
from orchestrate.recorder.paths import Layout
from tests.engine_helpers import campaign_repo, until
from tests.helpers import RepoDir
from tests.test_engine_e2e import DAG, WORKER


@pytest.fixture
def paused(tmp_path, orch):
    """The six-node campaign, run to its final-acceptance seam."""
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert orch("run", "--jobs", "2", cwd=repo).rc == 75
    return repo


def test_from_log_gives_the_same_state_as_checkpoints(paused):
    layout = Layout(paused)
    notes: list[str] = []
    with_cp = rebuild(layout, Recorder(layout.ledger, "six"), from_log=False, warn=notes.append)
    from_log = rebuild(layout, Recorder(layout.ledger, "six"), from_log=True, warn=notes.append)
    assert notes == []
    assert checkpoints.listing(layout.checkpoints("six"), "six")  # there were checkpoints to use
    assert with_cp.to_dict() == from_log.to_dict()
    import dataclasses
    assert with_cp.to_dict() == dataclasses.asdict(with_cp)  # the checkpoint's plain data is the whole state


def _newest_checkpoint(repo):
    return checkpoints.listing(Layout(repo).checkpoints("six"), "six")[-1]


def _rewrite_checkpoint(repo, edit) -> None:
    """Change the newest checkpoint as an orchestrate that wrote it so would have: committed in the recorder
    (one changed behind the recorder's back is put back first: see the tests below)."""
    path = _newest_checkpoint(repo)
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    RepoDir(repo / ".ledger").commit("six: a checkpoint written by another orchestrate")


def test_a_newer_checkpoint_version_refuses_resume_but_from_log_works(paused, orch):
    _rewrite_checkpoint(paused, lambda data: data.update(schema_version=2))
    refused = orch("resume", "--topic", "six", cwd=paused)
    assert refused.rc == 1 and "schema_version 2" in refused.err and "--from-log" in refused.err
    again = orch("resume", "--topic", "six", "--from-log", cwd=paused)
    assert again.rc == 75 and "final-acceptance" in again.out


def test_k9_the_journal_wins_over_a_checkpoint_that_disagrees(paused):
    true_tip = json.loads(_newest_checkpoint(paused).read_text())["state"]["tip"]
    _rewrite_checkpoint(paused, lambda data: data["state"].update(tip="0" * 40))
    layout = Layout(paused)
    notes: list[str] = []
    campaign = rebuild(layout, Recorder(layout.ledger, "six"), from_log=False, warn=notes.append)
    assert campaign.tip == true_tip
    assert any("disagrees with the journal on tip" in n for n in notes)


def test_a_second_runner_is_refused_with_who_holds_the_campaign(paused, orch):
    import fcntl
    lock_dir = paused / ".scratch" / "locks"
    (lock_dir / "six.json").write_text(json.dumps({"pid": 4711, "host": "elsewhere", "started": "2026-11-22T10:00:00Z"}))
    with open(lock_dir / "six.lock", "a") as held:  # any flock holder, not only another orchestrate
        fcntl.flock(held, fcntl.LOCK_EX)
        result = orch("resume", "--topic", "six", cwd=paused)
    assert result.rc == 4
    assert "campaign six is being run by pid 4711 on elsewhere since 2026-11-22T10:00:00Z" in result.err


def test_a_dead_holders_lock_is_taken_over_with_a_notice(paused, orch):
    lock_dir = paused / ".scratch" / "locks"
    import socket
    (lock_dir / "six.json").write_text(json.dumps({"pid": 999999, "host": socket.gethostname(), "started": "x"}))
    result = orch("resume", "--topic", "six", cwd=paused)
    assert result.rc == 75
    assert "took over the lock of pid 999999" in result.out


def test_a_recorder_moved_under_the_runner_is_refused_with_exit_4(paused):
    from orchestrate.errors import Concurrency
    ledger = paused / ".ledger"
    rec = Recorder(ledger, "six").pin()  # as a runner does when it starts
    RepoDir(ledger).commit("someone else writes here", {"note.txt": "x\n"})
    (ledger / "extra.txt").write_text("y\n")
    with pytest.raises(Concurrency) as exc:
        rec.commit("six: a transition")
    assert exc.value.exit_code == 4
    assert "someone else writes here" in str(exc.value) and "Test Person" in str(exc.value)


SLOW = r"""#!/bin/sh
if [ "$ORCH_ATTEMPT" = 1 ] && [ ! -e "$ORCH_WORKTREE/../../../ctrl-c-done" ]; then
  sh -c 'sleep 300; : orchestrate-ctrlc-marker' &  # the marker in a live process's command line (a child)
  sleep 300
fi
echo done > n1.txt && git add -A && git commit -qm N1
"""


def test_ctrl_c_stops_the_workers_and_resume_continues(tmp_path):
    dag = ('topic: stop\nworkers: {sh: "./work.sh"}\nnodes:\n'
           '  - {id: N1, title: one, depends_on: [], file_surface: [n1.txt], discipline: sh}\n')
    repo = campaign_repo(tmp_path, dag, SLOW)
    env = dict(os.environ, CI="true")
    runner = subprocess.Popen([sys.executable, "-m", "orchestrate", "run"], cwd=repo, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    for _ in range(200):
        if subprocess.run(["pgrep", "-f", "orchestrate-ctrlc-marker"], capture_output=True).returncode == 0:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the worker never started its child")
    runner.send_signal(signal.SIGINT)
    out, err = runner.communicate(timeout=60)
    assert runner.returncode == 130, out + err
    assert "orchestrate resume" in err
    assert subprocess.run(["pgrep", "-f", "orchestrate-ctrlc-marker"], capture_output=True).returncode == 1
    (repo / ".scratch" / "ctrl-c-done").write_text("")
    done = subprocess.run([sys.executable, "-m", "orchestrate", "resume"], cwd=repo, env=env, text=True,
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 75, done.stdout + done.stderr
    assert repo.git("show", "campaign/stop:n1.txt") == "done"


def test_a_missing_worktree_of_a_landed_node_is_recreated_from_its_branch(tmp_path):
    import shutil as sh
    worker = "#!/bin/sh\nset -eu\necho x > n1.txt && git add -A && git commit -qm N1\n"
    dag = ('topic: gone\nworkers: {sh: "./work.sh"}\ndefaults: {max_attempts: 1}\n'
           'nodes:\n  - {id: N1, title: one, depends_on: [], file_surface: [n1.txt], discipline: sh,\n'
           '     evaluators: [{name: made, run: "test -f n1.txt"}]}\n')
    repo = campaign_repo(tmp_path, dag, worker)
    env = dict(os.environ, CI="true", ORCHESTRATE_FAULT="commit:4")  # dies recording AWAIT -> RECONCILE
    crashed = subprocess.run([sys.executable, "-m", "orchestrate", "run"], cwd=repo, env=env, capture_output=True,
                             text=True, stdin=subprocess.DEVNULL)
    assert crashed.returncode == -signal.SIGKILL
    sh.rmtree(repo / ".scratch" / "worktrees" / "gone" / "N1")
    env.pop("ORCHESTRATE_FAULT")
    resumed = subprocess.run([sys.executable, "-m", "orchestrate", "resume"], cwd=repo, env=env, capture_output=True,
                             text=True, stdin=subprocess.DEVNULL)
    assert resumed.returncode == 75, resumed.stdout + resumed.stderr
    assert "worktree .scratch/worktrees/gone/N1 was missing; recreated from node/gone/N1" in resumed.stdout
    assert "final-acceptance" in resumed.stdout


HELD = r"""#!/bin/sh
if [ "$ORCH_ATTEMPT" -lt 3 ]; then
  sh -c "sleep 300; : orchestrate-held-marker-$ORCH_ATTEMPT" &
  sleep 300
fi
echo done > n1.txt && git add -A && git commit -qm N1
"""


def test_an_attempt_resume_starts_again_is_recorded_before_it_runs(tmp_path):
    """rv45: the repairs of a resume (an attempt cut off, started again) were held until the next transition:
    `status` showed the attempt cut off as the one running, and a Ctrl-C then lost them, so each resume said
    the first attempt was cut off again."""
    dag = ('topic: held\nworkers: {sh: "./work.sh"}\nnodes:\n'
           '  - {id: N1, title: one, depends_on: [], file_surface: [n1.txt], discipline: sh}\n')
    repo = campaign_repo(tmp_path, dag, HELD)
    env = dict(os.environ, CI="true")
    said = []
    for attempt, command in ((1, "run"), (2, "resume")):
        runner = subprocess.Popen([sys.executable, "-m", "orchestrate", command], cwd=repo, env=env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        marker = f"orchestrate-held-marker-{attempt}"
        for _ in range(400):
            if subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0:
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"attempt {attempt}'s worker never started")
        for _ in range(100):  # the resume records its repairs as the attempt it started again runs
            state = json.loads(subprocess.run([sys.executable, "-m", "orchestrate", "status", "--json"], cwd=repo,
                                              env=env, capture_output=True, text=True).stdout)
            if [n["attempt"] for n in state["nodes"] if n["id"] == "N1"] == [attempt]:
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"status never showed attempt {attempt} while it ran: {state}")
        runner.send_signal(signal.SIGINT)
        out, err = runner.communicate(timeout=60)
        assert runner.returncode == 130, out + err
        said.append(out)
    assert "repair: N1: attempt 1 was cut off" in said[1]
    done = subprocess.run([sys.executable, "-m", "orchestrate", "resume"], cwd=repo, env=env, text=True,
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 75, done.stdout + done.stderr
    assert "repair: N1: attempt 2 was cut off" in done.stdout and "attempt 1 was cut off" not in done.stdout


# A waits until B's worker has started (or gives up): with -j 1, B can only start once a resumed run with more
# slots starts it beside A's attempt that resume started again.
BESIDE = """#!/bin/sh
set -eu
if [ "$ORCH_NODE" = A ]; then
  echo $$ > "$ORCH_RUN_DIR_MARK"
  n=0
  while [ ! -f "$ORCH_RUN_DIR_MARK-B" ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n + 1)); done
  test -f "$ORCH_RUN_DIR_MARK-B"
fi
if [ "$ORCH_NODE" = B ]; then touch "$ORCH_RUN_DIR_MARK-B"; fi
echo "$ORCH_NODE" > "$ORCH_NODE.txt"
"""


def _fill(tmp_path, schedule: str):
    mark = tmp_path / "a-started"
    worker = BESIDE.replace("$ORCH_RUN_DIR_MARK", str(mark))
    dag = (f'topic: fill\nschedule: {schedule}\nworkers: {{sh: "./work.sh"}}\ndefaults: {{sandbox: none, '
           'unsandboxed: parallel}\nnodes:\n' + "".join(
               f"  - {{id: {n}, title: {n}, depends_on: [], file_surface: [{n}.txt], discipline: sh}}\n" for n in "ABC"))
    return campaign_repo(tmp_path, dag, worker), mark


def _resumed_with_more_jobs(repo, orch) -> list[dict]:
    resumed = orch("resume", "-j", "3", cwd=repo)
    assert resumed.rc == 75, resumed.out + resumed.err
    assert "repair: A: attempt 1 was cut off" in resumed.out
    entries = [json.loads(line) for line in (repo / ".ledger" / "state" / "fill" / "journal.jsonl").read_text().splitlines()]
    b_started = next(i for i, e in enumerate(entries) if e["kind"] == "node" and e["context"].get("node") == "B"
                     and e["context"].get("status") == "DISPATCHED")
    a_returned = next(i for i, e in enumerate(entries) if e["kind"] == "result" and e["context"].get("node") == "A"
                      and e["context"].get("effect") == "worker-start" and "rc" in e["context"])
    assert b_started < a_returned
    assert entries[a_returned]["context"] == {**entries[a_returned]["context"], "attempt": 2, "rc": 0}
    return entries


@pytest.mark.parametrize("schedule", ["eager", "layered"])
def test_a_resume_with_more_jobs_starts_the_nodes_waiting_for_a_slot_at_once(tmp_path, orch, schedule):
    """rv47: `run -j 1` stopped while A ran, then `resume -j 3`: B and C waited until the attempt of A that resume
    started again had returned, though two slots were free."""
    repo, mark = _fill(tmp_path, schedule)
    env = dict(os.environ, CI="true")
    runner = subprocess.Popen([sys.executable, "-m", "orchestrate", "run", "-j", "1"], cwd=repo, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    journal = repo / ".ledger" / "state" / "fill" / "journal.jsonl"
    until(lambda: mark.exists() and journal.exists() and '"to":"AWAIT"' in journal.read_text(), runner,
          "A ran and the run waited for it (B and C queued for the slot)")
    runner.send_signal(signal.SIGTERM)  # wherever it lands from here on: see the test below
    out, err = runner.communicate(timeout=60)
    assert runner.returncode == 130, out + err
    _resumed_with_more_jobs(repo, orch)


@pytest.mark.parametrize("schedule", ["eager", "layered"])
def test_an_interrupt_once_dispatch_is_recorded_stops_the_run_in_await(tmp_path, orch, schedule):
    """rv63: SIGTERM (or Ctrl-C) landing after DISPATCH -> AWAIT was written to the journal, while it was committed
    (a loaded machine makes that long), was taken for one in DISPATCH: A's attempt, recorded and running, was
    undone as never recorded, and the resume started attempt 1 again instead of repairing the one cut off."""
    from tests.engine_helpers import cli
    repo, _ = _fill(tmp_path, schedule)
    # flushes: DERIVE -> RUN_LAYER, RUN_LAYER -> DISPATCH, DISPATCH -> AWAIT: SIGTERM once that one is written
    stopped = cli(repo, "run", "-j", "1", fault="flush:3:term")
    assert stopped.returncode == 130, stopped.stdout + stopped.stderr
    assert "interrupted in AWAIT" in stopped.stderr + stopped.stdout
    entries = [json.loads(line) for line in (repo / ".ledger" / "state" / "fill" / "journal.jsonl").read_text().splitlines()]
    moves = [e["context"]["subject"] for e in entries if e["kind"] == "transition"]
    assert moves[-1].startswith("fill: DISPATCH dispatched -> AWAIT (A"), moves  # (layered: B and C queued too)
    assert [e["context"] for e in entries if e["kind"] == "interrupt"] == [{"state": "AWAIT"}]
    a = [e["context"] for e in entries if e["kind"] == "node" and e["context"]["node"] == "A"]
    assert [n["status"] for n in a] == ["DISPATCHED"]  # not undone: its worker was started and recorded
    _resumed_with_more_jobs(repo, orch)
