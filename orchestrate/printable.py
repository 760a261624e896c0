"""Text from a worker, shown to a person. A worker writes evaluator output, a freeze's reason, file names and
its usage file, and each reaches the terminal that shows a run, a seam's prompt, `status`, a notification:
there an escape sequence retitles the window, writes the clipboard (OSC 52), or moves the cursor up to
rewrite the verdict a person is about to answer (rv67). Control characters are shown as their escapes, and
so are the marks that reorder what follows them on screen (bidirectional overrides)."""
from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # all but the newline


def printable(text: str) -> str:
    """`text` with every control character but the newline written as its escape (`\\x1b`, `\\r`)."""
    return _UNSAFE.sub(_escaped, text)


def one_line(text: str) -> str:
    """`printable`, the newlines escaped too: a value that must read as one line (a notification's message)."""
    return printable(text).replace("\n", "\\n")


def _escaped(found: re.Match) -> str:
    return found.group().encode("unicode_escape").decode("ascii")
