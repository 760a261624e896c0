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


def test_a_clean_up_prune_asked_for_while_an_add_runs_is_left_to_it(tmp_path):
    repo = make_repo(tmp_path / "repo")
    admin = _half_made(repo)
    with git_admin.adding(repo):
        git.worktree_remove(repo, tmp_path / "gone")  # a removal's prune: nothing waits for it
        assert admin.is_dir()  # the add's registration is left to it
    assert not admin.exists()  # the prune ran when the last add ended: what is left of nothing goes


def test_a_prune_asked_for_while_an_add_runs_waits_for_it_to_end(tmp_path):
    """A caller that prunes to add at the same place (a spare set aside) needs the prune done when it returns."""
    repo = make_repo(tmp_path / "repo")
    admin = _half_made(repo)
    order: list[str] = []
    with git_admin.adding(repo):
        pruning = threading.Thread(target=lambda: (git.worktree_prune(repo), order.append("pruned")))
        pruning.start()
        pruning.join(0.5)
        assert admin.is_dir()
        order.append("added")
    pruning.join()
    assert order == ["added", "pruned"] and not admin.exists()


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


def test_the_integration_worktree_is_made_again_where_its_folder_was_removed_by_hand(tmp_path):
    """It is added without a prune first (one would wait for a batch's checkouts beside it); a registration
    left by a folder removed by hand is pruned then, and the add made again."""
    import shutil

    from orchestrate.engine.context import Context
    from orchestrate.recorder.campaign import Campaign
    from orchestrate.recorder.init import init_project
    from orchestrate.recorder.paths import Layout
    from orchestrate.report.live import Reporter
    from orchestrate.workers import worktrees
    from orchestrate.workers.local import LocalExecutor
    repo = make_repo(tmp_path / "repo")
    init_project(repo)
    campaign = Campaign(topic="t")
    campaign.tip = repo.git("rev-parse", "HEAD")
    ctx = Context(layout=Layout(repo), campaign=campaign, recorder=None, executor=LocalExecutor(1),
                  out=Reporter(quiet=True))
    ctx.emit = lambda kind, context, **_: {"kind": kind, "context": context}  # no recorder: no journal here
    made = worktrees.integration(ctx)
    shutil.rmtree(made)
    assert worktrees.integration(ctx) == made and (made / "README.md").is_file()
    assert repo.git("worktree", "list").count("\n") == 1  # the main checkout and it: no registration left over
