"""Files in $HOME that run code for you later, outside any sandbox: your shell's start-up files, ssh's (the keys
that let someone in, the commands it runs), a program the runner starts by name put ahead of it on PATH,
and Python's start-up hooks in your user site-packages
(`usercustomize.py`, `sitecustomize.py`, and any `.pth` file, whose `import` lines run at every interpreter's
start: your next `python`, and the evaluators' in the sandbox, which sees the same `$HOME`). The sandbox leaves
`$HOME` writable (agents keep settings and caches there), so the watch compares these as it compares your git
config, and puts back what a worker or what judged it planted (fingerprint.py).

Listed anew at each look: a `.pth` present now that was not at the last look was created since.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

# A fixed list, each watched whether or not it exists: one made where there was none is a change too.
IN_HOME = (
    ".profile", ".bash_profile", ".bash_login", ".bashrc", ".bash_logout",
    ".zshenv", ".zprofile", ".zshrc", ".zlogin", ".zlogout", ".config/fish/config.fish",
    ".ssh/authorized_keys", ".ssh/authorized_keys2", ".ssh/config", ".ssh/rc", ".ssh/environment",
)
HOOKS = ("usercustomize.py", "sitecustomize.py")  # imported from the user site by every interpreter that has it


def files() -> list[Path]:
    """Every start-up file watched now: the fixed ones, each site folder's two hooks, the `.pth` files there."""
    found = [home() / name for name in IN_HOME] + shadows()
    for folder in site_folders():
        found += [folder / name for name in HOOKS] + pth_files(folder)
    return found


def shadows() -> list[Path]:
    """Where a program the runner starts by name (git, bwrap, bash) would be found first, were one made there: its
    name in each PATH folder in `$HOME` ahead of the folder it is found in now (a `~/.local/bin` made since,
    say). The sandbox keeps existing PATH folders read-only; one made since is not, and a git made there would
    be every later run's, and yours."""
    from orchestrate import proc
    from orchestrate.workers import sandbox
    folders = [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    found = []
    for name in sandbox.BY_NAME:
        where = proc.program(name)  # as found first in this run: one made ahead since is what is looked for
        for folder in folders:
            if "/" in where and Path(where).parent == folder:
                break
            if folder.is_relative_to(home()):
                found.append(folder / name)
    return found


def home() -> Path:
    return Path(os.path.expanduser("~"))


def site_folders() -> list[Path]:
    """The user site-packages of this Python (made or not) and of every other Python 3 under the same user base
    (`PYTHONUSERBASE`, else `~/.local`): an evaluator may run another interpreter than orchestrate's."""
    # as site.py finds them, from $HOME as it is now (site.py's own answer was fixed when this interpreter started)
    lib = Path(os.environ.get("PYTHONUSERBASE") or home() / ".local") / "lib"
    own = lib / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    try:
        others = sorted(p / "site-packages" for p in lib.iterdir()
                        if p.name.startswith("python3") and not p.is_symlink())
    except OSError:  # no such folder yet, or one that cannot be read: git-style, what cannot be read is not read
        others = []
    return list(dict.fromkeys([own, *others]))


def pth_files(folder: Path) -> list[Path]:
    """The `.pth` files in `folder` (never through a link: a folder swapped for one is the watch's folder check's)."""
    if folder.is_symlink():
        return []
    try:
        with os.scandir(folder) as entries:
            return sorted(folder / e.name for e in entries if e.name.endswith(".pth"))
    except OSError:
        return []


def created(before: dict[Path, bytes | None]) -> dict[Path, None]:
    """The `.pth` files there are now in a site folder that `before` (a fingerprint's home records) watched,
    which it does not hold: each made since, to be removed (absent: None)."""
    new: dict[Path, None] = {}
    for folder in site_folders():
        if folder / HOOKS[0] in before:
            new.update({path: None for path in pth_files(folder) if path not in before})
    return new
