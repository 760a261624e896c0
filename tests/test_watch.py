"""The watch around workers (engine/watch.py) on a real repository: a check re-arms with the look at the
user's checkout it has just taken (one `git status` per return, not two), and so does the next start when
that look is recent, while the git dir and the recorder files are always read anew; a file added inside
a folder that was already untracked is seen. The checkout is looked at only around workers that could
write it: `start` looks before such a worker starts (`fingerprint.look_before_start`, as workers/launch.py
calls it), and while only sandboxed workers run (`ctx.sealed`) it is never looked at."""
from __future__ import annotations

import io

import pytest

from orchestrate import proc
from orchestrate.engine import watch
from orchestrate.engine.context import Context
from orchestrate.recorder.campaign import Campaign
from orchestrate.recorder.init import init_project
from orchestrate.recorder.paths import Layout
from orchestrate.report.live import Reporter
from orchestrate.workers import fingerprint, launch
from orchestrate.workers.local import LocalExecutor
from tests.helpers import make_repo


@pytest.fixture
def watched(tmp_path, monkeypatch):
    """(repo, ctx, what the reporter printed, how many looks at the checkout were taken so far). A look
    is never recent enough to stand for the next unless a test says so."""
    monkeypatch.setattr(fingerprint, "STANDS_FOR", 0.0)
    monkeypatch.setattr(proc, "_before_unconfined", None)  # only a run's loop sets the hook
    repo = make_repo(tmp_path / "repo", {"README.md": "# project\n"})
    init_project(repo)
    said = io.StringIO()
    ctx = Context(layout=Layout(repo), campaign=Campaign(topic="w"), recorder=None, executor=LocalExecutor(1),
                  out=Reporter(quiet=True, stream=said))
    ctx.emit = lambda kind, context, **_: {"kind": kind, "context": context}  # no recorder: no journal here
    takes = []
    real = fingerprint._checkout

    def counted(*args, **kw):
        takes.append(1)
        return real(*args, **kw)
    monkeypatch.setattr(fingerprint, "_checkout", counted)
    return repo, ctx, said, takes


def start(ctx, *nodes: str, sealed: bool = False) -> None:
    """What workers/launch.py does for the watch as it starts each of `nodes` (its own code)."""
    for node in nodes:
        launch.before_spawn(ctx, node, sealed=sealed)


def test_a_quiet_check_re_arms_with_its_own_look_and_later_changes_are_still_seen(watched):
    repo, ctx, said, takes = watched
    watch.arm(ctx)
    assert len(takes) == 0  # nothing that could write the checkout runs yet
    start(ctx, "A", "B")
    assert len(takes) == 1  # a look before the first start; the second finds one standing
    watch.check(ctx, ["A"], ["B"])
    assert len(takes) == 2 and said.getvalue() == ""  # nothing changed: the look taken is the new baseline
    (repo / "stray.txt").write_text("x\n")
    watch.check(ctx, ["B"], [])
    assert len(takes) == 3
    assert "warning: the checkout changed while B ran: the checkout's status changed" in said.getvalue()
    said.truncate(0)
    said.seek(0)
    start(ctx, "C")  # the last check's look stands: none taken
    watch.check(ctx, ["C"], [])  # the stray file is part of the baseline now: not blamed on C
    assert len(takes) == 4 and said.getvalue() == ""


def test_a_start_never_swallows_what_a_returned_worker_changed(watched):
    """A queued worker is started by the same poll that reaps the one before it, before that one is
    checked: the look its start needs must not replace the baseline the returned worker is judged by."""
    repo, ctx, said, takes = watched
    watch.arm(ctx)
    start(ctx, "A")
    (repo / "stray.txt").write_text("x\n")  # A's doing; A has exited
    start(ctx, "B")  # proc's hook, as B's process starts
    watch.check(ctx, ["A"], ["B"])
    assert "warning: the checkout changed while A, B ran" in said.getvalue()


def test_a_check_that_puts_something_back_looks_again(watched):
    repo, ctx, said, takes = watched
    watch.arm(ctx)
    start(ctx, "A")
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text("#!/bin/sh\necho planted\n")
    watch.check(ctx, ["A"], [])
    assert not hook.exists() and "A: changed what no worker may change: .git/hooks/post-checkout was created" \
        in said.getvalue()
    assert len(takes) == 2  # what was put back is read again; the checkout's look stands
    said.truncate(0)
    said.seek(0)
    watch.check(ctx, ["B"], [])
    assert said.getvalue() == "" and "B" not in ctx.blamed


def test_a_file_added_to_a_folder_that_was_already_untracked_is_seen(watched):
    repo, ctx, said, _ = watched
    (repo / "notes").mkdir()
    (repo / "notes" / "mine.txt").write_text("the user's own notes\n")
    watch.arm(ctx)
    start(ctx, "A")
    (repo / "notes" / "planted.txt").write_text("x\n")
    watch.check(ctx, ["A"], [])
    assert "warning: the checkout changed while A ran" in said.getvalue()


def test_a_recent_look_stands_for_the_next_start_but_the_git_dir_is_read_anew(watched, monkeypatch):
    repo, ctx, said, takes = watched
    watch.arm(ctx)
    start(ctx, "A")
    watch.check(ctx, ["A"], [])
    assert len(takes) == 2
    monkeypatch.setattr(fingerprint, "STANDS_FOR", 3600.0)
    (repo / ".git" / "hooks" / "pre-push").write_text("#!/bin/sh\n")  # the user's own, between two nodes
    watch.refresh(ctx)  # no worker runs: B is about to start
    start(ctx, "B")
    assert len(takes) == 2  # the return's look at the checkout stands for this one
    (repo / "stray.txt").write_text("x\n")
    watch.check(ctx, ["B"], [])
    assert "warning: the checkout changed while B ran" in said.getvalue()
    assert "B" not in ctx.blamed and (repo / ".git" / "hooks" / "pre-push").exists()  # read anew at the start
    monkeypatch.setattr(fingerprint, "STANDS_FOR", 0.0)
    watch.refresh(ctx)
    start(ctx, "C")
    assert len(takes) == 4  # too old: looked at again


