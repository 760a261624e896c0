"""The journal is written by its runner alone: the check that nothing else wrote to it, sealed segments
included, so that nothing another process wrote is ever committed.

Appended lines show in the live file's size; a rewrite of the same size in its content, hashed again only
when the file's inode, ctime or size says someone touched it (ctime cannot be set back by hand). A sealed
segment is never written again, not even by a runner: one stat each says it is as sealed.

A runner that finds a foreign write leaves a halt record (`halt_record`): the length and digest of what it
had written itself since its last seal. Until `orchestrate resume` finds the live file back at its last
commit or at exactly those bytes, it refuses: a line appended in the engine's own shape is never folded in.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Callable

from orchestrate import git
from orchestrate.errors import ForeignWrite
from orchestrate.recorder import segments


def _sha256(data: bytes = b""):
    """hashlib's sha256, imported when first used: `status` and the other readers never verify, and loading
    OpenSSL is 5 ms of their start."""
    import hashlib
    return hashlib.sha256(data)


class Guard:
    def __init__(self, ledger: Path, journal: Path, suspects: Callable[[], list[str]]) -> None:
        self.ledger, self.journal, self.suspects = ledger, journal, suspects
        self.size: int | None = None  # the live file's length after this runner's last write
        self._digest = None  # sha256 of what the live file held then (a hashlib object); None: not written yet
        self._stamp: tuple | None = None  # its `_stamp` then: unchanged, nobody wrote since
        self._sealed: dict[Path, tuple] = {}  # each sealed segment's stamp when this runner first saw it
        self._folder: tuple | None = None  # journal.d/'s own stamp then (segments.folder_stamp)
        self._made: set[Path] = set()  # the segments this runner sealed
        self._checkpoints: dict[Path, tuple] = {}  # each checkpoint's stamp when this runner wrote or first saw it
        self._checkpoints_folder: int | None = None  # the inode of checkpoints/ then
        # After a seal, until the commit holding it lands: the length and running sha256 of the sealed lines and
        # every line written since, which is what resume folds back into the live file after a crash or halt
        self._carry: tuple[int, object] | None = None

    def before_write(self, *, read: bool = False) -> None:
        """Refuse if the live file changed since this runner's last write; at the first, take it as found.
        `read`: its content is compared even when its stat is unchanged (`verify`: only the first write through
        a shared mapping moves it, and what a commit carries must be this runner's lines; 0.25 ms for a
        segment's 256 KiB)."""
        stamp = _stamp(self.journal)
        if self._digest is None:
            self._digest, self.size, self._stamp = _sha256(segments.content(self.journal)), stamp[2], stamp
            self._sealed = {path: _stamp(path) for path in segments.sealed(self.journal)}
            self._folder = segments.folder_stamp(self.journal)
            self._checkpoints = {path: _stamp(path) for path in self._checkpoint_files()}
            if self._folder == ("not a folder",):
                self._foreign(f"{segments.SEALED} is not a folder", self.journal.parent / segments.SEALED)
            return
        if stamp == self._stamp and not read:
            return
        if stamp[3] not in (0, stat.S_IFREG):
            self._foreign("it is no longer a plain file")
        if stamp[2] != self.size:
            self._foreign(f"{stamp[2] - (self.size or 0):+d} bytes since its last write")
        if _sha256(segments.content(self.journal)).digest() != self._digest.digest():
            self._foreign("rewritten in place, same size")
        self._stamp = stamp  # touched, not changed

    def wrote(self, payload: bytes) -> None:
        """Right after this runner appended `payload`: only the size is known to be right (a line appended by
        someone else at the same moment shows in it)."""
        expected = (self.size or 0) + len(payload)
        self._digest.update(payload)
        if self._carry is not None:
            self._carry[1].update(payload)
            self._carry = (self._carry[0] + len(payload), self._carry[1])
        self.size = expected
        stamp = _stamp(self.journal)
        if stamp[2] != expected:
            self._foreign(f"{stamp[2] - expected:+d} bytes since its last write")
        self._stamp = stamp

    def verify(self) -> None:
        """Refuse now if the live file or a sealed segment changed since this runner's last write."""
        if self._digest is None:
            return
        self.before_write(read=True)
        folder = self.journal.parent / segments.SEALED
        now = segments.folder_stamp(self.journal)
        if now == ("not a folder",) and now != self._folder:
            self._foreign(f"{segments.SEALED} is not a folder", folder)
        found = [folder / n for n in segments.entries(self.journal)]
        for path in found:
            if path not in self._sealed:
                self._foreign(f"{segments.name(path)} appeared", path)
            if _stamp(path) != self._sealed[path]:
                self._foreign(f"{segments.name(path)}, sealed, was written", path)
        if len(found) != len(self._sealed):
            gone = sorted(set(self._sealed) - set(found))
            self._foreign(f"{segments.name(gone[0])}, sealed, was removed", gone[0])
        if now != self._folder:  # the same names and files, in another folder put in its place
            self._foreign(f"{segments.SEALED} was replaced", folder)
        for path in self._checkpoint_files():  # one gone is harmless: resume replays more of the journal
            if _stamp(path) != self._checkpoints.get(path):
                how = "was written" if path in self._checkpoints else "appeared"
                self._foreign(f"checkpoints/{path.name} {how}", path)

    def wrote_checkpoint(self, path: Path) -> None:
        """This runner wrote the checkpoint `path` (written once, never again: a later change is foreign)."""
        self._checkpoints[path] = _stamp(path)

    def _checkpoint_files(self) -> list[Path]:
        """The files in checkpoints/; the folder itself must stay the one this runner found or made (its
        inode and kind: a link or a copy put in its place would be committed in place of the folder)."""
        folder = self.journal.parent / "checkpoints"
        inode, _, _, kind = _stamp(folder)
        if kind == 0:
            return []
        if kind != stat.S_IFDIR or self._checkpoints_folder not in (None, inode):
            self._foreign("checkpoints/ was replaced" if kind == stat.S_IFDIR else "checkpoints/ is not a folder",
                          folder)
        self._checkpoints_folder = inode
        with os.scandir(folder) as found:
            return [Path(e.path) for e in found]

    def seal(self) -> None:
        """As a commit is built, when the live file has grown to a segment: seal it (recorder/segments.py)."""
        if (self.size or 0) < segments.SEGMENT_BYTES or self._digest is None:
            return
        self.verify()  # what is sealed is what this runner wrote
        size, digest = self.size or 0, self._digest.digest()
        own = (size, digest.hex())  # what resume folds an unfinished seal back into: the runner's lines, no more
        self._carry = (size, self._digest.copy())
        segment = segments.seal(self.journal)
        self._made.add(segment)
        self._folder = segments.folder_stamp(self.journal)  # the link changed it: names are checked one by one
        # A worker writing the live file while it is sealed writes into the segment (the file it opened) or
        # into the new live file before it is stamped: both are checked once, against what this runner wrote.
        sealed, fresh = _stamp(segment), _stamp(self.journal)
        self._digest, self.size, self._stamp = _sha256(), 0, fresh
        if sealed[2] != size or _sha256(segments.content(segment)).digest() != digest:
            self._foreign("written while it was being sealed", segment, ours=True, own=own)
        self._sealed[segment] = sealed
        if fresh[2] != 0:
            self._foreign(f"{fresh[2]:+d} bytes as it was started anew", own=own)

    def landed(self) -> None:
        """The commit holding the last seal landed: resume no longer folds it back."""
        self._carry = None

    def _own(self) -> tuple[int, str]:
        """The length and sha256 of what resume would find of this runner's uncommitted lines."""
        if self._carry is not None:
            return self._carry[0], self._carry[1].hexdigest()
        return self.size or 0, (self._digest or _sha256()).hexdigest()

    def _foreign(self, what: str, path: Path | None = None, *, ours: bool = False,
                 own: tuple[int, str] | None = None) -> None:
        """Every later write and commit refuses too (the baseline stays), and so does resume (the halt record),
        until a person restores the journal. `ours`: `path` is a segment this runner sealed (it may not be
        committed yet). `own`: the length and sha256 of the runner's lines since its last seal, if not the
        baseline's."""
        unrecorded = _record(self.ledger, self.journal.parent.name, what, own or self._own())
        who = ", ".join(self.suspects()) or "something other than this runner"
        path = path or self.journal
        rel = path.relative_to(self.ledger)
        if path == self.journal or git.git(self.ledger, "cat-file", "-e", f"HEAD:{rel}", check=False).rc == 0:
            restore = f"restore it with `git -C {self.ledger} checkout HEAD -- {rel}`"
        elif ours or path in self._made:  # sealed since the last commit: the live file's commit holds its lines
            restore = (f"remove it and restore the live file it was sealed from (`rm -rf {path} && "
                       f"git -C {self.ledger} checkout HEAD -- {self.journal.relative_to(self.ledger)}`)")
        else:
            restore = f"remove it (`rm -rf {path}`)"
        raise ForeignWrite(f"{self.journal}: changed behind the engine's back ({what}) while {who} ran; "
                           f"nothing of it was committed{unrecorded}",
                           hint=f"inspect it with `git -C {self.ledger} status` and `git -C {self.ledger} diff HEAD`, "
                                f"{restore}, then `orchestrate resume`")


def halt_record(ledger: Path, topic: str) -> Path:
    """Where a runner that found a foreign write in `topic`'s journal records what it wrote itself: in the
    recorder's git folder, out of every working tree (no status lists it, no restore of the recorder's
    files removes it)."""
    return ledger / ".git" / "orchestrate" / f"halted-{topic}.json"


def _record(ledger: Path, topic: str, what: str, own: tuple[int, str]) -> str:
    """Write the halt record, replacing whatever is in its place; "" or, when it cannot be written, why (the
    ForeignWrite is raised all the same)."""
    from orchestrate.atomic import write_atomic
    from orchestrate.removal import remove
    path = halt_record(ledger, topic)
    try:
        remove(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps({"what": what, "size": own[0], "sha256": own[1]}).encode() + b"\n")
    except OSError as exc:
        return f" (its halt record {path} could not be written: {exc.strerror or exc})"
    return ""


def halted(ledger: Path, topic: str) -> dict | None:
    """The halt record of `topic`, if a runner left one; anything else in its place (unreadable, a link, a
    folder, a FIFO: never followed or waited on) counts as a record that matches nothing."""
    path = halt_record(ledger, topic)
    if not os.path.lexists(path):
        return None
    try:
        record = json.loads(segments.content(path))
    except ValueError:
        record = None
    if not isinstance(record, dict):
        return {"what": f"its halt record {path} is unreadable", "size": -1, "sha256": ""}
    return record


def written_by_runner(record: dict, data: bytes) -> bool:
    """Whether `data` (the live file, an unfinished seal folded back) is exactly what the halted runner wrote."""
    return len(data) == record.get("size") and _sha256(data).hexdigest() == record.get("sha256")


def clear(ledger: Path, topic: str) -> None:
    from orchestrate.removal import remove
    remove(halt_record(ledger, topic))



def _stamp(path: Path) -> tuple[int, int, int, int]:
    """(inode, ctime, size, file type) of the path itself (a symbolic link put in its place is not followed)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return (0, 0, 0, 0)
    return (st.st_ino, st.st_ctime_ns, st.st_size, stat.S_IFMT(st.st_mode))
