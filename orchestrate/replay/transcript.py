"""Transcripts that re-check themselves: a cram-compatible subset.

A `.t` file is prose (unindented lines) and commands: `  $ cmd` (continued by `  > more`), followed
by the expected output, two spaces in; a last line `  [N]` gives a non-zero exit code. An expected
line ending in ` (re)` is a regular expression, ` (glob)` a glob (`*`, `?`), for lines that vary.
All commands run in one shell, in a scratch directory, with a normalised environment, so state
(cd, variables, files) carries from one command to the next.
"""
from __future__ import annotations

import difflib
import fnmatch
import os
import re
import shutil
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from orchestrate import proc

INDENT = "  "


@dataclass
class Step:
    line: int  # where the command starts in the file (1-based)
    command: list[str]
    expected: list[str] = field(default_factory=list)
    rc: int = 0


@dataclass
class Transcript:
    lines: list[str]  # the file, split, for rewriting
    steps: list[Step]
    spans: list[tuple[int, int]]  # per step: first and last+1 file line of its expected block


def parse(text: str) -> Transcript:
    lines = text.splitlines()
    steps: list[Step] = []
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(lines):
        ln = lines[i]
        if not ln.startswith(INDENT + "$ "):
            i += 1
            continue
        step = Step(i + 1, [ln[len(INDENT) + 2:]])
        i += 1
        while i < len(lines) and lines[i].startswith(INDENT + "> "):
            step.command.append(lines[i][len(INDENT) + 2:])
            i += 1
        start = i
        while i < len(lines) and lines[i].startswith(INDENT) and not lines[i].startswith(INDENT + "$ "):
            step.expected.append(lines[i][len(INDENT):])
            i += 1
        if step.expected and re.fullmatch(r"\[\d+\]", step.expected[-1]):
            step.rc = int(step.expected.pop()[1:-1])
        steps.append(step)
        spans.append((start, i))
    return Transcript(lines, steps, spans)


def matches(expected: str, actual: str) -> bool:
    if expected == actual:
        return True
    if expected.endswith(" (re)"):
        try:
            return re.fullmatch(expected[:-5], actual) is not None
        except re.error:
            return False
    if expected.endswith(" (glob)"):
        return fnmatch.fnmatchcase(actual, expected[:-7])
    if expected.endswith(" (esc)"):
        return expected[:-6].encode().decode("unicode_escape") == actual
    return False


def environment(scratch: Path, testdir: Path) -> dict[str, str]:
    """Fixed identity, dates, locale and colours, so every run prints the same thing."""
    stamp = "2026-01-01T00:00:00Z"
    path = os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"])
    env = {k: v for k, v in os.environ.items() if k in ("SYSTEMROOT",)}
    env.update(PATH=path, HOME=str(scratch / "home"), TMPDIR=str(scratch / "tmp"), NO_COLOR="1", TERM="dumb",
               TZ="UTC", LC_ALL="C", LANG="C", CI="true", TESTDIR=str(testdir), CRAMTMP=str(scratch),
               GIT_AUTHOR_NAME="Replay Person", GIT_AUTHOR_EMAIL="replay@example.com",
               GIT_COMMITTER_NAME="Replay Person", GIT_COMMITTER_EMAIL="replay@example.com",
               GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp, GIT_CONFIG_NOSYSTEM="1", PYTHONDONTWRITEBYTECODE="1")
    return env


def run(path: Path, *, timeout: float = 600) -> tuple[list[list[str]], list[int]]:
    """Run every command of the transcript; (output lines per step, exit code per step)."""
    t = parse(path.read_text())
    scratch = Path(tempfile.mkdtemp(prefix="orchestrate-replay-"))
    try:
        (scratch / "home").mkdir()
        (scratch / "tmp").mkdir()
        (scratch / "home" / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n[user]\n"
                                                      "\tname = Replay Person\n\temail = replay@example.com\n")
        salt = f"ORCHESTRATE-REPLAY-{uuid.uuid4().hex}"
        script = []
        for n, step in enumerate(t.steps):
            script.append("\n".join(step.command))
            script.append(f'echo "{salt} {n} $?"')
        work = scratch / "work"
        work.mkdir()
        done = proc.run(["/bin/sh", "-c", "exec 2>&1\n" + "\n".join(script) + "\n"], cwd=work,
                        env=environment(scratch, path.resolve().parent), timeout=timeout)
        outputs: list[list[str]] = [[] for _ in t.steps]
        codes = [-1] * len(t.steps)
        current: list[str] = []
        for line in done.stdout.splitlines():
            if line.startswith(salt + " "):
                _, n, rc = line.split(" ")
                outputs[int(n)], codes[int(n)] = current, int(rc)
                current = []
            elif salt in line:  # output without a final newline runs into the marker
                before, rest = line.split(salt, 1)
                _, n, rc = rest.split(" ")
                outputs[int(n)], codes[int(n)] = current + [before], int(rc)
                current = []
            else:
                current.append(line)
        return outputs, codes
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def compare(path: Path, outputs: list[list[str]], codes: list[int]) -> tuple[str, list[str]]:
    """(the file as it would be with the actual outputs, keeping matching patterns; its lines)."""
    t = parse(path.read_text())
    new = list(t.lines)
    for (start, end), step, out, rc in reversed(list(zip(t.spans, t.steps, outputs, codes))):
        block = []
        for k, actual in enumerate(out):
            expected = step.expected[k] if k < len(step.expected) else None
            block.append(INDENT + (expected if expected is not None and matches(expected, actual) else actual))
        if rc == -1:
            block.append(INDENT + "(this command did not run: an earlier one ended the shell)")
        elif rc:
            block.append(f"{INDENT}[{rc}]")
        new[start:end] = block
    text = "\n".join(new) + ("\n" if path.read_text().endswith("\n") else "")
    return text, new


def replay(path: Path, *, update: bool = False, out=None) -> int:
    """0 when every command printed what the transcript expects; else 1 with a unified diff."""
    out = out or sys.stdout
    if not path.is_file():
        from orchestrate.errors import UsageError
        raise UsageError(f"{path}: no such transcript", hint="give a .t file")
    outputs, codes = run(path)
    actual_text, _ = compare(path, outputs, codes)
    original = path.read_text()
    n = len(parse(original).steps)
    if actual_text == original:
        print(f"{path}: {n} command(s), all match", file=out)
        return 0
    diff = difflib.unified_diff(original.splitlines(True), actual_text.splitlines(True),
                                fromfile=str(path), tofile=f"{path} (actual)")
    out.write("".join(diff))
    if update:
        path.write_text(actual_text)
        print(f"{path}: expectations updated", file=out)
        return 0
    print(f"{path}: mismatch (run with --update to accept the actual output)", file=out)
    return 1
