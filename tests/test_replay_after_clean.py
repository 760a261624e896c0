"""`replay --campaign` after `orchestrate clean` (rv59): clean deletes every node branch merged into the
campaign's branch, so the replay reads each attempt's head from the journal, where it is recorded, not from a
branch that may be gone. Attempt 1 of `a` returns nothing (its branch stays at the baseline, so clean deletes
it too); attempt 2 is accepted."""
from __future__ import annotations

from tests.engine_helpers import campaign_repo, cli, journal

WORKER = r"""#!/bin/sh
set -eu
[ "$ORCH_NODE/$ORCH_ATTEMPT" = a/1 ] && exit 1
mkdir -p "$ORCH_NODE" && echo "$ORCH_ATTEMPT" > "$ORCH_NODE/f.txt" && git add -A && git commit -qm "$ORCH_NODE"
"""
DAG = """\
topic: swept
mode: autonomous
defaults: {max_attempts: 2}
workers: {sh: "./work.sh"}
nodes:
  - {id: a, file_surface: [a/], discipline: sh}
  - {id: b, depends_on: [a], file_surface: [b/], discipline: sh}
"""


def test_a_cleaned_campaign_replays_from_its_recorded_heads(tmp_path):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    ran = cli(repo, "run")
    assert ran.returncode == 75 and "final-acceptance" in ran.stdout, ran.stdout + ran.stderr
    started = [e["context"]["node"] for e in journal(repo, "swept")
               if e["kind"] == "result" and e["context"].get("effect") == "worker-start"]
    assert started == ["a", "a", "b"]
    assert cli(repo, "decide", "final-acceptance", "accept", "--note", "ok").returncode == 0
    cleaned = cli(repo, "clean")
    assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
    assert repo.git("for-each-ref", "refs/heads/node/") == ""  # every attempt's branch is gone
    replayed = cli(repo, "replay", "--campaign", "swept")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "replay of campaign swept matches" in replayed.stdout
    assert "2 merge(s)" in replayed.stdout
