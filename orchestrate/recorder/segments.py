"""The journal in sealed segments, so that a recorder commit costs the same on the campaign's last node as
on its first.

Git stores a file whole: with one journal file, every transition's commit hashed and compressed all that
the campaign had written so far (1.8 MB a commit after 256 nodes; 7.2 s of a 31.5 s run in cProfile, and
a loose object that size per commit). So once the live file, `state/<topic>/journal.jsonl`, holds
SEGMENT_BYTES or more right after a commit, it is sealed: hard-linked to `journal.d/NNNNNN.jsonl`, never
written again (the recorder verifies it is left alone, as it does the live file), and the live file starts
anew, empty. A commit then hashes the live file alone; a sealed segment keeps its blob.

The journal is the sealed segments in order, then the live file. Readers go through this module. A seal
holds only committed entries and is made right after their commit, so a crash leaves at most one seal
that the recorder's last commit lacks; `settle` tells resume what it means.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from orchestrate import faults
from orchestrate.atomic import write_atomic

SEALED = "journal.d"
# A commit hashes at most about this much journal. Tests set it low to seal small campaigns.
SEGMENT_BYTES = int(os.environ.get("ORCHESTRATE_JOURNAL_SEGMENT_BYTES") or 256 * 1024)


def sealed(journal: Path) -> list[Path]:
    """The sealed segments of the journal whose live file is `journal`, oldest first."""
    try:
        names = os.listdir(journal.parent / SEALED)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [journal.parent / SEALED / n for n in sorted(names) if n.endswith(".jsonl")]


def files(journal: Path) -> list[Path]:
    return [*sealed(journal), journal]


def read_bytes(journal: Path) -> bytes:
    """The whole journal as one file would hold it (b"" when it has none)."""
    return read(journal)[0]


def read(journal: Path) -> tuple[bytes, Callable[[int], str]]:
    """The whole journal, and where its line N (counted from 1 over the whole) is: `journal.d/000002.jsonl:14`,
    for messages that send a person to the line."""
    parts: list[bytes] = []
    starts: list[tuple[int, str]] = []
    line = 1
    for label, data in _parts(journal):
        parts.append(data)
        starts.append((line, label))
        line += data.count(b"\n")

    def where(number: int) -> str:
        first, label = next(((f, n) for f, n in reversed(starts) if f <= number), (1, journal.name))
        return f"{label}:{number - first + 1}"
    return b"".join(parts), where


def _parts(journal: Path) -> list[tuple[str, bytes]]:
    """(name, content) of each file of the journal as of one moment, while its runner may be sealing: read
    again when a segment appeared meanwhile, and the live file counted empty while it is still the newest
    segment's other name (the seal's first step done, not its second)."""
    for _ in range(5):
        listed = sealed(journal)
        found = [(name(path), _content(path)) for path in listed]
        found.append((journal.name, _live(journal, listed[-1] if listed else None)))
        if sealed(journal) == listed:
            break
    return found


def _content(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def _live(journal: Path, newest: Path | None) -> bytes:
    try:
        with journal.open("rb") as fh:
            if newest is not None and os.fstat(fh.fileno()).st_ino == _inode(newest):
                return b""
            return fh.read()
    except FileNotFoundError:
        return b""


def _inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except FileNotFoundError:
        return None


def name(path: Path) -> str:
    """A journal file's name within its campaign's folder: `journal.jsonl` or `journal.d/000001.jsonl`."""
    return f"{SEALED}/{path.name}" if path.parent.name == SEALED else path.name


def lines(journal: Path) -> list[bytes]:
    """Every complete line, in order; a torn end of the live file (a crash mid-write) is left out."""
    found = read_bytes(journal).split(b"\n")
    found.pop()  # after the last newline: empty, or a torn append
    return [raw + b"\n" for raw in found]


def first_line(journal: Path) -> bytes:
    for path in files(journal):
        try:
            with path.open("rb") as fh:
                found = fh.readline()
        except FileNotFoundError:
            continue
        if found:
            return found
    return b""


def tail(journal: Path, size: int) -> bytes:
    """About the last `size` bytes of the journal: the live file's, or the newest segment's when the live file
    was sealed a moment ago and holds too little."""
    for path in reversed(files(journal)):
        try:
            with path.open("rb") as fh:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(0, fh.tell() - size))
                found = fh.read()
        except FileNotFoundError:
            continue
        if found.strip():
            return found
    return b""


def seal(journal: Path) -> Path:
    """Seal the live file, which holds only committed entries: the next number under journal.d/, then an empty
    live file. The live file exists throughout; a crash between the two steps leaves the same content twice,
    which `settle` recognises."""
    folder = journal.parent / SEALED
    folder.mkdir(exist_ok=True)
    done = sealed(journal)
    number = int(done[-1].stem) + 1 if done else 1
    segment = folder / f"{number:06d}.jsonl"
    os.link(journal, segment)
    faults.reach("seal")
    write_atomic(journal, b"")
    faults.reach("sealed")
    return segment


def settle(journal: Path, committed_live: bytes, committed_names: set[str]) -> bytes:
    """After a crash: what the live file's last commit held, for comparing with what it holds now.

    `committed_names` are the segment names (`journal.d/...`) the recorder's last commit holds. A seal it
    lacks was made of the committed live file right after that commit: either the crash came before the new
    live file was started (the same lines are in both: the seal is undone, the live file is as committed),
    or after (the live file started empty: b"" is its committed part). Anything else is not a seal of
    orchestrate's and is left for the caller's check to report."""
    fresh = [s for s in sealed(journal) if name(s) not in committed_names]
    if len(fresh) != 1:
        return committed_live
    held = fresh[0].read_bytes()
    if held != committed_live:
        return committed_live
    try:
        live = journal.read_bytes()
    except FileNotFoundError:
        live = b""
    if live.startswith(held):  # the seal's second step never ran: undo its first
        fresh[0].unlink()
        return committed_live
    return b""
