"""Which campaigns the recorder knows: a journal with an `open` entry, closed once it has a `close` entry.

Read from the journal files rather than the recorder's history: `git log --grep` over a long
campaign's tens of thousands of commits would make `status` grow with the campaign.
"""
from __future__ import annotations

from pathlib import Path

_OPEN, _CLOSE = b'"kind":"open"', b'"kind":"close"'  # entries are written with sorted keys, no spaces


def lifecycle(ledger: Path) -> dict[str, str]:
    """{topic: 'open' | 'close'} for every campaign the recorder has opened."""
    found: dict[str, str] = {}
    state = ledger / "state"
    if not (ledger / ".git").exists() or not state.is_dir():
        return {}
    for journal in sorted(state.glob("*/journal.jsonl")):
        data = journal.read_bytes()  # a byte search, no JSON parsing: fast even for 100 MB
        if _CLOSE in data:
            found[journal.parent.name] = "close"
        elif _OPEN in data:
            found[journal.parent.name] = "open"
    return found


def in_flight(ledger: Path) -> list[str]:
    return sorted(t for t, mark in lifecycle(ledger).items() if mark == "open")
