"""Load YAML with a line number for every mapping key and list item, refusing duplicate keys.

PyYAML silently keeps the last of two equal keys; this loader records the duplicate as a problem
instead. Mappings come back as `Mapping` (a dict with `.line` and `.key_line`), lists as `Sequence`
(a list with `.line` and `.item_line`), so validation can point at the exact line of any field.
"""
from __future__ import annotations

import re
import types
from dataclasses import dataclass

import yaml

_Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml is ~4x faster; fall back when absent
_CONFLICT = re.compile(r"^(<{7}|={7}|>{7}|\|{7})(\s|$)")
# An anchor `&name` wherever libyaml reads one: after a space, a line's start, a flow indicator, or a flow `:`
# (`{"k":&a [..]}`). A document without one has no alias (an alias names an anchor), so nothing to count; a `&&`
# in a command counts, which only costs the walk.
_ANCHOR = re.compile(r"(?:^|[\s\[{,:])&[^\s\[\]{},]", re.M)


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    field: str
    code: str
    message: str

    def __str__(self) -> str:  # one line, whatever a value it quotes holds (an id "a\nb")
        where = f"{self.file}:{self.line}" if self.line else self.file
        text = f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        return text.replace("\r", "\\r").replace("\n", "\\n")

    def as_dict(self) -> dict:
        return {"file": self.file, "line": self.line, "field": self.field, "code": self.code, "message": self.message}


class Mapping(dict):
    line: int = 0
    _lines: "types.MappingProxyType | dict" = types.MappingProxyType({})  # none known (read as JSON)

    def key_line(self, key: str) -> int:
        return self._lines.get(key, self.line)


class Sequence(list):
    line: int = 0
    _lines: tuple | list = ()  # none known (read as JSON)

    def item_line(self, index: int) -> int:
        return self._lines[index] if index < len(self._lines) else self.line


_MAP, _SEQ, _STR = ("tag:yaml.org,2002:" + kind for kind in ("map", "seq", "str"))


class _Loader(_Base):
    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates: list[tuple[int, str, int]] = []
        self.nuls: list[int] = []  # lines of a value holding "\0", which no argv, environment or commit can carry
        self.aliased = _ANCHOR.search(stream) is not None  # else no node is reached twice: nothing to count

    def get_single_data(self):  # noqa: D401 - PyYAML hook: the document's size is known before it is built
        node = self.get_single_node()
        if node is None:
            return None
        if self.aliased and _expanded(node, {}, set()) > MOST_VALUES:
            raise yaml.constructor.ConstructorError(
                None, None, f"its aliases stand for more than {MOST_VALUES:,} values; write the repeated parts "
                            "out, or alias them less deeply", node.start_mark)
        return self.construct_document(node)

    def _value(self, node):
        """`construct_object(node, deep=True)` for the three kinds a DAG is made of, without its dispatch:
        a plain string is the node's text; a mapping or a list goes to our constructors below with the
        same bookkeeping (an alias returns the object already built, a node inside itself is refused).
        Every other tag (numbers, booleans, null, explicit tags) takes PyYAML's own path."""
        tag = node.tag
        if tag == _STR and isinstance(node, yaml.ScalarNode):
            if "\0" in node.value:
                self.nuls.append(node.start_mark.line + 1)
            return node.value
        if tag != _MAP and tag != _SEQ:
            return self.construct_object(node, deep=True)
        if node in self.constructed_objects:
            return self.constructed_objects[node]
        if node in self.recursive_objects:
            raise yaml.constructor.ConstructorError(None, None, "found unconstructable recursive node",
                                                    node.start_mark)
        self.recursive_objects[node] = None
        data = self.construct_mapping(node) if tag == _MAP else self.construct_sequence(node)
        self.constructed_objects[node] = data
        del self.recursive_objects[node]
        return data

    def construct_mapping(self, node, deep=False):  # noqa: D401 - PyYAML hook
        # A key written here overrides one a merge (`<<: *a`) brings in, as YAML says: only two written here are a
        # duplicate. The merged pairs come first, so the one written here is kept.
        written = {id(key_node) for key_node, _ in node.value}
        self.flatten_mapping(node)
        result = Mapping()
        result.line = node.start_mark.line + 1
        lines: dict = {}
        own: set = set()
        for key_node, value_node in node.value:
            key = self._value(key_node)
            try:
                hash(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    None, None, "a mapping key must be a plain value", key_node.start_mark) from None
            line = key_node.start_mark.line + 1
            if key in own and id(key_node) in written:
                self.duplicates.append((line, str(key), lines[key]))
            if id(key_node) in written:
                own.add(key)
            lines[key] = line
            result[key] = self._value(value_node)
        result._lines = lines
        return result

    def construct_sequence(self, node, deep=False):
        result = Sequence([self._value(child) for child in node.value])
        result.line = node.start_mark.line + 1
        result._lines = [child.start_mark.line + 1 for child in node.value]
        return result


