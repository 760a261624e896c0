"""The watch around workers (engine/watch.py) on a real repository: a check re-arms with the look at the
user's checkout it has just taken (one `git status` per return, not two), and so does the next start when
that look is recent, while the git dir and the recorder files are always read anew; a file added inside
a folder that was already untracked is seen."""
from __future__ import annotations

import io

import pytest

from orchestrate.engine import watch
from orchestrate.engine.context import Context
from orchestrate.recorder.campaign import Campaign
from orchestrate.recorder.init import init_project
from orchestrate.recorder.paths import Layout
from orchestrate.report.live import Reporter
from orchestrate.workers import fingerprint
from orchestrate.workers.local import LocalExecutor
from tests.helpers import make_repo


@pytest.fixture
def watched(tmp_path, monkeypatch):
    """(repo, ctx, what the reporter printed, how many looks at the checkout were taken so far). A look
    is never recent enough to stand for the next unless a test says so."""
    monkeypatch.setattr(watch, "REUSE_FOR", 0.0)
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


def test_a_quiet_check_re_arms_with_its_own_look_and_later_changes_are_still_seen(watched):
    repo, ctx, said, takes = watched
    watch.arm(ctx)
    assert len(takes) == 1
    watch.check(ctx, ["A"], ["B"])
    assert len(takes) == 2 and said.getvalue() == ""  # nothing changed: the look taken is the new baseline
    (repo / "stray.txt").write_text("x\n")
    watch.check(ctx, ["B"], [])
    assert len(takes) == 3
    assert "warning: the checkout changed while B ran: the checkout's status changed" in said.getvalue()
    said.truncate(0)
    said.seek(0)
    watch.check(ctx, ["C"], [])  # the stray file is part of the baseline now: not blamed on C
    assert len(takes) == 4 and said.getvalue() == ""


def test_a_check_that_puts_something_back_looks_again(watched):
    repo, ctx, said, takes = watched
    watch.arm(ctx)
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
    (repo / "notes" / "planted.txt").write_text("x\n")
    watch.check(ctx, ["A"], [])
    assert "warning: the checkout changed while A ran" in said.getvalue()


def test_a_recent_look_stands_for_the_next_start_but_the_git_dir_is_read_anew(watched, monkeypatch):
    repo, ctx, said, takes = watched
    watch.arm(ctx)
    watch.check(ctx, ["A"], [])
    assert len(takes) == 2
    monkeypatch.setattr(watch, "REUSE_FOR", 3600.0)
    (repo / ".git" / "hooks" / "pre-push").write_text("#!/bin/sh\n")  # the user's own, between two nodes
    watch.refresh(ctx)  # no worker runs: B is about to start
    assert len(takes) == 2  # the return's look at the checkout stands for this one
    (repo / "stray.txt").write_text("x\n")
    watch.check(ctx, ["B"], [])
    assert "warning: the checkout changed while B ran" in said.getvalue()
    assert "B" not in ctx.blamed and (repo / ".git" / "hooks" / "pre-push").exists()  # read anew at the start
    monkeypatch.setattr(watch, "REUSE_FOR", 0.0)
    watch.refresh(ctx)
    assert len(takes) == 4  # too old: looked at again
