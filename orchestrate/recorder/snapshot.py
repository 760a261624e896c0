"""The tree a recorder commit holds, found without git's index: the last commit's tree with the recorder's
files that changed since hashed again (journal.py commits it).

A transition's commit was `git add -A` and `git write-tree`, two processes out of the four a commit took.
Here the recorder's folders are walked (a few dozen stat calls), a file whose stat is unchanged since it was
hashed keeps its blob, the others are read and hashed, and only the folders on a changed path get new trees,
their ids worked out here too. `commit` then has the kept git writers (orchestrate.git_pipe) store the
files, the trees and the commit at once: one round trip, where one per object had cost a recorder commit
5.9 ms, most of it git writing loose objects one after another (benchmarks/README.md). The commit's files
are what `git add -A` would stage: every file but other campaigns' (each runner commits its own), minus what
git ignores.

A file the last commit does not hold is added unless git's ignore rules leave it out, which a kept `git
check-ignore` says (one round trip for all of a commit's, where staging them took three processes, 14 ms).
What the walk cannot decide as git would is left to git: a symbolic link, a nested repository, a new
executable, a changed mode, a new or changed ignore or attributes file, a new name git may refuse, more than
MOST files or HELD bytes. `tree` answers None, the caller stages with `git add -A` as before, and `learn`
notes from git's tree which files on disk it left out (ignored), so that they do not send every later commit
back to git.

A stat is trusted only once the file has settled (orchestrate.stamps): a second write within the
filesystem's timestamp tick could leave it unchanged (git's index has the same rule).
"""
from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import NamedTuple

from orchestrate import git_batch, git_files, git_ids, git_pipe, stamps
from orchestrate.errors import GitError

_TREE = "40000"
HELD = 16 * 1024 * 1024  # the most read into memory for a commit (a journal segment is 256 KiB)
MOST = 256  # the most files read for one commit (each held in memory until it is made)
_FILES = ("100644", "100755")


class _GitMustLook(Exception):
    """Something only git's own staging decides correctly."""


class _Due:
    """A file whose stat changed since it was last stored: its content, as read, stored with the commit."""
    __slots__ = ("path", "st", "old", "data", "sha", "settled")

    def __init__(self, path: str, st: os.stat_result, old: str = "") -> None:
        self.path, self.st, self.old, self.data, self.sha, self.settled = path, st, old, b"", "", False


class _Plan(NamedTuple):
    """A folder as the walk found it: its tree in the last commit (`sha`, None: new; `base`, its entries) and
    its entries now (name -> (mode, object id | _Due | _Plan))."""
    sha: str | None
    base: dict[str, tuple[str, str]]
    entries: dict[str, tuple]


