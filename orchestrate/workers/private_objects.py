"""A sandboxed worker's git objects: written to a store of its own, verified, then brought into the repository.

In the sandbox the shared object store is read-only (a worker must not delete or replace what the user's
repository holds), so the worker's git writes new objects to a private folder (`GIT_OBJECT_DIRECTORY`)
and reads the shared ones as alternates (that variable: orchestrate writes nothing in the private store).
When it returns, its objects are brought in through a quarantine of orchestrate's own in the shared store
(`tmp_orchestrate-*`, which a crash leaves for `git gc` to prune): every loose object whose content hashes
to its name is copied there, and every pack is copied and indexed with `git index-pack` (which verifies
every object, and names the pack by its checksum). Then every new commit must be complete: what it
changes against its parents (`git diff-tree`, O(the change)) is read from the quarantine and the shared
store, so a commit naming a blob or tree that is in neither fails the attempt (the parents' own objects
are whole: the user's, or new commits brought in so). Only then are the objects moved into the shared
store. Refused outright, before anything is read: an `info/alternates` or `info/http-alternates` (objects
kept elsewhere, which the worker may delete after its commit names them) and anything under `pack/` that is
not a regular file (a FIFO named `*.pack` would block index-pack for ever). An object the repository holds
already, loose or packed, is skipped unread, and the store is removed once all is in: O(the worker's new
objects), never O(the repository).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import stat
import zlib
from pathlib import Path

from orchestrate import git, git_files
from orchestrate.errors import OrchestrateError


class BadObject(OrchestrateError):
    """A file in the private store is not the object its name says, or a new commit names an object that is
    nowhere: the attempt fails, nothing is brought in."""


def env(private: Path, shared: Path) -> dict[str, str]:
    return {"GIT_OBJECT_DIRECTORY": str(private), "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(shared)}


_ELSEWHERE = ("info/alternates", "info/http-alternates")
_MIB = 1 << 20


def bring_in(root: Path, private: Path, shared: Path) -> int:
    """Bring the private store's objects into `shared`; returns how many loose objects were new there."""
    if not private.is_dir():
        return 0
    for name in _ELSEWHERE:
        if os.path.lexists(private / name):
            raise BadObject(f"the worker's store has {name} (objects kept elsewhere, which orchestrate neither "
                            "writes there nor brings in)")
    stage = shared / f"tmp_orchestrate-{private.parent.name}-{private.name}"
    shutil.rmtree(stage, ignore_errors=True)  # a crash's, for this very attempt
    try:
        stage.mkdir()
        staged, size = _stage_loose(root, private, stage)
        commits = {name for name, kind in staged.items() if kind == "commit"}
        packed, size = _stage_packs(root, private, stage, size)
        if packed:
            commits |= _commits_in(root, stage, _budget(size))
        _check_complete(root, stage, shared, commits, staged, _budget(size))
        moved = _move_in(stage, shared)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    # all of it is in the repository now (a resumed attempt reads it there): a store left behind is disk the
    # campaign never gets back; a refused one stays, for a person to look at
    shutil.rmtree(private, ignore_errors=True)
    return moved


def _budget(size: int) -> float:
    """Seconds a git call over `size` bytes of the worker's objects may take: a minute, and a second a MiB."""
    return 60 + size / _MIB


def _stage_loose(root: Path, private: Path, stage: Path) -> tuple[dict[str, str], int]:
    """Copy every loose object the repository lacks into `stage`, each verified: ({its id: its kind}, bytes
    copied). One the repository holds, loose or packed, is left unread: nothing reads the private store after
    this (it is removed), and a worker's `git add -A` over a checkout git finds racily clean writes a copy of
    every file there (it cannot freshen the read-only shared objects), which would be O(the repository)."""
    staged, size = {}, 0
    found = [(folder.name + path.name, path)
             for folder in sorted(p for p in private.iterdir() if p.is_dir() and not p.is_symlink() and len(p.name) == 2)
             for path in sorted(folder.iterdir())]
    held = _held(root, [name for name, _ in found])
    for name, path in found:
        if name not in held:
            target = stage / name[:2] / name[2:]
            target.parent.mkdir(exist_ok=True)
            staged[name] = _copy_verified(path, name, target).decode()
            size += target.stat().st_size
    return staged, size


