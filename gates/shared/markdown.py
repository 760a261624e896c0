"""Markdown, as much as link checking needs: links outside code, and the anchors GitHub gives headings.

Not a full CommonMark parser. Code is fenced blocks (any indentation, inside blockquotes too), code spans
(a backtick run closed by a run of the same length on the same line), HTML comments and YAML front
matter; links there are not links. Indented (four-space) code blocks are not recognised: telling them
from list continuations needs a real parser, and mistaking a list for code would hide a broken link.
"""
from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass
from typing import Iterator
from urllib.parse import unquote

SUFFIXES = (".md", ".markdown")
_HIDDEN = "\0"  # stands in for masked code/comment characters, so offsets still line up with the source

_QUOTE = re.compile(r"^[ \t]*(?:>[ \t]?)*")
_FENCE_OPEN = re.compile(r"^[ \t]*(?:(`{3,})[^`]*|(~{3,}).*)$")
_FENCE_CLOSE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*$")
_INLINE = re.compile(r"""
    (?<!\\)(?P<bang>!?)\[(?P<text>(?:[^\[\]\n\\]|\\.|\[[^\[\]\n]*\])*)\]
    \([ \t]*
    (?:<(?P<angled>[^<>\n]*)>|(?P<bare>(?:[^\s()\\\0]|\\.|\([^\s()\0]*\))+))?
    (?:[ \t]+(?:"[^"\n]*"|'[^'\n]*'|\([^()\n]*\)))?[ \t]*\)""", re.X)
_DEFINITION = re.compile(r"^ {0,3}\[(?P<label>(?:[^\[\]\\\n]|\\.)+)\]:[ \t]*(?:<(?P<angled>[^<>\n]*)>|(?P<bare>\S+))")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)")
_HTML_ID = re.compile(r"<[A-Za-z][^>]*?\s(?:id|name)\s*=\s*[\"']([^\"']+)[\"']")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_TAG = re.compile(r"<[^>\n]*>")
_IMAGE_OR_LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)")
_CODE_SPLIT = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")
_EDGE_UNDERSCORES = re.compile(r"(?<![^\W_])_+|_+(?![^\W_])")


@dataclass(frozen=True)
class Link:
    """One link as written: `[text](target)`, `![alt](target)`, or a definition `[label]: target`."""

    line: int
    text: str
    target: str
    image: bool = False
    definition: bool = False
    angled: bool = False  # written `<target>`, which allows spaces

    def source(self) -> str:
        target = f"<{self.target}>" if self.angled else self.target
        if self.definition:
            return f"[{self.text}]: {target}"
        return f"{'!' if self.image else ''}[{self.text}]({target})"


def is_markdown(path: str) -> bool:
    return path.lower().endswith(SUFFIXES)


def is_external(target: str) -> bool:
    """A target with a scheme (`https:`, `mailto:`, ...) or protocol-relative `//host`: not ours to check."""
    return bool(_SCHEME.match(target)) or target.startswith("//")


def split_target(target: str) -> tuple[str, str]:
    """(path, anchor) of a relative target, percent-decoded, a `?query` dropped."""
    path, _, anchor = target.partition("#")
    path = path.partition("?")[0]
    return unquote(path), unquote(anchor)


# ---- reading lines outside code ---------------------------------------------------------------

def _lines(text: str) -> Iterator[tuple[int, str, str | None]]:
    """(number, source line, masked line) for every line; masked is None inside fenced code or front matter.

    The masked line has code spans and HTML comments replaced by NUL, character for character.
    """
    lines = text.splitlines()
    skip = 0
    if lines and lines[0].rstrip() == "---":
        skip = next((i + 1 for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), 0)
    fence: tuple[str, int] | None = None
    in_comment = False
    for i, line in enumerate(lines):
        if i < skip:
            yield i + 1, line, None
            continue
        body = line[_QUOTE.match(line).end():]
        if fence is not None:
            close = _FENCE_CLOSE.match(body)
            if close and close.group(1)[0] == fence[0] and len(close.group(1)) >= fence[1]:
                fence = None
            yield i + 1, line, None
            continue
        opened = None if in_comment else _FENCE_OPEN.match(body)
        if opened:
            run = opened.group(1) or opened.group(2)
            fence = (run[0], len(run))
            yield i + 1, line, None
            continue
        masked, in_comment = _mask(line, in_comment)
        yield i + 1, line, masked


