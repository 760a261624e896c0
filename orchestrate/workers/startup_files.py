"""Files in $HOME that run code for you later, outside any sandbox: your shell's start-up files, ssh's (the keys
that let someone in, the commands it runs), a program the runner starts by name put ahead of it on PATH,
and Python's start-up hooks in your user site-packages (`usercustomize`, `sitecustomize`, and any `.pth`
file, whose `import` lines run at every interpreter's start: your next `python`, and the evaluators' in the
sandbox, which sees the same `$HOME`; every entry of the user site your next `orchestrate` would import from
first, `_imported_next`). The sandbox leaves `$HOME` writable (agents keep settings and caches
there), so the watch compares these as it compares your git config, and puts back what a worker or what
judged it planted (fingerprint.py). A fixed list: what else your own start-up files source is not known here.

Some are folders whose every entry counts (`~/.bashrc.d/`, fish's `conf.d/`, the `.pth` files of each site
folder): listed anew at each look, so an entry present now that was not at the last look was made since.
What there is neither a file nor a link (a FIFO named `x.pth` hangs every Python at start; a `usercustomize/`
package) is `odd`: always a change, and removed. Nothing here is read through a link, and a folder that
cannot be read is taken as empty, as Python and your shell would find it.
"""
from __future__ import annotations

import os
import re
import stat
import sys
from pathlib import Path

# Each watched whether or not it exists: one made where there was none is a change too.
IN_HOME = (
    ".profile", ".bash_profile", ".bash_login", ".bashrc", ".bash_aliases", ".bash_logout",
    ".zshenv", ".zprofile", ".zshrc", ".zlogin", ".zlogout", ".config/fish/config.fish",
    ".ssh/authorized_keys", ".ssh/authorized_keys2", ".ssh/config", ".ssh/rc", ".ssh/environment",
)
SOURCED = (".bashrc.d", ".config/fish/conf.d")  # folders whose every entry a shell runs
HOOKS = ("usercustomize.py", "sitecustomize.py")  # imported from the user site by every interpreter that has it


def look(inside: tuple[str, ...]) -> tuple[dict[Path, bytes | None], tuple[Path, ...]]:
    """({each start-up file watched now: its record (watched.read)}, what is odd now). Watched: the fixed ones,
    the shadows, the hooks of this Python's site folder, and the files and links in the listed folders. Most
    are not there: each folder is listed once, and only what it holds is read (a look a worker's return)."""
    from orchestrate.workers import watched
    own, mine, listed = site_folders()[0], home(), _listed()
    paths = [mine / name for name in IN_HOME] + shadows() + [own / name for name in HOOKS] + \
        [path for path, plain in listed if plain]
    there: dict[Path, set[str] | None] = {}
    for folder in {path.parent for path in paths}:
        try:
            there[folder] = set(os.listdir(folder))
        except FileNotFoundError:
            there[folder] = set()
        except OSError:  # cannot be listed: each is read, as it would have been
            there[folder] = None
    return ({path: watched.read(path, inside) if there[path.parent] is None or path.name in there[path.parent]
             else None for path in paths}, tuple(path for path, plain in listed if not plain))


def existing() -> list[Path]:
    """The watched start-up files there now and the listed folders there now: what the sandbox can keep
    read-only. A listed folder that links to one (your dotfiles' `bashrc.d`) counts: the watch never lists
    through a link (rv40), so only the sandbox keeps a worker from adding to it. What is not there yet stays
    the watch's to find (a bind would make it)."""
    mine = home()
    files = [mine / name for name in IN_HOME if os.path.lexists(mine / name)]
    folders = [mine / name for name in SOURCED if os.path.isdir(mine / name)]
    return files + folders + [path for path, plain in _listed() if plain and path.parent.name == "site-packages"]


def odd() -> list[Path]:
    """What is in a listed folder that is neither a file nor a link."""
    return [path for path, plain in _listed() if not plain]


def created(before: dict[Path, bytes | None]) -> dict[Path, None]:
    """The files and links in the listed folders, and the shadows, there now that `before` (a fingerprint's home
    records) does not hold: each made since, to be removed (absent: None)."""
    made = [path for path, plain in _listed() if plain] + [p for p in shadows() if os.path.lexists(p)]
    return {path: None for path in made if path not in before}


