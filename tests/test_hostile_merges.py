"""Misdeeds aimed at what gets merged rather than at the worker's own files: content no gate judged must
never reach campaign/<topic>, and nothing may move a branch of the user's. Each runs in the sandbox and
with `sandbox: none`, with the checks of test_hostile_workers (the user's .git, no process left)."""
from __future__ import annotations

from tests import test_hostile_workers as hostile
from tests.engine_helpers import journal

mode, settled, run = hostile.mode, hostile.settled, hostile.run  # the fixtures (settled: autouse) and the runner


def test_a_head_pointed_at_the_users_branch_gets_nothing_committed_through_it(tmp_path, orch, mode):
    worker = ('echo a > a.txt\ngit add -A\n'  # left uncommitted: orchestrate's own commit would follow HEAD
              'printf "ref: refs/heads/main\\n" > "$(git rev-parse --git-dir)/HEAD"\n')
    repo, baseline, result = run(tmp_path, orch, worker, mode)
    text = result.out + result.err
    assert result.rc == 75, text
    assert "node A: the worker pointed its worktree's HEAD at refs/heads/main, not its branch node/hostile/A" in text
    assert repo.git("rev-parse", "main") == baseline and repo.git("rev-parse", "campaign/hostile") == baseline
    assert not [e for e in journal(repo, "hostile") if e["kind"] == "merge"]
