"""Removing what a worker may have put where orchestrate writes or re-bases, never through a link it swaps in.

Every folder is opened by a descriptor, each step in the one before it, with O_NOFOLLOW (a link is never
followed), O_DIRECTORY (a FIFO swapped in for a folder is refused, not waited on: O_NONBLOCK too) and no
recursion (a worker can nest folders thousands deep; Python's own `shutil.rmtree` recurses, and opens a
sub-folder it has looked at without O_NOFOLLOW or O_NONBLOCK). What a worker still running (without the
sandbox) swaps in while a tree is removed makes the removal fail (OSError), never reach outside the tree. A
folder its owner may not write (a worker's `chmod 0500`) is made writable first: not only root removes trees.
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# Folders open at once while a tree is removed (a descriptor each). A folder deeper than this is moved up to the
# top of the tree being removed (a rename, by descriptors) and removed from there: any depth, few descriptors.
MAX_DEPTH = 256


def remove(path: Path) -> None:
    """Remove whatever is at `path`: a file, a FIFO, a link (never what it names) or a folder with all it holds;
    nothing when there is nothing. `path`'s own parent folders are taken as they are."""
    try:
        fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        remove_at(fd, path.name)
    except OSError as exc:  # named by the path asked for: what failed inside was named relative to its folder
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    finally:
        os.close(fd)


def remove_below(root: Path, rel: str) -> None:
    """Remove what is at `rel` (a path git listed, `/`-separated) below `root`, as `remove` does, reached one
    folder at a time from `root` and never through a link: a worker still running without the sandbox that
    swaps a folder on the way for a link to one of yours, after orchestrate listed what to remove, gets an
    OSError (ENOTDIR) here rather than your files removed. Nothing when a folder on the way is missing."""
    *folders, name = _parts(rel)
    if (fd := _open_folder(root, folders)) is not None:
        try:
            remove_at(fd, name)
        finally:
            os.close(fd)


def set_aside(path: Path, into: Path) -> None:
    """Move what could not be removed out of the way, into `into` (same file system) as `trash-…`: it must not
    hold a place orchestrate writes next (a worktree's). `set_aside_in` lists it, to be removed again later."""
    os.rename(path, into / f"trash-{path.name}-{os.urandom(6).hex()}")  # a name no worker can take first


def set_aside_in(into: Path) -> list[Path]:
    """What `set_aside` moved into `into`: folders only (a link named so is a worker's, and goes with its folder)."""
    if into.is_symlink():  # a worker's, leading to folders of yours
        return []
    return sorted(p for p in into.glob("trash-*") if p.is_dir() and not p.is_symlink())


def empty_below(root: Path, rel: str) -> None:
    """Remove everything in the folder at `rel` below `root`, reached as `remove_below` reaches it."""
    if (fd := _open_folder(root, _parts(rel))) is not None:
        try:
            for name in os.listdir(fd):
                remove_at(fd, name)
        finally:
            os.close(fd)


def remove_odd_in(root: Path, rel: str) -> list[str]:
    """Remove the FIFOs, sockets and device nodes in the folder at `rel` below `root` (not below it; "" is `root`
    itself), reached as `remove_below` reaches it: no git listing shows them, so they would outlast every
    clearing of what git does not track. The names removed."""
    if (fd := _open_folder(root, _parts(rel) if rel else [])) is None:
        return []
    try:
        with os.scandir(fd) as entries:  # the type from the folder's own listing: no stat a name
            odd = [e.name for e in entries if not (e.is_file(follow_symlinks=False) or e.is_dir(follow_symlinks=False)
                                                   or e.is_symlink())]
        for name in odd:
            os.unlink(name, dir_fd=fd)
    finally:
        os.close(fd)
    return odd


def _parts(rel: str) -> list[str]:
    parts = [part for part in rel.split("/") if part]
    if not parts or any(part in (".", "..") for part in parts):
        raise ValueError(f"not a path below a folder: {rel!r}")
    return parts


