"""Transcripts that re-check themselves, with cram's semantics (prysk's where the two differ).

`replay` takes files and directories (every `*.t` below, hidden ones left out, in sorted order),
refuses up front what is not a transcript (or has a line cram and prysk cannot read), and runs each
one in `$PRYSK_TEMP/<file name>` with its commands read by one `/bin/sh` (transcript_parse). It
prints a diff per failing file and a summary line; `--update` rewrites a failing file to the actual
output, in a form cram and prysk both pass.
"""
from __future__ import annotations

import difflib
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from orchestrate import proc
from orchestrate.errors import ExitCode, UsageError
from orchestrate.replay.transcript_match import matches, unreadable, writable
from orchestrate.replay.transcript_parse import (
    COMMAND,
    CONTINUATION,
    INDENT,
    Out,
    Parsed,
    parse,
    rebuild,
    split_lines,
)

SHELL = "/bin/sh"
SKIP = 80  # a transcript whose shell exits 80 is skipped, as in cram


@dataclass
class Outcome:
    verdict: str  # passed, failed or skipped
    why: str = ""  # for a skip: empty, or exit 80
    new: list[bytes] = field(default_factory=list)  # the file as the output says it should read
    notes: list[str] = field(default_factory=list)  # lines that explain a failure
    updatable: bool = True  # every command ran, so `new` keeps them all


def collect(paths: Sequence[Path]) -> list[Path]:
    """The transcripts named, directories expanded as cram expands them, each once."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            below = sorted(p for p in path.rglob("*.t")
                           if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts))
            if not below:
                raise UsageError(f"{path}: no transcript (*.t) in this directory", hint="give a .t file or a folder holding some")
            found += below
        elif path.exists():
            found.append(path)
        else:
            raise UsageError(f"{path}: no such transcript", hint="give a .t file or a folder of them")
    unique: dict[Path, Path] = {}
    for path in found:
        unique.setdefault(path.resolve(), path)
    return list(unique.values())


def read(path: Path) -> bytes:
    """The file's bytes, when it is a transcript at all (an empty file is one, and is skipped)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it: {exc.strerror or exc}", hint="give a readable .t file") from exc
    if b"\0" in data:
        raise UsageError(f"{path}:1: a binary file, not a transcript", hint="give a cram-style .t file")
    if data and not any(line.startswith(COMMAND) for line in data.split(b"\n")):
        raise UsageError(f"{path}:1: not a transcript: no command line in it",
                         hint="a command is indented two spaces: `  $ echo hi`")
    for n, line in enumerate(split_lines(data), 1):
        expected = line.startswith(INDENT) and not line.startswith((COMMAND, CONTINUATION))
        if expected and (why := unreadable(line[:-1])):
            raise UsageError(f"{path}:{n}: {why}; cram and prysk stop on it with a traceback",
                             hint="write `\\\\` for a backslash, `\\xHH` for a byte in an (esc) line")
    return data


def environment(root: Path, path: Path) -> dict[str, str]:
    """prysk's: the caller's environment with a few variables reset, and the test's own locations.
    `PRYSK_TEMP` names the scratch folder; `CRAMTMP` is cram's name for it, which prysk does not set.

    The folder of the running interpreter goes at the end of PATH, so this installation's
    `orchestrate` is found where the caller's PATH has none, and shadows nothing that it has."""
    tmp = str(root / "tmp")
    env = {"TMPDIR": tmp, "TEMP": tmp, "TMP": tmp, "PRYSK_TEMP": str(root),
           "TESTDIR": str(path.resolve().parent), "TESTFILE": path.resolve().name, "TESTSHELL": SHELL,
           "LANG": "C", "LC_ALL": "C", "LANGUAGE": "C", "TZ": "GMT", "CDPATH": "", "COLUMNS": "80", "GREP_OPTIONS": ""}
    here = str(Path(sys.executable).parent)
    search = os.environ.get("PATH", "")
    env["PATH"] = search if here in search.split(os.pathsep) else os.pathsep.join(filter(None, [search, here]))
    return env


