"""Tracked files that compare equal to the commit though they hold other bytes, written anew from orchestrate's
index before a node is judged (rv31, rv32).

git compares a worktree file with its blob after converting it as the attributes say: `ident` cleans any
`$Id: ... $` to `$Id$` (a line of code hidden in one), `text`/`eol`/`core.autocrlf` take a CR away (a backslash before
a CR no longer continues a shell line), `working-tree-encoding` re-encodes. The attributes can come from a
`.gitattributes` the worker left untracked or ignored, which the clear removes only after the look. So the look
that found the worktree clean cannot be trusted where a conversion may apply: then each tracked file whose stat
differs from its entry in orchestrate's index (written since its checkout: a ctime cannot be set back) is
checked out again, as a checkout of the head writes it. A conversion may apply when a committed `.gitattributes`
names one (one `git grep` of the index, kept while the kept differ says none changed), when `info/attributes`
or an attributes file your config names does, when `core.autocrlf` converts, or when the clear removed a
`.gitattributes`.
"""
from __future__ import annotations

import os
import stat
import struct
from pathlib import Path

from orchestrate import git
from orchestrate.errors import GitError
from orchestrate.workers import git_named, quoted, watched

_WORDS = ("ident", "working-tree-encoding", "text", "eol", "crlf", "autocrlf", "filter")

_last: dict[str, tuple[str, bool]] = {}  # repository -> (a commit, whether its .gitattributes files name them)


def rewrite(path: Path, common: Path, root: Path, head: str, removed: list[str]) -> list[str]:
    """Check out again, from the worktree's index (orchestrate's, at commit `head`), every tracked file whose stat
    differs from its entry, when a conversion may apply (`removed`: what the clear removed); their paths. GitError
    when git cannot write them; OSError when the index cannot be read."""
    if not (any(os.path.basename(e) == ".gitattributes" for e in removed) or _committed(path, root, head)
            or _named(common, root)):
        return []
    admin = git.admin_dir(path)
    if admin is None:
        raise GitError(["read", str(path / ".git")], 1, "", "the worktree's git admin dir is not known")
    top = os.path.join(path, "")
    stale = [name for name, want in _entries((admin / "index").read_bytes(), len(head) // 2)
             if _stat(top + name) != want]
    if stale:
        git.git(path, "checkout-index", "--force", "--stdin", input="".join(quoted.quote(n) + "\n" for n in stale))
    return stale


def _stat(path: str) -> tuple[int, ...] | None:
    """What an index entry records of a file: its ctime and mtime (nanoseconds; git keeps 32 bits of seconds,
    enough until 2106), inode and size (32 bits each), and whether it is a link."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_ctime_ns, st.st_mtime_ns, st.st_ino & _CUT, st.st_size & _CUT, stat.S_ISLNK(st.st_mode)


_CUT = 0xFFFFFFFF


def _entries(data: bytes, hash_size: int) -> list[tuple[str, tuple[int, ...]]]:
    """(path, what it records of the file) for each file or link entry of an index (versions 2 to 4); a gitlink
    has no file to compare."""
    if data[:4] != b"DIRC" or int.from_bytes(data[4:8], "big") not in (2, 3, 4):
        raise OSError(0, "not an index git writes", "index")
    version, count = int.from_bytes(data[4:8], "big"), int.from_bytes(data[8:12], "big")
    at, name, found = 12, b"", []
    for _ in range(count):
        start = at
        f = _FIELDS.unpack_from(data, at)  # ctime, mtime (seconds, nanoseconds), dev, ino, mode, uid, gid, size
        flags = _FLAGS.unpack_from(data, at + 40 + hash_size)[0]
        at += 42 + hash_size + (2 if version >= 3 and flags & 0x4000 else 0)
        if version == 4:
            cut, at = _varint(data, at)
            end = data.index(b"\0", at)
            name, at = name[:len(name) - cut] + data[at:end], end + 1
        else:
            end = data.index(b"\0", at)
            name = data[at:end]
            at = start + ((end - start + 8) & ~7)
        kind = f[6] >> 12
        if kind in (0o10, 0o12):  # a file or a link (0o16: a gitlink)
            found.append((os.fsdecode(name), (f[0] * 10**9 + f[1], f[2] * 10**9 + f[3], f[5], f[9], kind == 0o12)))
    return found


_FIELDS, _FLAGS = struct.Struct(">10I"), struct.Struct(">H")


def _varint(data: bytes, at: int) -> tuple[int, int]:
    byte = data[at]
    value, at = byte & 127, at + 1
    while byte & 128:
        byte = data[at]
        value, at = ((value + 1) << 7) | (byte & 127), at + 1
    return value, at


def _committed(path: Path, root: Path, head: str) -> bool:
    """Whether a committed `.gitattributes` of `head` names a conversion: asked of git (one grep of the index)
    only when a `.gitattributes` changed since the last commit asked about, as the kept differ tells."""
    from orchestrate import git_diffs
    last = _last.get(str(root))
    if last is not None and (changed := git_diffs.changed(root, last[0], head)) is not None and not any(
            name == ".gitattributes" or name.endswith("/.gitattributes") for _, name in changed):
        return last[1]
    grep = git.git(path, "grep", "--cached", "-l", "-i", "-E", "|".join(_WORDS), "--",
                   ":(glob)**/.gitattributes", check=False)
    if grep.rc not in (0, 1):
        raise GitError(list(grep.cmd), grep.rc, grep.stdout, grep.stderr)
    _last[str(root)] = (head, grep.rc == 0)
    return grep.rc == 0


def _named(common: Path, root: Path) -> bool:
    """Whether `core.autocrlf` converts (`true`, `input`), or `info/attributes` or an attributes file a git config
    names (`core.attributesFile`, `~/.config/git/attributes`) names a conversion. A filter merely defined in
    a config (git-lfs's) converts nothing until attributes name it."""
    from orchestrate import git_config
    home = git_named.home_files(root)
    attributes = [common / "info" / "attributes", *(path for path in home if path.name == "attributes")]
    seen: set[Path] = set()
    system = Path(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")
    for config in (common / "config", common / "config.worktree", *home[:2], system):
        for e in git_config.read(config, seen):
            if e.section == "core" and e.key == "autocrlf" and (e.value or "true").lower() in ("true", "input",
                                                                                               "yes", "on", "1"):
                return True
            if e.section == "core" and e.key == "attributesfile" and e.value:
                attributes.append(git_config.resolved(e.value, root / e.key))
    for file in attributes:
        text = (watched.read_file(file) or b"").lower()  # never waits on a FIFO a worker planted there
        if any(word.encode() in text for word in _WORDS):
            return True
    return False
