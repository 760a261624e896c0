"""Long-running git processes that write: objects and compare-and-swap ref updates as pipe round trips
(git.py speaks git; this keeps the writers it would otherwise start once per call).

A recorder commit per transition cost four processes (`add`, `write-tree`, `commit-tree`, `update-ref`):
the largest share of a node's overhead (benchmarks/README.md). Each repository gets here, on first use:

- `git hash-object -w --no-filters --stdin-paths` for blobs: no filter or conversion program ever runs,
  what orchestrate read is what is stored (written for it to a file of this process's own: memfiles.py);
- `git hash-object -w -t tree --no-filters --stdin-paths` for trees and `-t commit` for commits (git checks
  their format, not that what they name exists), fed from files of this process's own too. Not `git mktree`:
  it answers a tree's id even when it could not write the tree (git 2.39: a full disk, or a fan-out folder
  that a background repack's prune-packed removed between git making it and writing in it; commits named
  missing trees in 6 of 30 stress runs packing as they went), where hash-object ends and is asked again;
- `git update-ref --stdin`, one transaction per swap (`start`, `update <ref> <new> <old>`, `prepare`,
  `commit`): git refuses an update whose old value no longer holds and dies on it, which is the answer
  "someone moved it"; the next swap starts another;
- `git check-ignore --stdin -z --no-index` for which new paths git's ignore rules leave out.

Writing a loose object costs git 0.2-1 ms here (a round trip to a kept reader that writes nothing, 60 us):
a recorder commit's blobs, trees and commit go to their three writers at once, their ids worked out
beforehand (orchestrate.git_ids) and each answer checked against them. A request is never so big that git
could be left waiting for its answers to be read while orchestrate waits for it to read the rest
(`_in_parts`).

None of these commands runs a program a config file could name (no filter: `--no-filters`; no hook: the
inert environment's core.hooksPath, a command-line override, outranks every file), so a writer started once
stays inert whatever is planted in the repository's config later. Each is shared by threads (a lock each),
never used by a forked child, and closed at exit.
"""
from __future__ import annotations

import atexit
import os
import threading
import time
from pathlib import Path

from orchestrate import git, git_batch
from orchestrate.errors import GitError, ProcError


class _Writer:
    """One long-running git command in `repo` answering a line per request."""

    def __init__(self, repo: Path, args: tuple[str, ...]) -> None:
        self.repo, self.args = repo, args
        self.lock = threading.Lock()
        self._child = None

    def ask(self, request: bytes, answers: int = 1) -> list[bytes] | None:
        """Send `request`, read `answers` lines (newline stripped); None when git ended instead of answering
        (it is gone then, and the next request starts it again). Call with the lock held."""
        return self.exchange(request, lambda: self.receive(answers))

    def exchange(self, request: bytes, answer):
        """Send `request`, then `answer()` (which reads the answer); None when git is gone. An interrupt
        anywhere between the two (a Ctrl-C) stops git: an answer left unread would be taken for the next one's."""
        try:
            return answer() if self.send(request) else None
        except BaseException:
            self.stop()
            raise

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


SAFE = 4096  # a pipe holds at least a page: a request no bigger is written whole before git answers any


