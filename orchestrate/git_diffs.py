"""Which paths differ between two commits, and which of them are links now, asked of one long-running `git
diff-tree --stdin` per repository (git.py speaks git; this keeps the differ it would otherwise start for every
node: the surface gate's diff of a node's head against its base, coherence's look for links, and the merge's
against the campaign head).

diff-tree reads a line `<commit> <parent>` and prints what changed from that parent to the commit; a line
that is not an object id it echoes at once, flushed, so `#end` after each request marks where its answer
ends. Only full ids of commits the kept reader has confirmed (git_batch.commit) are sent: for an object it
cannot read, diff-tree writes an error to its stderr (discarded) and nothing to stdout, which would read as
"nothing changed". Answers between two full ids are kept: commits never change.
"""
from __future__ import annotations

import atexit
import locale
from pathlib import Path

from orchestrate import git_batch

_END = b"#end\n"


class Differ(git_batch.Helper):
    """One `git diff-tree --stdin` in `repo`. --ignore-submodules=none: a `.gitmodules` a worker writes
    (`ignore = all`) must not hide a gitlink's move."""

    ARGS = ("diff-tree", "--stdin", "-r", "-z", "--raw", "--no-renames", "--no-commit-id", "--ignore-submodules=none")

    def changed(self, base: str, head: str) -> list[tuple[str, str, str]]:
        """[(status letter, path, mode at head)] from `base` to `head`, as `git diff --raw --no-renames` lists them."""
        return self.call(lambda child: self._ask(child, base, head))

    @staticmethod
    def _ask(child, base: str, head: str) -> list[tuple[str, str, str]]:
        child.stdin.write(f"{head} {base}\n".encode() + _END)
        child.stdin.flush()
        said = b""
        while (found := _parsed(said)) is None:
            chunk = child.stdout.read1(65536)
            if not chunk:
                raise ValueError("the differ ended")
            said += chunk
        return found


def _parsed(said: bytes) -> list[tuple[str, str, str]] | None:
    """The entries of a whole answer (`:<mode> <mode> <id> <id> <status>` and path fields, each ended by NUL, then
    `#end`); None while it is not all there. A path may itself read `#end`: the mark is looked for only where an
    entry starts."""
    if not said.endswith(_END):
        return None
    encoding = locale.getpreferredencoding(False)  # as proc.run decodes a `git diff` process's output
    found, at, stop = [], 0, len(said) - len(_END)
    while at != stop:  # not said[at:], a copy of the rest for every entry (rv24: quadratic)
        status_end = said.find(b"\0", at)
        path_end = said.find(b"\0", status_end + 1) if status_end >= 0 else -1
        if path_end < 0:
            return None
        meta = said[at:status_end].split(b" ")
        found.append((meta[-1][:1].decode(), said[status_end + 1:path_end].decode(encoding, errors="replace"),
                      meta[1].decode()))
        at = path_end + 1
    return found


_kept = git_batch.Kept(lambda repo: Differ(repo), 4)
_answers: dict[tuple, tuple] = {}  # (object store, base, head) -> the entries


def changed(repo: str | Path, base: str, head: str) -> list[tuple[str, str]] | None:
    """What changed from commit `base` to commit `head` (full ids), or None when the kept differ cannot be
    asked (a name that is not a full id of a commit here): git.changed_paths then starts a process."""
    found = _entries(repo, base, head)
    return None if found is None else [(status, path) for status, path, _ in found]


def links(repo: str | Path, base: str, head: str, mode: str = "120000") -> list[str]:
    """The paths that are symbolic links (`mode` 160000: gitlinks) at `head` among those that changed from
    `base` (added, re-pointed, or a file that became one); a `git diff` process answers when the kept differ
    cannot be asked."""
    found = _entries(repo, base, head)
    if found is None:
        from orchestrate import git
        said = git.git(repo, "diff", "--raw", "-z", "--no-renames", "--ignore-submodules=none", base, head).stdout
        found = _parsed(said.encode(locale.getpreferredencoding(False), errors="replace") + _END) or []
    return [path for status, path, now in found if now == mode and status != "D"]


def _entries(repo: str | Path, base: str, head: str) -> list[tuple[str, str, str]] | None:
    where = Path(repo).absolute()
    found = git_batch._admin(where)
    if found is None or not all(git_batch._FULL.fullmatch(x) for x in (base, head)):
        return None
    key = (git_batch._store(found[0]), base, head)
    if key in _answers:
        return list(_answers[key])
    try:
        if git_batch.commit(where, base) != base or git_batch.commit(where, head) != head:
            return None
        answer = _kept.get((str(where), str(found[0]), found[1]), where).changed(base, head)
    except git_batch.Unusable:
        return None
    if len(_answers) > 4096:
        _answers.clear()
    _answers[key] = tuple(answer)
    return answer


@atexit.register
def close_all() -> None:
    """Stop every differ (each exits at the end of its input); a forked child leaves its parent's alone."""
    _kept.close_all()
