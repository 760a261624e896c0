"""The ids git gives objects, worked out without asking git: a recorder commit's files, trees and commit go
to git in one round trip (orchestrate.git_pipe), a folder's tree naming its subfolders' before git has
answered for them, and git's answers are checked against these (a content rewritten between the write and
git's read is refused, not committed)."""
from __future__ import annotations

import hashlib
import os


def _digest(width: int):
    """SHA-256 in a repository whose ids are 64 hex digits, SHA-1 otherwise (40)."""
    return hashlib.sha256 if width == 64 else hashlib.sha1


def blob_id(data: bytes | None, width: int) -> str | None:
    """The id of `data` as a blob; None for None."""
    if data is None:
        return None
    return _digest(width)(b"blob %d\0" % len(data) + data).hexdigest()


def tree(entries: dict[str, tuple[str, str]], width: int = 40) -> tuple[str, bytes]:
    """The id and the content of a tree of `entries` (name -> (mode, object id)). Git orders a tree's entries
    by name, a subtree's name as if it ended in "/"."""
    def order(item: tuple[str, tuple[str, str]]) -> bytes:
        return os.fsencode(item[0]) + (b"/" if item[1][0] == "40000" else b"")
    body = b"".join(mode.encode() + b" " + os.fsencode(name) + b"\0" + bytes.fromhex(oid)
                    for name, (mode, oid) in sorted(entries.items(), key=order))
    return _digest(width)(b"tree %d\0" % len(body) + body).hexdigest(), body


def commit_id(text: bytes, width: int) -> str:
    """The id of a commit whose text is `text`."""
    return _digest(width)(b"commit %d\0" % len(text) + text).hexdigest()
