"""Long-running git processes that write: objects and compare-and-swap ref updates as pipe round trips
(git.py speaks git; this keeps the writers it would otherwise start once per call).

A recorder commit per transition cost four processes (`add`, `write-tree`, `commit-tree`, `update-ref`):
the largest share of a node's overhead (benchmarks/README.md). Each repository gets here, on first use:

- `git hash-object -w --no-filters --stdin-paths` for blobs: no filter or conversion program ever runs,
  what is on disk is what is stored;
- `git mktree -z --batch --missing` for trees (every entry names an object just written or read: the check
  git would make looks only where objects were when it started, and a repack moves them);
- `git hash-object -w -t commit --no-filters --stdin-paths` for commits (git checks the commit's format),
  fed from a file of this process's own;
- `git update-ref --stdin`, one transaction per swap (`start`, `update <ref> <new> <old>`, `prepare`,
  `commit`): git refuses an update whose old value no longer holds and dies on it, which is the answer
  "someone moved it"; the next swap starts another.

A round trip costs 0.3-0.7 ms, more than git's work on a small object: a commit's blobs go in one request,
and its trees in another (their ids worked out here, `tree_id`), not one each.

None of these commands runs a program a config file could name (no filter: `--no-filters`; no hook: the
inert environment's core.hooksPath, a command-line override, outranks every file), so a writer started once
stays inert whatever is planted in the repository's config later. Each is shared by threads (a lock each),
never used by a forked child, and closed at exit.
"""
from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

from orchestrate import git, git_batch
from orchestrate.errors import GitError, ProcError


