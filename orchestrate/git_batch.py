"""What git has answered once is not asked of a new git process again (git.py speaks git; this is its memory).

- A full object id that named a commit names it for good (objects never change): it is checked once per
  object store, then answered without git.
- Other names (refs, `rev:path`) are read through one long-running `git cat-file --batch` per worktree, a
  pipe round trip instead of a process. cat-file looks each ref (loose or packed) up afresh for every name
  and rescans the packs when an object is missing, so it answers what a new process would. Abbreviated
  object ids and index paths (`:path`) still get a process: a long-running git keeps the listing of loose
  objects and the index it read first. A reader is kept per worktree path and its admin dir (path and
  inode), so a worktree removed and made again at the same path gets a new one.
- The committer identity, until a config file git reads for the repository changes (orchestrate.inert
  stamps them).

GitPython offers the same persistent reader (its `Repo.odb`); it is not used: benchmarks/README.md has the
measurement. Readers are shared by threads (a lock each; GitPython's are not thread-safe), started again
once when one has died, closed at exit, and never used by a forked child.
"""
from __future__ import annotations

import atexit
import locale
import os
import re
import threading
from pathlib import Path

from orchestrate import git, inert
from orchestrate.errors import ProcError

_FULL = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_ABBREVIATED = re.compile(r"[0-9a-fA-F]{4,63}")  # as the start of a name: maybe a short object id
_TYPES = (b"commit", b"tree", b"blob", b"tag")
MAX_READERS = 16  # worktrees come and go: the least recently used reader is closed past this


class Unusable(Exception):
    """The name cannot be asked of a reader (or no reader works here): ask a git process of its own."""


