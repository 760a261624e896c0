"""The files git reads or runs for you besides the git dir's own config, hooks and info: your global config,
attributes and excludes in $HOME and what that config names, what the repository's own config names (an
include, core.hooksPath, core.excludesFile, core.attributesFile), the programs in your checkout any of that
config runs (core.fsmonitor, a filter, a textconv, an alias), and what your links lead to.

Each is watched where it is (workers/fingerprint.py): outside your checkout as a file, compared and put
back; inside it (an ignored `local.gitconfig` your `.git/config` includes, husky's `.husky/_` hooks, a hook
linked to `scripts/`) hashed with the look at the checkout, a warning when it changes, never put back, since
it may be your own edit. `git status` sees none of these when they are ignored or already edited.
"""
from __future__ import annotations

import hashlib
import os
import re
import shlex
from pathlib import Path

from orchestrate.workers import watched

LED = "led to "  # a look's key for a file in your checkout that git reads or runs for you


def home_files(top: Path) -> list[Path]:
    """The user's global git config, attributes and excludes, where git looks for them, and what that config
    names: files it includes (`~/.gitconfig.local`), its excludes and attributes files, its hooks (a relative
    one where git runs: in the checkout `top`)."""
    from orchestrate import inert
    home = Path(os.path.expanduser("~"))
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "git"
    named = os.environ.get("GIT_CONFIG_GLOBAL")
    configs = [Path(named) if named else home / ".gitconfig", xdg / "config"]
    return list(dict.fromkeys([*configs, xdg / "attributes", xdg / "ignore", *inert.referenced(configs, top)]))


def split(common: Path, root: Path, home: list[Path]) -> tuple[list[Path], tuple[str, ...]]:
    """What the repository's config names: (the files outside the checkout, the git dir's included, to watch
    as files; the real paths of those in the checkout, to hash with the look: with them, the programs any of
    your git config runs from the checkout, `programs`)."""
    from orchestrate import inert
    top, git_dir = os.path.realpath(root), os.path.realpath(common)
    files, inside = [], []
    configs = [common / "config", common / "config.worktree"]
    ran = programs(configs + home, root)  # `home`: home_files(root), as the caller read it
    for path in inert.referenced(configs, root) + ran:
        real = os.path.realpath(path)
        in_checkout = Path(real).is_relative_to(top) and not Path(real).is_relative_to(git_dir)
        if in_checkout:
            inside.append(real)
        elif path not in ran:  # a program elsewhere (your /usr/bin/vim) is not read at every check
            files.append(path)
    return files, tuple(dict.fromkeys(inside))


def hashed(records, named: tuple[str, ...]) -> dict[str, str]:
    """The look's entries for the files in your checkout git reads or runs for you: those `named` by your
    repository's config, and those your links lead to (records ending `c`, watched.read)."""
    led = {os.fsdecode(r.split(b"\0")[1]) for r in records if r and r[:1] == b"l" and r.endswith(b"\0c")}
    return {LED + real: hashlib.sha256(watched.read_file(real) or b"-").hexdigest()
            for real in sorted(led | set(named))}


# Keys whose value is a command git runs (its first word a program), by section; "*": any key of the section
_PROGRAMS = {"core": {"fsmonitor", "sshcommand", "editor", "pager", "askpass"}, "sequence": {"editor"},
             "gpg": {"program"}, "credential": {"helper"}, "filter": {"clean", "smudge", "process"},
             "diff": {"textconv", "command", "external"}, "merge": {"driver"}, "pager": {"*"}, "alias": {"*"}}


def programs(configs: list[Path], top: Path) -> list[Path]:
    """The programs, and the files their command lines name, by path in the `configs` (and what they include)
    that git runs: `core.fsmonitor = tools/fsmon.sh` (or `sh tools/fsmon.sh`) in your checkout runs at your next
    `git status`. Every word with a `/` counts; a bare name (found on PATH) does not."""
    from orchestrate import git_config
    seen: set[Path] = set()
    out = []
    for config in configs:
        for e in git_config.read(config, seen):
            keys = _PROGRAMS.get(e.section, ())
            if not e.value or not ("*" in keys or e.key in keys) or (e.section == "alias" and e.value[:1] != "!"):
                continue
            for word in _words(e.value.lstrip("!")):  # `sh tools/x.sh`, `FOO=1 tools/u.sh`, `cd tools && ./v.sh`
                if "/" in word:
                    out.append(git_config.resolved(word.partition("=")[2] if _ASSIGN.match(word) else word,
                                                   top / e.key))  # relative: where git runs, the checkout's top
    return out


_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _words(command: str) -> list[str]:
    """The words of a shell command as sh splits them (quotes joined), or on blanks where it cannot be split."""
    try:  # `;`, `|`, `&&` and braces apart from the words beside them, as sh reads them
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:  # an unclosed quote: sh would fail on it too
        return command.split()
