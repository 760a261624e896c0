"""Atomic writes keep a file's permissions, and give a new file what the umask gives any other."""
from __future__ import annotations

import os
import stat

import pytest

from orchestrate.atomic import write_atomic
from tests.helpers import make_repo


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask():
    old = os.umask(0o027)
    yield 0o027
    os.umask(old)


def test_a_new_file_gets_what_the_umask_gives(tmp_path, umask):
    write_atomic(tmp_path / "new.txt", "x\n")
    assert mode(tmp_path / "new.txt") == 0o640  # not mkstemp's 0600


def test_a_rewritten_file_keeps_its_permissions(tmp_path, umask):
    for kept in (0o664, 0o600, 0o755):
        path = tmp_path / f"kept-{kept:o}"
        path.write_text("old\n")
        path.chmod(kept)
        write_atomic(path, "new\n")
        assert (path.read_text(), mode(path)) == ("new\n", kept)


def test_init_leaves_a_shared_repository_s_exclude_file_readable_by_the_group(tmp_path, orch):
    repo = make_repo(tmp_path / "repo")
    exclude = repo / ".git" / "info" / "exclude"
    exclude.chmod(0o664)  # as `git init --shared=group` makes it
    assert orch("init", cwd=repo).rc == 0 and ".ledger/" in exclude.read_text()
    assert mode(exclude) == 0o664


def test_a_report_written_for_sharing_is_not_private(tmp_path, orch, umask):
    from tests.engine_helpers import campaign_repo
    repo = campaign_repo(tmp_path, "topic: share\nworkers: {sh: ./work.sh}\nnodes:\n"
                                   "  - {id: A, title: a, file_surface: [a.txt], discipline: sh}\n",
                         "#!/bin/sh\necho a > a.txt\n")
    assert orch("run", "--no-interactive", "--quiet", cwd=repo).rc == 75
    out = tmp_path / "share.html"
    assert orch("report", "-o", out, cwd=repo).rc == 0
    assert mode(out) == 0o640


def test_a_log_is_never_opened_through_a_link_a_fifo_or_a_hard_link(tmp_path):
    import os

    from orchestrate.atomic import open_log
    theirs = tmp_path / "theirs.txt"
    theirs.write_text("keep\n")
    log = tmp_path / "run" / "attempt-2.log"
    log.parent.mkdir()
    plants = {"link": lambda: log.symlink_to(theirs), "hard link": lambda: os.link(theirs, log),
              "fifo": lambda: os.mkfifo(log)}
    for what, plant in plants.items():
        for append in (False, True):
            plant()
            with open_log(log, append=append) as fh:
                fh.write(b"log\n")
            assert log.read_bytes() == b"log\n" and not log.is_symlink(), (what, append)
            log.unlink()
    assert theirs.read_text() == "keep\n"
    with open_log(log) as fh:
        fh.write(b"one\n")
    with open_log(log, append=True) as fh:
        fh.write(b"two\n")
    assert log.read_bytes() == b"one\ntwo\n"