_Loader.add_constructor("tag:yaml.org,2002:map", _Loader.construct_mapping)
_Loader.add_constructor("tag:yaml.org,2002:seq", _Loader.construct_sequence)


def conflict_markers(text: str, file: str) -> list[Problem]:
    return [Problem(file, n, "", "conflict-marker",
                    f"git conflict marker `{ln[:7]}`: finish resolving the merge of this file")
            for n, ln in enumerate(text.splitlines(), 1) if _CONFLICT.match(ln)]


def load(text: str, file: str, *, fast: bool = True) -> tuple[object, list[Problem]]:
    """Parse `text`; return (data, problems). Data is None when the text cannot be used at all.

    A document that is JSON (a subset of YAML) is read with `json`, some hundred times faster, but
    without line numbers; such data has `fast = True`, and a caller that finds problems reads the
    file again with `fast=False` to point at lines.
    """
    markers = conflict_markers(text, file)
    if markers:
        return None, markers
    if fast and text.lstrip().startswith("{") and "\\u0000" not in text:  # the YAML reader finds that line
        quick = _load_json(text)
        if quick is not None:
            half = _half_character(text, quick, file)
            return (None, [half]) if half else (quick, [])
    loader = _Loader(text)
    try:
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        return None, [_syntax(exc, text, file)]
    except yaml.reader.ReaderError as exc:  # a character YAML refuses anywhere: no mark, but the character
        return None, [_refused_character(exc, text, file)]
    except yaml.YAMLError as exc:
        return None, [Problem(file, 0, "", "yaml", f"malformed YAML: {' '.join(str(exc).split())}")]
    except RecursionError:  # libyaml composes any depth; building it here recurses once a level
        return None, [Problem(file, 0, "", "yaml", "nested hundreds of levels deep, more than can be read: a DAG's "
                                                   "values are a few levels deep (look for a run of `[` or `{`)")]
    finally:
        loader.dispose()
    problems = [Problem(file, line, key, "duplicate-key",
                        f"duplicate key `{key}` (first at line {first}); YAML would silently keep the last one")
                for line, key, first in loader.duplicates]
    problems += [Problem(file, line, "", "nul", "a value holds the character U+0000 (`\\0`), which no command, "
                                                "environment or git commit can carry: remove it")
                 for line in dict.fromkeys(loader.nuls)]
    return data, problems


# What a PyYAML complaint most often means, and what to change: its words, a clue (a pattern looked for in the
# text from where the parser stopped, or in its whole line), and the fix. The first that fits is given.
_QUOTED_THEN_MORE = r"""(["'])[^"']*\1[^\s,\]}#:]"""  # `"say "hi""`, `'it's`: a quote ends the value early
_TABS = "YAML indents with spaces only: replace the tabs on this line"
_QUOTE_INSIDE = "a quote inside a quoted value ends it: write it twice inside '...', or as \\\" inside \"...\""
_FIXES = (
    ("cannot start any token", "at", r"^\t", _TABS),
    ("cannot start any token", "at", r"^[@`%]", "a value starting with `@`, a backquote or `%` must be quoted"),
    ("tab character", "", "", _TABS),
    ("end of stream", "said", "quoted", "a quote opened there is never closed: close it on the same value"),
    ("mapping values are not allowed", "", "", "a value holding `: ` must be quoted, or this line indented as the "
                                               "keys above it"),
    ("expected <block end>", "line", _QUOTED_THEN_MORE, _QUOTE_INSIDE),
    ("expected <block end>", "", "", "this line's indentation matches no level above: align it with its siblings"),
    ("could not find expected ':'", "", "", "a key without `: `, or a quote left open above"),
    ("expected ',' or ']'", "", "", "close the `[` list with `]`, with a comma between its items"),
    ("expected ',' or '}'", "", "", "close the `{` mapping with `}`, with a comma between its entries"),
    ("found undefined alias", "", "", "an alias `*name` needs an anchor `&name` above it"),
    ("did not find expected node content", "", "", "a value is missing: a `[` or `{` left open, or nothing after a "
                                                   "`- ` or a `key:` that needs a value"),
    ("did not find expected '-' indicator", "", "", "this line's indentation matches no item above: line up its "
                                                    "`- `"),
    ("did not find expected key", "line", _QUOTED_THEN_MORE, _QUOTE_INSIDE),
    ("did not find expected key", "", "", "this line's indentation matches no key above: line it up, or quote a "
                                          "value holding `: `"),
)


