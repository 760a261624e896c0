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
