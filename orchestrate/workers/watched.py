"""A watched path read as a record, compared as bytes with the next record of it and put back from it.

Each kind of record has its own first byte, so no file's bytes can pass for a link's record or another's:
  f<mode>\0<bytes>                  a file (its mode too: a hook git finds not executable is skipped, silently)
  u<mode>\0                         a file that cannot be read (git passes over it, as this does): what it holds
                                    matters to git only once its mode lets it be read
  u<mode>\0<inode>:<size>:<mtime>   a file too big to hold (a worker's sparse one; git would not read it either)
  u                                 a path that cannot be reached (a folder on the way that cannot be searched, a
                                    loop of links, a name too long)
  l<target>\0<real>\0<record>       a link (a dotfiles checkout's ~/.gitconfig, a hook linked from the project):
                                    where it leads, and the record of the file there, which git reads and a worker
                                    writes through it (empty: none; `c`: a file in your checkout, watched there)
  None                              nothing there, or anything else (git reads no folder, FIFO or socket as a file)
A watched folder's record is d<mode>, l<target>\0<real path>, o (anything else) or None.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from orchestrate.git_config import MOST  # a bigger watched file (a worker's sparse one) is held by its identity

_WALK = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def read(path: Path | str, inside: tuple[str, ...] = ()) -> bytes | None:
    """A watched path's record; a FIFO a worker planted in the git dir is not waited on (git_files.open_regular).
    A link leading `inside` (real paths: your checkout, watched as a checkout; a git dir) holds `c` for the file
    it leads to: that file is not compared here, nor ever written back."""
    st = _lstat(path)
    if not isinstance(st, os.stat_result):
        return st
    if not stat.S_ISLNK(st.st_mode):
        return read_file(path)
    try:
        target = os.readlink(path)
    except OSError:
        return b"u"
    real = os.path.realpath(path)
    led = b"c" if any(Path(real).is_relative_to(place) for place in inside) else read_file(real) or b""
    return b"l" + os.fsencode(target) + b"\0" + os.fsencode(real) + b"\0" + led


def _lstat(path: Path | str) -> os.stat_result | bytes | None:
    """The path's own stat; None for nothing there, `u` for what cannot be reached."""
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, ValueError):  # ValueError: a NUL in a name a config gives (git cuts it there)
        return b"u"


def read_file(path: Path | str) -> bytes | None:
    from orchestrate import git_files
    try:
        fd, st = git_files.open_regular(path)
    except (FileNotFoundError, NotADirectoryError, git_files.NotRegular):
        return None
    except (OSError, ValueError):  # its mode; a socket (ENXIO); a loop or a name too long on the way; a NUL
        st = _lstat(path)
        if not isinstance(st, os.stat_result):
            return st
        return b"u%o\0" % stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(MOST + 1) if st.st_size <= MOST else b""
    return _identity(st) if len(data) > MOST or st.st_size > MOST else b"f%o\0" % stat.S_IMODE(st.st_mode) + data


def _identity(st: os.stat_result) -> bytes:
    """A file too big to hold: its mode, and what tells a change of it without reading it."""
    return b"u%o\0%d:%d:%d" % (stat.S_IMODE(st.st_mode), st.st_ino, st.st_size, st.st_mtime_ns)


def content(record: bytes | None) -> bytes | None:
    """The bytes git would read from a watched path of this record (through a link, the file it leads to)."""
    if record is None or record[:1] == b"u":
        return None
    if record[:1] == b"l":
        led = record.split(b"\0", 2)[2]
        return None if led in (b"", b"c") else content(led)
    return record.partition(b"\0")[2]


def committed(record: bytes | None) -> bytes | None:
    """What a git commit holds of a watched path of this record: for a link (a `dag.yaml` linked to a plan kept
    elsewhere), the link itself, as git stores it, not the file it leads to (`content`)."""
    if record is not None and record[:1] == b"l":
        return record[1:].split(b"\0", 1)[0]
    return content(record)


def mode(record: bytes) -> str:
    """The mode a file's (or a folder's) record holds, in octal."""
    return record[1:].partition(b"\0")[0].decode()


NOT_PUT_BACK = " (not put back: "  # how a put-back that failed is said, after the path's name


