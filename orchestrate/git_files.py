"""Git's own files read where their layout is the plain one, instead of asking a git process: which commit a
linked worktree's HEAD names, which worktrees hold a branch, every ref's object id. Each answers None (or
raises git_batch.Unusable) where the layout is not the plain one, and the caller asks git. Two writes as
well, for the pool's spares, each a process a node saved: a worktree's move and a detached HEAD.

A worker without the sandbox can write in the git dir while these run, so only regular files are read
(never through a link, never a FIFO that would block the runner), and never more than a ref's worth."""
from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from orchestrate import atomic, git, removal, stamps
from orchestrate.git_batch import _FULL, Unusable, _admin, _store, commit


def worktree_head(repo: str | Path, worktree: str | Path) -> str | None:
    """The commit HEAD names in `worktree`, a linked worktree of `repo`: its admin dir's HEAD file, resolved
    through `repo`'s reader (a reader of its own would be a process per worktree). Unusable when the
    worktree is not plainly one of `repo`'s or its HEAD is neither a branch nor a full id."""
    found, admin = _admin(Path(repo).absolute()), git.admin_dir(worktree)
    if found is None or admin is None or admin.parent != Path(_store(found[0])) / "worktrees":
        raise Unusable(str(worktree))
    try:
        text = small(admin / "HEAD").decode(errors="replace").strip()
    except OSError:
        raise Unusable(str(worktree)) from None
    name = text[5:] if text.startswith("ref: refs/heads/") else text if is_full_id(text) else None
    sha = commit(repo, name) if name else None
    if sha is None:
        raise Unusable(str(worktree))  # an unborn or odd HEAD: git says what it makes of it
    return sha


def is_full_id(text: str) -> bool:
    """A whole commit id (SHA-1 or SHA-256), as a detached HEAD file holds one."""
    return bool(_FULL.fullmatch(text))


def linked(worktree: Path, common: Path) -> bool:
    """Is `worktree` still a linked worktree of the repository whose common git dir is `common`: its `.git`
    file naming an admin dir under `common`'s worktrees/, which names it back and names `common`? A worker
    can rewrite the `.git` file of a worktree it can write, and git would then act on whatever it names. The
    admin dir must be a folder there, not a link to one elsewhere (whose files orchestrate would clear).
    What cannot be read (a worktree a worker made `chmod 000`, as any user but root) is not linked."""
    dot = worktree / ".git"
    try:
        if dot.is_symlink() or not dot.is_file():
            return False
        admin = git.admin_dir(worktree)
        if admin is None or admin.is_symlink() or not admin.is_dir():
            return False
        back = Path(small(admin / "gitdir").decode(errors="replace").strip())
        shared = admin / small(admin / "commondir").decode(errors="replace").strip()
        return admin.parent.resolve() == (common / "worktrees").resolve() and back.resolve() == dot.resolve() \
            and shared.resolve() == common.resolve()
    except OSError:
        return False


def move_worktree(src: Path, dst: Path, admin: Path) -> bool:
    """`git worktree move src dst` as git does it (the folder renamed, its admin dir's gitdir naming the new
    place), where nothing needs git's judgement: `src`'s .git file names `admin` by its absolute path, `admin`
    holds no lock mark and no submodule's git dir, its index no gitlink (git refuses to move a worktree with
    a submodule checked out), and nothing is at `dst`. False, nothing moved, in any other case: the caller
    asks git, which refuses what it must."""
    try:
        if small(src / ".git").decode(errors="replace").strip() != f"gitdir: {admin}" or os.path.lexists(dst) \
                or any(os.path.lexists(admin / name) for name in ("locked", "modules")) \
                or may_hold_gitlink(admin / "index"):  # a false match only sends the move to git
            return False
        new = Path(os.path.realpath(dst.parent)) / dst.name  # what git writes: the real path
        os.rename(src, dst)
    except OSError:
        return False
    try:
        atomic.replace(admin / "gitdir", f"{new}/.git\n")
    except OSError:
        try:
            os.rename(dst, src)
        except OSError:  # the worktree is lost either way: removed, its admin dir left to `git worktree prune`
            removal.remove(dst)
        return False
    return True