class Snapshot:
    def __init__(self, ledger: Path, topic: str) -> None:
        self.ledger, self.topic = ledger, topic
        self.known: dict[str, tuple[tuple, str]] = {}  # path -> (stat key, blob id), for trusted stats only
        self.ignored: set[str] = set()  # files on disk git's staging left out, as of `learn`
        self._learned: tuple | None = None  # the stamp of .git/info/exclude then
        self._trees: dict[str, dict[str, tuple[str, str]]] = {}  # tree id -> {name: (mode, id)}
        self._unwritten: tuple | None = None  # (tree, files, trees) the last `tree` made, for `commit` to store

    def tree(self, base: str | None) -> str | None:
        """The id of the tree of the recorder's files now, built on `base` (the tree of the commit it follows),
        or None when git must stage them (see the module's docstring). Nothing is written yet: the walk finds
        what changed (by stat), the changed files are read and hashed here, the new trees' ids worked out here;
        `commit` stores them all with the commit, in one round trip."""
        self._unwritten = None
        if base is None or self._learned != self._rules():
            return None
        try:
            due: list[_Due] = []
            fresh: list[tuple[dict, str, str]] = []
            plan = self._dir("", base, self.others(), due, fresh)
            due = self._unignored(due, fresh)
            self._hash(due, len(base))
            made: list[tuple[str, dict[str, tuple[str, str]], bytes]] = []
            root = self._settle(plan, made, len(base)) or self._made({}, made, len(base))
        except _GitMustLook:
            return None
        for sha, entries, _content in made:
            self._remember(sha, entries)  # read back before the commit (journal.py's check of pinned files)
        self._trust([one for one in due if one.sha == one.old])  # stored already: in the last commit
        self._unwritten = (root, [one for one in due if one.sha != one.old], made)
        return root

    def commit(self, tree: str, parents: list[str], message: str, env: dict[str, str]) -> str:
        """Store a commit of `tree` (as git_pipe.Store.commit does), and with it what `tree` needs that the last
        commit does not hold, when `tree` is the one the walk made: the blobs and trees in the same round trip."""
        store = git_pipe.store(self.ledger)
        unwritten, self._unwritten = self._unwritten, None
        if unwritten is None or unwritten[0] != tree:  # git staged it, and wrote its objects
            return store.commit(tree, parents, message, env)
        _root, due, made = unwritten
        sha = store.objects([(one.sha, one.data) for one in due], [(tree_sha, content) for tree_sha, _e, content in made],
                            (tree, parents, message, env))
        self._trust(due)  # (git's ids were checked against those worked out here)
        return sha

    def _trust(self, stored: list[_Due]) -> None:
        """The stats of files whose blobs are in the store, trusted from now on when they have settled: a file
        not in the store must never be named by a later commit on its stat alone."""
        for one in stored:
            if one.settled:
                self.known[one.path] = (stamps.key(one.st), one.sha)
            else:
                self.known.pop(one.path, None)

    def learn(self, tree: str) -> None:
        """After git staged and wrote `tree`: the files on disk it left out are ignored until the rules change."""
        self.ignored = set()
        self._learned = self._rules()
        git_pipe.store(self.ledger).rules_changed()  # git staged: an ignore file may have changed
        try:
            self._left_out("", tree, self.others())
        except _GitMustLook:
            self._learned = None  # unreadable: the next commit asks git again

    def blob_at(self, tree: str, path: str) -> str | None:
        """The blob id `path` has in `tree`, None when it has none."""
        *folders, name = path.split("/")
        sha: str | None = tree
        try:
            for folder in folders:
                entry = self._entries(sha).get(folder)
                sha = entry[1] if entry and entry[0] == _TREE else None
                if sha is None:
                    return None
            entry = self._entries(sha).get(name)
        except _GitMustLook:
            return None
        return entry[1] if entry and entry[0] != _TREE else None

    # ---- walking ----------------------------------------------------------------------------------

    def _dir(self, rel: str, sha: str | None, others: set[str], due: list[_Due], fresh: list) -> _Plan:
        """What folder `rel` ("" or ending in "/") holds now, on its tree `sha` (None: a new folder): each entry
        as the last commit's tree has it, or a file to store (added to `due`; to `fresh` too, with where its
        entry is, when the last commit lacks it), or a subfolder's plan."""
        base = self._entries(sha) if sha else {}
        new: dict[str, tuple] = {name: entry for name, entry in base.items() if _excluded(rel, name, others)}
        for e in _scan(self.ledger / rel if rel else self.ledger):
            name, path, old = e.name, rel + e.name, base.get(e.name)
            if (not rel and name == ".git") or _excluded(rel, name, others):
                continue
            if "\n" in name or (old is None and _git_may_refuse(name)):  # (a path is a line to hash-object)
                raise _GitMustLook(path)
            if e.is_dir(follow_symlinks=False):
                if os.path.lexists(os.path.join(e.path, ".git")) or (old and old[0] != _TREE):
                    raise _GitMustLook(path)
                new[name] = (_TREE, self._dir(path + "/", old[1] if old else None, others, due, fresh))
            elif not e.is_file(follow_symlinks=False):
                raise _GitMustLook(path)  # a symbolic link, a socket: git says how it is stored
            elif old is None and path in self.ignored:
                continue
            elif old is not None and old[0] not in _FILES:
                raise _GitMustLook(path)
            else:
                try:
                    st = e.stat(follow_symlinks=False)
                except FileNotFoundError:  # gone since the folder was listed: as a later look finds it
                    continue
                mode = "100755" if st.st_mode & 0o100 else "100644"
                if mode != (old[0] if old else "100644"):
                    raise _GitMustLook(path)  # a mode git may not track (core.fileMode)
                if st.st_size > HELD:
                    raise _GitMustLook(path)  # read whole here: git streams what is bigger
                got = self.known.get(path)
                if old is not None and got is not None and got[0] == stamps.key(st):
                    new[name] = (mode, got[1])
                else:
                    due.append(_Due(path, st, old[1] if old else ""))
                    new[name] = (mode, due[-1])
                    if old is None:
                        fresh.append((new, name, path))
        if ".gitignore" in base and ".gitignore" not in new:
            raise _GitMustLook(rel + ".gitignore")  # what it ignored may belong in the commit now
        return _Plan(sha, base, new)

    def _unignored(self, due: list[_Due], fresh: list[tuple[dict, str, str]]) -> list[_Due]:
        """The files the last commit lacks that git's ignore rules leave out are taken out of the walk's plan
        (and noted as ignored); `due` without them."""
        if not fresh:
            return due
        try:
            ignored = git_pipe.store(self.ledger).ignored([path for _entries, _name, path in fresh])
        except GitError as exc:
            raise _GitMustLook(fresh[0][2]) from exc
        for entries, name, path in fresh:
            if path in ignored:
                del entries[name]
                self.ignored.add(path)
        return [one for one in due if one.path not in ignored]

    def _settle(self, plan: _Plan, made: list, width: int) -> str | None:
        """The id of the tree `plan` describes, its files stored; None: it is empty. A tree the last commit
        does not hold is added to `made`, to be written."""
        new = {}
        for name, (mode, what) in plan.entries.items():
            if isinstance(what, _Plan):
                what = self._settle(what, made, width)
                if what is None:
                    continue
            elif isinstance(what, _Due):
                what = what.sha
            new[name] = (mode, what)
        if ".gitignore" in plan.entries and new.get(".gitignore") != plan.base.get(".gitignore"):
            raise _GitMustLook(".gitignore")  # new ignore rules: what they leave out is git's to say
        if not new:
            return None
        return plan.sha if new == plan.base else self._made(new, made, width)

    @staticmethod
    def _made(entries: dict[str, tuple[str, str]], made: list, width: int) -> str:
        sha, content = git_ids.tree(entries, width)
        made.append((sha, entries, content))
        return sha

    def _left_out(self, rel: str, sha: str | None, others: set[str]) -> None:
        base = self._entries(sha) if sha else {}
        for e in _scan(self.ledger / rel if rel else self.ledger):
            name, path, old = e.name, rel + e.name, base.get(e.name)
            if (not rel and name == ".git") or _excluded(rel, name, others):
                continue
            if e.is_dir(follow_symlinks=False):
                self._left_out(path + "/", old[1] if old and old[0] == _TREE else None, others)
            elif old is None:
                self.ignored.add(path)

    def _hash(self, due: list[_Due], width: int) -> None:
        """Read each file in `due` and work out its blob id, through a descriptor opened here without following
        a link, and only if it is still the regular file that was stat'ed: a name swapped for a link between
        the stat and the read (a worker without the sandbox can write here) would have whatever the link names
        stored, or a FIFO read forever. `git add` stores a link as a link; so does the walk, by leaving links
        to git. What is read is what git stores (`commit`), whatever happens to the file after. At most HELD
        bytes in all are read (and MOST files): more is git's to stage."""
        if len(due) > MOST:
            raise _GitMustLook(due[0].path)
        held = 0
        for one in due:
            began = time.time_ns()
            try:
                fd, now = git_files.open_regular(self.ledger / one.path)
            except OSError as exc:  # gone, a link now, or no longer a file
                raise _GitMustLook(one.path) from exc
            try:
                if now.st_ino != one.st.st_ino:
                    raise _GitMustLook(one.path)
                with os.fdopen(fd, "rb", closefd=False) as fh:
                    one.data = fh.read(HELD + 1)
                one.settled = stamps.settled(one.st, began)  # as the read began: a write in the same tick
                # after it could leave the stat as it was
                held += len(one.data)
                if len(one.data) > HELD or held > HELD:  # grown since its stat; too much for one commit
                    raise _GitMustLook(one.path)
            except OSError as exc:  # unreadable
                raise _GitMustLook(one.path) from exc
            finally:
                os.close(fd)
            one.sha = git_ids.blob_id(one.data, width)

    # ---- trees ------------------------------------------------------------------------------------

    def _entries(self, sha: str) -> dict[str, tuple[str, str]]:
        if sha not in self._trees:
            try:
                got = git_batch.read(self.ledger, sha)
            except git_batch.Unusable:
                got = None
            if got is None or got[1] != "tree":
                raise _GitMustLook(sha)
            self._remember(sha, _parse(got[2], len(sha) // 2))
        return self._trees[sha]

    def _remember(self, sha: str, entries: dict[str, tuple[str, str]]) -> None:
        if len(self._trees) > 4096:
            self._trees.clear()
        self._trees[sha] = entries

    def others(self) -> set[str]:
        """The other campaigns: the state folders on disk that are not this one's."""
        state = self.ledger / "state"
        try:
            with os.scandir(state) as found:
                return {e.name for e in found if e.is_dir() and e.name != self.topic}
        except OSError:
            return set()

    def _rules(self) -> tuple:
        try:
            return stamps.key((self.ledger / ".git" / "info" / "exclude").stat())
        except OSError:
            return ()


_SKETCH = re.compile(r"[^/]{4}-[^/]{2}-[^/]{2}-(.+)\.md")


def others_pathspec(others: set[str] | list[str]) -> list[str]:
    """The pathspecs that keep other campaigns' files out of `git add` (the same exclusion as the walk's)."""
    return [spec for o in sorted(others)
            for spec in (f":(exclude,literal)state/{o}", f":(exclude,glob)log/????-??-??-{o}.md")]


def _git_may_refuse(name: str) -> bool:
    """A new name git's own path checks may refuse (core.protectNTFS, protectHFS: `.GIT`, `git~1`, a backslash,
    `.git` with characters HFS ignores) or read rules from (`.gitignore`, `.gitattributes`): git's to stage."""
    return name.lower().rstrip(". ").startswith((".git", "git~")) or "\\" in name or not name.isascii()


def _scan(folder: Path) -> list[os.DirEntry]:
    """A folder's entries; none when it is gone (another runner's file replaced, a folder removed)."""
    try:
        with os.scandir(folder) as found:
            return list(found)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise _GitMustLook(str(folder)) from exc


def _excluded(rel: str, name: str, others: set[str]) -> bool:
    """Another campaign's: its state folder, or its sketch in log/."""
    if rel == "state/":
        return name in others
    if rel == "log/":
        m = _SKETCH.fullmatch(name)
        return m is not None and m.group(1) in others
    return False


def _parse(content: bytes, width: int) -> dict[str, tuple[str, str]]:
    """A tree object's entries: `<mode> <name>\\0<raw id>` each."""
    entries = {}
    i = 0
    while i < len(content):
        space = content.index(b" ", i)
        nul = content.index(b"\0", space)
        sha = content[nul + 1:nul + 1 + width].hex()
        entries[os.fsdecode(content[space + 1:nul])] = (content[i:space].decode(), sha)
        i = nul + 1 + width
    return entries
