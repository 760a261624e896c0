"""The journal in sealed segments, so that a recorder commit costs the same on the campaign's last node as
on its first.

Git stores a file whole: with one journal file, every transition's commit hashed and compressed all that
the campaign had written so far (1.8 MB a commit after 256 nodes; 7.2 s of a 31.5 s run in cProfile, and
a loose object that size per commit). So once the live file, `state/<topic>/journal.jsonl`, holds
SEGMENT_BYTES or more as a transition's commit is built, it is sealed: hard-linked to
`journal.d/NNNNNN.jsonl`, never written again (recorder/guard.py verifies it is left alone, as it does the
live file), and the live file starts anew, empty. A commit then hashes the live file alone; a sealed segment keeps its blob.

The journal is the sealed segments in order, then the live file. Readers go through this module. A seal
is made as a transition's commit is built, and is committed with it: a crash before that commit leaves one
seal the recorder's last commit lacks, which `settle` folds back into the live file (resume then treats
the entries as it would have without the seal). Any other difference between journal.d/ and the last
commit is not orchestrate's: `unlike_head` names it, and resume refuses to go on.
"""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Callable

from orchestrate import faults

SEALED = "journal.d"
# A commit hashes at most about this much journal. Tests set it low to seal small campaigns.
SEGMENT_BYTES = int(os.environ.get("ORCHESTRATE_JOURNAL_SEGMENT_BYTES") or 256 * 1024)


_NAME = re.compile(r"[0-9]{6}\.jsonl")


def sealed(journal: Path) -> list[Path]:
    """The sealed segments of the journal whose live file is `journal`, oldest first (anything else in the
    folder is no segment: `entries` lists it, for the checks that refuse it)."""
    return [journal.parent / SEALED / n for n in entries(journal) if _NAME.fullmatch(n)]


def entries(journal: Path) -> list[str]:
    """Every name in journal.d/, sorted; [] when there is no such folder (or it is not one)."""
    try:
        return sorted(os.listdir(journal.parent / SEALED))
    except (FileNotFoundError, NotADirectoryError):
        return []


def folder_stamp(journal: Path) -> tuple | None:
    """journal.d/ itself, not what it may point to: (inode, ctime), None when absent, ("not a folder",) when
    it is a symbolic link or a file (nothing orchestrate makes)."""
    try:
        st = os.lstat(journal.parent / SEALED)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_ctime_ns) if stat.S_ISDIR(st.st_mode) else ("not a folder",)


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
    """Seal the live file: the next number under journal.d/, then an empty live file. The live file exists
    throughout; a crash between the two steps leaves the same content twice, which `settle` recognises."""
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


def settle(journal: Path, committed_live: bytes, committed: dict[str, str]) -> None:
    """After a crash: fold a seal the recorder's last commit lacks back into the live file.

    `committed_live` is the live file's content in that commit, `committed` its segments (name -> blob id).
    The seal is the live file as it was when the transition's commit was being built: committed lines, then
    the transition's. Cut before the new live file was started, the same lines are in both: the segment goes.
    Cut after, its lines go back in front of the live file's, then the segment goes (a crash in between
    leaves the first case). Anything else is not a seal of orchestrate's: left for `unlike_head`."""
    fresh = [s for s in sealed(journal) if name(s) not in committed]
    if len(fresh) != 1:
        return
    held = fresh[0].read_bytes()
    live = _content(journal)
    if held and live.startswith(held):
        fresh[0].unlink()
    elif held.startswith(committed_live) and held.endswith(b"\n"):
        write_atomic(journal, held + live)
        fresh[0].unlink()


def unlike_head(journal: Path, committed: dict[str, str]) -> list[str]:
    """How journal.d/ differs from the recorder's last commit (`committed`: segment name -> blob id): a
    segment changed, removed or added, anything else in the folder, or the folder not being one."""
    if folder_stamp(journal) == ("not a folder",):
        return [f"{SEALED} is not a folder"]
    found = [f"{label} was removed" for label in committed if not (journal.parent / label).is_file()]
    for entry in entries(journal):
        label = f"{SEALED}/{entry}"
        path = journal.parent / label
        if label not in committed:
            found.append(f"{label} is not in the recorder's last commit")
        elif path.is_symlink() or blob_id(_content(path), len(committed[label])) != committed[label]:
            found.append(f"{label} differs from the recorder's last commit")
    return found


def write_atomic(path: Path, data: bytes) -> None:
    from orchestrate.atomic import write_atomic as write  # tempfile's import is a fifth of what `status` costs
    write(path, data)


def blob_id(content: bytes | None, length: int) -> str | None:
    """The object id git gives `content` as a blob (sha1, or sha256 in a repository of that format: `length`
    is that of an id the repository gave)."""
    if content is None:
        return None
    import hashlib
    algo = hashlib.sha256 if length == 64 else hashlib.sha1
    return algo(b"blob %d\0" % len(content) + content).hexdigest()