def remove_worktree(common: Path, path: Path) -> None:
    """Remove a worktree and its admin dir without git: the folder by descriptors (removal.remove), then the admin
    dir whose `gitdir` names it (one that is a link: the link alone). A folder nested past what can be removed
    so stays, and so does its admin dir (a prune keeps it while the folder is there); OSError is not raised."""
    try:
        removal.remove(path)
    except OSError:
        return
    named = {f"{path}/.git", f"{os.path.realpath(path)}/.git"}
    admins = common / "worktrees"
    for admin in sorted(admins.iterdir()) if admins.is_dir() else ():
        try:
            if admin.is_symlink() or small(admin / "gitdir").decode(errors="replace").strip() in named:
                removal.remove(admin)
        except (OSError, NotRegular):
            continue


def detach(admin: Path, sha: str) -> None:
    """Make a linked worktree's HEAD the commit `sha` (`update-ref --no-deref HEAD`, reflog aside), letting go
    of the branch it was on. OSError when the admin dir cannot be written."""
    if not is_full_id(sha):
        raise ValueError(sha)
    atomic.replace(admin / "HEAD", sha + "\n")


_GITLINK = (0o160000).to_bytes(4, "big")  # an index entry's mode field for a gitlink


def may_hold_gitlink(index: Path) -> bool:
    """Whether an index file may have a gitlink entry (False: it surely has none): its bytes are searched for
    the mode's, a match elsewhere only costing the caller a look with git. True when it cannot be read."""
    try:
        return _GITLINK in small(index, None)
    except OSError:
        return True


def checked_out(repo: str | Path, ref: str, mine: set[str] = frozenset()) -> list[Path] | None:
    """The worktrees of `repo` whose HEAD is on `ref` (as `git worktree list` reports a branch), read from
    their HEAD files; None when the layout is not the plain one (then git is asked). A linked one counts only
    when its .git file names its admin dir back, and when that admin dir is none of `mine` (real paths): the
    admin dirs of worktrees orchestrate made, which their workers write (in the sandbox too: rv25)."""
    found = _admin(Path(repo).absolute())
    if found is None:
        return None
    common = Path(_store(found[0]))
    want = f"ref: {ref}"
    try:
        holders = []
        if small(common / "HEAD").decode(errors="replace").strip() == want:
            if common.name != ".git":
                return None
            holders.append(common.parent)
        linked = common / "worktrees"
        with os.scandir(linked) if linked.is_dir() else contextlib.nullcontext(()) as admins:
            for admin in admins:  # where a worktree is is read only for one on `ref`: a campaign holds many
                if os.path.realpath(admin.path) not in mine and (back := _holder(admin.path, want, common)):
                    holders.append(back)
    except OSError:
        return None
    return holders


def _holder(admin: str, want: str, common: Path) -> Path | None:
    """The worktree whose admin dir is `admin`, if its HEAD is `want` and it is one: its .git file names `admin`
    back, and `admin` names this git dir as common (rv26: one naming a git dir of a worker's would have the
    halt's hint run that git dir's hooks). None for anything a worker could have made of its admin dir: a HEAD
    or gitdir that is a link or no file (git reads a link HEAD as a symbolic ref) is no holder."""
    try:
        if small(os.path.join(admin, "HEAD")).decode(errors="replace").strip() != want:
            return None
        gitdir = small(os.path.join(admin, "gitdir")).decode(errors="replace").strip()
        shared = small(os.path.join(admin, "commondir")).decode(errors="replace").strip()
    except (OSError, NotRegular):
        return None
    back = Path(admin, gitdir).parent  # relative to the admin dir (git 2.48's relative paths)
    same = os.path.realpath(Path(admin, shared)) == os.path.realpath(common)  # not resolve(): a loop raises
    return back if same and _names(back, admin) else None


def _names(holder: Path, admin: str) -> bool:
    """Does `holder`'s .git file name `admin`? An admin dir is its worktree's worker's to write, in the sandbox
    too: its gitdir can name any checkout (yours), whose .git does not name it back and holds nothing of it."""
    try:
        named = small(holder / ".git").decode(errors="replace").strip().removeprefix("gitdir: ")
    except (OSError, NotRegular):
        return False
    return os.path.realpath(holder / named) == os.path.realpath(admin)


