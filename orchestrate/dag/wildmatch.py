"""git's wildmatch (WM_PATHNAME), as `:(glob)` pathspecs use it: one pattern as a regex over a path's bytes,
and its case-folded form. dag/surface.py builds what a surface token means on these."""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

CLASSES = {"alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "blank": " \t", "cntrl": "\x00-\x1f\x7f",
           "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~", "punct": "!-/:-@\\[-`{-~",
           "space": " \t\n\r\f\v", "upper": "A-Z", "xdigit": "0-9A-Fa-f"}  # C locale, as git


_SPECIAL = re.compile(r"[*?\[\\]")  # what makes a pattern a glob: `*`, `?`, `[` and `\`


def first_special(pattern: str) -> int:
    found = _SPECIAL.search(pattern)
    return found.start() if found else len(pattern)


def to_bytes(text: str) -> bytes:
    # git matches a path's bytes, not its characters: `?` and a class take one byte of `é`, which has two
    return text.encode("utf-8", "surrogateescape")


@lru_cache(maxsize=65536)
def regex(pattern: str) -> re.Pattern | None:
    """`pattern` as git's wildmatch (WM_PATHNAME) reads it, as a regex over a whole path's UTF-8 bytes; None
    when git would match nothing at all (an unclosed or unknown character class)."""
    raw = to_bytes(pattern)
    out: list[bytes] = []
    i, n = 0, len(raw)
    special = len(to_bytes(pattern[:first_special(pattern)]))
    while i < n:
        ch = raw[i:i + 1]
        if ch == b"\\":
            if i + 1 >= n:
                return None
            out.append(re.escape(raw[i + 1:i + 2]))
            i += 2
        elif ch == b"?":
            out.append(b"[^/]")
            i += 1
        elif ch == b"*":
            j = i
            while j < n and raw[j:j + 1] == b"*":
                j += 1
            # git strips the literal prefix before wildmatch, so a `**` right after it counts as leading
            at_start = i == 0 or raw[i - 1:i] == b"/" or i == special
            if j - i >= 2 and at_start and j < n and raw[j:j + 1] == b"/":
                out.append(b"(?:.*/)?")  # `**/`: zero or more whole directories
                j += 1
            elif j - i >= 2 and at_start and j == n:
                out.append(b".*")
            else:
                out.append(b"[^/]*")
            i = j
        elif ch == b"[":
            parsed = bracket(raw, i)
            if parsed is None:
                return None
            out.append(parsed[0])
            i = parsed[1]
        else:
            out.append(re.escape(ch))
            i += 1
    return re.compile(b"".join(out), re.DOTALL)


def bracket(raw: bytes, start: int) -> tuple[bytes, int] | None:
    """The regex for the class opening at byte `start` and the index after it; None if git matches nothing.
    Each item is one byte, as in git: `[é]` is a class of two bytes and matches neither `é` nor anything."""
    i, n = start + 1, len(raw)
    negate = i < n and raw[i:i + 1] in (b"!", b"^")
    i += negate
    items: list[bytes] = []
    first = True
    prev: bytes | None = None
    while i < n and (raw[i:i + 1] != b"]" or first):
        first = False
        ch = raw[i:i + 1]
        if ch == b"\\" and i + 1 < n:
            ch = raw[i + 1:i + 2]
            i += 1
        elif ch == b"[" and raw.startswith(b"[:", i):
            end = raw.find(b"]", i + 2)  # git reads up to the first `]`: a class only when `:` is just before it
            if end == -1:
                return None
            if end - 1 >= i + 2 and raw[end - 1:end] == b":":
                name = raw[i + 2:end - 1].decode("utf-8", "surrogateescape")
                if name not in CLASSES:
                    return None
                items.append(CLASSES[name].encode())
                prev = None
                i = end + 1
                continue
        elif ch == b"-" and prev is not None and i + 1 < n and raw[i + 1:i + 2] != b"]":
            hi = raw[i + 1:i + 2]
            i += 1
            if hi == b"\\" and i + 1 < n:
                hi = raw[i + 1:i + 2]
                i += 1
            if prev <= hi:  # git matches the low end by itself first: `[z-a]` matches `z`
                items.pop()
                items.append(re.escape(prev) + b"-" + re.escape(hi))
            prev = None
            i += 1
            continue
        items.append(re.escape(ch))
        prev = ch
        i += 1
    if i >= n:
        return None
    body = b"".join(items)
    if negate:
        return b"[^/" + body + b"]", i + 1
    return ((b"(?!/)[" + body + b"]") if body else b"(?!)"), i + 1


@lru_cache(maxsize=65536)
def fold(token: str) -> str:
    """`token` as a checkout that ignores case and Unicode normalization reads it (macOS: `é` composed or not is
    one name): it covers the lower-case NFC form of every path `token` covers. Names are lowered; a class is rewritten as the lower-case forms of the bytes it matches, not by
    lowering its text, which would change what it matches: `[!A-Z]` matches `a`, `[!a-z]` does not; `[A-z]`
    matches `_`, `[a-z]` does not; `[a-Z]` is `a` alone (git matches a reversed range's low end only)."""
    if "[" not in token:
        return fold_name(token)
    if regex(token.rstrip("/")) is None:  # a class git matches nothing with: the glob covers only its own text
        return token
    raw, out, run, i = to_bytes(token), [], bytearray(), 0
    while i < len(raw):
        ch = raw[i:i + 1]
        if ch == b"\\":
            run += raw[i:i + 2]
            i += 2
        elif ch == b"[" and (parsed := bracket(raw, i)) is not None:
            out.append(fold_name(run.decode("utf-8", "surrogateescape")))
            run = bytearray()
            out.append(_folded_class(parsed[0]))
            i = parsed[1]
        else:
            run += ch
            i += 1
    out.append(fold_name(run.decode("utf-8", "surrogateescape")))
    return "".join(out)


def fold_name(text: str) -> str:
    """A name (no glob) as macOS and Windows checkouts take it: lowered, then composed (NFC), so that two names
    they take for one fold alike."""
    return text.lower() if text.isascii() else unicodedata.normalize("NFC", text.lower())


def _folded_class(regex: bytes) -> str:
    """A class (as `_bracket`'s regex) written back as the lower-case forms of the bytes it matches."""
    rx = re.compile(regex, re.DOTALL)
    matched = {b + 32 if 65 <= b <= 90 else b for b in range(256) if rx.fullmatch(bytes((b,)))}
    if not matched:
        return "?"  # a class matching nothing: any byte, conservatively (`_bracket` never gives one)
    items, run = [], []
    for b in sorted(matched) + [None]:
        if run and (b is None or b != run[-1] + 1):
            lo, hi = _class_char(run[0]), _class_char(run[-1])
            items.append(lo if len(run) == 1 else lo + hi if len(run) == 2 else f"{lo}-{hi}")
            run = []
        if b is not None:
            run.append(b)
    return "[" + "".join(items) + "]"


def _class_char(b: int) -> str:
    char = bytes((b,)).decode("utf-8", "surrogateescape")  # a byte past ASCII as the surrogate _bytes turns back
    return char if char.isalnum() and b < 128 else "\\" + char