def _mask(line: str, in_comment: bool) -> tuple[str, bool]:
    out = list(line)
    i, n = 0, len(line)
    while i < n:
        if in_comment:
            end = line.find("-->", i)
            stop = n if end < 0 else end + 3
            out[i:stop] = _HIDDEN * (stop - i)
            i, in_comment = stop, end < 0
        elif line.startswith("<!--", i):
            in_comment = True
        elif line[i] == "\\":
            i += 2
        elif line[i] == "`":
            run = len(line[i:]) - len(line[i:].lstrip("`"))
            close = re.compile(rf"(?<!`)`{{{run}}}(?!`)").search(line, i + run)
            if close:
                out[i:close.end()] = _HIDDEN * (close.end() - i)
                i = close.end()
            else:
                i += run
        else:
            i += 1
    return "".join(out), in_comment


# ---- links ------------------------------------------------------------------------------------

def links(text: str) -> list[Link]:
    """Every inline link, image and link definition outside code, in order."""
    found: list[Link] = []
    for number, line, masked in _lines(text):
        if masked is None:
            continue
        d = _DEFINITION.match(masked)
        if d and not d.group("label").startswith("^"):  # `[^1]: ...` is a footnote, not a link
            found.append(Link(number, line[d.start("label"):d.end("label")], _target(line, d), definition=True,
                              angled=d.group("angled") is not None))
            continue
        _inline(line, masked, number, 0, len(masked), found)
    return found


def _inline(line: str, masked: str, number: int, start: int, end: int, found: list[Link]) -> None:
    for m in _INLINE.finditer(masked, start, end):
        found.append(Link(number, line[m.start("text"):m.end("text")], _target(line, m), image=bool(m.group("bang")),
                          angled=m.group("angled") is not None))
        _inline(line, masked, number, m.start("text"), m.end("text"), found)  # a badge: [![alt](img)](target)


def _target(line: str, m: re.Match) -> str:
    group = "angled" if m.group("angled") is not None else "bare"
    if m.group(group) is None:
        return ""
    return re.sub(r"\\(.)", r"\1", line[m.start(group):m.end(group)])


# ---- headings and anchors ---------------------------------------------------------------------

def headings(text: str) -> list[str]:
    """The text of every ATX (`## x`) and setext (`x` over `===`/`---`) heading outside code, in order."""
    found: list[str] = []
    paragraph: list[str] = []
    for _, line, masked in _lines(text):
        if masked is None:
            paragraph = []
            continue
        cut = _QUOTE.match(masked).end()
        body, plain = masked[cut:], line[cut:]
        atx = _ATX.match(body)
        if atx:
            found.append(plain[atx.start(2):atx.end(2)].strip() if atx.group(2) is not None else "")
            paragraph = []
        elif paragraph and _SETEXT.match(body):
            found.append(" ".join(paragraph))
            paragraph = []
        elif not body.strip() or _LIST_ITEM.match(body):
            paragraph = []
        else:
            paragraph.append(plain.strip())
    return found


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped except `-` and `_`, each space a `-`.

    Markup goes first, outside code spans only: tags, link and image syntax (their text stays), and
    emphasis underscores at the edges of words.
    """
    parts = []
    for i, piece in enumerate(_CODE_SPLIT.split(heading)):
        if i % 3 == 0:  # split yields [prose, backticks, code, prose, ...]
            piece = _IMAGE_OR_LINK.sub(lambda m: m.group(1), _TAG.sub("", piece))
            parts.append(_EDGE_UNDERSCORES.sub("", piece))
        elif i % 3 == 2:
            parts.append(piece)
    text = html.unescape("".join(parts)).strip().lower()
    kept = "".join(ch for ch in text if ch in "-_ " or ch.isalnum() or unicodedata.category(ch).startswith("M"))
    return kept.replace(" ", "-")


class Slugger:
    """Numbers repeated slugs the way GitHub does: `x`, `x-1`, `x-2`, never reusing a slug already taken."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def slug(self, heading: str) -> str:
        base = result = slug(heading)
        while result in self._seen:
            self._seen[base] += 1
            result = f"{base}-{self._seen[base]}"
        self._seen[result] = 0
        return result


def anchors(text: str) -> set[str]:
    """Every anchor `text` defines: heading slugs (duplicates numbered) and HTML `id`/`name` attributes, lower case."""
    slugger = Slugger()
    found = {slugger.slug(h) for h in headings(text)}
    for _, _, masked in _lines(text):
        if masked is not None:
            found.update(m.group(1).lower() for m in _HTML_ID.finditer(masked))
    return found
