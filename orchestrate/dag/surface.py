r"""Surface semantics: which paths a token covers, and whether two tokens can collide.

The only module that answers these questions; DAG validation, authorisation, collision checks and
reconcile honesty all call it, so the contract and the gates cannot disagree.

A token is a repo-relative POSIX path, optionally a glob. A plain token covers the path it names and
everything under it (`docs` and `docs/` both cover `docs/x.md`, neither covers `docsx/y.md`). A glob
follows git's pathspec `:(glob)` magic (wildmatch with WM_PATHNAME), so a token means what it means to
`git ls-files ':(glob)TOKEN'`: `*`, `?` and `[...]` never match `/`; `?` and `[...]` match one byte of the
path's UTF-8, as git's do (`?` misses `é`, which is two bytes; `??` matches it); `[!a]` and `[^a]` both negate;
`[[:alpha:]]` names a class; a `**` between slashes (or leading `**/`, trailing `/**`) spans any
number of directories, elsewhere `**` is `*` except at the very end, where it spans `/` too;
a backslash makes the next glob character literal (`a\*b` covers only `a*b`). As in git, a glob's
own text is also compared literally first (`[d` covers `[d/x`). So `src/*` covers `src/a` but not
`src/a/b.py`, and `src/**` covers both. A glob ending in `/` names directories and covers what is
under them too (`pkg*/` covers `pkg1/x.py`): git would list nothing for it, since it lists files.
"""
from __future__ import annotations

import re
from functools import lru_cache

from orchestrate.dag import wildmatch
from orchestrate.dag.rule_files import needed, rules_folder, rules_reach

_GLOB_CHARS = frozenset("*?[\\")
_ESCAPABLE = frozenset("*?[]\\!^-:")  # what a backslash may make literal; anything else looks like a Windows path
_BAD_ESCAPE = re.compile(r"\\[^" + re.escape("".join(sorted(_ESCAPABLE))) + "]")
_CLASS_NAME = re.compile(r"\[:([a-z]*):\]")


def is_glob(token: str) -> bool:
    return not _GLOB_CHARS.isdisjoint(token)


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")  # Unicode's Cc category is exactly these two ranges


_BRACES = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")  # {a,b}, {a/b,c}, {1..3}: a shell expands each


def dialect_note(token: str) -> str | None:
    """Where `token` means here (git's wildmatch) what another glob dialect reads otherwise: one sentence on
    how it is read, for `validate` to say; None for a token every dialect reads alike."""
    notes = []
    if _BRACES.search(token):  # a literal name to git, glob or not
        notes.append("braces are literal (a shell would expand `{a,b}` or `{1..3}` into several names: list each as a token)")
    if not is_glob(token):
        return f"`{token}` is read as git reads it: " + notes[0] if notes else None
    if "[^" in token:
        notes.append("`[^...]` negates, as `[!...]` does (Python's fnmatch would match a `^` there)")
    if _CLASS_NAME.search(token):
        notes.append("`[[:name:]]` is a POSIX class (Python's fnmatch does not know classes)")
    if any("**" in part and part != "**" for part in token.split("/")):
        notes.append("a `**` that is not a whole path segment stays inside one segment, except at the very end")
    if "\\" in token:
        notes.append("a backslash makes the next glob character literal (it is no path separator)")
    return f"`{token}` is read as git reads it: " + "; ".join(notes) if notes else None


RESERVED_ROOTS = (".ledger", ".scratch")  # orchestrate's own folders at the top of the checkout


def token_problem(token: object) -> str | None:
    """Why `token` is not a valid surface token, or None when it is."""
    if not isinstance(token, str):
        return f"a surface token must be a string, not {type(token).__name__}"
    if not token.strip():
        return "empty surface token"
    if found := _CONTROL.search(token):
        bad = found.group()
        # echoed as repr: the raw character would move the cursor or recolour the terminal showing the message
        return (f"{token!r} contains the control character {bad!r}; a surface token names a path, and git "
                "quotes such a path in every listing, so no change could ever match it")
    if "\\" in token and (token.endswith("\\") or _BAD_ESCAPE.search(token)):
        return (f"`{token}` contains a backslash that escapes no glob character; write POSIX paths with `/` "
                "(a backslash only makes `*`, `?`, `[`, `]` or `\\` literal)")
    if token.startswith("/"):
        return f"`{token}` is absolute; surface tokens are relative to the repository root"
    segments = token.rstrip("/").split("/")
    if ".." in segments:
        return f"`{token}` has a `..` segment; a surface cannot reach outside the repository"
    if "" in segments or "." in segments:
        return f"`{token}` is not a normalised path (empty or `.` segment)"
    if segments[0] in RESERVED_ROOTS or any(s.lower() == ".git" for s in segments):
        # git never lists what is there as a change (init excludes the two folders): the node could never deliver it
        return f"`{token}` belongs to git, the recorder or orchestrate's scratch space, which no node may change"
    if token != token.strip():
        return f"`{token}` has leading or trailing white space"
    if "[:" in token and (bad := _CLASS_NAME.search(token)):
        if bad.group(1) not in wildmatch.CLASSES:
            return (f"`{token}` names the unknown character class `[:{bad.group(1)}:]`, which git matches with "
                    f"nothing; classes: {', '.join(wildmatch.CLASSES)}")
    if "[" in token and _slash_in_class(token):
        return (f"`{token}` has a `/` inside `[...]`: git never matches `/` with a class, and the token does "
                "not split into directories the way it reads; write one class per path segment")
    return None


