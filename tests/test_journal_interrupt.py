"""Ctrl-C or SIGTERM between the journal's append and the runner's count of it (an fsync is the long wait there):
the runner's own line is counted, so the interruption's entries that follow are not taken for a foreign write."""
from __future__ import annotations

import os

import pytest

from orchestrate.recorder.init import init_project
from orchestrate.recorder.journal import Recorder
from tests.helpers import make_repo


def test_an_interrupt_right_after_an_append_leaves_it_counted_as_the_runners(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "repo")
    init_project(repo)
    recorder = Recorder(repo / ".ledger", "t")
    recorder.event("intent", {"effect": "worktree-add", "node": "A"})
    synced = os.fsync

    def interrupted(fd: int) -> None:  # the signal's handler runs as the fsync returns
        synced(fd)
        raise KeyboardInterrupt
    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        recorder.event("intent", {"effect": "worktree-remove", "node": "A"})
    monkeypatch.undo()
    recorder.event("intent", {"effect": "branch-delete", "node": "A"})  # the interruption's own bookkeeping
    recorder.verify()
    assert [line.count(b"intent") for line in recorder.journal.read_bytes().splitlines()] == [1, 1, 1]


def test_an_interrupt_before_the_append_counts_nothing(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "repo")
    init_project(repo)
    recorder = Recorder(repo / ".ledger", "t")
    recorder.event("intent", {"effect": "worktree-add", "node": "A"})

    def never(*_args, **_kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(type(recorder.journal), "open", never)
    with pytest.raises(KeyboardInterrupt):
        recorder.event("intent", {"effect": "worktree-remove", "node": "A"})
    monkeypatch.undo()
    recorder.event("intent", {"effect": "branch-delete", "node": "A"})
    recorder.verify()
    assert len(recorder.journal.read_bytes().splitlines()) == 2
