"""Surface semantics: which paths a token covers, and whether two tokens can collide.

The only module that answers these questions; DAG validation, authorisation, collision checks and
reconcile honesty all call it, so the contract and the gates cannot disagree.

A token is a repo-relative POSIX path, optionally a glob. A plain token covers the path it names and
everything under it (`docs` and `docs/` both cover `docs/x.md`, neither covers `docsx/y.md`). A glob
covers the paths it matches segment by segment: `*`, `?` and `[...]` stay inside one segment, a whole
`**` segment spans any number of segments (zero included); so `src/*` covers `src/a` but not
`src/a/b.py`, and `src/**` covers both. A glob ending in `/` names directories and covers what is
under them too (`pkg*/` covers `pkg1/x.py`).
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
    return _match(_segments(t), tuple(p.split("/")), _open_ended(token))


def _open_ended(token: str) -> bool:
    """Does the token also cover what lies under what it names? Plain paths and globs ending in `/` do."""
    return not is_glob(token) or token.endswith("/")


def _match(pattern: tuple[str, ...], parts: tuple[str, ...], open_ended: bool) -> bool:
    """True when `pattern` matches all of `parts` (or, open-ended, a leading run of them)."""

    @lru_cache(maxsize=None)
    def go(i: int, j: int) -> bool:
        if i == len(pattern):
            return j == len(parts) or open_ended
        if pattern[i] == "**":
            return go(i + 1, j) or (j < len(parts) and go(i, j + 1))
        return j < len(parts) and fnmatchcase(parts[j], pattern[i]) and go(i + 1, j + 1)

    return go(0, 0)


def overlap(a: str, b: str) -> bool:
    """Could some path be covered by both tokens? Decided conservatively: when unsure, yes."""
    open_a, open_b = _open_ended(a), _open_ended(b)
    a, b = a.rstrip("/"), b.rstrip("/")
    if not is_glob(a) and not is_glob(b):
        return a == b or b.startswith(a + "/") or a.startswith(b + "/")
    return _patterns_meet(_segments(a), _segments(b), open_a, open_b)


@lru_cache(maxsize=65536)
def _patterns_meet(a: tuple[str, ...], b: tuple[str, ...], open_a: bool, open_b: bool) -> bool:
    # Walk both patterns over one imagined path. When one is used up, the path may end there, or go
    # on under it if that token is open-ended; the other must be able to end or go on accordingly.
    @lru_cache(maxsize=None)
    def go(i: int, j: int) -> bool:
        if i == len(a) and j == len(b):
            return True
        if i == len(a):
            return open_a or all(seg == "**" for seg in b[j:])
        if j == len(b):
            return open_b or all(seg == "**" for seg in a[i:])
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
