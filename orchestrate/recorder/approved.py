"""The campaign's DAG as last approved. A person's edit of the copy in the recorder is never used before
the dag-amendment seam accepts it (README), by the runner or by anything that only reads the campaign
(`decide`, `report`, `status`): until then the version the recorder committed with the journal's hash
is the plan, whatever the working tree holds, half-typed YAML included."""
from __future__ import annotations

import hashlib
import tempfile
import time
from pathlib import Path

from orchestrate.dag.load import load_dag
from orchestrate.dag.model import Dag

_hashed: dict[str, tuple[tuple, str]] = {}  # path -> (its stat when hashed, sha256)


def file_hash(path: Path) -> str:
    """sha256 of the file, read again only when its inode, size, mtime or ctime changed: the loop asks
    before every state whether the DAG copy was edited, and a 10k-node DAG is megabytes. A write always
    moves ctime forward, which no unprivileged process can set back."""
    st = path.stat()
    key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    known = _hashed.get(str(path))
    if known is not None and known[0] == key:
        return known[1]
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > 2_000_000_000:  # as git's racy-clean rule: a
        _hashed[str(path)] = (key, digest)  # file changed within the clock's granularity is never trusted
    return digest


def recorded_text(ledger: Path, path: Path, digest: str) -> bytes | None:
    """The content of `path` the recorder committed with this sha256, newest first; None when none has it."""
    try:
        rel = str(path.resolve().relative_to(ledger.resolve()))
    except ValueError:
        return None
    from orchestrate import git
    for sha in git.lines(ledger, "log", "--format=%H", "--", rel):
        done = git.git(ledger, "show", f"{sha}:{rel}", check=False)
        if done and hashlib.sha256(done.stdout.encode()).hexdigest() == digest:
            return done.stdout.encode()
    return None


def load(ledger: Path, path: Path, campaign, *, edited: bool = False) -> Dag:
    """The DAG at `path` (the campaign's copy) as `campaign.dag_hash` approved it; with `edited` (the seam
    or the engine's own amendment adopting the edit) the file as it stands. A campaign recorded before
    hashes were kept, or a hash no commit holds, has only the file to go by."""
    brief_dir = Path(campaign.brief_dir) if campaign.brief_dir else None
    if not edited and campaign.dag_hash and _differs(path, campaign.dag_hash):
        recorded = recorded_text(ledger, path, campaign.dag_hash)
        if recorded is not None:
            with tempfile.TemporaryDirectory() as tmp:
                copy = Path(tmp) / path.name
                copy.write_bytes(recorded)
                return load_dag(copy, topic=campaign.topic, brief_dir=brief_dir or path.parent)
    return load_dag(path, topic=campaign.topic, brief_dir=brief_dir)


def _differs(path: Path, digest: str) -> bool:
    try:
        return file_hash(path) != digest
    except OSError:
        return True  # deleted (or unreadable): the approved version is still the plan
