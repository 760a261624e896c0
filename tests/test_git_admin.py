"""A `git worktree prune` never runs beside a `git worktree add` of the same process (git_admin.py).

git makes an added worktree's admin dir first and marks it `locked` a moment later; a prune looking in between
removes it as a registration of nothing, and the add fails. A batch's checkouts run in threads while the engine's
thread makes the integration worktree (a prune first) or discards a spare: one checkout in some tens failed so
and its node checked out alone (test_prepared_checkouts, seen under load). A registration as git leaves it in
that moment (a folder with neither `gitdir` nor `locked`) stands in for the add's here."""
from __future__ import annotations

import threading

from orchestrate import git, git_admin
from tests.helpers import make_repo


def _half_made(repo) -> object:
    admin = repo / ".git" / "worktrees" / "being-added"
    admin.mkdir(parents=True)
    return admin


def test_a_prune_asked_for_while_an_add_runs_waits_for_it_to_end(tmp_path):
    repo = make_repo(tmp_path / "repo")
    admin = _half_made(repo)
    with git_admin.adding(repo):
        git.worktree_prune(repo)
        git.worktree_remove(repo, tmp_path / "gone")  # its own prune too
        assert admin.is_dir()  # the add's registration is left to it
    assert not admin.exists()  # the prune ran when the last add ended: what is left of nothing goes


def test_an_add_waits_for_a_prune_under_way(tmp_path):
    repo = make_repo(tmp_path / "repo")
    order: list[str] = []
    with git_admin._state:  # a prune under way, as prune() marks it
        git_admin._pruning.add(git_admin._key(repo))
    added = threading.Thread(target=lambda: (git.worktree_add_detached(repo, tmp_path / "wt", "HEAD"),
                                             order.append("added")))
    added.start()
    added.join(0.5)
    order.append("pruned")
    with git_admin._state:
        git_admin._pruning.discard(git_admin._key(repo))
        git_admin._state.notify_all()
    added.join()
    assert order == ["pruned", "added"] and (tmp_path / "wt" / ".git").is_file()


def test_an_add_whose_registration_another_prune_removed_is_tried_again():
    assert git_admin.lost_race("fatal: could not open '.git/worktrees/prepared-8fd66fbd-1/locked' for writing: "
                               "No such file or directory")
    assert git_admin.lost_race("fatal: failed to read .git/worktrees/x/commondir")
    assert not git_admin.lost_race("fatal: '/tmp/x' already exists")
