"""An interrupt (Ctrl-C, SIGTERM) landing in a DISPATCH of the eager schedule while a node dispatched in an earlier
round still runs: that node's attempt was recorded and its worker started, so it is cut off like any other (resume
starts it again as a new attempt), never undone as if it had only been queued or never recorded."""
from __future__ import annotations

import json

from tests.engine_helpers import campaign_repo, cli, journal

# A's first attempt outlives the interrupt (the runner stops it); B returns at once and merges, so the run comes
# back to DISPATCH (for C) while A still runs
WORKER = r"""#!/bin/sh
set -eu
if [ "$ORCH_NODE" = A ] && [ "$ORCH_ATTEMPT" = 1 ]; then
  git commit -q --allow-empty -m "A: a first step, committed as it went"
  sleep 300
fi
echo "$ORCH_NODE" > "$ORCH_NODE.txt"
"""

DAG = """\
topic: later
workers: {sh: "./work.sh"}
defaults: {sandbox: none, unsandboxed: parallel}
nodes:
  - {id: A, title: alpha, file_surface: [A.txt], discipline: sh}
  - {id: B, title: bravo, file_surface: [B.txt], discipline: sh}
  - {id: C, title: charlie, depends_on: [B], file_surface: [C.txt], discipline: sh}
"""


def test_a_node_running_from_an_earlier_round_is_cut_off_not_undone(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    # recorder commits: open, RUN_LAYER -> DISPATCH, DISPATCH -> AWAIT, AWAIT -> RECONCILE (B), RECONCILE -> MERGE,
    # MERGE -> CHECKPOINT, CHECKPOINT -> DISPATCH: SIGTERM as that one is made
    stopped = cli(repo, "run", "-j", "2", fault="commit:7:term", timeout=120)
    assert stopped.returncode == 130, stopped.stdout + stopped.stderr
    assert "interrupted in DISPATCH" in stopped.stderr
    entries = journal(repo, "later")
    moves = [e["context"]["subject"] for e in entries if e["kind"] == "transition"]
    assert moves[-1] == "later: CHECKPOINT next -> DISPATCH (round 1)", moves
    a = [e["context"] for e in entries if e["context"].get("node") == "A"]
    assert [n["status"] for n in a if "status" in n] == ["DISPATCHED"]  # its recorded attempt stands
    assert not [n for n in a if n.get("effect") == "branch-delete"]  # and the commit its worker made with it
    assert "A: a first step" in repo.git("log", "-1", "--format=%s", "node/later/A")
    resumed = orch("resume", "--topic", "later", cwd=repo)
    assert resumed.rc == 75, resumed.out + resumed.err
    assert "repair: A: attempt 1 was cut off; it runs again as a new attempt" in resumed.out
    status = json.loads(orch("status", "--json", "--topic", "later", cwd=repo).out)
    assert {n["id"]: (n["status"], n["attempt"]) for n in status["nodes"]} == {
        "A": ("ACCEPTED", 2), "B": ("ACCEPTED", 1), "C": ("ACCEPTED", 1)}
    starts = [(e["context"]["node"], e["context"]["attempt"]) for e in journal(repo, "later")
              if e["kind"] == "intent" and e["context"].get("effect") == "worker-start"]
    assert sorted(starts) == [("A", 1), ("A", 2), ("B", 1), ("C", 1)]  # no attempt number started twice
