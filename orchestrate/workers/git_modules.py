"""The git dirs of your submodules, in the shared git dir's `modules/`, watched as that git dir is (rv37).

Without the sandbox a worker can write them, and your own git runs what they hold: `git status` in your
checkout looks into each submodule checked out there (its config's `core.fsmonitor`, say), and a later
`git submodule update` re-uses the git dir it finds (its hooks, its config). Each one's config, hooks, info
and the rest fingerprint.take_files watches are compared and put back; one made since the last look is moved
aside whole (a worker's `git submodule update --init`, or a git dir of its own making, waiting there for a
submodule you check out later; or your own, which is not lost); one that went cannot be put back, and is said so.
"""
from __future__ import annotations

import os
from pathlib import Path

from orchestrate import removal


def take(common: Path, inside: tuple[str, ...]) -> dict[str, dict[str, bytes | None]]:
    """{a module's path below `modules/`: its watched files} for every module git dir there (at any depth: a
    name may hold slashes, and a submodule's own submodules are in its `modules/`)."""
    from orchestrate.workers import fingerprint
    return {name: fingerprint.take_files(common / "modules" / name, inside) for name in found(common)}


def found(common: Path) -> list[str]:
    """The module git dirs below `common/modules`, never through a link; a folder is one when it holds HEAD."""
    top, names, folders = common / "modules", [], [""]
    if os.path.islink(top):  # a worker's, leading to folders of yours: listed and put back through, never
        return []
    while folders:
        rel = folders.pop()
        try:
            entries = list(os.scandir(top / rel if rel else top))
        except OSError:  # none there (most repositories), or one that cannot be read: nothing to list
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                name = f"{rel}/{entry.name}" if rel else entry.name
                if os.path.lexists(os.path.join(entry.path, "HEAD")):
                    names.append(name)
                    folders.append(f"{name}/modules")
                else:
                    folders.append(name)
    return sorted(names)


def changes(before: dict[str, dict], after: dict[str, dict]) -> list[str]:
    from orchestrate.workers import fingerprint
    said = []
    for name in sorted(set(before) | set(after)):
        if name not in before:
            said.append(f".git/modules/{name}/ was created")
        elif name not in after:
            said.append(f".git/modules/{name}/ was deleted")
        else:
            said += fingerprint.changed_files(before[name], after[name], f".git/modules/{name}")
    return said


def restore(common: Path, before: dict[str, dict], places: dict[Path, str], inside: tuple[str, ...],
            keep: Path | None) -> list[str]:
    """Each module git dir as it was: its watched files put back, one made since moved into `keep` (it may be
    yours: a `git submodule add` of your own while the run goes on; nothing of it is lost); what could not be,
    said. Never through a link: a module dir that is one now (or `modules` itself) leads elsewhere."""
    from orchestrate.workers import fingerprint, watched
    put_back, real, moved = [], os.path.join(os.path.realpath(common), "modules"), []
    for name in found(common):
        if name not in before and any(mine.startswith(f"{name}/") for mine in before):  # yours are below it
            try:  # a HEAD planted in a folder of yours made it look like a git dir: only that goes
                removal.remove(common / "modules" / name / "HEAD")
                put_back.append(f".git/modules/{name}/HEAD (removed: it made a folder holding your submodules' "
                                "git dirs look like one)")
            except OSError as exc:
                put_back.append(f".git/modules/{name}/HEAD{watched.NOT_PUT_BACK}{exc.strerror or exc})")
        elif name not in before and not any(name.startswith(f"{gone}/") for gone in moved):  # (went with its parent)
            try:
                if keep is None:
                    raise OSError(0, "no folder to keep it in")
                aside = _aside(common / "modules" / name, keep, name)
                moved.append(name)
                put_back.append(f".git/modules/{name}/ (moved to {aside}; if it is yours, move it back)")
            except OSError as exc:
                put_back.append(f".git/modules/{name}/{watched.NOT_PUT_BACK}{exc.strerror or exc})")
    for name, files in before.items():
        if os.path.realpath(common / "modules") != real or os.path.realpath(common / "modules" / name) != \
                os.path.join(real, name):
            put_back.append(f".git/modules/{name}/{watched.NOT_PUT_BACK}it leads elsewhere than when it was watched)")
        elif not (common / "modules" / name / "HEAD").exists():
            put_back.append(f".git/modules/{name}/{watched.NOT_PUT_BACK}it was deleted)")
        else:
            put_back += fingerprint.put_back_files(common / "modules" / name, files, f".git/modules/{name}", places,
                                                   inside)
    return put_back


def _aside(folder: Path, keep: Path, name: str) -> Path:
    """`folder` moved into `keep` whole; copied there, then removed, when `keep` is on another file system."""
    import errno
    import shutil
    keep.mkdir(parents=True, exist_ok=True)
    aside = keep / f"module-{name.replace('/', '-')}-{os.urandom(4).hex()}"
    try:
        os.rename(folder, aside)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        try:
            shutil.copytree(folder, aside, symlinks=True)
        except shutil.Error as failed:  # (a FIFO in it, say): nothing of it removed, no half copy left
            shutil.rmtree(aside, ignore_errors=True)
            raise OSError(errno.EIO, f"it could not be copied whole ({str(failed)[:200]})") from None
        removal.remove(folder)
    return aside
