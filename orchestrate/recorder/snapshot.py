"""The tree a recorder commit holds, found without git's index: the last commit's tree with the recorder's
files that changed since hashed again (journal.py commits it).

A transition's commit was `git add -A` and `git write-tree`, two processes out of the four a commit took.
Here the recorder's folders are walked (a few dozen stat calls), a file whose stat is unchanged since it was
hashed keeps its blob, the others are hashed through the kept `git hash-object` (orchestrate.git_pipe), and
only the folders on a changed path get new trees. The commit's files are what `git add -A` would stage:
every file but other campaigns' (each runner commits its own), minus what git ignores.

What the walk cannot decide as git would is left to git: a path the last commit does not hold (git's ignore
rules say whether it belongs), a symbolic link, a nested repository, a changed mode or ignore file. `tree`
answers None, the caller stages with `git add -A` as before, and `learn` notes from git's tree which files
on disk it left out (ignored), so that they do not send every later commit back to git.

A stat is trusted only once the file has settled (orchestrate.stamps): a second write within the
filesystem's timestamp tick could leave it unchanged (git's index has the same rule).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

from orchestrate import git_batch, git_files, git_pipe, stamps
from orchestrate.errors import GitError

_TREE = "40000"
_FILES = ("100644", "100755")


class _GitMustLook(Exception):
    """Something only git's own staging decides correctly."""


class _Due:
    """A file whose stat changed since it was last stored: stored with the others of its commit at once."""
    __slots__ = ("path", "st", "sha")

    def __init__(self, path: str, st: os.stat_result) -> None:
        self.path, self.st, self.sha = path, st, ""


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
        self._store: git_pipe.Store | None = None  # the recorder's writers, looked up once per commit

    def tree(self, base: str | None) -> str | None:
        """The tree of the recorder's files now, built on `base` (the tree of the commit it follows), or None
        when git must stage them (see the module's docstring). Three steps, so that git is asked twice, not
        once per object: the walk (what changed, by stat), the changed files stored in one request, the new
        trees (their ids worked out here) written in another."""
        if base is None or self._learned != self._rules():
            return None
        self._store = git_pipe.store(self.ledger)
        try:
            due: list[_Due] = []
            plan = self._dir("", base, self.others(), due)
            self._hash(due)
            made: list[tuple[str, dict[str, tuple[str, str]]]] = []
            root = self._settle(plan, made, len(base)) or self._made({}, made, len(base))
            self._write(made)
            return root
        except _GitMustLook:
            return None

    def learn(self, tree: str) -> None:
        """After git staged and wrote `tree`: the files on disk it left out are ignored until the rules change."""
        self.ignored = set()
        self._learned = self._rules()
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

    def _dir(self, rel: str, sha: str | None, others: set[str], due: list[_Due]) -> _Plan:
        """What folder `rel` ("" or ending in "/") holds now, on its tree `sha` (None: a new folder): each entry
        as the last commit's tree has it, or a file to store (added to `due`), or a subfolder's plan."""
        base = self._entries(sha) if sha else {}
        new: dict[str, tuple] = {name: entry for name, entry in base.items() if _excluded(rel, name, others)}
        for e in _scan(self.ledger / rel if rel else self.ledger):
            name, path, old = e.name, rel + e.name, base.get(e.name)
            if (not rel and name == ".git") or _excluded(rel, name, others):
                continue
            if (name == ".gitignore" and old is None) or "\n" in name:  # (a path is a line to hash-object)
                raise _GitMustLook(path)
            if e.is_dir(follow_symlinks=False):
                if os.path.lexists(os.path.join(e.path, ".git")) or (old and old[0] != _TREE):
                    raise _GitMustLook(path)
                new[name] = (_TREE, self._dir(path + "/", old[1] if old else None, others, due))
            elif not e.is_file(follow_symlinks=False):
                raise _GitMustLook(path)  # a symbolic link, a socket: git says how it is stored
            elif old is None and path in self.ignored:
                continue
            elif old is None or old[0] not in _FILES:
                raise _GitMustLook(path)
            else:
                try:
                    st = e.stat(follow_symlinks=False)
                except FileNotFoundError:  # gone since the folder was listed: as a later look finds it
                    continue
                mode = "100755" if st.st_mode & 0o100 else "100644"
                if mode != old[0]:
                    raise _GitMustLook(path)  # a mode git may not track (core.fileMode)
                got = self.known.get(path)
                if got is not None and got[0] == stamps.key(st):
                    new[name] = (mode, got[1])
                else:
                    due.append(_Due(path, st))
                    new[name] = (mode, due[-1])
        if ".gitignore" in base and ".gitignore" not in new:
            raise _GitMustLook(rel + ".gitignore")  # what it ignored may belong in the commit now
        return _Plan(sha, base, new)

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
        sha = git_pipe.tree_id(entries, width)
        made.append((sha, entries))
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

    def _hash(self, due: list[_Due]) -> None:
        """Store the files in `due` as blobs, in one request, each through a descriptor opened here without
        following a link, and only if it is still the regular file that was stat'ed: hash-object reads what it
        is given by name, and a name swapped for a link between the stat and the read (a worker without the
        sandbox can write here) would store whatever the link names, or read a FIFO forever. `git add` stores
        a link as a link; so does the walk, by leaving links to git."""
        if not due:
            return
        fds: list[int] = []
        try:
            for one in due:
                try:
                    fd, now = git_files.open_regular(self.ledger / one.path)
                except OSError as exc:  # gone, a link now, or no longer a file
                    raise _GitMustLook(one.path) from exc
                fds.append(fd)
                if now.st_ino != one.st.st_ino:
                    raise _GitMustLook(one.path)
            names = [f"/proc/{os.getpid()}/fd/{fd}" if _PROC_FDS else self.ledger / one.path
                     for fd, one in zip(fds, due)]
            try:
                shas = self._store.blobs(names)
            except GitError as exc:  # unreadable
                raise _GitMustLook(due[0].path) from exc
        finally:
            for fd in fds:
                os.close(fd)
        for one, sha in zip(due, shas):
            one.sha = sha
            if stamps.settled(one.st):
                self.known[one.path] = (stamps.key(one.st), sha)
            else:
                self.known.pop(one.path, None)

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

    def _write(self, made: list[tuple[str, dict[str, tuple[str, str]]]]) -> None:
        """Write the new trees in one request; an id git gives that is not the one worked out here leaves the
        commit to git's own staging."""
        written = self._store.trees([[(mode, oid, name) for name, (mode, oid) in entries.items()]
                                     for _sha, entries in made])
        if written != [sha for sha, _entries in made]:
            raise _GitMustLook("a tree")
        for sha, entries in made:
            self._remember(sha, entries)

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


_PROC_FDS = os.path.isdir(f"/proc/{os.getpid()}/fd")  # a descriptor of ours another process can open by name
_SKETCH = re.compile(r"[^/]{4}-[^/]{2}-[^/]{2}-(.+)\.md")


def others_pathspec(others: set[str] | list[str]) -> list[str]:
    """The pathspecs that keep other campaigns' files out of `git add` (the same exclusion as the walk's)."""
    return [spec for o in sorted(others)
            for spec in (f":(exclude,literal)state/{o}", f":(exclude,glob)log/????-??-??-{o}.md")]


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
