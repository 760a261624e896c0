"""Under the eager schedule a seam about one node does not stop the rest, and `decide` answers while the
run goes on. Orders are read from the journal; waits poll with a deadline that only bounds a failure."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from orchestrate.recorder.lock import CampaignLock
from orchestrate.workers import sandbox
from tests.engine_helpers import campaign_repo, statuses

REASON = sandbox.probe()
needs_bwrap = pytest.mark.skipif(REASON is not None, reason=f"bubblewrap does not work here: {REASON}")

# F passes only once its brief carries the person's note; W waits for the test's release file
LIVE_DAG = """\
topic: live
schedule: eager
workers: {{sh: "./work.sh"}}
defaults: {{timeout: 120, max_attempts: 1, sandbox: {sandbox}}}
nodes:
  - {{id: F, title: needs a note, file_surface: [f/], discipline: sh, evaluators: [{{name: noted, run: "test -f f/noted.txt"}}]}}
  - {{id: W, title: waits, file_surface: [w/], discipline: sh}}
"""
LIVE = r"""#!/bin/sh
case "$ORCH_NODE" in
  F) mkdir -p f && echo F > f/one.txt
     if grep -q NOTE-FIX "$ORCH_BRIEF"; then echo ok > f/noted.txt; fi ;;
  W) n=0
     while [ ! -f "RELEASE" ] && [ "$n" -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done
     mkdir -p w && echo W > w/one.txt ;;
esac
"""


def _entries(repo, topic: str) -> list[dict]:
    """The journal as a reader sees it while the runner writes: a torn last line is not read."""
    from orchestrate.recorder import segments
    out = []
    for line in segments.lines(repo / ".ledger" / "state" / topic / "journal.jsonl"):
        try:
            out.append(json.loads(line))
        except ValueError:
            break
    return out


def _until(repo, topic: str, pred, runner: subprocess.Popen, what: str) -> list[dict]:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        entries = _entries(repo, topic)
        if any(pred(e) for e in entries):
            return entries
        if runner.poll() is not None:
            pytest.fail(f"the runner ended (rc {runner.returncode}) before {what}: {runner.stdout.read()}")
        time.sleep(0.05)
    runner.kill()
    pytest.fail(f"no {what} within 90 s")


def _index(entries: list[dict], pred) -> int:
    return next(i for i, e in enumerate(entries) if pred(e))


@needs_bwrap
def test_decide_while_the_run_goes_on_is_applied_by_the_runner(tmp_path, orch):
    release = tmp_path / "repo" / ".scratch" / "release"
    repo = campaign_repo(tmp_path, LIVE_DAG.format(sandbox="auto"), LIVE.replace("RELEASE", str(release)))
    runner = subprocess.Popen([sys.executable, "-m", "orchestrate", "run", "--jobs", "2"], cwd=repo,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=os.environ.copy())
    try:
        _until(repo, "live", lambda e: e["kind"] == "seam" and e["context"]["node"] == "F", runner, "seam for F")
        left = orch("decide", "realignment", "rework", "--note", "NOTE-FIX", cwd=repo)
        assert left.rc == 0 and "left for the running campaign" in left.out, left.out + left.err
        # the runner applies it while W still runs: F's second attempt passes and merges
        _until(repo, "live", lambda e: e["kind"] == "merge" and e["context"]["node"] == "F", runner, "F's merge")
        release.parent.mkdir(parents=True, exist_ok=True)
        release.write_text("go\n")
        out, _ = runner.communicate(timeout=120)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 75 and "final-acceptance" in out, out
    assert "the run goes on with what does not wait for it" in out
    entries = _entries(repo, "live")
    decision = next(e for e in entries if e["kind"] == "decision")
    assert decision["source_type"] == "human" and decision["context"]["who"] == "test@example.com"
    assert decision["context"]["choice"] == "rework" and decision["context"]["node"] == "F"
    w_returns = _index(entries, lambda e: e["kind"] == "result" and e["context"].get("node") == "W"
                       and e["context"].get("effect") == "worker-start" and "rc" in e["context"])
    assert _index(entries, lambda e: e is decision) < w_returns  # picked up while W was running
    assert statuses(repo, orch, "live") == {"F": "ACCEPTED", "W": "ACCEPTED"}


def _paused_at_f(tmp_path, orch, sandbox_mode: str):
    repo = campaign_repo(tmp_path, LIVE_DAG.format(sandbox=sandbox_mode), LIVE.replace("RELEASE", "work.sh"))
    first = orch("run", cwd=repo)
    assert first.rc == 75 and "seam realignment for node F" in first.out, first.out + first.err
    return repo


@needs_bwrap
def test_an_answer_left_while_a_runner_holds_the_campaign_waits_for_it_and_is_never_lost(tmp_path, orch):
    repo = _paused_at_f(tmp_path, orch, "auto")
    with CampaignLock(repo / ".scratch" / "locks", "live"):  # as a running runner holds it
        left = orch("decide", "realignment", "rework", "--note", "NOTE-FIX", cwd=repo)
        assert left.rc == 0 and "left for the running campaign" in left.out, left.out + left.err
        again = orch("decide", "realignment", "skip", cwd=repo)
        assert again.rc == 4 and "already waits" in again.err, again.out + again.err
        wrong = orch("decide", "review-divergence", "accept", cwd=repo)
        assert wrong.rc == 2, wrong.out + wrong.err  # not the open seam: refused, nothing left
    assert json.loads((repo / ".scratch" / "answers" / "live.json").read_text())["choice"] == "rework"
    done = orch("resume", "--topic", "live", cwd=repo)  # the runner that stopped meanwhile: resume applies it
    assert done.rc == 75 and "final-acceptance" in done.out, done.out + done.err
    decision = next(e for e in _entries(repo, "live") if e["kind"] == "decision")
    assert (decision["context"]["choice"], decision["source_type"]) == ("rework", "human")
    assert statuses(repo, orch, "live")["F"] == "ACCEPTED"



@pytest.mark.parametrize("holder", ["decide", "abandon"])
def test_decide_while_another_command_holds_a_paused_campaign_is_refused_not_left_for_no_runner(tmp_path, orch,
                                                                                              holder):
    repo = _paused_at_f(tmp_path, orch, "auto")
    with CampaignLock(repo / ".scratch" / "locks", "live", holder):  # another decide recording its answer
        refused = orch("decide", "realignment", "skip", "--note", "mine", cwd=repo)
        assert f"held by `orchestrate {holder}`: pid {os.getpid()} on " in orch("status", cwd=repo).out
    assert refused.rc == 4 and f"campaign live is held by `orchestrate {holder}` (pid {os.getpid()} on " in refused.err
    assert "try again" in refused.err and not (repo / ".scratch" / "answers" / "live.json").exists()
    assert orch("decide", "realignment", "skip", "--note", "mine", cwd=repo).rc == 0  # once it is free


def test_an_answer_left_twice_at_once_is_taken_once_and_the_second_is_told(tmp_path):
    import threading
    from types import SimpleNamespace

    from orchestrate.errors import Concurrency
    from orchestrate.seams import inbox
    layout = SimpleNamespace(scratch=tmp_path)
    seam = {"id": "live:9", "seam": "realignment", "node": "F", "choices": ["rework", "skip"]}
    results: list[str] = []

    def leave(choice: str) -> None:
        try:
            inbox.leave(layout, "live", seam, choice, "", choice)
            results.append(f"left {choice}")
        except Concurrency:
            results.append(f"refused {choice}")

    with inbox._turn(inbox.path(layout, "live")):  # both wait for their turn, then go one after the other
        threads = [threading.Thread(target=leave, args=(c,)) for c in ("rework", "skip")]
        for t in threads:
            t.start()
        time.sleep(0.2)
        assert results == []
    for t in threads:
        t.join()
    assert sorted(r.split()[0] for r in results) == ["left", "refused"]
    kept = inbox.waiting(layout, "live", seam)
    assert f"left {kept['choice']}" in results


def test_an_answer_that_cannot_get_its_turn_is_refused_with_a_hint_not_a_traceback(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from orchestrate.errors import Concurrency
    from orchestrate.flock import FileLock
    from orchestrate.seams import inbox
    layout = SimpleNamespace(scratch=tmp_path)
    monkeypatch.setattr(inbox, "TURN_WAIT", 0.1)
    target = inbox.path(layout, "live")
    target.parent.mkdir(parents=True)
    with FileLock(target.with_name(f"{target.name}.lock")):  # a wedged holder
        with pytest.raises(Concurrency) as refused:
            inbox.leave(layout, "live", {"id": "live:9", "seam": "realignment"}, "skip", "", "p@x")
    assert "held the answers for 0.1 s" in refused.value.message and not target.exists()

def test_a_campaign_with_unsandboxed_workers_takes_no_answer_while_it_runs(tmp_path, orch):
    repo = _paused_at_f(tmp_path, orch, "none")
    with CampaignLock(repo / ".scratch" / "locks", "live"):
        refused = orch("decide", "realignment", "rework", "--note", "NOTE-FIX", cwd=repo)
    assert refused.rc == 4 and "without the sandbox" in refused.err, refused.out + refused.err
    assert not (repo / ".scratch" / "answers" / "live.json").exists()
    # a file planted there (as such a worker could) is not taken either
    planted = repo / ".scratch" / "answers" / "live.json"
    planted.parent.mkdir(parents=True, exist_ok=True)
    seam = next(e for e in _entries(repo, "live") if e["kind"] == "seam")
    planted.write_text(json.dumps({"seam_id": seam["id"], "seam": "realignment", "choice": "skip",
                                   "note": "", "who": "worker"}))
    again = orch("resume", "--topic", "live", cwd=repo)
    assert again.rc == 75 and "seam realignment for node F" in again.out, again.out + again.err
    assert not [e for e in _entries(repo, "live") if e["kind"] == "decision"]


QUEUE_DAG = """\
topic: queue
schedule: eager
workers: {sh: "./work.sh"}
defaults: {timeout: 60, max_attempts: 1}
nodes:
  - {id: F, title: fails, file_surface: [f/], discipline: sh, evaluators: [{name: never, run: "false"}]}
  - {id: H, title: halts, file_surface: [h/], discipline: sh}
  - {id: P, title: free, file_surface: [p/], discipline: sh}
"""
QUEUE = r"""#!/bin/sh
case "$ORCH_NODE" in
  H) printf '{"freeze": "reserved-halt", "reason": "the owner must say"}' > "$ORCH_RETURN" ;;
  *) d=$(echo "$ORCH_NODE" | tr A-Z a-z); mkdir -p "$d" && echo x > "$d/one.txt" ;;
