"""How an expected line matches an actual one, and how an actual line is written back, byte for byte.

An expected line matches when it is equal, or ends in ` (esc)` and equals once its escapes are decoded
(the actual line's too), or ends in ` (glob)` (`*`, `?`, and `\\*`, `\\?`, `\\\\` for the characters
themselves), or in ` (re)`. Patterns apply to the whole line, indent included, and must match all of
it: `  ^abc$ (re)` never matches, as in cram and prysk.
"""
from __future__ import annotations

import codecs
import re

ESC = b" (esc)"


def _printable(ch: str) -> bool:
    return ch.isprintable() and not ("\udc80" <= ch <= "\udcff")


def escape(raw: bytes) -> bytes:
    """A line of output as prysk shows it: as it is when it is printable UTF-8; otherwise with each
    non-printable character and each byte that is not UTF-8 escaped (and the backslash doubled),
    and ` (esc)` after it."""
    text = raw.decode("utf-8", "surrogateescape")
    if all(_printable(ch) for ch in text):
        return raw
    return b"".join(_escape_char(ch) for ch in text) + ESC


def _escape_char(ch: str) -> bytes:
    if "\udc80" <= ch <= "\udcff":  # a byte that is not UTF-8
        return b"\\x%02x" % (ord(ch) - 0xDC00)
    if ch == "\\":
        return b"\\\\"
    if ch.isprintable():
        return ch.encode()
    return ch.encode("unicode_escape")


def _decode(line: bytes) -> bytes | None:
    try:
        return codecs.escape_decode(line)[0]
    except ValueError:  # a stray backslash at the end, or `\x` without two hex digits
        return None


def _regex(pattern: bytes, line: bytes) -> bool:
    try:
        return re.match(pattern + rb"\Z", line) is not None
    except re.error:
        return False


def _glob(pattern: bytes, line: bytes) -> bool:
    parts, i = [], 0
    while i < len(pattern):
        c = pattern[i:i + 1]
        if c == b"\\" and pattern[i + 1:i + 2] in (b"*", b"?", b"\\"):
            parts.append(re.escape(pattern[i + 1:i + 2]))
            i += 2
            continue
        parts.append(b".*" if c == b"*" else b"." if c == b"?" else re.escape(c))
        i += 1
    return _regex(b"".join(parts), line)


def matches(expected: bytes, actual: bytes) -> bool:
    """Whether one expected line (indent included, no newline) accepts one actual line."""
    if expected == actual:
        return True
    if expected.endswith(ESC) or actual.endswith(ESC):
        left = _decode(expected[:-len(ESC)]) if expected.endswith(ESC) else expected
        if left == actual:
            return True
        right = _decode(actual[:-len(ESC)]) if actual.endswith(ESC) else actual
        if left is not None and left == right:
            return True
    if expected.endswith(b" (glob)") and _glob(expected[:-7], actual):
        return True
    return expected.endswith(b" (re)") and _regex(expected[:-5], actual)


def writable(raw: bytes, shown: bytes) -> bytes:
    """How `--update` writes an output line (without its indent) so that cram and prysk both pass it.

    `shown` is prysk's form, which cram also accepts, except for characters that are neither ASCII nor
    printable (a no-break space): prysk writes `\\xa0` where cram expects `\\xc2\\xa0`, so such a line
    becomes a ` (re)` accepting either. A line that would read as a command or continuation (`$ `,
    `> `) gets its first character escaped.
    """
    text = raw.decode("utf-8", "surrogateescape")
    if any(ord(ch) > 0x7F and not ("\udc80" <= ch <= "\udcff") and not ch.isprintable() for ch in text):
        line = b"".join(_either(ch) for ch in text) + re.escape(ESC)
        return (b"[" + line[:1] + b"]" + line[1:] if line[:2] in (b"$ ", b"> ") else line) + b" (re)"
    if shown[:2] not in (b"$ ", b"> "):
        return shown
    if escape(raw) == raw:  # not escaped yet, so its backslashes are literal
        shown = shown.replace(b"\\", b"\\\\") + ESC
    return b"\\x%02x" % shown[0] + shown[1:]


def _either(ch: str) -> bytes:
    """A pattern for one character as prysk escapes it or as cram does (every byte past ASCII as \\xHH)."""
    mine = _escape_char(ch)
    if ord(ch) <= 0x7F or "\udc80" <= ch <= "\udcff":
        return re.escape(mine)
    cram = b"".join(b"\\x%02x" % b for b in ch.encode())
    return b"(?:" + re.escape(mine) + b"|" + re.escape(cram) + b")"
