"""The watch around workers (engine/watch.py) on a real repository: a check that finds nothing re-arms with
the look it has just taken (one `git status` of the user's checkout per return, not two), a check that
put something back looks again, and a file added inside a folder that was already untracked is seen."""
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
    """(repo, ctx, what the reporter printed, how many fingerprints were taken so far)."""
    repo = make_repo(tmp_path / "repo", {"README.md": "# project\n"})
    init_project(repo)
    said = io.StringIO()
    ctx = Context(layout=Layout(repo), campaign=Campaign(topic="w"), recorder=None, executor=LocalExecutor(1),
                  out=Reporter(quiet=True, stream=said))
    ctx.emit = lambda kind, context, **_: {"kind": kind, "context": context}  # no recorder: no journal here
    takes = []
    real = fingerprint.take

    def counted(*args, **kw):
        takes.append(1)
        return real(*args, **kw)
    monkeypatch.setattr(fingerprint, "take", counted)
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
    assert len(takes) == 3  # the look after putting back, which the next check compares with
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
