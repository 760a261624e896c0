"""Git's config files read as git reads them, without starting git: what inert.py must neutralise and what
the watch over $HOME must cover are decided by what git would see in files a worker may have written.

The syntax is git-config(1)'s: section names and keys in any case, a key on the header's own line
(`[include] path = x`), `#` and `;` comments outside quotes, quoted stretches, backslash escapes and
continued lines, `[section "sub"]` (the subsection kept as written, a backslash dropped before any other
character) and the old `[section.sub]` (lower-cased). What git would reject is read as far as it goes:
a missed entry here is a driver left armed, an extra one costs nothing.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Iterator, NamedTuple

_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", '"': '"', "\\": "\\"}
_DEPTH = 10  # git's own limit on nested includes
MOST = 1 << 24  # bytes of a config (or watched) file read: a worker's sparse file of terabytes is never read whole


class Entry(NamedTuple):
    section: str  # lower case
    subsection: str | None
    key: str  # lower case
    value: str | None  # None: a key without `=` (a boolean true)


def entries(text: str) -> Iterator[Entry]:
    """`text` as decoded by `read` (UTF-8, bytes that are not kept as surrogates, as file names are)."""
    section, subsection = "", None
    # git ends lines at LF alone (a CR before it is dropped): not at the other breaks str.splitlines knows
    lines = text.removeprefix("\ufeff").replace("\r\n", "\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i].lstrip()
        i += 1
        while line.startswith("["):  # a header, and maybe another, or a key, on the same line
            end = _header_end(line)
            if end < 0:
                line = ""
                break
            section, subsection = _header(line[1:end])
            yield Entry(section, subsection, "", None)  # a header alone still defines its section
            line = line[end + 1:].lstrip()
        if not line or line[0] in "#;":
            continue
        name, eq, rest = line.partition("=")
        key = name.strip().lower()
        if not key or not key[0].isalpha() or any(not (c.isalnum() or c == "-") for c in key):
            continue
        if not eq:
            yield Entry(section, subsection, key, None)
            continue
        state: list = [[], "", False]
        more = _value(rest, state)
        while more and i < len(lines):  # a value continued on the next line
            more = _value(lines[i], state)
            i += 1
        yield Entry(section, subsection, key, "".join(state[0]))


def _header_end(line: str) -> int:
    quoted = escaped = False
    for pos, char in enumerate(line):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == "]" and not quoted:
            return pos
    return -1


def _header(inside: str) -> tuple[str, str | None]:
    inside = inside.strip()
    if '"' in inside:
        name, _, sub = inside.partition('"')
        sub = sub.rsplit('"', 1)[0]
        out, escaped = [], False
        for char in sub:
            if escaped or char != "\\":
                out.append(char)
                escaped = False
            else:
                escaped = True
        # `[filter.x "y"]` is git's `filter.x.y`: the driver `x.y`
        section, dot, before = name.strip().lower().partition(".")
        return section, (before + "." if dot else "") + "".join(out)
    name, dot, sub = inside.partition(".")
    return name.lower(), sub.lower() if dot else None


def _value(text: str, state: list) -> bool:
    """Add this line's part of a value to `state` ([characters, pending whitespace, in quotes]), as git
    does: trimmed outside quotes, ended by a comment; True when a backslash continues it on the next line."""
    out, pending, quoted = state
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\":
            if i + 1 == len(text):
                state[1:] = [pending, quoted]
                return True
            out.append(pending + _ESCAPES.get(text[i + 1], text[i + 1]))
            pending, i = "", i + 2
            continue
        if char == '"':
            quoted = not quoted
        elif not quoted and char in "#;":
            break
        elif not quoted and char.isspace():
            pending += char if out else ""
        else:
            out.append(pending + char)
            pending = ""
        i += 1
    return False


def read(path: Path, seen: set[Path], depth: int = 0) -> list[Entry]:
    """The entries of `path` and of every file it includes (include.path and every includeIf.*.path,
    whatever its condition), each file read once; `seen` collects every file read or looked for."""
    if depth > _DEPTH or path in seen:
        return []
    seen.add(path)
    try:  # through a link, as git reads it, but never from a FIFO or a device (a worker's; git skips those)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError):  # ValueError: a NUL in the name an include gives
        return []
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a folder (which fdopen refuses), a FIFO, a device
        os.close(fd)
        return []
    with os.fdopen(fd, "rb") as fh:
        big = os.fstat(fd).st_size > MOST
        data = b"" if big else fh.read(MOST + 1)
    if big or len(data) > MOST:  # git reads it whole: a worker's padding must not hide a driver after it (rv26)
        from orchestrate.errors import Halted
        raise Halted(f"{path} holds more than the {MOST} bytes orchestrate reads of a git config file: the hooks "
                     "and drivers git would run from it cannot be known",
                     hint="see who wrote it (a worker?) and shrink it, then `orchestrate resume`")
    text = data.decode("utf-8", "surrogateescape")
    found = []
    for entry in entries(text):
        found.append(entry)
        if entry.section in ("include", "includeif") and entry.key == "path" and entry.value:
            found += read(resolved(entry.value, path), seen, depth + 1)
    return found


def resolved(value: str, relative_to: Path) -> Path:
    """A path a config file names: `~/` is $HOME, a relative one is beside that file."""
    named = Path(os.path.expanduser(value))
    return named if named.is_absolute() else relative_to.parent / named