esac
"""


def test_a_second_node_seam_waits_behind_the_open_one_and_each_is_asked_in_turn(tmp_path, orch):
    repo = campaign_repo(tmp_path, QUEUE_DAG, QUEUE)
    first = orch("run", "--jobs", "3", cwd=repo)
    assert first.rc == 75, first.out + first.err
    data = json.loads(orch("status", "--json", "--topic", "queue", cwd=repo).out)
    assert data["nodes"][2]["status"] == "ACCEPTED"  # P, which needs no one, merged before the pause
    open_now, later = data["seams"][0], data["queued_seams"]
    asked = {(open_now["seam"], open_now["node"])} | {(s["seam"], s["node"]) for s in later}
    assert asked == {("realignment", "F"), ("reserved-halt", "H")} and len(later) == 1
    assert f"asked after it: seam {later[0]['seam']} for node {later[0]['node']}" in first.out
    assert orch("decide", open_now["seam"], "skip", cwd=repo).rc == 0
    waiting = json.loads(orch("status", "--json", "--topic", "queue", cwd=repo).out)  # rv69: not applied yet
    rows = {n["id"]: n["waiting"] for n in waiting["nodes"]}
    assert waiting["seams"] == [] and waiting["decision"]["node"] == open_now["node"]
    assert rows[later[0]["node"]] == f"seam {later[0]['seam']}, asked after the recorded answer is applied", rows
    second = orch("resume", "--topic", "queue", cwd=repo)
    assert second.rc == 75 and f"seam {later[0]['seam']} for node {later[0]['node']}" in second.out, second.out
    assert orch("decide", later[0]["seam"], "skip", cwd=repo).rc == 0
    done = orch("resume", "--topic", "queue", cwd=repo)
    assert done.rc == 75 and "final-acceptance" in done.out, done.out + done.err
    assert statuses(repo, orch, "queue") == {"F": "SKIPPED", "H": "SKIPPED", "P": "ACCEPTED"}


def test_the_fold_queues_node_seams_lets_a_whole_run_seam_go_first_and_drops_settled_ones():
    from orchestrate.recorder.campaign import Campaign, apply

    def seam(i: int, name: str, node: str | None = None) -> dict:
        return {"kind": "seam", "id": f"t:{i}", "context": {"seam": name, "node": node, "choices": ["skip"]}}

    c = Campaign()
    for event in (seam(1, "realignment", "F"), seam(2, "reserved-halt", "H"), seam(3, "review-divergence", "R")):
        apply(c, event)
    assert c.seam["id"] == "t:1" and [q["id"] for q in c.queued] == ["t:2", "t:3"]
    apply(c, seam(4, "budget"))  # stops the whole run: asked before the node seams
    assert c.seam["id"] == "t:4" and [q["id"] for q in c.queued] == ["t:1", "t:2", "t:3"]
    apply(c, {"kind": "decision", "id": "t:5", "context": {"seam": "budget", "choice": "raise"}})
    assert c.seam is None and c.decision is not None  # the next is asked once this answer is applied
    apply(c, {"kind": "applied", "id": "t:6", "context": {"decision": "t:5"}})
    assert c.seam["id"] == "t:1"
    apply(c, {"kind": "node", "id": "t:7", "context": {"node": "H", "status": "SKIPPED"}})
    assert [q["id"] for q in c.queued] == ["t:3"]  # nothing left to ask about H
    apply(c, {"kind": "node", "id": "t:8", "context": {"node": "F", "status": "SKIPPED"}})
    assert c.seam["id"] == "t:3" and c.queued == []
