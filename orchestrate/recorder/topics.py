"""Which campaigns the recorder knows: a journal with an `open` entry, closed once it has a `close` entry.

Read from the journal files rather than the recorder's history: `git log --grep` over a long
campaign's tens of thousands of commits would make `status` grow with the campaign.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrate.recorder import segments

if TYPE_CHECKING:
    from orchestrate.errors import UsageError

_OPEN, _CLOSE = b'"kind":"open"', b'"kind":"close"'  # entries are written with sorted keys, no spaces


def lifecycle(ledger: Path) -> dict[str, str]:
    """{topic: 'open' | 'close'} for every campaign the recorder has opened."""
    found: dict[str, str] = {}
    state = ledger / "state"
    if not (ledger / ".git").exists() or not state.is_dir():
        return {}
    for journal in sorted(state.glob("*/journal.jsonl")):
        data = segments.read_bytes(journal)  # a byte search, no JSON parsing: fast even for 100 MB
        if _CLOSE in data:
            found[journal.parent.name] = "close"
        elif _OPEN in data:
            found[journal.parent.name] = "open"
    return found


def in_flight(ledger: Path) -> list[str]:
    return sorted(t for t, mark in lifecycle(ledger).items() if mark == "open")


_ABANDONED = b'"abandoned":true'
_DONE = b'"to":"DONE"'  # the transition an accepted final acceptance ends in


def ended(ledger: Path, topic: str) -> bool:
    """Accepted at final acceptance (and that answer applied: DONE), or abandoned: nothing is left to resume or
    decide. A campaign that has closed but waits at final acceptance (or was refused there, or holds an
    acceptance the command that recorded it stopped before applying: rv75) has not ended."""
    try:
        data = segments.read_bytes(ledger / "state" / topic / "journal.jsonl")
    except OSError:
        return False
    at = data.find(_CLOSE)
    if at < 0:
        return False
    for line in data[data.rfind(b"\n", 0, at) + 1:].splitlines():  # the close entry and what follows it
        if _ABANDONED in line or (_DONE in line and b'"kind":"transition"' in line):
            return True
    return False


def open_topics(ledger: Path) -> list[str]:
    """Every campaign that is in flight or paused (at any seam, final acceptance included), or halted."""
    return sorted(t for t in lifecycle(ledger) if not ended(ledger, t))


def refuse_empty(topic: str | None) -> str | None:
    """`--topic "$T"` with T unset is refused (UsageError): not "the default", which `abandon` or `decide` would
    then act on, nor a campaign named `` to look for."""
    if topic == "":
        from orchestrate.errors import UsageError
        raise UsageError("--topic is empty", hint="name a campaign, or leave --topic out for the one in flight")
    return topic


def pick(ledger: Path, topic: str | None, *, newest_ended: bool = False) -> str:
    """The one rule `resume`, `status` and `decide` use without --topic: the single campaign that has not
    ended. None: UsageError saying how to start one; several: UsageError listing them, newest first, with
    their states, to choose from. `newest_ended` (the commands that only read: `status`, `report`,
    `doctor`, `why`): when every campaign has ended, the newest, since there is then nothing to confuse."""
    from orchestrate.errors import UsageError
    if refuse_empty(topic):
        return topic
    candidates = open_topics(ledger)
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        if known := lifecycle(ledger):
            if newest_ended:
                return max(known, key=lambda t: (opened(ledger, t), t))
            raise UsageError("no campaign is in flight or paused (every one has ended)",
                             hint="`orchestrate status --topic T` shows an ended one; `orchestrate run` starts another")
        raise UsageError("no campaign has been started here",
                         hint="`orchestrate run` starts one from .ledger/state/dag.yaml (`orchestrate init` writes a "
                              "starter plan)")
    listed = "\n".join(f"  {t}: {state}, opened {when}" for t, state, when in described(ledger, candidates))
    raise UsageError(f"{len(candidates)} campaigns are in flight or paused; pass --topic with one of them "
                     f"(newest first):\n{listed}")


def unknown(ledger: Path, topic: str) -> UsageError:
    """The one error for a topic the recorder has no campaign of: with the campaigns it has, or how to start one."""
    from orchestrate.errors import UsageError
    known = sorted(lifecycle(ledger))
    if not known:
        return UsageError(f"no campaign `{topic}`: none has been started here", hint="`orchestrate run` starts one")
    return UsageError(f"no campaign `{topic}` in {ledger}", hint=f"its campaigns: {', '.join(known)}")


def described(ledger: Path, names: list[str]) -> list[tuple[str, str, str]]:
    """(topic, state in words, when it was opened) for each, newest first."""
    from orchestrate.recorder.locate import peek
    from orchestrate.recorder.paths import Layout
    layout = Layout(ledger.parent)
    rows = []
    for name in names:
        c = peek(layout, name)
        state = c.state + (f" at seam {c.seam['seam']}" if c.seam else "") + (f" ({c.halt.splitlines()[0]})"
                                                                              if c.state == "HALT" and c.halt else "")
        rows.append((name, state, opened(ledger, name) or "?"))
    return sorted(rows, key=lambda r: (r[2], r[0]), reverse=True)


def opened(ledger: Path, topic: str) -> str:
    """When the campaign was opened (its first entry's created_at, UTC, so it sorts); "" when unreadable."""
    try:
        return json.loads(segments.first_line(ledger / "state" / topic / "journal.jsonl")).get("created_at", "")
    except (OSError, ValueError, AttributeError):
        return ""


def brief_dir(dag: Path) -> Path | None:
    """Where `brief_file` paths of a campaign's own DAG copy (`.ledger/state/<topic>/dag.yaml`) resolve: the
    folder of the DAG the campaign was opened from, as its `open` entry records it. The copy lives away from
    that folder, so the rule for any other DAG (relative to its own folder) would look in the wrong place.
    None when `dag` is not such a copy."""
    dag = dag.absolute()
    journal = dag.parent / "journal.jsonl"
    if dag.name != "dag.yaml" or dag.parent.parent.name != "state" or not journal.exists():
        return None
    try:  # the open entry is among the first: the first file that holds any (a sealed segment, or the live one)
        data = next((found for path in segments.files(journal) if (found := segments.content(path))), b"")
    except OSError:
        return None
    at = data.find(_OPEN)
    if at < 0:
        return None
    end = data.find(b"\n", at)
    line = data[data.rfind(b"\n", 0, at) + 1:end if end >= 0 else len(data)]
    try:
        entry = json.loads(line)
        recorded = entry["context"].get("brief_dir") if entry["kind"] == "open" else None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return Path(recorded) if recorded else None
