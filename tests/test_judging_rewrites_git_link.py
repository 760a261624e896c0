"""Judging code (a node's evaluators, in the sandbox, their worktree writable: `.git` included) that rewrites the
worktree's `.git` link. What the runner does in that worktree after them (putting it back to the commit before
coherence's configured evaluators read it; the next judging's sandbox, which binds the worktree's admin dir
writable) must not follow the link: it could name the user's git dir (its index replaced, its hooks written) or a
git dir of the code's making whose `core.worktree` is any folder on disk (rv57)."""
from __future__ import annotations

import pytest

from tests.engine_helpers import campaign_repo, checkout_state

DAG = """\
topic: gl
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1}
nodes:
  - {id: A, title: redirects, file_surface: [a.txt, redirect.sh, plant.sh], discipline: sh,
     evaluators: [{name: t, run: "sh redirect.sh"}]}
"""
# the evaluator: the worktree's .git names the user's git dir from now on; what reads the worktree next (a
# configured coherence evaluator, the node's code too) writes into whatever the link names
WORKER = r"""#!/bin/sh
set -eu
echo a > a.txt
cat > redirect.sh <<'SH'
common=$(git rev-parse --path-format=absolute --git-common-dir)
printf 'gitdir: %s\n' "$common" > .git
SH
cat > plant.sh <<'SH'
d=$(sed -n 's/^gitdir: //p' .git)
echo planted > "$d/planted" 2>/dev/null || true
SH
git add a.txt redirect.sh plant.sh && git commit -qm A
"""
# the same, pushed further: a git dir of the evaluator's making in the worktree, the repository's objects
# borrowed, whose `core.worktree` is a folder outside the repository; the committed file is then rewritten, for
# the put-back to write it anew there
ESCAPE = r"""#!/bin/sh
set -eu
printf 'written by the node\n' > a.txt
cat > redirect.sh <<'SH'
top=$(pwd)
common=$(git rev-parse --path-format=absolute --git-common-dir)
mkdir -p fake/objects/info fake/refs
echo "$common/objects" > fake/objects/info/alternates
git rev-parse HEAD > fake/HEAD
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = %s\n' "$VICTIM" > fake/config
printf 'gitdir: %s/fake\n' "$top" > .git
echo stale > a.txt
SH
echo true > plant.sh
git add a.txt redirect.sh plant.sh && git commit -qm A
"""


def _needs_sandbox():
    from orchestrate.workers import sandbox
    if (why := sandbox.probe()) is not None:
        pytest.skip(why)


def _run(tmp_path, orch, worker, *, layered=False):
    repo = campaign_repo(tmp_path, DAG.replace("topic: gl", "topic: gl\nschedule: layered") if layered else DAG,
                         worker)
    (repo / ".ledger" / "config.yaml").write_text("coherence:\n  evaluators: [{name: c, run: 'sh plant.sh'}]\n")
    return repo


@pytest.mark.parametrize("layered", [False, True], ids=["eager", "layered"])
def test_the_put_back_never_writes_the_users_index_through_a_rewritten_link(tmp_path, orch, layered):
    _needs_sandbox()
    repo = _run(tmp_path, orch, WORKER, layered=layered)
    before, index = checkout_state(repo), (repo / ".git" / "index").read_bytes()
    done = orch("run", "--no-interactive", cwd=repo)
    text = done.out + done.err
    assert (repo / ".git" / "index").read_bytes() == index, text
    assert checkout_state(repo) == before, text
    assert "A: ACCEPT" not in text, text
    assert "its worktree's .git link was rewritten" in text, text
    assert "a.txt" not in repo.git("ls-tree", "-r", "--name-only", "campaign/gl"), text


def test_the_next_judging_sandbox_never_binds_what_a_rewritten_link_names(tmp_path, orch):
    _needs_sandbox()
    repo = _run(tmp_path, orch, WORKER)
    done = orch("run", "--no-interactive", cwd=repo)
    text = done.out + done.err
    assert not (repo / ".git" / "planted").exists(), text
    assert "its worktree's .git link was rewritten" in text, text


def test_a_git_dir_of_the_evaluators_making_never_has_the_runner_write_outside_the_repository(tmp_path, orch,
                                                                                           monkeypatch):
    _needs_sandbox()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "a.txt").write_text("the user's own file\n")
    monkeypatch.setenv("VICTIM", str(victim))
    repo = _run(tmp_path, orch, ESCAPE)
    done = orch("run", "--no-interactive", cwd=repo)
    text = done.out + done.err
    assert (victim / "a.txt").read_text() == "the user's own file\n", text
    assert "its worktree's .git link was rewritten" in text, text
    assert "a.txt" not in repo.git("ls-tree", "-r", "--name-only", "campaign/gl"), text