def _slash_in_class(token: str) -> bool:
    raw, i = wildmatch.to_bytes(token), 0
    while i < len(raw):
        if raw[i:i + 1] == b"\\":
            i += 2
        elif raw[i:i + 1] == b"[" and (parsed := wildmatch.bracket(raw, i)) is not None:
            if b"/" in raw[i:parsed[1]]:
                return True
            i = parsed[1]
        else:
            i += 1
    return False


@lru_cache(maxsize=65536)
def _segments(token: str) -> tuple[str, ...]:
    """The token's segments, for comparing two tokens. A `**` right after the literal prefix but inside a
    segment (`src/a**`, `src**/c`) spans directories in git: read it, more widely, as that segment's head
    followed by `*` and then anything (`src/a*/**`)."""
    t = token.rstrip("/")
    segs = t.split("/")
    f = wildmatch.first_special(t)
    if t.startswith("**", f) and f > 0 and t[f - 1] != "/":
        k = t.count("/", 0, f)
        head = t[:f].rsplit("/", 1)[-1]
        segs = segs[:k] + [head + "*", "**"]
    return tuple("**" if len(seg) >= 2 and not seg.strip("*") else seg for seg in segs)


def literal_prefix(token: str) -> tuple[str, ...]:
    """The token's segments before its first glob segment (all of them for a plain path): an index key."""
    if not is_glob(token):  # what _segments gives a plain path, without its cache (tokens are mostly unique)
        return tuple(token.rstrip("/").split("/"))
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
    if p == t or p.startswith(t + "/"):  # git compares a pathspec's text literally before matching it
        return True
    if not is_glob(t):
        return False
    rx = wildmatch.regex(t)
    if rx is None:
        return False
    raw = wildmatch.to_bytes(p)
    if rx.fullmatch(raw):
        return True
    if _open_ended(token):
        cut = raw.find(b"/")
        while cut != -1:
            if rx.fullmatch(raw[:cut]):
                return True
            cut = raw.find(b"/", cut + 1)
    return False


def _open_ended(token: str) -> bool:
    """Does the token also cover what lies under what it names? Plain paths and globs ending in `/` do."""
    return not is_glob(token) or token.endswith("/")


def overlap(a: str, b: str) -> bool:
    """Could some path be covered by both tokens, on a checkout that tells case apart or on one that does not
    (macOS's and Windows': there `SRC/x` and `src/x` are one file, and two nodes writing them clobber each
    other)? Decided conservatively: when unsure, yes."""
    if overlap_as_written(a, b):
        return True
    fa, fb = wildmatch.fold(a), wildmatch.fold(b)
    return (fa, fb) != (a, b) and overlap_as_written(fa, fb)


def overlap_as_written(a: str, b: str) -> bool:
    """`overlap`, with names compared as git compares them: case tells them apart."""
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
        return covers(x, y)
    if not gx:
        return covers(y, x)
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
    """The first token that grants a change to `path`, or None. A file git reads rules from for a whole folder
    is granted only with all of it (`_grants_below`): `src/*` lets a node rewrite `src/.gitattributes` no
    more than `src/lib/x.py`, whose checkout, diffs and merges that file chooses."""
    folder = rules_folder(path)
    for token in tokens:
        if covers(token, path) if folder is None else _grants_below(token, folder):
            return token
    return None


def _grants_below(token: str, folder: str) -> bool:
    """Does `token` cover every path under `folder` ('' for the whole repository)? Read narrowly: a plain
    token or a glob ending in `/` that covers the folder, a glob `P/**` whose `P/` does, or `**` itself."""
    t = token.rstrip("/")
    if len(t) >= 2 and not t.strip("*"):
        return True
    if not folder:
        return False
    if _open_ended(token):
        return covers(token, folder)
    stem, _, last = t.rpartition("/")
    return bool(stem) and len(last) >= 2 and not last.strip("*") and covers(stem + "/", folder)


def short_of(tokens: tuple[str, ...] | list[str], path: str, whose: str) -> str | None:
    """Why `tokens`, which list the rules file `path`, still do not grant it (`whose`: "its file_surface", say),
    as a clause; None when `path` is no rules file or they do not list it at all."""
    if rules_folder(path) is None or not any(covers(t, path) for t in tokens):
        return None
    return f"{rules_reach(path)}, and {whose} grants only some of that (it takes `{needed(path)}`)"


def reach_note(token: str) -> str | None:
    """For `validate`: a token naming a rules file itself grants no change to it (see `covering`)."""
    folder = rules_folder(token)
    if folder is None or _grants_below(token, folder):
        return None
    return f"`{token}` grants no change to that file: {rules_reach(token)}, so changing it takes `{needed(token)}`"
