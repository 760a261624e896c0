"""Checkpoints: snapshots of a campaign's folded state that speed resume up; the journal stays the authority.

Reading follows reference/seeds-other.md §3.7 exactly: a checkpoint that is not a JSON object is
skipped with a warning; a missing schema_version reads as 1 with a warning; a greater version, or
one that is not a plain integer, refuses; one that does not match the journal is ignored.
"""
from __future__ import annotations

import json
import os
import re
import stat
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from orchestrate.atomic import write_atomic
from orchestrate.removal import remove
from orchestrate.errors import ForeignWrite, OrchestrateError
from orchestrate.recorder.campaign import Campaign, apply

SCHEMA_VERSION = 1
KEEP = 10


class CheckpointRefused(OrchestrateError):
    """A checkpoint this version must not read: resume stops (exit 1) rather than guess."""


def _pattern(topic: str) -> re.Pattern:
    return re.compile(rf"^{re.escape(topic)}_\d{{8}}T\d{{6}}_\d{{6}}Z_[0-9a-f]{{8}}\.json$")


def listing(folder: Path, topic: str) -> list[Path]:
    """This topic's checkpoint files, oldest first (by the timestamp in the name, then the name)."""
    if not folder.is_dir():
        return []
    pat = _pattern(topic)
    return sorted((p for p in folder.iterdir() if pat.match(p.name)), key=lambda p: p.name[len(topic) + 1:])


def write(folder: Path, campaign: Campaign, *, log_seq: int, log_entry_id: str, message: str) -> Path:
    stamp = datetime.now(timezone.utc)
    name = f"{campaign.topic}_{stamp.strftime('%Y%m%dT%H%M%S_%f')}Z_{os.urandom(4).hex()}.json"
    body = {"schema_version": SCHEMA_VERSION, "checkpoint_id": name[:-5], "campaign": campaign.topic,
            "message": message, "created_at": stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "log_seq": log_seq,
            "log_entry_id": log_entry_id, "state": campaign.to_dict()}
    path = folder / name
    write_atomic(path, json.dumps(body, sort_keys=True))
    for old in listing(folder, campaign.topic)[:-KEEP]:
        old.unlink()
    return path


def read_version(path: Path, data: dict, warn: Callable[[str], None]) -> int:
    if "schema_version" not in data:
        warn(f"checkpoint {path.name} has no schema_version; reading it as version 1")
        return 1
    version = data["schema_version"]
    if type(version) is int and version > SCHEMA_VERSION:
        raise CheckpointRefused(
            f"checkpoint {path.name} has schema_version {version}, but this orchestrate reads at most "
            f"{SCHEMA_VERSION}", hint="upgrade orchestrate, or resume with --from-log to rebuild from the journal")
    if type(version) is not int or version < 1:
        raise CheckpointRefused(f"checkpoint {path.name}: invalid schema_version {version!r} "
                                "(expected a positive integer)", hint="resume with --from-log")
    return version


MOST = 256 << 20  # bytes: a file named like a checkpoint that is larger is not read (a planted one could be any size)


def settle(ledger: Path, topic: str, held: dict[str, tuple[str, int]], warn: Callable[[str], None]) -> None:
    """Before anything is committed or read: the topic's checkpoints as the recorder's last commit holds them
    (`held`: name -> (blob id, size)), or fewer. A checkpoint is written once and never changed: one that
    differs is put back; one the commit lacks (written by a runner that crashed before its commit, or planted
    while no runner watched) is removed, for the next commit would keep it and every later resume trust it,
    and a checkpoint only speeds resume up. A link or a file in the folder's place is removed, never followed."""
    rel = f"state/{topic}/checkpoints"
    folder = ledger / rel
    try:
        _settle(ledger, rel, held, warn)
    except OSError as exc:  # a folder or file that cannot be removed or written (permissions)
        raise ForeignWrite(f"{folder}: cannot be put as the recorder's last commit holds it ({exc.strerror or exc}: "
                           f"{exc.filename}); nothing was resumed or repaired",
                           hint=f"remove what is in it that the recorder did not write (`rm -rf {exc.filename}`), "
                                "then resume") from None