def _held(root: Path, names: list[str]) -> set[str]:
    """Which of `names` (well-formed object ids) the repository's own store holds, in one git call."""
    ids = [n for n in names if git_files.is_full_id(n)]  # a file named otherwise is no object git would read
    if not ids:
        return set()
    said = git.git(root, "cat-file", "--batch-check=%(objectname)", input="".join(f"{n}\n" for n in ids)).stdout
    return {line for line in said.splitlines() if not line.endswith(" missing")}


def _stage_packs(root: Path, private: Path, stage: Path, size: int) -> tuple[bool, int]:
    """Copy every pack into `stage` and index it there, named by its checksum: (any pack, bytes so far)."""
    packs = private / "pack"
    if not os.path.lexists(packs):
        return False, size
    if packs.is_symlink() or not packs.is_dir():
        raise BadObject("pack in the worker's store is not a folder")
    for entry in sorted(packs.iterdir()):  # what index-pack or the copy would open: none may block or lead away
        mode = entry.lstat().st_mode
        if not stat.S_ISREG(mode):
            raise BadObject(f"pack/{entry.name} in the worker's store is not a file ({stat.filemode(mode)})")
    found = sorted(packs.glob("*.pack"))
    (stage / "pack").mkdir()
    for n, pack in enumerate(found):
        copy = stage / "pack" / f"incoming-{n}.pack"
        try:
            fd, _ = git_files.open_regular(pack)
        except OSError as exc:
            raise BadObject(f"pack/{pack.name} in the worker's store is not a file ({exc.strerror or exc})") from None
        with os.fdopen(fd, "rb") as src, open(copy, "xb") as dst:
            shutil.copyfileobj(src, dst, _MIB)
        size += copy.stat().st_size
        done = git.git(root, "index-pack", "-o", str(copy.with_suffix(".idx")), str(copy), check=False,
                       timeout=_budget(copy.stat().st_size))
        checksum = done.stdout.strip()
        if not done or not git_files.is_full_id(checksum):
            why = "it took too long" if done.timed_out else _last(done.stderr) or f"exit {done.rc}"
            raise BadObject(f"pack/{pack.name} in the worker's store is not a valid pack: git index-pack: {why}")
        for suffix in (".pack", ".idx"):
            copy.with_suffix(suffix).replace(stage / "pack" / f"pack-{checksum}{suffix}")
    return bool(found), size


def _commits_in(root: Path, stage: Path, budget: float) -> set[str]:
    """Every commit in `stage`, its packs' too (the store alone: no alternates)."""
    listed = git.git(root, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)",
                     env={"GIT_OBJECT_DIRECTORY": str(stage)}, timeout=budget, check=False)
    if not listed:
        raise BadObject(f"git could not list the worker's objects ({_last(listed.stderr) or 'no reason given'})")
    return {line.split(" ")[0] for line in listed.stdout.split("\n") if line.endswith(" commit")}