def put(path: Path, old: bytes | None, place: str, keep_out: tuple[str, ...] = ()) -> str:
    """`path` as its record `old` was read: a file of those bytes and that mode, the link again and the file it
    led to, or nothing. `place` is the real path (no link in it) of `path`'s folder when it was watched: a
    folder on the way that leads elsewhere now (swapped for a link, a link of yours re-pointed) is not gone
    through. The folder, and the file a link leads to, are reached from / one folder at a time without
    following a link, so a link a worker still running swaps in meanwhile makes it fail (OSError), never write
    or remove through it; nothing is written where a link leads into `keep_out` (real paths: your checkout, its
    git dir, the recorder). Read again after: what still does not read as `old` (a link further on in a chain
    re-pointed) was not put back. Returns what could not be put back, after NOT_PUT_BACK ("" for nothing)."""
    if os.path.realpath(path.parent) != place:
        return NOT_PUT_BACK + "a folder on its way leads elsewhere than when it was watched)"
    said = _put_at(place, path.name, old, keep_out)
    if not said and read(path, keep_out) != old:
        return NOT_PUT_BACK + "it still does not read as it did when watched: a link on its way was changed)"
    return said


def _put_at(place: str, name: str, old: bytes | None, keep_out: tuple[str, ...]) -> str:
    from orchestrate import removal
    fd = _walk(os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), Path(place).parts[1:])
    try:
        if old is not None and old[:1] == b"u":
            return _put_unread(fd, name, old[1:])
        removal.remove_at(fd, name)
        if old is None:
            return ""
        if old[:1] == b"f":
            bits, _, data = old[1:].partition(b"\0")
            _create_at(fd, name, data, int(bits, 8))
            return ""
        target, real, led = old[1:].split(b"\0", 2)
        os.symlink(target, name, dir_fd=fd)
    finally:
        os.close(fd)
    real = os.fsdecode(real)
    if led == b"c" or read_file(real) == (led or None):  # `c`: it leads into your checkout, not compared here
        return ""
    if led and led[:1] != b"f":
        return NOT_PUT_BACK + "the file it leads to could not be read when watched)"
    if into := next((k for k in keep_out if Path(real).is_relative_to(k)), None):
        return NOT_PUT_BACK + f"it leads into {into}, where orchestrate writes nothing of yours)"
    parts = Path(real).parts
    fd = _walk(os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), parts[1:-1], make=False)
    try:  # what it leads to now: a folder there is refused, a file (or a worker's, where there was none) replaced
        if os.path.lexists(real) and stat.S_ISDIR(os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode):
            return NOT_PUT_BACK + "a folder is where the file it leads to was)"
        removal.remove_at(fd, parts[-1])
        if led:
            bits, _, data = led[1:].partition(b"\0")
            _create_at(fd, parts[-1], data, int(bits, 8))
    finally:
        os.close(fd)
    return ""


def _walk(fd: int, names: tuple[str, ...], make: bool = True) -> int:
    """The folder `names` below the open folder `fd` (closed), each opened in the last without following a link
    and made when missing (`make`). OSError (closed) for a link or anything else on the way."""
    try:
        for name in names:
            try:
                inner = os.open(name, _WALK, dir_fd=fd)
            except FileNotFoundError:
                if not make:
                    raise
                os.mkdir(name, 0o755, dir_fd=fd)
                inner = os.open(name, _WALK, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _put_unread(fd: int, name: str, was: bytes) -> str:
    """A file that could not be read when watched cannot be written back. Still a file, it gets its mode back
    (whatever it holds now, git then cannot read it either); it is never removed: it may still be yours."""
    from orchestrate import removal
    bits, read, identity = was.partition(b"\0")
    if not read:
        return NOT_PUT_BACK + "it could not be reached when watched)"
    try:
        held = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
    except FileNotFoundError:
        return NOT_PUT_BACK + "it could not be read when watched, so it cannot be written back)"
    try:
        st = os.fstat(held)
        if stat.S_ISREG(st.st_mode):  # the file held, not a name a worker can swap meanwhile
            os.chmod(f"/proc/self/fd/{held}", int(bits, 8))
            same = not identity or b"%d:%d:%d" % (st.st_ino, st.st_size, st.st_mtime_ns) == identity
            return "" if same else NOT_PUT_BACK + "it was too big to hold when watched, so it cannot be written back)"
    finally:
        os.close(held)
    removal.remove_at(fd, name)  # a link or a folder in its place: a worker's
    return NOT_PUT_BACK + "it could not be read when watched, so it cannot be written back)"


def _create_at(fd: int, name: str, data: bytes, bits: int) -> None:
    """A new file (never opened through a link a worker puts at the name meanwhile) of `data`, mode `bits`."""
    out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd)
    with os.fdopen(out, "wb") as fh:
        fh.write(data)
        os.fchmod(out, bits)


