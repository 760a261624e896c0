"""An answer to a node seam given while the eager run that opened it is gone (killed mid-run, its lock
left to a dead pid) must be the one the campaign applies: neither asked again nor dropped. Runners are
real processes; every wait is on a journal entry, with a deadline that only bounds a failure."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from orchestrate.recorder.lock import CampaignLock
from tests.engine_helpers import campaign_repo, journal, statuses
from tests.test_seams_eager import LIVE, LIVE_DAG, _paused_at_f, _until, needs_bwrap


@needs_bwrap
def test_an_answer_recorded_after_the_runner_was_killed_at_an_open_node_seam_is_applied_on_resume(tmp_path, orch):
    release = tmp_path / "repo" / ".scratch" / "release"  # where the sandboxed worker can see it
    repo = campaign_repo(tmp_path, LIVE_DAG.format(sandbox="auto"), LIVE.replace("RELEASE", str(release)))
    runner = subprocess.Popen([sys.executable, "-m", "orchestrate", "run", "--jobs", "2"], cwd=repo,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=os.environ.copy())
    try:  # F's seam is open and the run goes on past it (W runs on): the runner dies there
        _until(repo, "live", lambda e: e["kind"] == "transition" and e["context"]["outcome"] == "deferred",
               runner, "the run going on past F's seam")
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=60)
    finally:
        release.parent.mkdir(parents=True, exist_ok=True)
        release.write_text("go\n")  # W's worker, left by the dead runner, ends whatever happens
        if runner.poll() is None:
            runner.kill()
        runner.stdout.close()
    answered = orch("decide", "realignment", "rework", "--note", "NOTE-FIX", cwd=repo)
    assert answered.rc == 0 and "recorded: realignment rework" in answered.out, answered.out + answered.err
    done = orch("resume", "--topic", "live", cwd=repo)
    # the recorded answer is applied, not asked again: F's second attempt carries the note, passes and merges
    assert done.rc == 75 and "final-acceptance" in done.out, done.out + done.err
    assert statuses(repo, orch, "live") == {"F": "ACCEPTED", "W": "ACCEPTED"}
    seams_for_f = [e for e in journal(repo, "live") if e["kind"] == "seam" and e["context"].get("node") == "F"]
    assert len(seams_for_f) == 1, [e["id"] for e in seams_for_f]


@needs_bwrap
def test_an_answer_left_for_a_runner_that_died_is_not_replaced_by_a_later_one(tmp_path, orch):
    repo = _paused_at_f(tmp_path, orch, "auto")
    with CampaignLock(repo / ".scratch" / "locks", "live"):  # as a running runner holds it
        left = orch("decide", "realignment", "rework", "--note", "NOTE-FIX", cwd=repo)
        assert left.rc == 0 and "left for the running campaign" in left.out, left.out + left.err
    # the runner is gone (its lock free) before it took the answer: a second person's answer is refused as
    # it was while the runner lived, naming the one that waits, and nothing is recorded for it
    second = orch("decide", "realignment", "halt", "--note", "second-person", cwd=repo)
    assert second.rc == 4, second.out + second.err
    assert "already waits" in second.err and "rework by test@example.com" in second.err, second.err
    assert "orchestrate resume --topic live" in second.err
    assert not [e for e in journal(repo, "live") if e["kind"] == "decision"]
    assert json.loads((repo / ".scratch" / "answers" / "live.json").read_text())["choice"] == "rework"
    done = orch("resume", "--topic", "live", cwd=repo)  # the first answer is the one applied
    assert done.rc == 75 and "final-acceptance" in done.out, done.out + done.err
    decisions = [e["context"] for e in journal(repo, "live") if e["kind"] == "decision"]
    assert [(d["choice"], d["note"]) for d in decisions[:1]] == [("rework", "NOTE-FIX")]
    assert statuses(repo, orch, "live")["F"] == "ACCEPTED"


def test_the_fold_lets_an_answer_waiting_to_be_applied_settle_its_node_asked_again_meanwhile():
    from orchestrate.recorder.campaign import Campaign, apply

    def seam(i: int, node: str) -> dict:
        return {"kind": "seam", "id": f"t:{i}", "context": {"seam": "realignment", "node": node, "choices": ["skip"]}}

    c = Campaign()
    apply(c, seam(1, "E"))
    apply(c, {"kind": "decision", "id": "t:2", "context": {"seam": "realignment", "node": "E", "choice": "rework"}})
    apply(c, seam(3, "E"))  # E asked again before its answer was applied (journals of the bug, rv47)
    apply(c, seam(4, "G"))  # another node's seam still waits its turn
    apply(c, {"kind": "applied", "id": "t:5", "context": {"decision": "t:2"}})
    assert c.seam["id"] == "t:4" and c.queued == []


def test_realign_asks_about_another_node_than_the_one_whose_answer_waits_to_be_applied(tmp_path):
    """A resume entering RECONCILE judges before it reaches that answer: a node escalating there is the one
    REALIGN asks about, not the answered one again."""
    from types import SimpleNamespace

    from orchestrate.dag.load import load_dag
    from orchestrate.engine.handlers import realign
    from orchestrate.recorder.campaign import Campaign, apply
    dag_file = tmp_path / "dag.yaml"
    dag_file.write_text("topic: t\nnodes:\n  - {id: E, title: e, file_surface: [e/], worker: 'true', brief: e}\n"
                        "  - {id: G, title: g, file_surface: [g/], worker: 'true', brief: g}\n")
    c = Campaign(layers=[["E", "G"]], schedule="eager")
    for n in ("E", "G"):
        apply(c, {"kind": "node", "id": f"t:{n}", "context": {"node": n, "status": "REWORK", "verdict": "escalate",
                                                                "attempt": 1, "failures": 1, "feedback": "red"}})
    apply(c, {"kind": "seam", "id": "t:1", "context": {"seam": "realignment", "node": "E", "choices": ["rework"]}})
    apply(c, {"kind": "decision", "id": "t:2", "context": {"seam": "realignment", "node": "E", "choice": "rework"}})
    node, case, _ = realign._why(SimpleNamespace(campaign=c, dag=load_dag(dag_file)))
    assert (node, case) == ("G", "attempts-spent")
