"""How an expected line matches an actual one, and how an actual line is written back, byte for byte.

An expected line matches when it is equal, or ends in ` (esc)` and equals once its escapes are decoded
(the actual line's too), or ends in ` (glob)` (`*`, `?`, and `\\*`, `\\?`, `\\\\` for the characters
themselves), or in ` (re)`. Patterns apply to the whole line, indent included, and must match all of
it: `  ^abc$ (re)` never matches, as in cram and prysk. A glob ending in a lone backslash, or an
` (esc)` line that cannot be decoded, crashes cram and prysk; `unreadable` names such a line so that
replay refuses the file before running it.
"""
from __future__ import annotations

import codecs
import re

ESC = b" (esc)"
GLOB = b" (glob)"
# where cram runs a transcript, $TMPDIR is a folder it made; prysk (and replay) show the path as `$TMPDIR`
TMPDIR_EITHER = rb"(?:\$TMPDIR|/.+/cramtests-[^/]+/tmp)"
_CRAM_ESCAPES = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f-\xff]")  # the bytes for which cram escapes a line


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


def _glob_regex(pattern: bytes) -> bytes | None:
    """The regular expression a glob stands for; None when it ends in a lone backslash."""
    parts, i = [], 0
    while i < len(pattern):
        c = pattern[i:i + 1]
        if c == b"\\" and i + 1 == len(pattern):
            return None
        if c == b"\\" and pattern[i + 1:i + 2] in (b"*", b"?", b"\\"):
            parts.append(re.escape(pattern[i + 1:i + 2]))
            i += 2
            continue
        parts.append(b".*" if c == b"*" else b"." if c == b"?" else re.escape(c))
        i += 1
    return b"".join(parts)


def _glob(pattern: bytes, line: bytes) -> bool:
    regex = _glob_regex(pattern)
    return regex is not None and _regex(regex, line)


def unreadable(expected: bytes) -> str | None:
    """Why cram and prysk cannot read an expected line (they stop with a traceback), or None."""
    if expected.endswith(GLOB) and _glob_regex(expected[:-len(GLOB)]) is None:
        return "this ` (glob)` line ends in a lone backslash"
    if expected.endswith(ESC) and _decode(expected[:-len(ESC)]) is None:
        return "this ` (esc)` line has an escape that cannot be decoded (a lone backslash at the end, or `\\x` " \
               "without two hex digits)"
    return None


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
    if expected.endswith(GLOB) and _glob(expected[:-len(GLOB)], actual):
        return True
    return expected.endswith(b" (re)") and _regex(expected[:-5], actual)


def writable(raw: bytes, shown: bytes, tmpdir: bytes = b"") -> bytes:
    """How `--update` writes an output line (without its indent) so that cram and prysk both pass it.

    `shown` is prysk's form, which cram also accepts, except in two cases, where the line becomes a
    ` (re)` accepting either tool's form: characters that are neither ASCII nor printable (a no-break
    space: prysk writes `\\xa0` where cram expects `\\xc2\\xa0`), and the path of `$TMPDIR` (`tmpdir`),
    which prysk shows as `$TMPDIR` and cram as it is. A line that would read as a command or
    continuation (`$ `, `> `) gets its first character escaped.
    """
    text = raw.decode("utf-8", "surrogateescape")
    if (tmpdir and tmpdir in raw) or any(ord(ch) > 0x7F and not ("\udc80" <= ch <= "\udcff") and not ch.isprintable()
                                         for ch in text):
        return _either_tool(raw, tmpdir)
    if shown[:2] not in (b"$ ", b"> "):
        return shown
    if escape(raw) == raw:  # not escaped yet, so its backslashes are literal
        shown = shown.replace(b"\\", b"\\\\") + ESC
    return b"\\x%02x" % shown[0] + shown[1:]


def _either_tool(raw: bytes, tmpdir: bytes) -> bytes:
    """A ` (re)` line matching `raw` as prysk shows it and as cram does."""
    by_prysk, by_cram = escape(raw) != raw, _CRAM_ESCAPES.search(raw) is not None  # by_prysk implies by_cram
    pieces = raw.split(tmpdir) if tmpdir else [raw]
    body = TMPDIR_EITHER.join(b"".join(_either(ch, by_prysk, by_cram)
                                       for ch in piece.decode("utf-8", "surrogateescape")) for piece in pieces)
    suffix = _literal(ESC) if by_prysk else rb"(?: \(esc\))?" if by_cram else b""
    if body.startswith(b"> "):  # would read as a continuation (a `$` is escaped already)
        body = b"[>]" + body[1:]
    return body + suffix + b" (re)"


def _literal(text: bytes) -> bytes:
    """`text` as a regular expression matching itself, spaces left as they are to keep it readable."""
    return re.escape(text).replace(b"\\ ", b" ")


def _either(ch: str, by_prysk: bool, by_cram: bool) -> bytes:
    """A pattern for one character as prysk writes it and as cram does (in a line each escapes or not)."""
    data = ch.encode("utf-8", "surrogateescape")
    mine = _escape_char(ch) if by_prysk else data
    cram = b"".join(_cram_byte(b) for b in data) if by_cram else data
    return _literal(mine) if mine == cram else b"(?:" + _literal(mine) + b"|" + _literal(cram) + b")"


def _cram_byte(byte: int) -> bytes:
    if byte == 0x5C:
        return b"\\\\"
    if byte in (0x09, 0x0D):
        return b"\\t" if byte == 0x09 else b"\\r"
    return b"\\x%02x" % byte if _CRAM_ESCAPES.match(bytes([byte])) else bytes([byte])
