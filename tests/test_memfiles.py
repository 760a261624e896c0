"""memfiles: contents a kept git writer reads by name, in memory where memfds work, in a private folder where
they do not; never written through what was put at a name since (rv41)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrate import memfiles


@pytest.fixture
def on_disk(monkeypatch):
    def refused(*_args):
        raise OSError(38, "Function not implemented")
    monkeypatch.setattr(os, "memfd_create", refused)
    scratch = memfiles.Scratch("t")
    yield scratch
    scratch.close()


def test_in_memory_each_content_is_read_back_by_name_and_given_back_after():
    scratch = memfiles.Scratch("t")
    try:
        names = scratch.names([b"one\n", b"two\n" * 10000] + [b"x"] * 6)
        assert [Path(n).read_bytes() for n in names[:2]] == [b"one\n", b"two\n" * 10000]
        scratch.release()
        assert len(scratch._fds) == memfiles.KEPT and all(os.fstat(fd).st_size == 0 for fd in scratch._fds)
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