def _open_folder(root: Path, folders: list[str]) -> int | None:
    """A descriptor of `root`/`folders`, each step opened in the last and none a link; None when one is
    missing or a file (nothing is below it). A link on the way raises (ENOTDIR)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(root, flags)
    for part in folders:
        try:
            inner = os.open(part, flags, dir_fd=fd)
        except OSError as exc:
            gone = isinstance(exc, FileNotFoundError) or (isinstance(exc, NotADirectoryError) and _plain(fd, part))
            os.close(fd)
            if gone:
                return None
            raise
        os.close(fd)
        fd = inner
    return fd


def _plain(fd: int, name: str) -> bool:
    """Is `name` in folder `fd` something other than a link (a file, a FIFO)?"""
    try:
        return not stat.S_ISLNK(os.lstat(name, dir_fd=fd).st_mode)
    except OSError:
        return False


def remove_at(fd: int, name: str) -> None:
    """Remove `name` in the folder `fd`: a file, a link (never what it names) or a folder with all it holds."""
    try:
        st = os.lstat(name, dir_fd=fd)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        _remove_folder(fd, name)
    else:
        os.unlink(name, dir_fd=fd)


def _remove_folder(parent: int, name: str) -> None:
    """Remove the folder `name` in `parent` and everything in it, deepest first, by descriptors."""
    opened: list[tuple[int, str, int, list[str]]] = []  # (its parent, its name, itself, its folders not yet removed)
    try:
        _descend(opened, parent, name)
        while opened:
            _, _, here, folders = opened[-1]
            if folders and len(opened) >= MAX_DEPTH:
                _, _, top, pending = opened[0]
                pending.append(_moved_up(here, folders.pop(), top))
            elif folders:
                _descend(opened, here, folders.pop())
            else:
                up, gone, here, _ = opened.pop()
                os.close(here)
                os.rmdir(gone, dir_fd=up)
    finally:
        for _, _, fd, _ in opened:
            os.close(fd)


def _moved_up(here: int, name: str, top: int) -> str:
    """Move folder `name` from `here` into `top` under a name nothing there has; that name."""
    for n in range(1000):
        new = f".orchestrate-deep-{os.getpid()}-{n}"
        try:
            os.lstat(new, dir_fd=top)
        except FileNotFoundError:
            os.rename(name, new, src_dir_fd=here, dst_dir_fd=top)
            return new
    raise OSError(errno.EEXIST, "no free name to move a deep folder to")


def _descend(opened: list, parent: int, name: str) -> None:
    """Open folder `name` in `parent`, remove what it holds that is no folder, and push it with its folders.
    Something else there now (a link, a FIFO, a file swapped in): removed itself, never opened through."""
    try:
        fd = _writable(parent, name)
    except NotADirectoryError:
        os.unlink(name, dir_fd=parent)
        return
    except FileNotFoundError:
        return
    folders = []
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.name)
                else:
                    os.unlink(entry.name, dir_fd=fd)
    except BaseException:
        os.close(fd)
        raise
    opened.append((parent, name, fd, folders))


def _writable(parent: int, name: str) -> int:
    """Folder `name` in `parent`, opened, and made readable and writable by its owner first when it was not
    (a worker's `chmod 0500`, or a tool's read-only cache: Go's module cache is 0555): as any user but root,
    nothing in it could be removed otherwise. The mode is set through a descriptor of the folder itself (an
    O_PATH one, by its /proc/self/fd name, when it cannot even be listed), never by a name a link could
    stand in for."""
    try:
        fd = os.open(name, _FOLDER, dir_fd=parent)
    except PermissionError:
        held = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        try:
            os.chmod(f"/proc/self/fd/{held}", 0o700)
        finally:
            os.close(held)
        return os.open(name, _FOLDER, dir_fd=parent)
    if os.fstat(fd).st_mode & 0o700 != 0o700:
        try:
            os.fchmod(fd, 0o700)
        except OSError:  # not its owner: what it holds fails to go, and says so
            pass
    return fd
