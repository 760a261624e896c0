"""An index file as git writes it (versions 2 to 4), read without a process: where each file's entry is and what
stat data it records, which orchestrate compares to the nanosecond where git compares whole seconds."""
from __future__ import annotations

import os
import struct
from typing import Iterator

# Stat checks a planted config must not weaken: git's own look at a pooled worktree rests on ctime (pool.py).
STAT_CHECKS = ("-c", "core.trustctime=true", "-c", "core.checkStat=default", "-c", "core.ignoreStat=false")

CUT = 0xFFFFFFFF
STAT = struct.Struct(">4I4x2I8xI")  # of an entry: ctime, mtime (seconds, nanoseconds), ino, mode, size
SKIP_WORKTREE = 0x4000  # in an entry's extended flags (index version 3 and up)


def records(data: bytes, hash_size: int) -> Iterator[tuple[bytes, int, bool]]:
    """(path, where its entry starts, whether it is skip-worktree) for each file or link entry of an index
    (versions 2 to 4); a gitlink has no file to compare. OSError when it is not an index git wrote whole."""
    if data[:4] != b"DIRC" or int.from_bytes(data[4:8], "big") not in (2, 3, 4):
        raise OSError(0, "not an index git writes", "index")
    version, count = int.from_bytes(data[4:8], "big"), int.from_bytes(data[8:12], "big")
    at, name, fixed = 12, b"", 40 + hash_size  # the stat data and the id; then the flags
    try:
        for _ in range(count):
            start, flags = at, (data[at + fixed] << 8) | data[at + fixed + 1]
            at += fixed + 2
            extended = 0
            if version >= 3 and flags & 0x4000:
                extended, at = (data[at] << 8) | data[at + 1], at + 2
            if version == 4:
                cut, at = _varint(data, at)
                end = data.index(b"\0", at)
                name, at = name[:len(name) - cut] + data[at:end], end + 1
            else:  # the name's length is in the flags, up to 4094; NUL-padded to a multiple of 8
                end = at + (flags & 0xFFF) if flags & 0xFFF < 0xFFF else data.index(b"\0", at)
                name = data[at:end]
                if data[end]:
                    raise ValueError(f"no NUL after the name at byte {end}")
                at = start + ((end - start + 8) & ~7)
            if data[start + 26] >> 4 in (0o10, 0o12):  # the mode's type bits: a file or a link, not a gitlink
                yield name, start, bool(extended & SKIP_WORKTREE)
    except (struct.error, ValueError, IndexError) as exc:  # cut short: not an index git wrote whole
        raise OSError(0, f"an index cut short ({exc})", "index") from None


def entries(data: bytes, hash_size: int) -> list[tuple[str, tuple[int, ...], bool, str]]:
    """(path, its recorded ctime, mtime, inode, size and whether it is a link, whether it is skip-worktree, its
    blob's id) for each file or link entry: the index as converted.py reads it, spelled out (tests compare it with
    `git ls-files --debug`)."""
    found = []
    for name, at, skipped in records(data, hash_size):
        cs, cn, ms, mn, ino, kind, size = STAT.unpack_from(data, at)
        found.append((os.fsdecode(name), (cs * 10**9 + cn, ms * 10**9 + mn, ino, size, kind >> 12 == 0o12), skipped,
                      data[at + 40:at + 40 + hash_size].hex()))
    return found


def _varint(data: bytes, at: int) -> tuple[int, int]:
    byte = data[at]
    value, at = byte & 127, at + 1
    while byte & 128:
        byte = data[at]
        value, at = ((value + 1) << 7) | (byte & 127), at + 1
    return value, at
