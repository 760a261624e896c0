"""Paths as git prints them C-quoted, and back: what crosses a pipe to and from git for the pool's listings.

Paths cross the pipe C-quoted (ASCII; git's own quoting, which check-ignore's --stdin reads too), never raw:
orchestrate decodes git's output as UTF-8 with replacement, and a name that is not UTF-8 would come back as
another name, one `removal.remove` would not find (and what it names would stay for the next node).
"""
from __future__ import annotations

import os
import re

QUOTED = ("-c", "core.quotePath=true")
_ESCAPES = {b"a": 7, b"b": 8, b"t": 9, b"n": 10, b"v": 11, b"f": 12, b"r": 13, b'"': 34, b"\\": 92}
_ESCAPE = re.compile(rb'\\([0-7]{3}|[abtnvfr"\\])')


def unquote(line: str) -> str:
    """A path as git prints it (as is, or in double quotes with C escapes), as os functions take it: its
    bytes, decoded as Python decodes file names (os.fsdecode: what is not UTF-8 survives the round trip)."""
    if not (len(line) >= 2 and line[0] == line[-1] == '"'):
        return os.fsdecode(line.encode("ascii"))
    raw = _ESCAPE.sub(lambda m: bytes([int(m[1], 8) if len(m[1]) == 3 else _ESCAPES[m[1]]]),
                      line[1:-1].encode("ascii"))
    return os.fsdecode(raw)


def quote(name: str) -> str:
    """`name` in double quotes with every byte that is not plain printable ASCII an octal escape."""
    return '"' + "".join(chr(b) if 32 <= b < 127 and b not in b'"\\' else f"\\{b:03o}"
                         for b in os.fsencode(name)) + '"'