def _settle(ledger: Path, rel: str, held: dict[str, tuple[str, int]], warn: Callable[[str], None]) -> None:
    folder = ledger / rel
    try:
        kind = stat.S_IFMT(os.lstat(folder).st_mode)
    except FileNotFoundError:
        kind = 0
    if kind and kind != stat.S_IFDIR:
        folder.unlink()
        warn(f"{rel} was not a folder; removed")
    put_back = []
    if kind == stat.S_IFDIR:
        with os.scandir(folder) as found:
            entries = list(found)
        for entry in entries:
            committed = held.get(entry.name)
            if committed is not None and _as_committed(Path(entry.path), *committed):
                continue
            remove(Path(entry.path))
            if committed is None:
                warn(f"checkpoint {entry.name} is not in the recorder's last commit (written just before a crash, "
                     "or by something else); removed")
            else:
                put_back.append(entry.name)
                warn(f"checkpoint {entry.name} differed from the recorder's last commit; put back")
    if kind and kind != stat.S_IFDIR:
        put_back = list(held)
    if put_back:  # the committed blobs written out as they are: no checkout (no index, no filter, no lock)
        from orchestrate import git
        folder.mkdir(parents=True, exist_ok=True)
        for name in put_back:
            write_atomic(folder / name, git.git(ledger, "cat-file", "blob", held[name][0]).stdout)


def _as_committed(path: Path, sha: str, size: int) -> bool:
    from orchestrate import git_files, git_ids
    try:
        st = os.lstat(path)
        return stat.S_ISREG(st.st_mode) and st.st_size == size and \
            git_ids.blob_id(git_files.small(path, size), len(sha)) == sha
    except OSError:
        return False


def newest(folder: Path, topic: str, entry_id_at: Callable[[int], str | None],
           warn: Callable[[str], None]) -> tuple[Campaign, int] | None:
    """(state, log_seq) from the newest usable checkpoint, or None for a full replay. Resume has `settle`d the
    folder first: what is there is what the recorder's last commit holds."""
    from orchestrate.recorder import segments
    for path in reversed(listing(folder, topic)):
        try:
            too_large = os.lstat(path).st_size > MOST
        except OSError:
            continue
        if too_large:
            warn(f"checkpoint {path.name} is larger than {MOST} bytes; ignoring it")
            continue
        raw = segments.content(path)  # b"" for a link, a folder or a FIFO: never followed or waited on
        try:
            data: Any = json.loads(raw)
        except ValueError:
            warn(f"checkpoint {path.name} is not valid JSON; ignoring it")
            continue
        if not isinstance(data, dict):
            warn(f"checkpoint {path.name} is not a JSON object; ignoring it")
            continue
        read_version(path, data, warn)
        seq, entry_id, state = data.get("log_seq"), data.get("log_entry_id"), data.get("state")
        if data.get("campaign") != topic or not isinstance(seq, int) or not isinstance(state, dict):
            warn(f"checkpoint {path.name} does not belong to campaign {topic}; replaying the journal")
            return None
        if entry_id_at(seq) != entry_id:
            warn(f"checkpoint {path.name} does not match the journal at entry {seq}; replaying the journal")
            return None
        try:
            return Campaign.from_dict(state), seq
        except (TypeError, KeyError) as exc:
            warn(f"checkpoint {path.name} cannot be read ({exc}); replaying the journal")
            return None
    return None


def restore(folder: Path, topic: str, lines: list[bytes], warn: Callable[[str], None], *,
            from_log: bool = False) -> tuple[Campaign, bool]:
    """(state, whether a checkpoint was used): the newest checkpoint that matches the journal `lines`,
    plus the lines after it; the whole journal when there is none, or with `from_log`."""
    def entry_id_at(seq: int) -> str | None:
        return json.loads(lines[seq - 1]).get("id") if 0 < seq <= len(lines) else None

    found = None if from_log else newest(folder, topic, entry_id_at, warn)
    campaign, start = found if found else (Campaign(), 0)
    for raw in lines[start:]:
        apply(campaign, json.loads(raw))
    return campaign, found is not None