def test_sandboxed_workers_alone_never_have_the_checkout_looked_at(watched):
    """The sandbox shows them the checkout read-only: a change there is not theirs, and costs no look."""
    repo, ctx, said, takes = watched
    watch.arm(ctx)
    start(ctx, "A", "B", sealed=True)
    (repo / "stray.txt").write_text("x\n")  # the user's own work
    watch.check(ctx, ["A"], ["B"])
    watch.refresh(ctx)
    start(ctx, "C", sealed=True)
    watch.check(ctx, ["B", "C"], [])
    assert takes == [] and said.getvalue() == "" and not ctx.blamed


def test_a_hook_planted_while_only_sandboxed_workers_ran_is_still_put_back(watched):
    """Only the checkout's look is skipped: the git dir is read at every return, whoever ran."""
    repo, ctx, said, takes = watched
    watch.arm(ctx)
    start(ctx, "A", sealed=True)
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text("#!/bin/sh\necho planted\n")
    watch.check(ctx, ["A"], [])
    assert not hook.exists() and "A" in ctx.blamed and takes == []


def test_one_worker_that_could_write_the_checkout_among_sandboxed_ones_has_it_looked_at(watched):
    repo, ctx, said, takes = watched
    watch.arm(ctx)
    start(ctx, "A", sealed=True)
    start(ctx, "B")  # without the sandbox (or with a writable folder inside the checkout)
    assert len(takes) == 1
    (repo / "stray.txt").write_text("x\n")
    watch.check(ctx, ["A"], ["B"])  # B still runs: the checkout is looked at, and the change reported
    assert len(takes) == 2 and "warning: the checkout changed while A, B ran" in said.getvalue()


def test_a_worker_that_could_write_the_checkout_and_waits_for_a_slot_keeps_the_looks_going(watched):
    """It may start at the next poll, inside this interval: the look taken now is its baseline."""
    repo, ctx, said, takes = watched
    watch.arm(ctx)
    start(ctx, "A", sealed=True)
    start(ctx, "B")  # queued behind A
    ctx.executor.queue.append(type("Queued", (), {"node": "B"})())
    watch.check(ctx, ["A"], [])
    assert len(takes) == 2
    ctx.executor.queue.clear()
    (repo / "stray.txt").write_text("x\n")
    watch.check(ctx, ["B"], [])
    assert "warning: the checkout changed while B ran" in said.getvalue()


def test_a_fifo_planted_in_the_git_dir_never_blocks_the_watch(watched):
    """Read as it is, a FIFO would block the runner forever: it is read as no file, without waiting."""
    import os
    repo, ctx, said, _ = watched
    watch.arm(ctx)
    os.mkfifo(repo / ".git" / "hooks" / "post-checkout")
    watch.check(ctx, ["A"], [])
    assert ctx.watch is not None


def test_what_a_worker_writes_again_as_it_is_put_back_is_not_taken_in(watched, monkeypatch):
    """rv26: after a put-back the watch re-armed with a new fingerprint, so a worker still running that wrote
    the hook again in between had it taken in as the state to compare with: never seen, never put back. The
    state put back stays the baseline."""
    repo, ctx, said, takes = watched
    watch.arm(ctx)
    start(ctx, "A", "B")
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text("#!/bin/sh\necho planted\n")
    real = fingerprint.restore

    def raced(*args, **kw):  # B, still running, writes the hook again right after it is put back
        done = real(*args, **kw)
        hook.write_text("#!/bin/sh\necho planted again\n")
        return done
    monkeypatch.setattr(fingerprint, "restore", raced)
    watch.check(ctx, ["A"], ["B"])
    monkeypatch.setattr(fingerprint, "restore", real)
    watch.check(ctx, ["B"], [])
    assert not hook.exists() and "B: changed what no worker may change: .git/hooks/post-checkout was created" \
        in said.getvalue()


def test_a_watched_file_that_cannot_be_put_back_halts_the_campaign(watched, tmp_path, monkeypatch):
    """rv26: ~/.gitconfig is a link into dotfiles, and a worker swapped the dotfiles folder for a link to a folder
    of its own: nothing is written through that, so what the worker wrote stays where git reads it. Reported and
    then taken in as the new state, it was never seen again: the campaign halts instead."""
    from orchestrate.errors import Halted
    repo, ctx, said, takes = watched
    home = tmp_path / "home"
    (home / "dotfiles").mkdir(parents=True)
    (home / "dotfiles" / "gitconfig").write_text("[user]\n\tname = You\n")
    (home / ".gitconfig").symlink_to("dotfiles/gitconfig")
    monkeypatch.setenv("HOME", str(home))
    watch.arm(ctx)
    start(ctx, "A")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "gitconfig").write_text("[core]\n\tfsmonitor = touch /tmp/pwned\n")
    (home / "dotfiles").rename(tmp_path / "aside")
    (home / "dotfiles").symlink_to(tmp_path / "mine")
    with pytest.raises(Halted, match="not put back"):
        watch.check(ctx, ["A"], [])
    assert "A" in ctx.blamed