def chmod_folder(path: Path | str, bits: int, dir_fd: int | None = None) -> None:
    """The folder at `path` (in `dir_fd`; not a link a worker swaps in: OSError) given mode `bits`, held by a
    descriptor that needs no access to it (a folder at mode 0 is what is put back, or re-based)."""
    fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        os.chmod(f"/proc/self/fd/{fd}", bits)
    finally:
        os.close(fd)


def put_home_folder(folder: Path, old: str | None, place: str) -> None:
    """A folder between $HOME and a watched file as it was (fingerprint._folder's record: None a folder or nothing,
    `mode:` a folder of that mode, `link:` a link), outer ones put back first. `place` is the real path its parent
    had when it was watched (a folder of yours on the way that is a link, as GNU stow makes them, is followed as
    it was; one that leads elsewhere now is refused: OSError); reached from / one folder at a time, never
    through a link swapped in meanwhile, and what is in its place removed by its name in its parent (a link is
    removed, never what it leads to)."""
    from orchestrate import removal
    if os.path.realpath(folder.parent) != place:
        raise NotADirectoryError(20, "a folder on its way leads elsewhere than when it was watched", str(folder))
    name = folder.name
    fd = _walk(os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), Path(place).parts[1:], make=False)
    try:
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if old == "other":  # something else was there: a link put in its place goes, nothing is made
            return removal.remove_at(fd, name) if st is not None and stat.S_ISLNK(st.st_mode) else None
        if st is not None and (old is None or old.startswith("mode:")) and not stat.S_ISDIR(st.st_mode):
            removal.remove_at(fd, name)  # a link, or a file, in a folder's place
            st = None
        elif st is not None and old is not None and old.startswith("link:"):
            removal.remove_at(fd, name)
        if old is not None and old.startswith("link:"):
            return os.symlink(old.removeprefix("link:"), name, dir_fd=fd)
        if st is None:
            os.mkdir(name, 0o700, dir_fd=fd)
        bits = int(old[5:], 8) if old else stat.S_IMODE(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
        chmod_folder(name, bits | (0 if old else 0o700), dir_fd=fd)
    finally:
        os.close(fd)


def folder_record(path: Path) -> bytes | None:
    """d<mode> for a folder (a worker's `chmod 0311 hooks` keeps git running what it planted there, unlisted),
    l<target>\0<real path> for a link, o for anything else, None for nothing."""
    st = _lstat(path)
    if not isinstance(st, os.stat_result):
        return st
    if stat.S_ISDIR(st.st_mode):
        return b"d%o" % stat.S_IMODE(st.st_mode)
    if not stat.S_ISLNK(st.st_mode):
        return b"o"
    try:  # where it leads too: a folder on the way there re-pointed (your ~/dotfiles) is a change
        return b"l" + os.fsencode(os.readlink(path)) + b"\0" + os.fsencode(os.path.realpath(path))
    except OSError:  # swapped again since the lstat
        return b"u"


def put_folder(path: Path, old: bytes | None) -> None:
    """A watched folder as `old` recorded it; what is in it is put back next, file by file."""
    from orchestrate import removal
    if old is not None and old[:1] == b"d" and (folder_record(path) or b"")[:1] == b"d":
        return chmod_folder(path, int(old[1:], 8))
    removal.remove(path)  # a link, or anything else, in a folder's place (or a folder where there was none)
    if old is not None and old[:1] == b"d":
        path.mkdir()
        chmod_folder(path, int(old[1:], 8))
    elif old is not None and old[:1] == b"l":
        path.symlink_to(os.fsdecode(old[1:].partition(b"\0")[0]))
