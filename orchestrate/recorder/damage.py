"""Lines of a journal that orchestrate did not write: what `resume` refuses and `status` reports.

The engine writes one JSON object per line, keys sorted, with a string `id` of the form `<topic>:<n>`,
a string `kind`, an integer `seq` and an object `context` (recorder/journal.py). A complete line that
is not such an entry was written by something else (a worker without the sandbox, a person, another
tool): folding it could crash or silently change the campaign, so `resume` stops on it before any
repair, naming the line, and `status` says it is there. A torn last line (no newline: a crash
mid-append) is not damage: resume drops it. `orchestrate doctor` lists every problem of every entry. The
commands that read a campaign whole (`why`, `report`, `graph`, `replay --campaign`) refuse it as `resume` does.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from orchestrate.errors import ForeignWrite
from orchestrate.recorder import segments

# What the engine's own serialisation looks like: a cheap test that spares parsing the common case.
_CANONICAL = re.compile(rb'^\{"context":\{.*,"id":"[^"]+:[0-9]+","kind":"[a-z0-9_-]+","seq":[0-9]+,')


def damaged(journal: Path) -> list[tuple[str, str]]:
    """(`file:line`, what is wrong) for each complete line, sealed segments included, that is not an entry
    of the engine's shape."""
    data, where = segments.read(journal)
    lines = data.split(b"\n")
    lines.pop()  # after the last newline: empty, or a torn append
    found = []
    for number, raw in enumerate(lines, 1):
        if not _CANONICAL.match(raw) and (why := _problem(raw)):
            found.append((where(number), why))
    return found


def _problem(raw: bytes) -> str | None:
    try:
        entry = json.loads(raw)
    except ValueError:
        return "not JSON"
    if not isinstance(entry, dict):
        return "not a JSON object"
    entry_id = entry.get("id")
    if not isinstance(entry_id, str) or not re.fullmatch(r".+:[0-9]+", entry_id):
        return "no entry id" if entry_id is None else f"the id {json.dumps(entry_id)} is not one orchestrate gives"
    if not isinstance(entry.get("kind"), str):
        return "no kind"
    if not isinstance(entry.get("context", {}), dict):
        return "its context is not an object"
    if type(entry.get("seq")) is not int:
        return "no seq"
    return None


def refuse(journal: Path, undone: str = "nothing was resumed or repaired") -> None:
    """ForeignWrite (exit 1) naming the first damaged line, if any, and saying what was not done (`undone`);
    nothing is read further or repaired."""
    found = damaged(journal)
    if not found:
        return
    place, why = found[0]
    more = f" (and {len(found) - 1} more line(s))" if len(found) > 1 else ""
    ledger = journal.parents[2]
    folder = journal.parent.relative_to(ledger)
    raise ForeignWrite(f"{place}: {why}: a line orchestrate did not write{more}; {undone}",
                       hint=f"`orchestrate doctor` lists every problem; restore the journal with `git -C {ledger} "
                            f"checkout HEAD -- {folder / place.rsplit(':', 1)[0]}` (or delete the line), then run it again")


def describe(journal: Path) -> str | None:
    """One line for `status`: where the journal holds lines orchestrate did not write, or None."""
    found = damaged(journal)
    if not found:
        return None
    where = ", ".join(f"{place} ({why})" for place, why in found[:3])
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    return f"damaged journal: {where}{more}; `orchestrate doctor` lists them, `orchestrate resume` refuses to continue"


def sound(lines: list[bytes]) -> list[bytes]:
    """The lines of the engine's shape, for a reader that must not crash on damage (`status` folds these
    and says where the rest are with `describe`)."""
    return [raw for raw in lines if _CANONICAL.match(raw) or _problem(raw.rstrip(b"\n")) is None]
