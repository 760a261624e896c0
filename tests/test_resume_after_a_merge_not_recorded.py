"""A runner stopped (kill -9, or SIGTERM) right after it moved campaign/<topic> to a merge, before the merge's own
entries were recorded, in a campaign whose workers run without the sandbox: that merge is not adopted (a worker or
a check could have written the journal's intent naming it), and resume halts at once, naming the move and how to
put it back. Before, it started the cut-off attempts again and took the move for their work and for the work of
the node it merged anew: their attempts failed, the node was reworked, and the run halted later on adherence."""
from __future__ import annotations

import json

import pytest

from tests.engine_helpers import campaign_repo, cli, journal

# B's first attempt still runs when A merges; its next one returns at once
WORKER = r"""#!/bin/sh
set -eu
if [ "$ORCH_NODE" = B ] && [ "$ORCH_ATTEMPT" = 1 ]; then sleep 300; fi
echo "$ORCH_NODE" > "$ORCH_NODE.txt"
"""

DAG = """\
topic: moved
workers: {sh: "./work.sh"}
defaults: {sandbox: none, unsandboxed: parallel}
checks: [{name: readme, run: "test -f README.md"}]
nodes:
  - {id: A, title: alpha, file_surface: [A.txt], discipline: sh}
  - {id: B, title: bravo, file_surface: [B.txt], discipline: sh}
"""


@pytest.mark.parametrize("how", ["", ":term"])
def test_resume_halts_at_once_on_a_merge_it_may_not_adopt_and_goes_on_once_it_is_put_back(tmp_path, orch, how):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    stopped = cli(repo, "run", "-j", "2", fault=f"merged:1{how}", timeout=120)
    assert stopped.returncode == (130 if how else -9), stopped.stdout + stopped.stderr
    tip = next(e["context"]["onto"] for e in journal(repo, "moved") if e["context"].get("effect") == "advance")
    made = repo.git("rev-parse", "campaign/moved")
    assert made != tip
    before = len(journal(repo, "moved"))
    halted = orch("resume", "--topic", "moved", cwd=repo)
    assert halted.rc == 1, halted.out + halted.err
    assert f"campaign/moved is at {made[:12]}, the merge the stopped runner was making, not at {tip[:12]}" in halted.err
    assert f"git update-ref refs/heads/campaign/moved {tip}" in halted.err
    later = journal(repo, "moved")[before:]
    assert not [e for e in later if e["kind"] in ("guard", "verdict")], later  # nobody blamed, nothing judged
    assert not [e for e in later if e["context"].get("effect") == "worker-start"]  # nothing started again
    repo.git("update-ref", "refs/heads/campaign/moved", tip)  # as the hint says
    done = orch("resume", "--topic", "moved", cwd=repo)
    assert done.rc == 75, done.out + done.err
    status = json.loads(orch("status", "--json", "--topic", "moved", cwd=repo).out)
    assert {n["id"]: (n["status"], n["attempt"]) for n in status["nodes"]} == {"A": ("ACCEPTED", 1),
                                                                               "B": ("ACCEPTED", 2)}
    assert not [e for e in journal(repo, "moved") if e["kind"] == "guard"]
    assert orch("doctor", "--topic", "moved", cwd=repo).rc == 0
