"""A sandboxed worker's git objects: written to a store of its own, verified, then brought into the repository.

In the sandbox the shared object store is read-only (a worker must not delete or replace what the user's
repository holds), so the worker's git writes new objects to a private folder (`GIT_OBJECT_DIRECTORY`)
and reads the shared ones as alternates. When it returns, orchestrate copies every loose object whose
content hashes to its name, and indexes any pack with `git index-pack` (which verifies every object),
before anything reads the node's head. O(the worker's new objects), never O(the repository).
"""
from __future__ import annotations

import hashlib
import os
import zlib
from pathlib import Path

from orchestrate import git
from orchestrate.errors import OrchestrateError


class BadObject(OrchestrateError):
    """A file in the private store is not the object its name says: the attempt fails, nothing is copied."""


def env(private: Path, shared: Path) -> dict[str, str]:
    return {"GIT_OBJECT_DIRECTORY": str(private), "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(shared)}


def bring_in(root: Path, private: Path, shared: Path) -> int:
    """Copy the private store's objects into `shared`; returns how many loose objects were new there."""
    if not private.is_dir():
        return 0
    copied = 0
    for folder in sorted(p for p in private.iterdir() if p.is_dir() and not p.is_symlink() and len(p.name) == 2):
        for path in sorted(folder.iterdir()):
            name = folder.name + path.name
            target = shared / folder.name / path.name
            if target.exists():
                _copy_verified(path, name, None)
                continue
            target.parent.mkdir(exist_ok=True)
            tmp = target.with_name(f".{path.name}.{os.getpid()}.tmp")
            try:
                _copy_verified(path, name, tmp)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
            os.replace(tmp, target)
            copied += 1
    packs = private / "pack"
    if packs.is_dir():
        for pack in sorted(packs.glob("*.pack")):
            git.index_pack_into(root, pack, shared / "pack")
    return copied


_CHUNK = 1 << 20


def _copy_verified(path: Path, name: str, into: Path | None) -> None:
    """Check that `path` is a regular file holding the zlib-compressed object `name` (read in chunks, never
    whole, and never through a link or from a FIFO, which the worker could have put there), writing its
    bytes to `into` as they are read."""
    from orchestrate import git_files
    try:
        fd, _ = git_files.open_regular(path)
    except OSError as exc:
        raise BadObject(f"object {name} in the worker's store is not a file ({exc.strerror or exc})") from None
    digest = (hashlib.sha1 if len(name) == 40 else hashlib.sha256)()
    unzip, header = zlib.decompressobj(), b""
    with os.fdopen(fd, "rb") as src, (open(into, "xb") if into else open(os.devnull, "wb")) as dst:
        try:
            for chunk in iter(lambda: src.read(_CHUNK), b""):
                dst.write(chunk)
                data = chunk
                while data:  # bounded output per step: a small file may inflate to gigabytes
                    out = unzip.decompress(data, _CHUNK)
                    digest.update(out)
                    header = header if b"\0" in header or len(header) > 64 else header + out[:64]
                    data = unzip.unconsumed_tail
        except zlib.error:
            raise BadObject(f"object {name} in the worker's store is not zlib data") from None
    kind = header.split(b"\0", 1)[0].split(b" ")[0]
    if not unzip.eof or digest.hexdigest() != name or kind not in (b"blob", b"tree", b"commit", b"tag"):
        raise BadObject(f"object {name} in the worker's store does not hash to its name")