def _check_complete(root: Path, stage: Path, shared: Path, commits: set[str], staged: dict[str, str],
                    budget: float) -> None:
    """Every object each new commit adds or changes against its parents is in `stage` or `shared`, of the
    kind its tree entry says; BadObject naming the first that is not. Git is asked only about those not
    among the loose objects `staged` (most often none: a commit's new files are new objects)."""
    if not commits:
        return
    both = {"GIT_OBJECT_DIRECTORY": str(stage), "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(shared)}
    # -t and -r: every tree that differs is read (a missing one fails the call); each entry that differs is listed
    diffs = git.git(root, "diff-tree", "--stdin", "-r", "-t", "-m", "--root", "--no-renames", "--raw", "-z",
                    "--no-commit-id", "--no-abbrev", env=both, input="".join(c + "\n" for c in sorted(commits)),
                    timeout=budget, check=False)
    if not diffs:
        raise BadObject("a commit in the worker's store names a commit or tree that is neither there nor in the "
                        f"repository (git diff-tree: {_last(diffs.stderr) or 'it took too long'})")
    wanted: dict[str, str] = {}
    fields = diffs.stdout.split("\0")
    for meta in fields[0:len(fields) - 1:2]:  # ":old-mode new-mode old-id new-id status", then the path
        mode, _, sha = meta.split(" ")[1:4]
        kind = "tree" if mode == "040000" else "blob"
        if mode not in ("000000", "160000") and staged.get(sha) != kind:  # gone, or a submodule's commit
            wanted[sha] = kind
    if not wanted:
        return
    found = git.git(root, "cat-file", "--batch-check=%(objectname) %(objecttype)", env=both,
                    input="".join(sha + "\n" for sha in wanted), timeout=budget, check=False)
    if not found:
        raise BadObject(f"git could not look the worker's objects up ({_last(found.stderr) or 'it took too long'})")
    kinds = dict(line.split(" ", 1) for line in found.stdout.split("\n") if " " in line)
    for sha, kind in wanted.items():
        if kinds.get(sha) != kind:
            raise BadObject(f"a commit in the worker's store names {kind} {sha}, which is "
                            + ("neither there nor in the repository" if kinds.get(sha, "missing") == "missing"
                               else f"a {kinds[sha]}"))


def _move_in(stage: Path, shared: Path) -> int:
    """Move the quarantined objects into `shared` (one file system: renames); returns the loose ones moved.
    A pack goes before its index: git finds a pack by its index."""
    moved = 0
    for folder in sorted(p for p in stage.iterdir() if len(p.name) == 2):
        (shared / folder.name).mkdir(exist_ok=True)
        for path in sorted(folder.iterdir()):
            os.replace(path, shared / folder.name / path.name)
            moved += 1
    for idx in sorted((stage / "pack").glob("pack-*.idx")) if (stage / "pack").is_dir() else ():
        if not (shared / "pack" / idx.name).exists():  # named by its checksum: the same pack is there
            (shared / "pack").mkdir(exist_ok=True)
            os.replace(idx.with_suffix(".pack"), shared / "pack" / idx.with_suffix(".pack").name)
            os.replace(idx, shared / "pack" / idx.name)
    return moved


def _last(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


_CHUNK = 1 << 20


def _copy_verified(path: Path, name: str, into: Path | None) -> bytes:
    """Check that `path` is a regular file holding the zlib-compressed object `name` (read in chunks, never
    whole, and never through a link or from a FIFO, which the worker could have put there), writing its
    bytes to `into` as they are read; returns its kind (b"commit", ...)."""
    try:
        fd, _ = git_files.open_regular(path)
    except OSError as exc:
        raise BadObject(f"object {name} in the worker's store is not a file ({exc.strerror or exc})") from None
    digest = (hashlib.sha1 if len(name) == 40 else hashlib.sha256)()
    unzip, header, inflated = zlib.decompressobj(), b"", 0
    with os.fdopen(fd, "rb") as src, (open(into, "xb") if into else open(os.devnull, "wb")) as dst:
        try:
            for chunk in iter(lambda: src.read(_CHUNK), b""):
                dst.write(chunk)
                data = chunk
                while data:  # bounded output per step: a small file may inflate to gigabytes
                    out = unzip.decompress(data, _CHUNK)
                    digest.update(out)
                    inflated += len(out)
                    header = header if b"\0" in header or len(header) > 64 else header + out[:64]
                    data = unzip.unconsumed_tail
        except zlib.error:
            raise BadObject(f"object {name} in the worker's store is not zlib data") from None
    # git's own reading of it: `KIND SIZE\0` then exactly SIZE bytes, nothing after the zlib stream (a store
    # holding either would break the user's gc and push once merged)
    kind, _, size = header.split(b"\0", 1)[0].partition(b" ")
    body = inflated - len(header.split(b"\0", 1)[0]) - 1
    if not unzip.eof or unzip.unused_data or digest.hexdigest() != name \
            or kind not in (b"blob", b"tree", b"commit", b"tag") or not size.isdigit() or int(size) != body \
            or size != str(int(size)).encode():
        raise BadObject(f"object {name} in the worker's store is not a well-formed object that hashes to its name")
    return kind