def _syntax(exc: yaml.MarkedYAMLError, text: str, file: str) -> Problem:
    """One problem for a YAML syntax error: the line (where the unclosed thing opened, when the file ended
    first), PyYAML's words, and what to change."""
    mark = exc.problem_mark or exc.context_mark
    what = " ".join(str(exc.problem or exc.context or "malformed YAML").split())
    if "end of stream" in what and exc.context_mark is not None:
        mark = exc.context_mark  # past the last line: where the quote or bracket opened says more
        what += f" ({exc.context})" if exc.context else ""
    elif exc.context and exc.context_mark and exc.problem_mark and exc.context_mark.line != exc.problem_mark.line:
        what += f" ({exc.context} at line {exc.context_mark.line + 1})"
    lines = text.splitlines()
    line = min(mark.line + 1, max(len(lines), 1)) if mark else 0
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    looked = {"at": source[mark.column:] if mark and mark.line + 1 == line else "", "line": source,
              "said": f"{what} {exc.context or ''}", "": ""}
    fix = next((f for words, where, clue, f in _FIXES
                if words in looked["said"] and re.search(clue, looked[where])), None)
    return Problem(file, line, "", "yaml", f"malformed YAML: {what}" + (f"; {fix}" if fix else ""))


def _refused_character(exc: yaml.reader.ReaderError, text: str, file: str) -> Problem:
    """A character YAML does not allow (a pasted escape sequence, a NUL): the line it is first on, and how to
    write it instead. (The reader's position counts bytes under libyaml and characters without it.)"""
    code = exc.character if isinstance(exc.character, int) else ord(str(exc.character or "\0")[0])
    at = text.find(chr(code))
    line = text.count("\n", 0, at) + 1 if at >= 0 else 0
    escape = f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
    return Problem(file, line, "", "yaml", f"malformed YAML: the character U+{code:04X} is not allowed in YAML: "
                                          f"remove it, or write it as `{escape}` inside double quotes")


# A document's values with every alias written out: a DAG of 100,000 nodes holds about 1,000,000. A few lines of
# aliases of aliases can stand for a thousand million, which validation would then walk (rv45: 55 s for 1 KB).
MOST_VALUES = 5_000_000


def _expanded(node, known: dict[int, int], inside: set[int]) -> int:
    """How many values `node` stands for with its aliases written out (each distinct node counted once)."""
    key = id(node)
    if key in known:
        return known[key]
    if key in inside:
        return 1  # a node inside itself: the constructor refuses it by name
    inside.add(key)
    if isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded(k, known, inside) + _expanded(v, known, inside) for k, v in node.value)
    elif isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded(child, known, inside) for child in node.value)
    else:
        size = 1
    inside.discard(key)
    known[key] = min(size, MOST_VALUES + 1)  # no need to count further
    return known[key]


class _Duplicate(Exception):
    pass


def _pairs(pairs: list) -> "Mapping":
    """Each JSON object as a Mapping, its lists as Sequences. The decoder builds objects inside out, so
    every value here is final: no second walk over the whole document is needed."""
    result = Mapping(pairs)
    if len(result) != len(pairs):
        raise _Duplicate  # the YAML reader names the key and its lines
    for key, value in pairs:
        if value.__class__ is list:
            result[key] = _sequence(value)
    return result


def _sequence(items: list) -> "Sequence":
    seq = Sequence(items)
    for i, item in enumerate(seq):
        if item.__class__ is list:  # a list directly inside a list; objects were converted by _pairs
            seq[i] = _sequence(item)
    return seq


_SURROGATE = re.compile(r"\\u[dD]([89abAB]|[c-fC-F])[0-9a-fA-F]{2}")


def _half_character(text: str, data: object, file: str) -> Problem | None:
    """JSON's `\\ud800` without its other half: a string no file, argv or commit can hold as UTF-8 (the YAML
    reader refuses it; json takes it, and the run died writing it: UnicodeEncodeError, exit 70)."""
    if not _SURROGATE.search(text):
        return None
    import json
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
        return None
    except UnicodeEncodeError:
        pass
    found = list(_SURROGATE.finditer(text))
    paired = {i for i, (a, b) in enumerate(zip(found, found[1:]))
              if a.group(1) in "89abAB" and b.group(1) not in "89abAB" and a.end() == b.start()}
    lone = next((m for i, m in enumerate(found) if i not in paired and i - 1 not in paired), found[0])
    return Problem(file, text.count("\n", 0, lone.start()) + 1, "", "yaml",
                   f"`{lone.group(0)}` is half of a character (a lone surrogate), which UTF-8 cannot hold: write "
                   "the character itself, or both of its halves")


def _load_json(text: str) -> "Mapping | None":
    """The JSON reading of `text`, or None (not JSON, or a duplicate key: the YAML reader reports it)."""
    import json
    try:
        data = json.loads(text, object_pairs_hook=_pairs)
    except (ValueError, _Duplicate, RecursionError):  # the YAML reader names each
        return None
    if data.__class__ is list:
        data = _sequence(data)
    if isinstance(data, Mapping):
        data.fast = True
    return data
