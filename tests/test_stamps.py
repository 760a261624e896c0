"""stamps: a stat stamp of a folder changes with every write, creation, removal, rename and mode change in
it, and is not given while an entry is too fresh for its stat to show a second write."""
from __future__ import annotations

import os
import time

from orchestrate import stamps


def _aged(monkeypatch) -> None:
    monkeypatch.setattr(stamps, "FINE", -60.0)  # as if every entry had been written a minute ago
    monkeypatch.setattr(stamps, "COARSE", -60.0)


def test_every_kind_of_change_moves_the_stamp(tmp_path, monkeypatch):
    _aged(monkeypatch)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f.txt").write_text("one\n")
    (tmp_path / "g.txt").write_text("g\n")
    extra = tmp_path.parent / f"{tmp_path.name}-HEAD"
    seen = [stamps.tree(tmp_path, extra)]
    assert seen[0] == stamps.tree(tmp_path, extra)  # nothing happened
    st = (tmp_path / "d" / "f.txt").stat()
    (tmp_path / "d" / "f.txt").write_text("two\n")  # same size, mtime put back: ctime still moves
    os.utime(tmp_path / "d" / "f.txt", ns=(st.st_atime_ns, st.st_mtime_ns))
    for change in (lambda: (tmp_path / "d" / "new").write_text(""),
                   lambda: (tmp_path / "d" / "new").unlink(),
                   lambda: (tmp_path / "g.txt").rename(tmp_path / "d" / "g.txt"),
                   lambda: (tmp_path / "d" / "g.txt").chmod(0o755),
                   lambda: extra.write_text("ref: x\n")):
        seen.append(stamps.tree(tmp_path, extra))
        change()
    seen.append(stamps.tree(tmp_path, extra))
    assert None not in seen and len(set(seen)) == len(seen)


def test_a_fresh_entry_gives_no_stamp_until_it_has_settled(tmp_path, monkeypatch):
    (tmp_path / "f.txt").write_text("just written\n")
    assert stamps.tree(tmp_path) is None
    old = time.time_ns() - 60 * 10**9
    for p in (tmp_path / "f.txt", tmp_path):
        os.utime(p, ns=(old, old))
    assert stamps.tree(tmp_path) is None  # the utime itself moved the ctimes: still fresh
    monkeypatch.setattr(stamps, "FINE", 0.0)
    time.sleep(0.01)
    assert stamps.tree(tmp_path) is not None
    st = (tmp_path / "f.txt").stat()
    assert stamps.settled(st) and not stamps.settled(st, st.st_ctime_ns)


def _stat(mtime_ns: int, ctime_ns: int) -> os.stat_result:
    """A stat result as a filesystem would give it (mode, ino, dev, nlink, uid, gid, size, then times)."""
    seconds = (0, mtime_ns // 10**9, ctime_ns // 10**9)
    return os.stat_result((0o100644, 1, 1, 1, 0, 0, 5, *seconds, 0.0, mtime_ns / 1e9, ctime_ns / 1e9,
                           0, mtime_ns, ctime_ns))


def test_a_stat_is_trusted_25_ms_after_the_last_write_and_2_s_on_a_whole_second_filesystem():
    # the margins the README states: sub-second digits mean the kernel clock's few-millisecond tick; whole
    # seconds in both times mean a coarse filesystem (FAT, some network ones), where a second write within
    # the same second leaves the stat as it was
    ms = 10**6
    fine = 1_700_000_000 * 10**9 + 123_456_789
    assert not stamps.settled(_stat(fine, fine), fine + 24 * ms) and stamps.settled(_stat(fine, fine), fine + 26 * ms)
    coarse = 1_700_000_000 * 10**9
    assert not stamps.settled(_stat(coarse, coarse), coarse + 1_990 * ms)
    assert stamps.settled(_stat(coarse, coarse), coarse + 2_010 * ms)
    assert stamps.settled(_stat(coarse, coarse + 7), coarse + 26 * ms)  # one time with digits: not coarse