class _Writer:
    """One long-running git command in `repo` answering a line per request."""

    def __init__(self, repo: Path, args: tuple[str, ...]) -> None:
        self.repo, self.args = repo, args
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self._child = None

    def ask(self, request: bytes, answers: int = 1) -> list[bytes] | None:
        """Send `request`, read `answers` lines (newline stripped); None when git ended instead of answering
        (it is gone then, and the next request starts it again). Call with the lock held."""
        return self.receive(answers) if self.send(request) else None

    def send(self, request: bytes) -> bool:
        """Send `request` without waiting for its answer (`receive` reads it); False when git is gone."""
        if self._child is None:
            self._start()
        try:
            self._child.stdin.write(request)
            self._child.stdin.flush()
        except OSError:
            self.stop()
            return False
        except BaseException:
            self.stop()
            raise
        return True

    def receive(self, answers: int) -> list[bytes] | None:
        child = self._child
        try:
            got = [child.stdout.readline() for _ in range(answers)]
        except OSError:
            got = []
        except BaseException:  # a Ctrl-C mid-answer leaves the rest of it in the pipe
            self.stop()
            raise
        if len(got) < answers or not all(line.endswith(b"\n") for line in got):
            self.stop()
            return None
        return [line[:-1] for line in got]

    def receive_fields(self, count: int) -> list[bytes] | None:
        """Read `count` NUL-terminated fields (an answer of a command given -z); None when git ended first."""
        data = b""
        try:
            while data.count(b"\0") < count:
                chunk = self._child.stdout.read1(65536)
                if not chunk:
                    break
                data += chunk
        except OSError:
            data = b""
        except BaseException:
            self.stop()
            raise
        fields = data.split(b"\0")
        if len(fields) != count + 1 or fields[-1]:  # ended early, or answered more than was asked
            self.stop()
            return None
        return fields[:-1]

    def _start(self) -> None:
        from orchestrate import proc
        argv, env = git.command(self.repo, *self.args)
        try:
            self._child = proc.start_pipe(argv, env=env)
        except ProcError as exc:
            raise GitError(argv, None, message=f"git is not installed or cannot start: {exc.message}") from exc

    def stop(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            from orchestrate import proc
            proc.end_pipe(child)


def _again(writer: _Writer, request: bytes, answers: int = 1) -> list[bytes] | None:
    """`writer.ask`, once more with a git started anew when the first ended without answering (a helper killed
    or gone under load mid-campaign): an object's id is its content's, so asking twice stores nothing twice.
    A request git cannot answer (a file it cannot read, a full disk) ends the second too, and the caller raises
    GitError naming the request (git's own words are not kept: a kept helper's stderr is discarded)."""
    got = writer.ask(request, answers)
    return got if got is not None else writer.ask(request, answers)


class _Scratch:
    """Files of this process's own whose contents a writer reads by name: in memory (a memfd, named through
    /proc/<pid>/fd/) where the system has them, in a private temporary folder otherwise. Rewriting a file on
    these disks took 0.2-0.5 ms (its truncation and write journalled by the file system), twice a commit."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._fds: list[int] = []
        self._folder: str | None = None

    def names(self, contents: list[bytes]) -> list[str]:
        """Each content written to a file of its own (reused from call to call); their names."""
        if self._folder is None and _PROC_FDS:
            try:
                return [self._in_memory(i, data) for i, data in enumerate(contents)]
            except OSError:  # no memfd here (a seccomp filter, an old kernel): files on disk from now on
                self.close()
                self._folder = tempfile.mkdtemp(prefix=f"orchestrate-{self.label}-")
        if self._folder is None:
            self._folder = tempfile.mkdtemp(prefix=f"orchestrate-{self.label}-")
        paths = [os.path.join(self._folder, str(i)) for i in range(len(contents))]
        for path, data in zip(paths, contents):
            with open(path, "wb") as fh:
                fh.write(data)
        return paths

    def _in_memory(self, i: int, data: bytes) -> str:
        while len(self._fds) <= i:
            self._fds.append(os.memfd_create(f"orchestrate-{self.label}", os.MFD_CLOEXEC))
        fd = self._fds[i]
        os.ftruncate(fd, 0)
        view, done = memoryview(data), 0
        while done < len(data):
            done += os.pwrite(fd, view[done:], done)
        return f"/proc/{os.getpid()}/fd/{fd}"

    def close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds = []
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


_PROC_FDS = hasattr(os, "memfd_create") and os.path.isdir(f"/proc/{os.getpid()}/fd")


class Store:
    """The writers of one repository."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.pid = os.getpid()
        # Loose blobs are stored without compression: the journal, written whole at every commit, is most
        # of them, and zlib (git's level 1) took 40% of writing it (460 KB: 3.7 ms against 2.3 ms). They are
        # packed, and compressed there, as the campaign goes (recorder/upkeep.py).
        self.blob_writer = _Writer(repo, ("-c", "core.looseCompression=0", "hash-object", "-w", "--no-filters",
                                          "--stdin-paths"))
        self.tree_writer = _Writer(repo, ("mktree", "-z", "--batch", "--missing"))
        self.commit_writer = _Writer(repo, ("hash-object", "-w", "-t", "commit", "--no-filters", "--stdin-paths"))
        self.ref_writer = _Writer(repo, ("update-ref", "--stdin"))
        # which new paths git's ignore rules leave out (of `git add -A`): the rules as they are on disk, not
        # the index, read once per process (`rules_changed` starts another)
        self.ignore_reader = _Writer(repo, ("check-ignore", "--stdin", "-z", "--non-matching", "--verbose",
                                            "--no-index"))
        self._commit_text, self._blob_contents = _Scratch("commit"), _Scratch("blob")

    def blobs(self, paths: list[str | Path]) -> list[str]:
        """Store the files at `paths` (absolute, no newline in them) as blobs, in one request; their object ids."""
        if not paths:
            return []
        with self.blob_writer.lock:
            got = _again(self.blob_writer, _lines(paths), len(paths))
        if got is None:  # one unreadable file ends git: which one is not known
            _object(self.repo, None, "hash-object " + " ".join(map(str, paths)))
        return [_object(self.repo, line, f"hash-object {path}") for path, line in zip(paths, got)]

    def trees(self, trees: list[list[tuple[str, str, str]]]) -> list[str]:
        """Write `trees` in one request, each a list of entries (mode, object id, name) in any order (git sorts
        them; an empty list is the empty tree); their ids in order."""
        if not trees:
            return []
        with self.tree_writer.lock:
            got = _again(self.tree_writer, _mktree(trees), len(trees))
        return [_object(self.repo, line, "mktree") for line in (got or [None])]

    def commit(self, tree: str, parents: list[str], message: str, env: dict[str, str]) -> str:
        """A commit of `tree` on `parents` with `message` as `git commit-tree -m` stores it, by the identity
        git gives under `env` at this moment."""
        with self.commit_writer.lock:
            got = _again(self.commit_writer, self._commit_request(tree, parents, message, env))
        return _object(self.repo, got[0] if got else None, "hash-object -t commit")

    def objects(self, blobs: list[bytes], trees: list[list[tuple[str, str, str]]], commit: tuple) -> \
            tuple[list[str], list[str], str]:
        """Store `blobs` (contents), `trees` (as `trees` takes them) and a commit (`commit`: the arguments
        `commit` takes), the three requests sent before any answer is read: the gits work at once, and a
        recorder commit waits for one round trip, not three. None of the three checks that what an object
        names exists (the ref's swap, after, does). Their ids; GitError when git gave none."""
        with self.blob_writer.lock, self.tree_writer.lock, self.commit_writer.lock:
            # each content in a file of this store's own: git stores what was hashed, whatever happens to the
            # file it was read from
            requests = [(self.blob_writer, _lines(self._blob_contents.names(blobs)), len(blobs)),
                        (self.tree_writer, _mktree(trees), len(trees)),
                        (self.commit_writer, self._commit_request(*commit), 1)]
            sent = [writer.send(request) if count else False for writer, request, count in requests]
            got = [(writer.receive(count) if ok else None) if count else []
                   for (writer, _request, count), ok in zip(requests, sent)]
            got = [found if found is not None else _again(writer, request, count)
                   for found, (writer, request, count) in zip(got, requests)]
        what = ("hash-object", "mktree", "hash-object -t commit")
        blob_ids, tree_ids, commit_ids = ([_object(self.repo, line, name) for line in (found or [None] * count)]
                                          for found, name, (_w, _r, count) in zip(got, what, requests))
        return blob_ids, tree_ids, commit_ids[0]

    def _commit_request(self, tree: str, parents: list[str], message: str, env: dict[str, str]) -> bytes:
        """The line that names the commit's text, written for hash-object to read. With the lock held."""
        author, committer = identity(self.repo, env)
        text = f"tree {tree}\n" + "".join(f"parent {p}\n" for p in parents) + \
            f"author {author}\ncommitter {committer}\n\n{message}" + ("" if message.endswith("\n") else "\n")
        return _lines(self._commit_text.names([text.encode()]))

    def ignored(self, paths: list[str]) -> set[str]:
        """Those of `paths` (relative to the repository, no NUL in them) that `git add -A` leaves out; GitError
        when git could not say."""
        if not paths:
            return set()
        request = b"".join(os.fsencode(p) + b"\0" for p in paths)
        with self.ignore_reader.lock:
            got = self.ignore_reader.receive_fields(4 * len(paths)) if self.ignore_reader.send(request) else None
        if got is None:
            raise GitError(git.command(self.repo, "check-ignore", "--stdin")[0], None,
                           message=f"git check-ignore in {self.repo} gave no answer")
        # each: source, line, pattern, path; a path no rule matches has no source, one a `!` rule matches is kept
        return {os.fsdecode(got[i + 3]) for i in range(0, len(got), 4) if got[i] and not got[i + 2].startswith(b"!")}

    def rules_changed(self) -> None:
        """Ignore rules may have changed on disk: the next `ignored` reads them anew."""
        with self.ignore_reader.lock:
            self.ignore_reader.stop()

    def swap(self, ref: str, new: str, old: str) -> bool:
        """Move `ref` from `old` (all zeros: it must not exist) to `new` in one transaction; False when git
        refused (the ref is elsewhere, or locked)."""
        with self.ref_writer.lock:
            got = self.ref_writer.ask(f"start\nupdate {ref} {new} {old}\nprepare\ncommit\n".encode(), 3)
        return got == [b"start: ok", b"prepare: ok", b"commit: ok"]

    def close(self) -> None:
        for one in (self.blob_writer, self.tree_writer, self.commit_writer, self.ref_writer, self.ignore_reader):
            with one.lock:
                one.stop()
        self._commit_text.close()
        self._blob_contents.close()


def _lines(paths: list[str | Path]) -> bytes:
    return b"".join(os.fsencode(p) + b"\n" for p in paths)


def _mktree(trees: list[list[tuple[str, str, str]]]) -> bytes:
    """mktree's request for `trees`: each entry `<mode> <type> <id>\\t<name>` and each tree ended by NUL."""
    kinds = {"40000": "tree", "160000": "commit"}
    return b"".join(b"".join(f"{mode} {kinds.get(mode, 'blob')} {sha}\t".encode() + os.fsencode(name) + b"\0"
                             for mode, sha, name in entries) + b"\0" for entries in trees)


def blob_id(data: bytes | None, width: int) -> str | None:
    """The id git gives `data` as a blob in a repository whose ids are `width` hex digits (40: SHA-1, 64:
    SHA-256); None for None."""
    if data is None:
        return None
    digest = hashlib.sha256 if width == 64 else hashlib.sha1
    return digest(b"blob %d\0" % len(data) + data).hexdigest()


def tree_id(entries: dict[str, tuple[str, str]], width: int = 40) -> str:
    """The id git gives a tree of `entries` (name -> (mode, object id)) in a repository whose ids are `width`
    hex digits (40: SHA-1, 64: SHA-256), worked out without asking git: the trees of one commit go to
    `Store.trees` in one request, a folder's tree naming its subfolders' before git has answered for them.
    Git orders a tree's entries by name, a subtree's name as if it ended in "/"."""
    def order(item: tuple[str, tuple[str, str]]) -> bytes:
        return os.fsencode(item[0]) + (b"/" if item[1][0] == "40000" else b"")
    body = b"".join(mode.encode() + b" " + os.fsencode(name) + b"\0" + bytes.fromhex(oid)
                    for name, (mode, oid) in sorted(entries.items(), key=order))
    digest = hashlib.sha256 if width == 64 else hashlib.sha1
    return digest(b"tree %d\0" % len(body) + body).hexdigest()


def _object(repo: Path, answer: bytes | None, what: str) -> str:
    """The object id git answered `what` with (None: it ended instead), or GitError."""
    sha = answer.decode() if answer else ""
    if len(sha) not in (40, 64) or not all(c in "0123456789abcdef" for c in sha):
        raise GitError(git.command(repo, *what.split())[0], None,
                       message=f"git {what} in {repo} gave no object id ({sha or 'it ended'})")
    return sha


MAX_STORES = 4  # repositories written at once (a runner writes one, its recorder); the oldest closed past it
_stores = git_batch.Kept(lambda repo: Store(repo), MAX_STORES)


def store(repo: str | Path) -> Store:
    """The writers of `repo`, kept per path and admin dir (a repository made again at the path gets new ones)."""
    repo = Path(repo).absolute()
    found = git_batch._admin(repo) or (None, 0)
    return _stores.get((str(repo), str(found[0]), found[1]), repo)


def identity(repo: Path, env: dict[str, str]) -> tuple[str, str]:
    """(author, committer), each `Name <email> <seconds> <zone>`: the names git.identity_env gave (git's own, as
    `git var` sanitised them when the run began) and the time now; asked of `git var` under `env` only when a
    GIT_*_DATE variable sets the date, or `env` names no one."""
    names = [env.get(f"GIT_{role}_NAME") for role in ("AUTHOR", "COMMITTER")]
    emails = [env.get(f"GIT_{role}_EMAIL") for role in ("AUTHOR", "COMMITTER")]
    dated = any(k in env or k in os.environ for k in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"))
    if dated or not all(names + emails):
        return tuple(git.out(repo, "var", name, env=env) for name in ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT"))
    offset = time.localtime().tm_gmtoff // 60
    stamp = f"{int(time.time())} {'-' if offset < 0 else '+'}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"
    return f"{names[0]} <{emails[0]}> {stamp}", f"{names[1]} <{emails[1]}> {stamp}"


@atexit.register
def close_all() -> None:
    """Stop every writer (each exits at the end of its input); a forked child leaves its parent's alone."""
    _stores.close_all()