def run(path: Path, data: bytes, work: Path, root: Path, *, timeout: float = 600) -> Outcome:
    """Run one transcript in `work` (a fresh folder) and judge it."""
    if not data:
        return Outcome("skipped", "empty")
    parsed = parse(data)
    done = proc.run_merged([SHELL, "-"], stdin=parsed.script, cwd=work, env=environment(root, path), timeout=timeout)
    if done.timed_out:
        return Outcome("failed", notes=[f"{path}: timed out after {timeout:g}s"], updatable=False)
    rebuilt = rebuild(parsed, done.output, done.rc, str(root / "tmp").encode())
    if rebuilt.skipped:
        return Outcome("skipped", f"exit {SKIP}")
    shown = [INDENT + o.text if o.owner is not None else o.text for o in rebuilt.lines]
    old = [line[:-1] for line in parsed.lines]
    if len(old) == len(shown) and all(matches(e, a) for e, a in zip(old, shown)):
        return Outcome("passed")
    outcome = Outcome("failed", new=_rewrite(parsed, rebuilt.lines, str(root / "tmp").encode()))
    outcome.notes = _stripped_continuations(path, old)
    if rebuilt.ended_at is not None:
        later = [c for c in parsed.commands if c > rebuilt.ended_at]
        where = f"{path}:{rebuilt.ended_at + 1}: the shell ended during this command" if rebuilt.ended_at >= 0 \
            else f"{path}: the shell ended before the first command"
        outcome.notes.append(where + f" (exit {done.rc})" + (f"; {len(later)} later command(s) did not run" if later else ""))
        outcome.updatable = not later
    return outcome


def _rewrite(parsed: Parsed, lines: list[Out], tmpdir: bytes) -> list[bytes]:
    """The actual transcript, keeping each expected line (a pattern, an escape) that still matches the
    output line in its place, and writing the rest as cram and prysk both read them back."""
    new, seen = [], {}
    for o in lines:
        if o.owner is None:
            new.append(o.text)
            continue
        k = seen[o.owner] = seen.get(o.owner, -1) + 1
        expected = parsed.expected.get(o.owner, [])
        kept = parsed.lines[expected[k]][:-1] if k < len(expected) else None
        new.append(kept if kept is not None and matches(kept, INDENT + o.text) else INDENT + writable(o.raw, o.text, tmpdir))
    return new


def _stripped_continuations(path: Path, lines: list[bytes]) -> list[str]:
    return [f"{path}:{i + 1}: `{line.decode()}` has no space after it, so it is expected output, not a "
            f"{'continuation' if line.endswith(b'>') else 'command'} (did an editor strip a trailing space?)"
            for i, line in enumerate(lines) if line in (INDENT + b">", INDENT + b"$")]


def _diff(path: Path, old: list[bytes], new: list[bytes]) -> str:
    def text(lines: list[bytes]) -> list[str]:
        return [line.decode("utf-8", "backslashreplace") + "\n" for line in lines]
    return "".join(difflib.unified_diff(text(old), text(new), fromfile=str(path), tofile=f"{path} (actual)"))


def replay(paths: Path | Sequence[Path], *, update: bool = False, out: IO[str] | None = None,
           timeout: float = 600) -> int:
    """Replay transcripts: 0 when none failed (skipped ones do not fail), 1 otherwise."""
    out = out or sys.stdout
    files = collect([paths] if isinstance(paths, Path) else list(paths))
    contents = [read(f) for f in files]  # every file refused before any runs
    counts = {"passed": 0, "failed": 0, "skipped": 0, "updated": 0}
    root = Path(tempfile.mkdtemp(prefix="orchestrate-replay-"))
    try:
        (root / "tmp").mkdir()
        names: set[str] = set()
        for n, (path, data) in enumerate(zip(files, contents)):
            name = path.name if path.name not in names else f"{path.name}-{n}"
            names.add(name)
            (root / name).mkdir()
            outcome = run(path, data, root / name, root, timeout=timeout)
            counts[outcome.verdict] += 1
            _report(path, data, outcome, update, counts, out)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    summary = f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"
    print(summary + (f", {counts['updated']} updated" if counts["updated"] else ""), file=out)
    return ExitCode.FAILED if counts["failed"] else ExitCode.OK


def _report(path: Path, data: bytes, outcome: Outcome, update: bool, counts: dict[str, int], out: IO[str]) -> None:
    if outcome.verdict == "passed":
        print(f"{path}: passed", file=out)
        return
    if outcome.verdict == "skipped":
        print(f"{path}: skipped ({outcome.why})", file=out)
        return
    old = [line[:-1] for line in parse(data).lines]
    if outcome.new:
        out.write(_diff(path, old, outcome.new))
    for note in outcome.notes:
        print(note, file=out)
    if update and outcome.updatable and outcome.new:
        path.write_bytes(b"".join(line + b"\n" for line in outcome.new))
        counts["failed"] -= 1
        counts["passed"] += 1
        counts["updated"] += 1
        print(f"{path}: updated to the actual output", file=out)
    elif update:
        print(f"{path}: failed, not updated: not every command ran", file=out)
    else:
        print(f"{path}: failed (run with --update to accept the actual output)", file=out)
