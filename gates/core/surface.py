"""Surface semantics: which paths a token covers, and whether two tokens can collide.

The only module that answers these questions; DAG validation, authorisation, collision checks and
reconcile honesty all call it, so the contract and the gates cannot disagree.

A token is a repo-relative POSIX path, optionally a glob. It covers a path when it matches the path
or one of the path's parent directories, segment by segment: `*`, `?` and `[...]` stay inside one
segment, a whole `**` segment spans any number of segments (zero included). A trailing `/` changes
nothing (`docs` and `docs/` both cover `docs/x.md`, neither covers `docsx/y.md`).
"""
from __future__ import annotations

from fnmatch import fnmatchcase
from functools import lru_cache

_GLOB_CHARS = frozenset("*?[")


def is_glob(token: str) -> bool:
    return not _GLOB_CHARS.isdisjoint(token)


def token_problem(token: object) -> str | None:
    """Why `token` is not a valid surface token, or None when it is."""
    if not isinstance(token, str):
        return f"a surface token must be a string, not {type(token).__name__}"
    if not token.strip():
        return "empty surface token"
    if "\\" in token:
        return f"`{token}` contains a backslash; write POSIX paths with `/`"
    if token.startswith("/"):
        return f"`{token}` is absolute; surface tokens are relative to the repository root"
    segments = token.rstrip("/").split("/")
    if ".." in segments:
        return f"`{token}` has a `..` segment; a surface cannot reach outside the repository"
    if "" in segments or "." in segments:
        return f"`{token}` is not a normalised path (empty or `.` segment)"
    if token != token.strip():
        return f"`{token}` has leading or trailing white space"
    return None


@lru_cache(maxsize=65536)
def _segments(token: str) -> tuple[str, ...]:
    return tuple(token.rstrip("/").split("/"))


def leading_segment(token: str) -> str | None:
    """The token's first segment when it is literal (a bucket key); None when it is a glob."""
    first = _segments(token)[0]
    return None if is_glob(first) else first


def covers(token: str, path: str) -> bool:
    """Does `token` grant `path` (a concrete file or directory path)?"""
    t = token.rstrip("/")
    p = path.rstrip("/")
    if not is_glob(t):
        return p == t or p.startswith(t + "/")
    return _match_prefix(_segments(t), tuple(p.split("/")))


def _match_prefix(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    """True when `pattern` matches `parts` or a leading run of them (the directory rule)."""

    @lru_cache(maxsize=None)
    def go(i: int, j: int) -> bool:
        if i == len(pattern):
            return True  # the pattern matched a parent directory (or the path itself)
        if pattern[i] == "**":
            return go(i + 1, j) or (j < len(parts) and go(i, j + 1))
        return j < len(parts) and fnmatchcase(parts[j], pattern[i]) and go(i + 1, j + 1)

    return go(0, 0)


def overlap(a: str, b: str) -> bool:
    """Could some path be covered by both tokens? Decided conservatively: when unsure, yes."""
    a, b = a.rstrip("/"), b.rstrip("/")
    if not is_glob(a) and not is_glob(b):
        return a == b or b.startswith(a + "/") or a.startswith(b + "/")
    return _patterns_meet(_segments(a), _segments(b))


@lru_cache(maxsize=65536)
def _patterns_meet(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    # Walk both patterns over one imagined path; once either is used up, the path can be extended
    # under that directory to satisfy the other, so they meet.
    @lru_cache(maxsize=None)
    def go(i: int, j: int) -> bool:
        if i == len(a) or j == len(b):
            return True
        if a[i] == "**" or b[j] == "**":
            skip_a = a[i] == "**" and go(i + 1, j)
            skip_b = b[j] == "**" and go(i, j + 1)
            if skip_a or skip_b:
                return True
            # a `**` swallows the other pattern's current segment
            return go(i, j + 1) if a[i] == "**" else go(i + 1, j)
        return _segments_meet(a[i], b[j]) and go(i + 1, j + 1)

    return go(0, 0)


def _segments_meet(x: str, y: str) -> bool:
    """Could one path segment match both segment patterns? Exact for literals, conservative for two globs."""
    gx, gy = is_glob(x), is_glob(y)
    if not gx and not gy:
        return x == y
    if not gy:
        return fnmatchcase(y, x)
    if not gx:
        return fnmatchcase(x, y)
    px, py = _literal_head(x), _literal_head(y)
    if not (px.startswith(py) or py.startswith(px)):
        return False
    sx, sy = _literal_tail(x), _literal_tail(y)
    return sx.endswith(sy) or sy.endswith(sx)


def _literal_head(pattern: str) -> str:
    for i, ch in enumerate(pattern):
        if ch in _GLOB_CHARS:
            return pattern[:i]
    return pattern


def _literal_tail(pattern: str) -> str:
    for i in range(len(pattern) - 1, -1, -1):
        if pattern[i] in _GLOB_CHARS or pattern[i] == "]":
            return pattern[i + 1:]
    return pattern


def covering(tokens: tuple[str, ...] | list[str], path: str) -> str | None:
    """The first token that covers `path`, or None."""
    for token in tokens:
        if covers(token, path):
            return token
    return None
