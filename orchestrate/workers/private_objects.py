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
    for folder in sorted(p for p in private.iterdir() if p.is_dir() and len(p.name) == 2):
        for path in sorted(folder.iterdir()):
            name = folder.name + path.name
            data = path.read_bytes()
            _verify(name, data)
            target = shared / folder.name / path.name
            if not target.exists():
                target.parent.mkdir(exist_ok=True)
                tmp = target.with_name(f".{path.name}.{os.getpid()}.tmp")
                tmp.write_bytes(data)
                os.replace(tmp, target)
                copied += 1
    packs = private / "pack"
    if packs.is_dir():
        for pack in sorted(packs.glob("*.pack")):
            git.index_pack_into(root, pack, shared / "pack")
    return copied


def _verify(name: str, data: bytes) -> None:
    try:
        raw = zlib.decompress(data)
    except zlib.error:
        raise BadObject(f"object {name} in the worker's store is not zlib data") from None
    digest = (hashlib.sha1 if len(name) == 40 else hashlib.sha256)(raw).hexdigest()
    header = raw.split(b"\0", 1)[0]
    if digest != name or not header.split(b" ")[0] in (b"blob", b"tree", b"commit", b"tag"):
        raise BadObject(f"object {name} in the worker's store does not hash to its name")