class Store:
    """The writers of one repository."""

    def __init__(self, repo: Path) -> None:
        from orchestrate.memfiles import Scratch
        self.repo = repo
        self.pid = os.getpid()
        # Loose blobs are stored without compression: the journal, written whole at every commit, is most
        # of them, and zlib (git's level 1) took 40% of writing it (460 KB: 3.7 ms against 2.3 ms). They are
        # packed, and compressed there, as the campaign goes (recorder/upkeep.py).
        self.blob_writer = _Writer(repo, ("-c", "core.looseCompression=0", "hash-object", "-w", "--no-filters",
                                          "--stdin-paths"))
        self.tree_writer = _Writer(repo, ("hash-object", "-w", "-t", "tree", "--no-filters", "--stdin-paths"))
        self.commit_writer = _Writer(repo, ("hash-object", "-w", "-t", "commit", "--no-filters", "--stdin-paths"))
        self.ref_writer = _Writer(repo, ("update-ref", "--stdin"))
        # which new paths git's ignore rules leave out (of `git add -A`): the rules as they are on disk, not
        # the index, read once per process (`rules_changed` starts another)
        self.ignore_reader = _Writer(repo, ("check-ignore", "--stdin", "-z", "--non-matching", "--verbose",
                                            "--no-index"))
        # what the writers read: git stores what orchestrate hashed, whatever happens to the file it read
        self._commit_text, self._contents = Scratch("commit"), Scratch("objects")

    def commit(self, tree: str, parents: list[str], message: str, env: dict[str, str]) -> str:
        """A commit of `tree` on `parents` with `message` as `git commit-tree -m` stores it, by the identity
        git gives under `env` at this moment."""
        with self.commit_writer.lock:
            request, expected = self._commit_request(tree, parents, message, env)
            try:
                got = _again(self.commit_writer, request)
            finally:
                self._commit_text.release()
        return _checked(self.repo, [got[0] if got else None], [expected], "hash-object -t commit")[0]

    def objects(self, blobs: list[tuple[str, bytes]], trees: list[tuple[str, bytes]], commit: tuple) -> str:
        """Store `blobs` and `trees` ((id, content) each: orchestrate.git_ids) and a commit (`commit`: the
        arguments `commit` takes), the ids worked out by the caller: the three requests are sent before any answer
        is read, so the gits work at once and a recorder commit waits for one round trip, not three (none of the
        three checks that what an object names exists; the ref's swap, after, does). The commit's id; GitError when
        git gave none, or another id than the one worked out (what it read was rewritten after orchestrate wrote
        it)."""
        with self.blob_writer.lock, self.tree_writer.lock, self.commit_writer.lock:
            try:
                request, expected = self._commit_request(*commit)
                names = [_line(name) for name in self._contents.names([data for _sha, data in blobs + trees])]
                asked = [(self.blob_writer, names[:len(blobs)], [sha for sha, _data in blobs], "hash-object"),
                         (self.tree_writer, names[len(blobs):], [sha for sha, _data in trees], "hash-object -t tree"),
                         (self.commit_writer, [request], [expected], "hash-object -t commit")]
                if all(sum(map(len, parts)) <= SAFE for _w, parts, _ids, _what in asked):
                    got = _at_once([(writer, b"".join(parts), len(parts)) for writer, parts, _ids, _what in asked])
                else:  # too much to write before git answers: it would wait for its answers to be read, and we
                    got = [_in_parts(writer, parts) for writer, parts, _ids, _what in asked]  # for it to read
            finally:
                self._contents.release()
                self._commit_text.release()
        for found, (_w, parts, ids, what) in zip(got, asked):
            _checked(self.repo, found or [None] * len(parts), ids, what)
        return expected

    def _commit_request(self, tree: str, parents: list[str], message: str, env: dict[str, str]) -> tuple[bytes, str]:
        """The line that names the commit's text, written for hash-object to read, and the commit's id. With the
        lock held."""
        from orchestrate import git_ids
        author, committer = identity(self.repo, env)
        text = (f"tree {tree}\n" + "".join(f"parent {p}\n" for p in parents) +
                f"author {author}\ncommitter {committer}\n\n{message}" + ("" if message.endswith("\n") else "\n")).encode()
        return _line(self._commit_text.names([text])[0]), git_ids.commit_id(text, len(tree))

    def ignored(self, paths: list[str]) -> set[str]:
        """Those of `paths` (relative to the repository, no NUL in them) that `git add -A` leaves out; GitError
        when git could not say. Each is asked as `./path`: a name starting with `:` is no pathspec magic."""
        parts = [b"./" + os.fsencode(p) + b"\0" for p in paths]
        with self.ignore_reader.lock:
            got = _in_parts(self.ignore_reader, parts, fields=4)
        if got is None:
            raise GitError(git.command(self.repo, "check-ignore", "--stdin")[0], None,
                           message=f"git check-ignore in {self.repo} gave no answer")
        if [got[4 * i + 3] for i in range(len(paths))] != [part[:-1] for part in parts]:
            raise GitError(git.command(self.repo, "check-ignore", "--stdin")[0], None,
                           message=f"git check-ignore in {self.repo} answered for other paths than it was asked")
        # each: source, line, pattern, path; a path no rule matches has no source, one a `!` rule matches is kept
        return {path for i, path in enumerate(paths) if got[4 * i] and not got[4 * i + 2].startswith(b"!")}

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
        self._contents.close()


def _at_once(asked: list[tuple[_Writer, bytes, int]]) -> list[list[bytes] | None]:
    """Each request sent to its writer, then each answer read (a writer that ended is asked again alone). An
    interrupt (Ctrl-C) stops every writer asked: an answer left unread would be taken for the next one's."""
    try:
        sent = [writer.send(request) if count else False for writer, request, count in asked]
        got = [(writer.receive(count) if ok else None) if count else [] for (writer, _r, count), ok in zip(asked, sent)]
    except BaseException:
        for writer, _request, _count in asked:
            writer.stop()
        raise
    return [found if found is not None else _again(writer, request, count)
            for found, (writer, request, count) in zip(got, asked)]


def _in_parts(writer: _Writer, parts: list[bytes], fields: int = 0) -> list[bytes] | None:
    """The answers to `parts` (one item each; a line each, or `fields` NUL-ended fields each), asked a few at a
    time: each request no bigger than SAFE (or of one item, whose answer git writes once it has read it all),
    so that git never waits for its answers to be read while this waits for it to read the request. None
    when git ended instead of answering."""
    answers: list[bytes] = []
    for chunk in _chunks(parts):
        request = b"".join(chunk)
        if fields:
            got = writer.exchange(request, lambda n=fields * len(chunk): writer.receive_fields(n))
        else:
            got = _again(writer, request, len(chunk))
        if got is None:
            return None
        answers += got
    return answers


def _chunks(parts: list[bytes]) -> list[list[bytes]]:
    chunks: list[list[bytes]] = []
    size = SAFE + 1
    for part in parts:
        if size + len(part) > SAFE:
            chunks.append([])
            size = 0
        chunks[-1].append(part)
        size += len(part)
    return chunks


def _line(path: str | Path) -> bytes:
    return os.fsencode(path) + b"\n"


def _checked(repo: Path, answers: list[bytes | None], expected: list[str], what: str) -> list[str]:
    """The ids git answered `what` with, each the one worked out here; GitError otherwise (None: git ended)."""
    for answer, want in zip(answers, expected):
        sha = answer.decode(errors="replace") if answer else ""
        if sha != want:
            said = "it ended" if not answer else f"{sha}, not {want}: what it read was not what orchestrate wrote"
            raise GitError(git.command(repo, *what.split())[0], None, message=f"git {what} in {repo} gave {said}")
    return expected


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
