"""What git said it could not read while it looked at a worktree (`git status`): what it passed over.

git goes on with exit 0 past a folder it cannot open (unreadable, or nested past PATH_MAX) and past a tracked
file it cannot stat (it prints the path and the error): what they hold is missing from `git status` and from
`git add -A` alike, while an evaluator, walking down one folder at a time, can still read it. Any line git
writes to stderr during a look therefore fails the attempt, except the warnings a repository or a user's
config gives on every look, which hide nothing:

- an ignore or attributes file git would not open (a link, unreadable): without its rules git lists more;
- an attributes line git does not understand (`*.png binary  # images`: `#` is no attribute name), a
  negative pattern in an attributes file;
- a config key git calls deprecated.

A tracked file git cannot stat is reported as `<its path>: <the error>`, so a worker that names a path
`warning: unable to access 'x/.gitignore'` could make that line read as the first kind: when a line was let
pass, the index is read for such a path (or one holding a newline, which could make any line) and the look
fails on one. A folder git cannot open is reported as `...'<its path>/': <the error>`: a newline in its name
could make the lines before the last read as let-pass ones, never the last (rv24).
"""
from __future__ import annotations

import re
from pathlib import Path

from orchestrate import git
from orchestrate.errors import GitError

_PASSED = re.compile("|".join((
    # the error last, in words: a pass-over line ends `<folder>/': <error>` and can never read as this one
    r"warning: unable to access '(?:[^'\n]*/)?\.git(?:ignore|attributes)': [A-Za-z ]+",
    r".+ is not a valid attribute name: .+:\d+",
    r".+ not allowed: .+:\d+",
    r"warning: Negative patterns are ignored in git attributes",
    r"Use '\\!' for literal leading exclamation\.",
    r"warning: [\w.-]+ is deprecated; use [\w.-]+ instead",
)))
_FORGED = "warning: unable to access '"


def missed(stderr: str, path: Path, env: dict[str, str] | None = None) -> str:
    """The first line of `stderr` (a `git status` in `path`, its index as `env` names it) that says git passed
    something over, clipped to 200 characters; '' when none does."""
    said = [line for line in stderr.split("\n") if line.strip()]  # lines as git ends them (not at U+2028)
    for line in said:
        if not _PASSED.fullmatch(line):
            return _clipped(line)
    if said:
        names = git.git(path, "ls-files", "-z", env=env).stdout.split("\0")
        if forged := next((n for n in names if "\n" in n or n.startswith(_FORGED)), None):
            return _clipped(f"a tracked path reads as one of git's warnings: {forged!r}")
    return ""


def checked(looked, path: Path, env: dict[str, str] | None = None) -> str:
    """The output of `looked` (a `git status` in `path`, its index as `env` names it); GitError naming what
    git said it passed over, when it did."""
    if said := missed(looked.stderr, path, env):
        raise GitError(list(looked.cmd), looked.rc, "", said)
    return looked.stdout


def _clipped(line: str) -> str:
    return line if len(line) <= 200 else line[:200] + "..."
