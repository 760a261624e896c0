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
    """The sealed segments of the journal whose live file is `journal`, oldest first: regular files with a
    segment's name (anything else in the folder is none: `entries` lists it, for the checks that refuse it)."""
    folder = journal.parent / SEALED
    return [folder / n for n in entries(journal) if _NAME.fullmatch(n) and _regular(folder / n)]


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


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
        found = [(name(path), content(path)) for path in listed]
        found.append((journal.name, _live(journal, listed[-1] if listed else None)))
        if sealed(journal) == listed:
            break
    return found


def content(path: Path) -> bytes:
    """A regular file's content; b"" for anything else (see `_read`)."""
    return _read(path)[0]


def _live(journal: Path, newest: Path | None) -> bytes:
    data, inode = _read(journal)
    return b"" if newest is not None and inode is not None and inode == _inode(newest) else data


def _read(path: Path) -> tuple[bytes, int | None]:
    """A regular file's content and inode, never following a link or waiting on a pipe put in its place: (b"",
    None) for anything else (the guard and resume's checks name it)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # absent, or a link (O_NOFOLLOW)
        return b"", None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return b"", None
    with os.fdopen(fd, "rb") as fh:
        return fh.read(), st.st_ino


def _inode(path: Path) -> int | None:
    try:
        return os.lstat(path).st_ino
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
        if found := content(path):
            return found[:found.find(b"\n") + 1] or found
    return b""


def tail(journal: Path, size: int) -> bytes:
    """The journal's last complete lines, about `size` bytes of them: the live file's, or the newest segment's
    when the live file was sealed a moment ago and holds none yet."""
    for path in reversed(files(journal)):
        found = content(path)
        if len(found) > size:
            found = found[found.find(b"\n", len(found) - size - 1) + 1:]
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


def pending(journal: Path, committed_live: bytes, committed: dict[str, str]) -> Path | None:
    """The seal a crash kept out of the recorder's last commit, if there is one: the number after the highest
    that commit holds, a regular file made of the live file as committed and more complete lines.
    `committed_live` is the live file's content in that commit, `committed` its segments (name -> blob id)."""
    numbers = [int(label[len(SEALED) + 1:][:6]) for label in committed if _NAME.fullmatch(label[len(SEALED) + 1:])]
    candidate = journal.parent / SEALED / f"{max(numbers, default=0) + 1:06d}.jsonl"
    held = content(candidate)
    if held.startswith(committed_live) and held.endswith(b"\n") and _regular(candidate):
        return candidate
    return None


def settle(journal: Path, committed_live: bytes, seal: Path) -> None:
    """After a crash: undo `seal` (see `pending`), made as a transition's commit was built.

    Cut before the new live file was started, the same lines are in both: the segment goes. Cut after, the
    live file is empty: the segment's lines go back into it, then the segment goes (a crash in between leaves
    the first case). A live file put back to its last commit (as the guard's message says to) wins: the
    segment goes, and the transition it held runs again."""
    held, live = content(seal), content(journal)
    if not live:
        write_atomic(journal, held)
        seal.unlink()
    elif live.startswith(committed_live):  # the seal's lines are in it (they start with these), or it was put back
        seal.unlink()


def unlike_head(journal: Path, committed: dict[str, str], seal: Path | None = None) -> list[tuple[str, str]]:
    """How journal.d/ differs from the recorder's last commit (`committed`: segment name -> blob id), the
    crash's `seal` aside, as (name, what): a segment changed or removed ("restore"), anything the commit
    lacks ("remove"), or the folder not being one."""
    from orchestrate import git_ids
    if folder_stamp(journal) == ("not a folder",):
        return [(SEALED, "remove")]
    found = [(label, "restore") for label in committed if not _regular(journal.parent / label)]
    for entry in entries(journal):
        label = f"{SEALED}/{entry}"
        path = journal.parent / label
        if path == seal:
            continue
        if label not in committed:
            found.append((label, "remove"))
        elif not _regular(path) or git_ids.blob_id(content(path), len(committed[label])) != committed[label]:
            found.append((label, "restore"))
    return sorted(set(found))


def write_atomic(path: Path, data: bytes) -> None:
    from orchestrate.atomic import write_atomic as write  # tempfile's import is a fifth of what `status` costs
    write(path, data)
