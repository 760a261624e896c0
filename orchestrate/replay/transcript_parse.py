"""Reading a transcript, and turning its shell's output back into transcript lines, as cram does.

Every line of the file is one of: a command (`  $ `), a continuation (`  > `), expected output
(any other line starting with two spaces, wherever it stands, even after prose), or prose. The shell
reads all commands on its stdin, each preceded by a marker that echoes the previous command's exit
code; the output between markers is the command's output. The actual transcript is then rebuilt in
cram's order: each command with its continuations, its output, `[N]` for a non-zero exit code, then the
prose that followed it in the file. A transcript passes when that rebuilt list matches the file line
for line (transcript_match.matches), so output written after prose is a mismatch, as in cram.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from orchestrate.replay.transcript_match import escape

INDENT = b"  "
COMMAND = INDENT + b"$ "
CONTINUATION = INDENT + b"> "


@dataclass
class Parsed:
    lines: list[bytes]  # the file, one entry per line, each ending in a newline
    commands: list[int]  # index in `lines` of each command line
    script: bytes  # what the shell reads
    salt: bytes
    # per block (-1 before the first command, else the command's line index): the file lines that
    # follow its output in the rebuilt transcript, and the expected-output lines the file gives it
    after: dict[int, list[int]] = field(default_factory=dict)
    expected: dict[int, list[int]] = field(default_factory=dict)


@dataclass
class Out:
    """One line of the rebuilt transcript."""
    text: bytes  # without the indent and the newline; output lines escaped as prysk escapes them
    owner: int | None = None  # the block whose output this is; None for a line copied from the file
    raw: bytes = b""  # output lines: the bytes as printed (plus " (no-eol)"), before escaping


@dataclass
class Rebuilt:
    lines: list[Out]
    ended_at: int | None  # when the shell ended before its last marker: the block it ended in
    skipped: bool  # the shell exited 80


def split_lines(data: bytes) -> list[bytes]:
    """Split on newlines only (a carriage return stays in its line), and end every line with one."""
    parts = data.split(b"\n")
    lines = [p + b"\n" for p in parts[:-1]]
    return lines + [parts[-1] + b"\n"] if parts[-1] else lines


def parse(data: bytes) -> Parsed:
    lines = split_lines(data)
    salt = b"ORCHESTRATE-REPLAY-" + uuid.uuid4().hex.encode()
    parsed = Parsed(lines, [], b"", salt)
    script: list[bytes] = []
    pos = before = -1  # the current block, and the one before it (a continuation's line goes there)
    parsed.expected[-1] = []
    for i, line in enumerate(lines):
        if line.startswith(COMMAND):
            parsed.after.setdefault(pos, []).append(i)
            before, pos = pos, i
            parsed.commands.append(i)
            parsed.expected[i] = []
            script += [b"echo %s %d $?\n" % (salt, i), line[len(COMMAND):]]
        elif line.startswith(CONTINUATION):
            parsed.after.setdefault(before, []).append(i)
            script.append(line[len(CONTINUATION):])
        elif line.startswith(INDENT):
            parsed.expected[pos].append(i)
        else:
            parsed.after.setdefault(pos, []).append(i)
    script.append(b"echo %s %d $?\n" % (salt, len(lines)))
    parsed.script = b"".join(script)
    return parsed


def rebuild(parsed: Parsed, output: bytes, rc: int, tmpdir: bytes) -> Rebuilt:
    """The transcript as the shell's `output` says it should read (cram's algorithm, prysk's escapes)."""
    if rc == 80:
        return Rebuilt([], None, True)
    out: list[Out] = []
    pos = -1
    last_marker = False

    def copy(block: int) -> None:
        out.extend(Out(parsed.lines[i][:-1]) for i in parsed.after.pop(block, []))

    # the final byte is the last marker's newline; without it a last line cut short reads as (no-eol)
    for line in output[:-1].splitlines(True):
        text, marker = line, None
        if parsed.salt in line:
            text, marker = line.split(parsed.salt, 1)
        if text:
            raw = text[:-1] if text.endswith(b"\n") else text + b" (no-eol)"
            shown = escape(raw)
            if tmpdir:
                shown = shown.replace(tmpdir, b"$TMPDIR")
            out.append(Out(shown, pos, raw))
        if marker:
            fields = marker.split()
            if len(fields) != 2 or not all(f.isdigit() for f in fields):
                continue  # the salt printed by something else: not ours
            code, block = int(fields[1]), int(fields[0])
            if code:
                out.append(Out(b"[%d]" % code, pos, b"[%d]" % code))
            copy(pos)
            pos = block
            last_marker = block == len(parsed.lines)
    copy(pos)
    return Rebuilt(out, None if last_marker else pos, False)
