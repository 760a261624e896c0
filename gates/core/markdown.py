"""Markdown, as much as link checking needs: inline links outside code, and GitHub-style heading anchors."""
from __future__ import annotations

import re

_LINK = re.compile(r"(?<!\!)\[([^\]\n]*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_CODE_SPAN = re.compile(r"`+[^`\n]*`+")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def _prose_lines(text: str):
    """(line number, line) outside fenced code blocks."""
    fence = None
    for n, line in enumerate(text.splitlines(), 1):
        m = _FENCE.match(line)
        if m:
            fence = None if fence == m.group(1) else (fence or m.group(1))
            continue
        if fence is None:
            yield n, line


def links(text: str) -> list[tuple[int, str, str]]:
    """(line, link text, target) for each inline link outside code."""
    found = []
    for n, line in _prose_lines(text):
        for m in _LINK.finditer(_CODE_SPAN.sub(lambda s: " " * len(s.group()), line)):
            found.append((n, m.group(1), m.group(2)))
    return found


def is_external(target: str) -> bool:
    return bool(re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", target)) or target.startswith("//")


def slug(heading: str) -> str:
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor the headings of `text` define, duplicates numbered like GitHub (`x`, `x-1`, `x-2`)."""
    seen: dict[str, int] = {}
    result = set()
    for _, line in _prose_lines(text):
        m = _HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        count = seen.get(base, 0)
        result.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return result
