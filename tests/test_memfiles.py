"""memfiles: contents a kept git writer reads by name: unnamed files (a memfd, an O_TMPFILE where memfds are
refused) named through /proc; named files in a private folder without /proc, never written through what was
put at a name since (rv41, rv42)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrate import memfiles


def refused(*_args):
    raise OSError(38, "Function not implemented")


@pytest.fixture
def on_disk(monkeypatch):
    monkeypatch.setattr(memfiles, "_PROC_FDS", False)  # no /proc to name an unnamed file by
    scratch = memfiles.Scratch("t")
    yield scratch
    scratch.close()


@pytest.mark.parametrize("memfd", [True, False])
def test_unnamed_files_are_read_back_by_name_and_given_back_after(monkeypatch, tmp_path, memfd):
    if not memfd:  # refused (a seccomp filter): an O_TMPFILE, which nothing can put a FIFO in place of
        monkeypatch.setattr(os, "memfd_create", refused)
    monkeypatch.setattr(memfiles.tempfile, "tempdir", str(tmp_path))
    scratch = memfiles.Scratch("t")
    try:
        names = scratch.names([b"one\n", b"two\n" * 10000] + [b"x"] * 6)
        assert [Path(n).read_bytes() for n in names[:2]] == [b"one\n", b"two\n" * 10000]
        scratch.release()
        assert len(scratch._fds) == memfiles.KEPT and all(os.fstat(fd).st_size == 0 for fd in scratch._fds)
        assert scratch._folder is None and list(tmp_path.iterdir()) == []  # nothing with a name
    finally:
        scratch.close()


def test_on_disk_a_link_or_fifo_put_at_a_name_is_replaced_not_written_through(on_disk, tmp_path):
    [first] = on_disk.names([b"first\n"])
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    os.unlink(first)
    os.symlink(victim, first)
    [again] = on_disk.names([b"second\n"])
    assert again == first and Path(again).read_bytes() == b"second\n" and victim.read_text() == "mine\n"
    os.unlink(first)
    os.mkfifo(first)  # opened for writing, it would wait for a reader forever
    assert Path(on_disk.names([b"third\n"])[0]).read_bytes() == b"third\n"
    folder = os.path.dirname(first)
    on_disk.close()
    assert not os.path.exists(folder)
