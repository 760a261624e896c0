"""The recorder: the journal (the authority for resume) and one compare-and-swap commit per transition.

Events are appended to `state/<topic>/journal.jsonl` as they happen (sealed into segments as it grows:
recorder/segments.py; recorder/guard.py refuses what anyone else wrote). A write holding an intent, or an
entry that is not the engine's own (a person's decision, a worker's usage), is fsynced (and with it all
written before), so an intent is on disk before its effect and an answer survives a power cut. The engine's
bookkeeping between two intents (statuses, verdicts, results, the transition) is written without: what a
power cut loses of it, resume finds out again (an intent without its result is checked against git; a
state whose transition is lost runs again), and the recorder commit that follows is no more durable
(git does not fsync loose objects). A transition commits the journal and the sketch as one commit of the
recorder branch, moved by compare-and-swap: if anyone else moved it, the commit is refused instead of
interleaved.
"""
from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from orchestrate import __version__, faults, git
from orchestrate.recorder import segments
from orchestrate.recorder.guard import Guard
from orchestrate.errors import Concurrency, ForeignWrite, Halted, OrchestrateError

ENGINE = f"orchestrate@{__version__}"
WROTE: set[Path] = set()  # journals this process appended to: the CLI's boundary tells "nothing was changed" by it
TOPIC_TRAILER = "Orchestrate-Topic"  # names the campaign of each recorder commit: other topics' are built on


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Recorder:
    def __init__(self, ledger: Path, topic: str) -> None:
        self.ledger = ledger
        self.topic = topic
        self.journal = ledger / "state" / topic / "journal.jsonl"
        self._ref: str | None = None
        self._head: str | None = None
        self.seq = 0  # position in the journal file, given when an entry is written
        self.last_id = ""  # id of the last entry written to the file
        self.counter = 0  # names entries as they are made, so held ones can be cited before they are written
        self.held: list[dict[str, Any]] = []
        self._identity: dict[str, str] | None = None
        self._tree: str | None = None  # the tree of `head`, once this runner has committed
        self._pending: tuple[str, str] | None = None  # (sha, tree) of a commit whose ref update may have landed
        self.cut_off: tuple[str, str, str] | None = None  # (subject, body, last held id) of a commit under way
        self.gates: dict[str, tuple] = {}  # gate entries made or read here: id -> (node, code), for R3
        self._read_all = False
        self._written: list[dict[str, Any]] | None = None  # every entry written, once `written()` has read them
        self.suspects = lambda: []  # the engine names the nodes whose workers were running (a foreign write)
        self.guard = Guard(ledger, self.journal, lambda: self.suspects())
        # While workers run, the engine pins the recorder files it reads back (path -> content, None: absent)
        # and puts back any a worker edited (engine/watch.py): a commit carries them only as pinned.
        self.pinned = lambda: {}
        self.put_back = lambda: None
        self._tree_of = None  # recorder/snapshot.py's Snapshot, made at the first commit (status never commits)
        self._index: str | None = None  # the tree the recorder's index holds, when this runner knows it

    # Resolved on first use: reading a campaign back (status) never needs them.
    @property
    def ref(self) -> str:
        if self._ref is None:
            branch = git.head_branch(self.ledger)
            if branch is None:
                raise OrchestrateError(f"the recorder {self.ledger} is on a detached HEAD",
                                       hint=f"check out its branch: git -C {self.ledger} switch main")
            self._ref = f"refs/heads/{branch}"
        return self._ref

    @property
    def head(self) -> str:
        if self._head is None:
            self._head = git.rev_parse(self.ledger, "HEAD") or ""
        return self._head

    @head.setter
    def head(self, sha: str) -> None:
        self._head = sha

    def pin(self) -> "Recorder":
        """A runner takes the recorder as it finds it: any later move by someone else fails its next commit."""
        self._ref, self._head = None, None
        _ = self.ref, self.head
        return self

    @property
    def _env(self) -> dict[str, str]:
        if self._identity is None:
            self._identity = git.identity_env(self.ledger)
        return self._identity

    # ---- journal ------------------------------------------------------------------------------

    def read(self) -> list[dict[str, Any]]:
        """Every complete journal entry, in order (sealed segments first); a torn last line (a crash
        mid-write) is dropped."""
        return [json.loads(raw) for raw in segments.lines(self.journal)]

    def written(self) -> list[dict[str, Any]]:
        """Every entry written so far: read once, then extended by this runner's own writes (the guard refuses
        any other writer), so that a reader at every dispatch costs what is new, not the whole journal.
        Shared: callers must not change it."""
        if self._written is None:
            self._written = self.read()
        return self._written

    def resume_seq(self, entries: list[dict[str, Any]]) -> None:
        self.seq = entries[-1]["seq"] if entries else 0
        self.last_id = entries[-1]["id"] if entries else ""
        self.counter = max((int(e["id"].rsplit(":", 1)[1]) for e in entries), default=0)
        self.gates.update(_gate_refs(entries))
        self._truncate_torn_tail()

    def _truncate_torn_tail(self) -> None:
        if not self.journal.is_file() or self.journal.is_symlink():
            return  # nothing the engine wrote: the guard and resume's checks name it
        data = self.journal.read_bytes()
        if data and not data.endswith(b"\n"):
            with self.journal.open("r+b") as fh:
                fh.truncate(data.rfind(b"\n") + 1)

    def event(self, kind: str, context: dict[str, Any], *, source_entity: str = ENGINE,
              source_type: str = "engine", derived_from: Iterable[str] = (), hold: bool = False) -> dict[str, Any]:
        """A journal entry with its provenance; written now, or with `hold` at the next `flush`.
        An entry that breaks a lineage rule is a bug: ProvenanceError, and nothing is written."""
        from orchestrate.recorder.provenance import check_append
        entry = {"id": f"{self.topic}:{self.counter + 1}", "created_at": now(),
                 "source_entity": source_entity, "source_type": source_type, "kind": kind,
                 "derived_from": list(derived_from), "context": context}
        check_append(entry, self.topic, self.counter + 1, self._gate_of)
        self.counter += 1
        self.gates.update(_gate_refs([entry]))
        if hold:
            self.held.append(entry)
        else:
            self._write([entry])
        return entry

    def _gate_of(self, ref: str) -> tuple | None:
        """A gate entry cited by a new one; resumed from a checkpoint, older entries are read on demand."""
        if ref not in self.gates and not self._read_all:
            self._read_all = True
            self.gates.update(_gate_refs(self.read()))
        return self.gates.get(ref)

    def flush(self) -> None:
        """Write the held entries (a state's bookkeeping) in one append."""
        if self.held:
            lines, self.held = self.held, []
            self._write(lines)

    def _write(self, entries: list[dict[str, Any]]) -> None:
        numbered = (self.seq, self.last_id)  # taken back when nothing lands: the next entry takes the same seq
        lines = []
        for entry in entries:
            self.seq += 1
            entry["seq"] = self.seq
            self.last_id = entry["id"]
            lines.append(json.dumps(entry, sort_keys=True, separators=(",", ":")).encode() + b"\n")
        self.journal.parent.mkdir(parents=True, exist_ok=True)
        self.guard.before_write()
        payload = b"".join(lines)
        try:
            faults.reach("append")
            with self.journal.open("ab") as fh:
                fh.write(payload)
                fh.flush()
                if any(e["kind"] == "intent" or e["source_type"] != "engine" for e in entries):
                    os.fsync(fh.fileno())  # (and everything written before it, in order: one file)
        except BaseException:  # Ctrl-C or SIGTERM lands between bytecodes: after the append, before it was
            # counted (an fsync is the long wait), the interrupt's own entries would find the file grown behind
            # the runner's back and halt as on a foreign write; counted when the file holds it, as it stands
            if _size(self.journal) == (self.guard.size or 0) + len(payload):
                self._appended(entries, payload)
            else:
                self.seq, self.last_id = numbered
            raise
        self._appended(entries, payload)

    def _appended(self, entries: list[dict[str, Any]], payload: bytes) -> None:
        self.guard.wrote(payload)
        WROTE.add(self.journal)
        if self._written is not None:
            self._written.extend(entries)

    def verify(self) -> None:
        """Refuse now (ForeignWrite) if the journal changed since this runner's last write, its sealed
        segments included (recorder/guard.py)."""
        self.guard.verify()

    # ---- commits ------------------------------------------------------------------------------

    def commit(self, subject: str, body: str = "") -> str:
        """Commit the recorder's files (held entries first) as one CAS step of the recorder branch (`_commit`)."""
        self.cut_off = (subject, body, self.held[-1]["id"] if self.held else "")
        try:
            sha = self._commit(subject, body)
        except KeyboardInterrupt:  # (SIGTERM too) the interrupt makes it under its own subject: finish_cut_off
            raise
        except BaseException:  # refused: not one a later interrupt should make
            self.cut_off = None
            raise
        self.cut_off = None
        return sha

    def finish_cut_off(self) -> None:
        """A commit an interrupt cut off once its entries were written is made under its own subject, before the
        interrupt's own takes them in: a campaign's `log: open` and `log: close` are what close-check looks for."""
        if self.cut_off is not None:
            subject, body, last = self.cut_off
            if not last or any(e["id"] == last for e in reversed(self.written())):
                self.commit(subject, body)

    def _commit(self, subject: str, body: str = "") -> str:
        """One CAS step of the recorder branch.

        Under the recorder-wide lock, so runners of other topics commit one at a time; their commits since
        this runner's last one are built on, a commit of this topic by anyone else is refused.

        The branch is not read first: the commit is built on this runner's last one and the compare-and-swap
        itself says whether anyone moved the branch. Only then is the move followed (another topic's commit)
        and the commit made again on top of it, or refused. Trees, the commit and the swap go through git
        processes kept open (recorder/snapshot.py, orchestrate/git_pipe.py): no process starts per commit."""
        from orchestrate.recorder.lock import RecorderLock
        self.flush()
        self.verify()
        faults.reach("flush")
        with RecorderLock(self.ledger):
            followed = self._pending is not None and self._follow()  # an interrupted commit of ours may have landed
            self.guard.seal()  # a live file grown to a segment is sealed in this very commit
            tree = self._build()
            if self.head and tree == self._head_tree() and not followed:
                if not self._follow():
                    return self.head  # nothing changed
                tree = self._build()  # on the commit followed (after another topic's, this subject still counts)
            message = subject + (f"\n\n{body}" if body else "") + f"\n\n{TOPIC_TRAILER}: {self.topic}"
            from orchestrate import git_pipe
            from orchestrate.recorder import upkeep
            store = git_pipe.store(self.ledger)
            for _ in range(3):  # each retry follows a commit of another topic made before this lock was taken
                sha = self._snapshot.commit(tree, [self.head] if self.head else [], message, self._env)
                faults.reach("commit")
                # a Ctrl-C may land after git moved the ref and before the next line: the interrupt's own commit
                # then finds this sha on the branch, and it is this runner's, not a foreign move
                self._pending = (sha, tree)
                if store.swap(self.ref, sha, self.head or "0" * len(sha)):
                    self.head, self._tree = sha, tree
                    self._pending = None
                    self._left_index(tree)
                    upkeep.committed(self.ledger, self.guard.size or 0)
                    self.guard.landed()
                    return sha
                if not self._follow() and self._pending is not None:
                    raise self._refused(sha)  # the branch is where this runner left it, yet the swap failed
                if self._pending is None:  # the swap reported failure, yet the branch holds this very commit
                    self.guard.landed()
                    return self.head
                tree = self._build()  # on the commit followed: its files are in its tree, not in ours
            raise self._moved()

    @property
    def _snapshot(self):
        if self._tree_of is None:
            from orchestrate.recorder.snapshot import Snapshot
            self._tree_of = Snapshot(self.ledger, self.topic)
        return self._tree_of

    def _head_tree(self) -> str | None:
        if not self.head:
            return None
        if self._tree is None:
            from orchestrate import git_batch
            try:
                found = git_batch.read(self.ledger, f"{self.head}^{{tree}}")
            except git_batch.Unusable:
                found = None
            self._tree = found[0] if found else git.out(self.ledger, "rev-parse", f"{self.head}^{{tree}}")
        return self._tree

    def _follow(self) -> bool:
        """Build on what runners of other topics committed since this runner's last commit; a move that is
        not a descendant, or that holds a commit of this topic (or one that names no topic), is refused."""
        actual = git.rev_parse(self.ledger, self.ref)
        pending = self._pending
        if pending and actual == pending[0]:  # this runner's own commit, interrupted before it was noted
            self.head, self._tree, self._pending = pending[0], pending[1], None
        if not self.head or actual == self.head:
            return False
        if actual is None or not git.is_ancestor(self.ledger, self.head, actual):
            raise self._moved()
        topics = git.trailer_values(self.ledger, f"{self.head}..{actual}", TOPIC_TRAILER)
        if any(t in ("", self.topic) for t in topics):
            raise self._moved()
        self.head, self._tree = actual, None
        return True

    def _build(self) -> str:
        """The tree of the recorder's files now, on the last commit's; pinned files (workers run) put back
        and the tree built again until it holds them as pinned."""
        for _ in range(3):
            tree = self._snapshot.tree(self._head_tree()) or self._staged()
            self.verify()  # a line appended while the files were read may be in the tree: refuse it too
            pinned = {str(p.relative_to(self.ledger)): c for p, c in self.pinned().items()}
            wrong = [p for p, c in pinned.items()
                     if _staged_wrong(self._snapshot.blob_at(tree, p), c, self.ledger / p)]
            if not wrong:
                return tree
            self.put_back()
        raise ForeignWrite(f"{self.ledger}: {', '.join(wrong)} keep changing behind the engine's back while "
                           f"{', '.join(self.suspects()) or 'workers'} run; nothing of it was committed",
                           hint="stop what writes there, then `orchestrate resume`")

    def _staged(self) -> str:
        """The tree git's own staging makes: the index set to the last commit (other runners' commits leave
        it behind), `git add -A` of all but other campaigns' files (each runner commits its own; one left
        half-written in another's commit would make that one's next commit look empty), `write-tree`. A file
        vanishing under `add` (an editor's temp file) is retried, not fatal; so is a `write-tree` that failed."""
        if self.head:
            git.git(self.ledger, "reset", "--quiet", self.head, "--", ".")
        from orchestrate.recorder.snapshot import others_pathspec
        spec = [".", *others_pathspec(self._snapshot.others())]
        for attempt in range(5):
            done = git.git(self.ledger, "add", "-A", "--", *spec, env=self._env, check=False)
            if done.rc == 0:
                break
            time.sleep(0.05 * (attempt + 1))
        else:
            git.git(self.ledger, "add", "-A", "--", *spec, env=self._env)
        done = git.git(self.ledger, "write-tree", check=False)
        if done.rc:  # once more: a repack's prune-packed may have removed a folder as git wrote in it (git_pipe.py)
            done = git.git(self.ledger, "write-tree")
        tree = done.stdout.strip()
        self._snapshot.learn(tree)
        self._index = tree
        return tree

    def _left_index(self, tree: str) -> None:
        """A commit of a tree the index does not hold: the index is set to the branch when the command ends
        (recorder/upkeep.py), so that `git status` in .ledger shows only what changed since; after a crash,
        `resume` sets it."""
        if tree != self._index:
            from orchestrate.recorder import upkeep
            upkeep.left_behind(self.ledger)

    def _refused(self, sha: str) -> OrchestrateError:
        """git refused to move the branch that no one moved: a lock of another git's (exit 4), or a recorder that
        cannot be written (exit 1), which the message said was a move by another runner (rv46)."""
        lock = self.ledger / ".git" / f"{self.ref}.lock"
        if lock.exists():
            return Concurrency(f"the recorder's branch could not be moved to {sha[:12]}: {lock} is there",
                               hint="another git is writing the recorder, or one killed mid-write left the lock "
                                    "(then remove it); `orchestrate resume` continues from the last recorded state")
        return Halted(f"the recorder's branch could not be moved to {sha[:12]}: git refused the write, and no other "
                      "runner moved it", hint="the recorder cannot be written (a read-only or full file system?); "
                                              "once it can, `orchestrate resume` continues from the last recorded state")

    def _moved(self) -> Concurrency:
        actual = git.rev_parse(self.ledger, self.ref) or "nothing"
        who = git.out(self.ledger, "log", "-1", "--format=%an <%ae> at %cI: %s", actual) if actual != "nothing" else ""
        return Concurrency(f"the recorder branch moved under this runner (expected {self.head[:12]}, found "
                           f"{actual[:12]}{': ' + who if who else ''})",
                           hint="another runner is writing this campaign; stop one of them")


def _staged_wrong(staged: str | None, pinned: bytes | None, path: Path) -> bool:
    """Would the commit hold something else than the pinned content (`staged`: the blob the tree holds)? A
    path the recorder does not track (not in the tree, still there) is not committed at all; one a worker
    deleted would be."""
    if staged is None:
        return pinned is not None and not path.exists()
    from orchestrate import git_ids
    return staged != git_ids.blob_id(pinned, len(staged))


def _gate_refs(entries: Iterable[dict[str, Any]]) -> dict[str, tuple]:
    return {e["id"]: (e["context"].get("node"), e["context"].get("code")) for e in entries if e["kind"] == "gate"}


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1