class Helper:
    """One long-running git command in `repo` (`ARGS`) answering requests on a pipe; `call` is safe from
    several threads. A helper that died is started again once; Unusable when it died twice in a row or
    answered out of protocol (it is closed then)."""

    ARGS: tuple[str, ...] = ()

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self._child = None

    def call(self, ask):
        """`ask(child)`'s answer: it writes a request to the child's stdin and reads the answer from its stdout
        (OSError or ValueError when the child ended or answered out of protocol)."""
        with self._lock:
            for attempt in (1, 2):
                if self._child is None:
                    self._start()
                try:
                    return ask(self._child)
                except (OSError, ValueError):
                    self._stop()
                    if attempt == 2:
                        raise Unusable(f"git {self.ARGS[0]} in {self.repo} stopped answering") from None
                except BaseException:  # a Ctrl-C mid-answer leaves the rest of it in the pipe
                    self._stop()
                    raise
        raise AssertionError("unreachable")

    def _start(self) -> None:
        from orchestrate import proc
        argv, env = git.command(self.repo, *self.ARGS)
        try:
            self._child = proc.start_pipe(argv, env=env)
        except ProcError as exc:
            raise Unusable(str(exc)) from exc

    def _stop(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            from orchestrate import proc
            proc.end_pipe(child)

    def close(self) -> None:
        with self._lock:
            self._stop()


class Reader(Helper):
    """One `git cat-file --batch` in `repo`."""

    ARGS = ("cat-file", "--batch")

    def read(self, name: str) -> tuple[str, str, bytes] | None:
        """(object id, type, content) of `name`, None when it names no object."""
        return self.call(lambda child: self._ask(child, name))

    @staticmethod
    def _ask(child, name: str) -> tuple[str, str, bytes] | None:
        child.stdin.write(name.encode() + b"\n")
        child.stdin.flush()
        header = child.stdout.readline()
        if not header.endswith(b"\n"):
            raise ValueError("the reader ended")  # EOF: it died
        if header.endswith((b" missing\n", b" ambiguous\n")):
            return None
        sha, kind, size = header.split()
        if not _FULL.fullmatch(sha.decode()) or kind not in _TYPES:
            raise ValueError(f"unexpected answer {header!r}")
        content = child.stdout.read(int(size) + 1)
        if len(content) != int(size) + 1:
            raise ValueError("the reader ended mid-object")
        return sha.decode(), kind.decode(), content[:-1]


class Kept:
    """Helpers (readers, writers) kept per repository: its path, its admin dir and that dir's inode, so a
    repository made again at the path gets new ones. The least recently used is closed past `most`, and a
    forked child is never handed its parent's (their pipes are the parent's). Each helper has `pid` and
    `close()`."""

    def __init__(self, make, most: int) -> None:
        self._make, self._most = make, most
        self.kept: dict[tuple, object] = {}  # key -> helper, least recently used first
        self._guard = threading.Lock()

    def get(self, key: tuple, repo: Path):
        with self._guard:
            if any(h.pid != os.getpid() for h in self.kept.values()):
                self.kept.clear()
            one = self.kept.pop(key, None) or self._make(repo)
            self.kept[key] = one  # last: the most recently used
            stale = [k for k in self.kept if k[0] == key[0] and k != key]  # the path's former repository
            kept = [k for k in self.kept if k not in stale]
            dropped = [self.kept.pop(k) for k in stale + kept[:max(0, len(kept) - self._most)]]
        for old in dropped:
            old.close()
        return one

    def close_all(self) -> None:
        """Close every helper of this process (each git exits at the end of its input)."""
        with self._guard:
            mine = [h for h in self.kept.values() if h.pid == os.getpid()]
            self.kept.clear()
        for one in mine:
            one.close()


_kept = Kept(lambda repo: Reader(repo), MAX_READERS)
_readers = _kept.kept  # (worktree path, admin dir, its inode) -> reader
_commits: set[tuple[str, str]] = set()  # (object store, full id) known to be a commit
_identities: dict[tuple, dict[str, str]] = {}  # config stamp -> identity_env's answer
_tops: dict[tuple, Path] = {}  # (path, the admin dir found from it, its inode) -> the top of its working tree


def _admin(repo: Path) -> tuple[Path, int] | None:
    """The admin dir git uses for `repo` (found as inert finds it, from the `.git` entries) and its inode."""
    gitdir = inert._gitdir(repo)
    try:
        return (gitdir, gitdir.stat().st_ino) if gitdir is not None else None
    except OSError:
        return None


def _store(admin: Path) -> str:
    """The object store behind an admin dir: a linked worktree's `commondir` names the main one."""
    try:
        return str((admin / (admin / "commondir").read_text().strip()).resolve())
    except OSError:
        return str(admin)


def reader(repo: str | Path) -> Reader:
    repo = Path(repo).absolute()
    found = _admin(repo)
    if found is None:
        raise Unusable(f"{repo}: no git admin dir found from its files")
    return _kept.get((str(repo), str(found[0]), found[1]), repo)


def read(repo: str | Path, name: str) -> tuple[str, str, bytes] | None:
    """(object id, type, content) of the object `name` names in `repo`, None when none; Unusable when the
    name must be asked of a process of its own (see the module's docstring)."""
    head = re.split(r"[\^~:@]", name, maxsplit=1)[0]
    if not name or name.strip() != name or "\n" in name or name.startswith((":", "-")) \
            or (_ABBREVIATED.fullmatch(head) and not _FULL.fullmatch(head)):
        raise Unusable(name)
    return reader(repo).read(name)


def commit(repo: str | Path, rev: str) -> str | None:
    """The commit `rev` names in `repo` (peeled, as `rev-parse --verify rev^{commit}`), or None."""
    found = _admin(Path(repo).absolute())
    store = _store(found[0]) if found else None
    if store and _FULL.fullmatch(rev) and (store, rev) in _commits:
        return rev
    try:
        answer = read(repo, f"{rev}^{{commit}}")
        sha = answer[0] if answer else None
    except Unusable:
        done = git.git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
        sha = done.stdout.strip() if done else None
    if store and sha == rev:
        _commits.add((store, rev))
    return sha


def show(repo: str | Path, rev: str, path: str) -> str | None:
    """A file's text at `rev` as `git show rev:path` printed through proc.run reads (decoded as the locale
    says, universal newlines), or None when there is none; a tree (which `git show` lists) is asked of git."""
    try:
        answer = read(repo, f"{rev}:{path}")
        if answer is None:
            return None
        if answer[1] == "blob":
            decoded = answer[2].decode(locale.getpreferredencoding(False), errors="replace")
            return decoded.replace("\r\n", "\n").replace("\r", "\n")
    except Unusable:
        pass
    done = git.git(repo, "show", f"{rev}:{path}", check=False)
    return done.stdout if done else None


def has_ref(repo: str | Path, ref: str) -> bool:
    """Whether the full ref name `ref` exists (`show-ref --verify` where no reader can say)."""
    try:
        return read(repo, ref) is not None
    except Unusable:
        return bool(git.git(repo, "show-ref", "--verify", "--quiet", ref, check=False))


def first_parents(repo: str | Path, base: str, head: str, limit: int = 64) -> list[tuple[str, list[str], str]] | None:
    """[(sha, parents, subject)] of `head`'s first-parent line down to `base` (excluded), oldest first, as
    `git log --first-parent --format='%H %P %s' base..head` lists it, read commit by commit through the kept
    reader; None when `base` is not on that line within `limit` commits, or is not a full object id (then
    git answers)."""
    if not _FULL.fullmatch(base):
        return None
    chain: list[tuple[str, list[str], str]] = []
    sha = head
    try:
        for _ in range(limit + 1):
            if sha == base:
                return chain[::-1]
            got = read(repo, sha)
            if got is None or got[1] != "commit":
                return None
            parents, subject = _commit_fields(got[2])
            chain.append((got[0], parents, subject))
            if not parents:
                return None
            sha = parents[0]
    except Unusable:
        return None
    return None


def tree_of(repo: str | Path, commit_id: str) -> str | None:
    """The tree a commit holds, read through the kept reader; None when the reader cannot say."""
    try:
        got = read(repo, commit_id)
    except Unusable:
        return None
    first = got[2].split(b"\n", 1)[0] if got is not None and got[1] == "commit" else b""
    return first[5:].decode() if first.startswith(b"tree ") else None


def _commit_fields(raw: bytes) -> tuple[list[str], str]:
    """A commit object's parents and subject (its first paragraph on one line, as `%s` prints it)."""
    header, _, message = raw.partition(b"\n\n")
    parents = [ln[7:].decode() for ln in header.split(b"\n") if ln.startswith(b"parent ")]
    first = message.decode(errors="replace").strip("\n").split("\n\n", 1)[0]
    return parents, " ".join(ln.strip() for ln in first.split("\n"))


def is_branch(repo: str | Path, name: str) -> bool | None:
    """Does `name` resolve to refs/heads/`name` (what `rev-parse --symbolic-full-name` would say)? True or
    False when the reader can tell: no ref git looks at first (`refs/<name>`, `refs/tags/<name>`, a file of
    that name in the git dir) exists; None otherwise."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._/-]*", name) or ".." in name or name.startswith("refs/"):
        return None
    found = _admin(Path(repo).absolute())
    if found is None or (found[0] / name).exists() or (Path(_store(found[0])) / name).exists():
        return None
    try:
        if read(repo, f"refs/{name}") is not None or read(repo, f"refs/tags/{name}") is not None:
            return None
        return read(repo, f"refs/heads/{name}") is not None
    except Unusable:
        return None


def toplevel(path: str | Path) -> Path | None:
    """`rev-parse --show-toplevel` in `path`, asked once while the admin dir found from `path` stays the same
    (a repository made or removed between the two finds another); None outside a working tree."""
    where = Path(path).absolute()
    found = _admin(where)
    key = (str(where), str(found[0]), found[1]) if found else None
    if key not in _tops:
        done = git.git(where, "rev-parse", "--show-toplevel", check=False)
        if not done:
            return None
        if key is None:
            return Path(done.stdout.strip())
        if len(_tops) > 256:
            _tops.clear()
        _tops[key] = Path(done.stdout.strip())
    return _tops[key]


def identity(repo: str | Path) -> dict[str, str]:
    """git.identity_env's answer: the whole identity (GIT_AUTHOR_* and GIT_COMMITTER_*) as `git var` gives it for
    `repo`, or orchestrate's own where git has none, asked of git once for where `repo`'s config is
    (inert.places_key). Whole, so that no later git reads it from a config a worker may have edited since (an
    emptied ~/.gitconfig failed every merge: `unable to auto-detect email address`)."""
    stamp = inert.places_key(Path(repo))
    if stamp not in _identities:
        env = {}
        for role in ("AUTHOR", "COMMITTER"):  # as git ranks them: the environment, author.*/committer.*, user.*
            said = git.git(repo, "var", f"GIT_{role}_IDENT", check=False).stdout.strip()
            name, _, rest = said.rpartition(" <")
            email = rest.partition(">")[0]
            env[f"GIT_{role}_NAME"], env[f"GIT_{role}_EMAIL"] = (name, email) if name and email else \
                ("orchestrate", "orchestrate@localhost")
        _identities[stamp] = env  # never dropped: the run's own would be asked again mid-run (rv29)
    return dict(_identities[stamp])


@atexit.register
def close_all() -> None:
    """Stop every reader (each exits on the end of its input); a forked child leaves its parent's alone."""
    _kept.close_all()
