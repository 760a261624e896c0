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


def literal_prefix(token: str) -> tuple[str, ...]:
    """The token's segments before its first glob segment (all of them for a plain path): an index key."""
    out = []
    for seg in _segments(token):
        if is_glob(seg):
            break
        out.append(seg)
    return tuple(out)


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
    memo: dict[tuple[int, int], bool] = {}

    def go(i: int, j: int) -> bool:
        key = (i, j)
        if key not in memo:
            if i == len(pattern):
                memo[key] = j == len(parts) or open_ended
            elif pattern[i] == "**":
                memo[key] = go(i + 1, j) or (j < len(parts) and go(i, j + 1))
            else:
                memo[key] = j < len(parts) and fnmatchcase(parts[j], pattern[i]) and go(i + 1, j + 1)
        return memo[key]

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
    memo: dict[tuple[int, int], bool] = {}

    def go(i: int, j: int) -> bool:
        key = (i, j)
        if key in memo:
            return memo[key]
        if i == len(a) and j == len(b):
            result = True
        elif i == len(a):
            result = open_a or all(seg == "**" for seg in b[j:])
        elif j == len(b):
            result = open_b or all(seg == "**" for seg in a[i:])
        elif a[i] == "**" or b[j] == "**":
            # a `**` matches no segment, or swallows the other pattern's current one
            result = ((a[i] == "**" and (go(i + 1, j) or go(i, j + 1)))
                      or (b[j] == "**" and (go(i, j + 1) or go(i + 1, j))))
        else:
            result = _segments_meet(a[i], b[j]) and go(i + 1, j + 1)
        memo[key] = result
        return result

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
