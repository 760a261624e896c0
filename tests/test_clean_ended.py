"""`clean` uses the one rule of an ended campaign (recorder/topics.py `ended`, as status and abandon do):
accepted at final acceptance, or abandoned. A campaign that waits at final acceptance, or was refused
there, has closed but not ended: its node branches are what a person is reviewing, and stay."""
from __future__ import annotations

import json

import pytest

from tests.engine_helpers import campaign_repo

WORKER = r"""#!/bin/sh
set -eu
mkdir -p "$ORCH_NODE" && echo x > "$ORCH_NODE/f.txt" && git add -A && git commit -qm "$ORCH_NODE"
"""
DAG = """\
topic: fin
workers: {sh: "./work.sh"}
nodes:
  - {id: a, title: one, depends_on: [], file_surface: [a/], discipline: sh}
  - {id: b, title: two, depends_on: [a], file_surface: [b/], discipline: sh}
"""


@pytest.fixture
def closed(tmp_path, orch):
    """A campaign at its final-acceptance seam: closed, its node branches merged, not ended."""
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert orch("run", "--no-interactive", "-q", cwd=repo).rc == 75
    return repo


def _branches(repo) -> list[str]:
    return repo.git("for-each-ref", "--format=%(refname:short)", "refs/heads/node/fin/").split()


def _cleans(repo, orch) -> list[str]:
    plan = orch("clean", "--dry-run", "--json", cwd=repo)
    assert plan.rc == 0, plan.err
    return json.loads(plan.out)["topics"]


@pytest.mark.parametrize("answer", [None, "reject"])
def test_a_campaign_at_final_acceptance_or_refused_there_is_not_cleaned(closed, orch, answer):
    if answer:
        assert orch("decide", "final-acceptance", answer, "--note", "not yet", cwd=closed).rc == 0
    assert _branches(closed) == ["node/fin/a", "node/fin/b"]
    assert _cleans(closed, orch) == []
    done = orch("clean", cwd=closed)
    assert done.rc == 0 and "nothing to clean: no campaign has ended" in done.out
    assert _branches(closed) == ["node/fin/a", "node/fin/b"]  # what the person is asked to review stays
    named = orch("clean", "--topic", "fin", cwd=closed)
    assert named.rc == 2 and "campaign fin has not ended" in named.err and "Traceback" not in named.err
    assert "orchestrate abandon --topic fin" in named.err
    assert _branches(closed) == ["node/fin/a", "node/fin/b"]


@pytest.mark.parametrize("end", ["accept", "abandon"])
def test_an_accepted_or_abandoned_campaign_is_cleaned(closed, orch, end):
    if end == "accept":
        assert orch("decide", "final-acceptance", "accept", "--note", "ok", cwd=closed).rc == 0
    else:
        assert orch("abandon", "--topic", "fin", "--note", "superseded", cwd=closed).rc == 0
    assert _cleans(closed, orch) == ["fin"]
    assert orch("clean", "--topic", "fin", cwd=closed).rc == 0
    assert _branches(closed) == []


def test_clean_removes_the_spares_the_pool_moved_aside(closed, orch):
    """A spare the pool could not remove when it was to be re-based is moved aside (workers/pool.py `take`),
    no longer a worktree git lists: clean removes it with the campaign's worktrees."""
    trash = closed / ".scratch" / "worktrees" / "fin" / ".pool" / "trash-spare-a-1-0"
    (trash / "deep").mkdir(parents=True)
    (trash / "deep" / "left.txt").write_text("x\n")
    assert orch("decide", "final-acceptance", "accept", "--note", "ok", cwd=closed).rc == 0
    done = orch("clean", "--topic", "fin", cwd=closed)
    assert done.rc == 0 and f"removed worktree {trash}" in done.out, done.out
    assert not trash.exists()