def remove_odd(before: tuple[Path, ...]) -> list[str]:
    """Remove what is odd now that was not in `before`; what was removed, or could not be, as put-back says it."""
    from orchestrate import removal
    from orchestrate.workers import fingerprint, watched
    done = []
    for path in (p for p in odd() if p not in before):
        try:  # by descriptors from its folder, which the folders' put-back has made a folder of yours again
            removal.remove(path)
            done.append(fingerprint.shown(path))
        except OSError as exc:
            done.append(f"{fingerprint.shown(path)}{watched.NOT_PUT_BACK}{exc.strerror})")
    return done


def home() -> Path:
    return Path(os.path.expanduser("~"))


def shadows() -> list[Path]:
    """Where a program the runner starts by name (git, bwrap, bash) would be found first, were one made there: its
    name in each PATH folder in `$HOME` ahead of the folder it is found in now (a `~/.local/bin` made since,
    say). The sandbox keeps existing PATH folders read-only; one made since is not, and a git made there would
    be every later run's, and yours. Compared as real paths: `$HOME` may be a link."""
    from orchestrate import proc
    from orchestrate.workers import sandbox
    spelled, found = home(), []
    mine = os.path.realpath(spelled)
    # real paths worked out at each look: a PATH folder that was a link out of $HOME may be a folder in it now
    folders = [(folder, os.path.realpath(folder)) for folder in os.environ.get("PATH", "").split(os.pathsep) if folder]
    for name in sandbox.BY_NAME:
        where = proc.program(name)  # as found first in this run: one made ahead since is what is looked for
        real = os.path.realpath(os.path.dirname(where)) if "/" in where else None
        for folder, at in folders:
            if at == real:
                break
            if Path(at).is_relative_to(mine) or Path(folder).is_relative_to(spelled):  # either spelling in $HOME
                found.append(Path(folder) / name)
    return found


def site_folders() -> list[Path]:
    """The user site-packages of this Python (made or not) and of every other Python 3 under the same user base
    (`PYTHONUSERBASE`, else `~/.local`): an evaluator may run another interpreter than orchestrate's."""
    # as site.py finds them, from $HOME as it is now (site.py's own answer was fixed when this interpreter started)
    lib = Path(os.environ.get("PYTHONUSERBASE") or home() / ".local") / "lib"
    own = lib / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    others = [lib / name / "site-packages" for name, kind in _entries(lib, _PYTHONS) if kind == "d"]
    return list(dict.fromkeys([own, *others]))


def _listed() -> list[tuple[Path, bool]]:
    """(path, whether it is a file or a link) for each entry that counts in the listed folders."""
    found, unloaded = [], _imported_next()
    for folder in [home() / name for name in SOURCED] + site_folders():
        pattern = _HOOKED if folder.name == "site-packages" and folder != unloaded else _ANY
        found += [(folder / name, kind in "fl") for name, kind in _entries(folder, pattern)]
    return found


def _imported_next() -> Path | None:
    """This Python's user site-packages when the next one started like it imports from it first, and this one does
    not: the user site is on (no virtualenv) and the folder was not there when it started (`sys.path` would name
    it, and the sandbox keep it read-only). A module made there (`pip install --user` makes the folder) would be
    imported by your next `orchestrate` in place of what it imports now (PyYAML, orchestrate itself), outside any
    sandbox: every entry counts, as a `.pth` does."""
    import site
    own = site_folders()[0]
    return own if site.ENABLE_USER_SITE and str(own) not in sys.path else None


_PYTHONS = re.compile(r"python3\.\d+")
_HOOKED = re.compile(r"(user|site)customize(\..*)?|.*\.pth", re.DOTALL)  # what Python imports at start; a name may hold a newline
_ANY = re.compile(r".*", re.DOTALL)


def _entries(folder: Path, names: re.Pattern) -> list[tuple[str, str]]:
    """(name, kind: f file, l link, d folder, o other) of the entries of `folder` whose whole name matches
    `names`; none when it is missing, cannot be read, or is a link (rv40: listed through a link a worker made,
    a folder of yours elsewhere would have been emptied; so a `~/.bashrc.d` that links to your dotfiles is not
    watched). Only the matching names are looked at: a site-packages may hold thousands of entries."""
    try:  # never through a link: one a worker made (where none was watched) would lead to folders of yours
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return []
        matching = [name for name in os.listdir(folder) if names.fullmatch(name)]
    except OSError:
        return []
    found = []
    for name in sorted(matching):
        try:
            mode = os.lstat(folder / name).st_mode
        except OSError:
            continue
        found.append((name, "l" if stat.S_ISLNK(mode) else "f" if stat.S_ISREG(mode)
                      else "d" if stat.S_ISDIR(mode) else "o"))
    return found
