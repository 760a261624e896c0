"""Answers left for a running campaign: `orchestrate decide` while a runner holds the campaign.

The runner owns the journal, so `decide` does not write it: it leaves one answer, bound to the id of the
seam it answers, in `.scratch/answers/<topic>.json`, and the runner records it as the person's decision
at its next step (or `orchestrate resume` does, if the runner has stopped; until then a `decide` finding
the campaign free is refused, as it is while the runner runs). An answer to a seam that has since been
answered another way is stale and is dropped unread.

A worker in the sandbox cannot write here (the project is read-only to it). A worker without the sandbox
can write anything its user can, so a campaign that runs one takes no answer this way: `decide` waits
for the pause, as it always did.
"""
from __future__ import annotations

import json
import time
from contextlib import contextmanager
from pathlib import Path

from orchestrate.atomic import write_atomic
from orchestrate.errors import Concurrency


def path(layout, topic: str) -> Path:
    from orchestrate.recorder.paths import answer_path
    return answer_path(layout.scratch, topic)


def leave(layout, topic: str, seam: dict, choice: str, note: str, who: str) -> None:
    """Leave an answer to `seam` for the runner; one at a time, so that none is lost: two `decide`s at once
    take turns, and the second finds the first's answer waiting."""
    target = path(layout, topic)
    with _turn(target):
        waiting = _read(target)
        if waiting is not None and waiting.get("seam_id") == seam["id"]:
            raise Concurrency(f"an answer to seam {waiting['seam']} already waits for the runner "
                              f"({waiting['choice']} by {waiting['who']})", hint="it is applied at the runner's next step")
        write_atomic(target, json.dumps({"seam_id": seam["id"], "seam": seam["seam"], "node": seam.get("node"),
                                         "choice": choice, "note": note, "who": who,
                                         "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}))


def waiting(layout, topic: str, seam: dict | None, queued: list[dict] = ()) -> dict | None:
    """The answer left for the open `seam`, if any; a stale one (no seam's that is open or `queued` behind it)
    is removed. One left for a queued seam stays: a campaign-wide seam (a budget) that came first put the
    seam it answers in the queue, and it is asked (and the answer applied) once it opens again."""
    target = path(layout, topic)
    answer = _read(target)
    if answer is None:
        return None
    if any(answer.get("seam_id") == q.get("id") for q in queued if seam is None or q.get("id") != seam.get("id")):
        return None
    if seam is None or answer.get("seam_id") != seam.get("id") or answer.get("choice") not in seam["choices"]:
        with _turn(target):  # read again in turn: a `decide` may have just left a fresh answer in its place
            if _read(target) == answer:
                target.unlink(missing_ok=True)
        return None
    return answer


def stands(layout, topic: str, seam: dict | None, queued: list[dict] = ()) -> None:
    """`decide` finding the campaign free: an answer left for a runner that stopped before taking it still
    stands (`resume` applies it, as its person was told), so a second answer is refused as it was while that
    runner lived, never recorded in its place."""
    answer = waiting(layout, topic, seam, queued)
    if answer is not None:
        raise Concurrency(f"an answer to seam {answer['seam']} already waits ({answer['choice']} by {answer['who']}), "
                          "left for a runner that stopped before applying it",
                          hint=f"`orchestrate resume --topic {topic}` applies it")


TURN_WAIT = 10.0  # seconds: a turn takes milliseconds; this is reached only when a holder is wedged


@contextmanager
def _turn(target: Path):
    from orchestrate.flock import Busy, FileLock
    try:
        lock = FileLock(target.with_name(f"{target.name}.lock"), timeout=TURN_WAIT).acquire()
    except Busy:
        raise Concurrency(f"another `orchestrate decide` (or the runner) has held the answers for {TURN_WAIT:g} s",
                          hint="try again in a moment") from None
    try:
        yield
    finally:
        lock.release()


def has_answer(layout, topic: str, seam: dict | None) -> bool:
    """Has an answer to the open seam been left? A stat while nothing waits."""
    return seam is not None and path(layout, topic).exists() and waiting(layout, topic, seam) is not None


def _read(target: Path) -> dict | None:
    try:
        data = json.loads(target.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def answered(layout, topic: str, seam: str) -> str:
    """Who answered `seam` last, and how, when the journal's newest decision is that answer ('' if not): a
    `decide` that comes a moment after it is told so, not that a runner holds the campaign (rv75)."""
    from orchestrate.recorder import segments
    for raw in reversed(segments.tail(layout.journal(topic), 1 << 16).splitlines()):
        if b'"decision"' not in raw:
            continue
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if entry.get("kind") != "decision":
            continue
        cx = entry.get("context") or {}
        if cx.get("seam") != seam:
            return ""
        about = f" for node {cx['node']}" if cx.get("node") else ""
        return f"{cx.get('choice')}{about} by {cx.get('who')}"
    return ""