def ref_files(repo: str | Path, skip: tuple[str, ...] = ()) -> dict[str, str] | None:
    """Every ref under refs/ of `repo`'s shared git dir with the object id its file names (a symbolic ref's
    target followed): the loose files, and packed-refs for the rest, as `for-each-ref refs` lists them (a
    loose ref wins over its packed line). A look costs a read per loose ref, not a process; packed-refs is
    parsed again only when its stat changed. `skip`: prefixes (ending in "/") of refs not wanted: their
    loose files are not read, nor their folders listed (a campaign's own node branches, one per node:
    reading them at every look made a campaign's looks grow with its length); packed ones may still be
    listed. None where refs are not kept in files (reftable), or when they kept changing under three
    reads: then git is asked."""
    found = _admin(Path(repo).absolute())
    if found is None:
        return None
    common = Path(_store(found[0]))
    if (common / "reftable").exists():
        return None
    for _ in range(3):
        refs = _read_refs(common, skip)
        if refs is not None:
            for name, value in refs.items():  # a symbolic ref stands for what it names, as git lists it
                for _ in range(5):
                    if not value.startswith("ref: "):
                        break
                    value = refs.get(value[5:], value)
                refs[name] = value
            return refs
    return None


def _read_refs(common: Path, skip: tuple[str, ...] = ()) -> dict[str, str] | None:
    try:
        refs = dict(_packed(common / "packed-refs"))
        todo = [(common / "refs", "refs/")]
        while todo:
            folder, prefix = todo.pop()
            with os.scandir(folder) as entries:
                for e in entries:
                    if skip and f"{prefix}{e.name}/".startswith(skip):
                        continue
                    if e.is_dir(follow_symlinks=False):
                        todo.append((Path(e.path), f"{prefix}{e.name}/"))
                    elif not e.name.endswith(".lock"):
                        try:
                            refs[prefix + e.name] = small(e.path).decode(errors="replace").strip()
                        except NotRegular as odd:  # a link or a FIFO where a ref should be: a change all the same
                            refs[prefix + e.name] = str(odd)
    except OSError:  # a ref removed between the listing and the read: look again
        return None
    return refs


class NotRegular(OSError):
    """Not a regular file: `kind` says what it is (`stat.filemode`, or "a symbolic link")."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"not a file ({kind})")
        self.kind = kind


def small(path: str | Path, most: int | None = 4096) -> bytes:
    """The first `most` bytes (all, with None) of a regular file, opened without following a link or
    waiting on a FIFO; NotRegular for anything else."""
    fd, st = open_regular(path)
    with os.fdopen(fd, "rb") as fh:
        return fh.read(st.st_size if most is None else most)


def tail(path: str | Path, most: int) -> bytes:
    """The last `most` bytes of a regular file, opened as `small` opens one (a worker may have put a link or a
    FIFO in the place of its log); NotRegular for anything else."""
    fd, st = open_regular(path)
    with os.fdopen(fd, "rb") as fh:
        fh.seek(max(st.st_size - most, 0))
        return fh.read(most)


def open_regular(path: str | Path, *, follow: bool = False) -> tuple[int, os.stat_result]:
    """A read-only descriptor of a regular file and its stat, opened without waiting on a FIFO, nor following a
    link unless `follow` (a person's own file: a config, a brief); NotRegular (closed) for anything else. The
    caller closes it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW))
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW's answer for a link: said as the other kinds are
            raise NotRegular("a symbolic link") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(stat.filemode(st.st_mode))
    except BaseException:
        os.close(fd)
        raise
    return fd, st


_packs: dict[str, tuple[tuple, dict[str, str]]] = {}  # packed-refs path -> (its stat, its refs)


def _packed(path: Path) -> dict[str, str]:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return {}
    stamp = stamps.key(st)
    if _packs.get(str(path), ((), {}))[0] != stamp:
        refs = {}
        for line in small(path, None).decode(errors="replace").splitlines():
            if line and line[0] not in "#^":  # the header, and a peeled tag's target
                sha, _, name = line.partition(" ")
                refs[name] = sha
        if len(_packs) > 64:
            _packs.clear()
        _packs[str(path)] = (stamp, refs)
    return _packs[str(path)][1]
