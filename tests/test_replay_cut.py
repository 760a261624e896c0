"""`replay --campaign` of a campaign whose runner was killed while a worker ran: `resume` ran that attempt
again as a new one (the cut-off attempt has no result), and the replay, whose runs are never cut, must
match it: its k-th attempt of a node reproduces the node's k-th recorded attempt that returned."""
from __future__ import annotations

from tests.engine_helpers import campaign_repo, cli, journal

DAG = """\
topic: cut
mode: autonomous
defaults: {max_attempts: 1}
workers: {sh: "./work.sh"}
nodes:
  - {id: A, file_surface: [a.txt], discipline: sh, evaluators: [{name: has-a, run: "test -s a.txt"}]}
  - {id: B, depends_on: [A], file_surface: [b.txt], discipline: sh}
"""
WORKER = """#!/bin/sh
sleep 1
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr AB ab).txt"
git add -A && git commit -qm "$ORCH_NODE"
"""



def test_a_campaign_resumed_after_a_cut_off_attempt_replays_the_same(tmp_path):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    killed = cli(repo, "run", fault="poll:1")  # SIGKILLed while A's worker runs
    assert killed.returncode == -9, killed.stdout + killed.stderr
    resumed = cli(repo, "resume")
    assert resumed.returncode == 75 and "final-acceptance" in resumed.stdout, resumed.stdout + resumed.stderr
    repairs = [e["context"]["repair"] for e in journal(repo, "cut") if e["kind"] == "repair"]
    assert "worker-retry" in repairs  # attempt 1 was cut off and ran again as attempt 2
    replayed = cli(repo, "replay", "--campaign", "cut")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "replay of campaign cut matches" in replayed.stdout
