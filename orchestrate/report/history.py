"""A campaign's history read back from its journal: every attempt of every node as timed phases
(queued, running, landed, judging, merging), its gate verdicts, seams and decisions.

Only the journal is read, never the engine's memory: the report of a finished campaign and of one in
flight come from the same entries. Times are seconds since the campaign's first entry.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

PHASES = ("queued", "running", "landed", "judging", "merging")
# Phases that wait rather than work: they count toward the makespan, never toward a node's work.
WAITING = ("queued", "landed")
# Statuses that end whatever phase a node was in (its attempt is over, or it will never run).
ENDING = {"REWORK": "rework", "INVALIDATED": "invalidated", "ABANDONED": "abandoned", "SKIPPED": "skipped",
          "PENDING": "rescheduled"}


def seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


@dataclass
class Span:
    phase: str
    start: float
    end: float | None = None  # None: still in this phase when the journal ends

    def length(self, now: float) -> float:
        return (self.end if self.end is not None else now) - self.start


@dataclass
class Attempt:
    node: str
    number: int
    spans: list[Span] = field(default_factory=list)
    outcome: str = ""  # accept, rework, merged, invalidated, ... ; empty while in flight
    logs: list[str] = field(default_factory=list)
    worker_rc: int | None = None
    worker_seconds: float | None = None


@dataclass
class History:
    topic: str
    start: float
    end: float
    attempts: list[Attempt] = field(default_factory=list)
    gates: dict[str, list[dict]] = field(default_factory=dict)  # node -> its gate entries, in order
    seams: list[dict] = field(default_factory=list)  # {seam, node, at, reason, choices, decided}
    merges: dict[str, dict] = field(default_factory=dict)  # node -> context of its newest merge entry
    escalations: int = 0
    closed_at: float | None = None

    def of(self, node: str) -> list[Attempt]:
        return [a for a in self.attempts if a.node == node]

    def spent(self, phase: str) -> dict[str, float]:
        """node -> seconds its attempts spent in `phase`: judging counts evaluators run ahead of the node's
        turn (eager, in the sandbox), as the timeline shows them."""
        total: dict[str, float] = {}
        for a in self.attempts:
            total[a.node] = total.get(a.node, 0.0) + sum(s.length(self.end) for s in a.spans if s.phase == phase)
        return total

    @property
    def makespan(self) -> float:
        spans = [s for a in self.attempts for s in a.spans]
        if not spans:
            return 0.0
        return max(s.end if s.end is not None else self.end for s in spans) - min(s.start for s in spans)


class _Reader:
    """Folds entries in time order; `current` maps node -> its attempt that has not ended yet."""

    def __init__(self, history: History) -> None:
        self.h = history
        self.current: dict[str, Attempt] = {}
        # RECONCILE judges one node (or group) per visit and records its gates with the verdict, so a
        # node's judging began when the engine last entered RECONCILE; before that it waited, landed.
        self.reconcile_at = 0.0
        self.ahead: dict[str, float] = {}  # node -> when its evaluators started ahead of RECONCILE (eager)

    def at(self, entry: dict) -> float:
        return seconds(entry["created_at"]) - self.h.start

    def enter(self, node: str, phase: str | None, t: float) -> None:
        attempt = self.current.get(node)
        if attempt is None:
            return
        if attempt.spans and attempt.spans[-1].end is None:
            attempt.spans[-1].end = max(t, attempt.spans[-1].start)
        if phase:
            attempt.spans.append(Span(phase, t))

    def finish(self, node: str, outcome: str, t: float) -> None:
        if node in self.current:
            self.enter(node, None, t)
            self.current.pop(node).outcome = outcome

    def entry(self, e: dict) -> None:
        kind, cx, t = e["kind"], e.get("context", {}), self.at(e)
        node = cx.get("node")
        if kind == "node" and node:
            self.status(node, cx, t)
        elif kind == "result" and cx.get("effect") == "worker-spawn" and node in self.current:
            self.enter(node, "running", t)
        elif kind == "result" and cx.get("effect") == "worker-start" and node in self.current:
            attempt = self.current[node]
            attempt.worker_rc, attempt.worker_seconds = cx.get("rc"), cx.get("seconds")
            self.enter(node, "landed" if cx.get("rc") == 0 else None, t)  # its result is being collected
        elif kind == "result" and cx.get("effect") == "evaluators-start" and node in self.current:
            self.ahead[node] = t
            self.judged(node)  # judged from now on, as `status` says ("being judged"), not waiting
        elif kind == "intent" and cx.get("effect") == "worker-start" and node in self.current:
            log = cx.get("log")
            if log and log not in self.current[node].logs:
                self.current[node].logs.append(log)
        elif kind == "transition" and cx.get("to") == "RECONCILE":
            self.reconcile_at = t
        elif kind == "verdict" and node:
            self.judged(node)
            if cx.get("verdict") == "accept":
                self.enter(node, "merging", t)
            else:
                self.finish(node, cx.get("verdict", ""), t)
        elif kind == "merge" and node:
            self.h.merges[node] = cx
            self.finish(node, "merged", t)
        elif kind == "gate" and node:
            mine = self.current.get(node) or next((a for a in reversed(self.h.attempts) if a.node == node), None)
            self.h.gates.setdefault(node, []).append({**cx, "at": t, "id": e["id"], "by": e.get("source_entity"),
                                                      "attempt": mine.number if mine else None})
        elif kind == "seam":
            self.h.seams.append({"seam": cx.get("seam"), "node": node, "at": t, "reason": cx.get("reason", ""),
                                 "choices": list(cx.get("choices", [])), "id": e["id"], "decided": None})
            self.h.escalations += cx.get("seam") == "realignment"
        elif kind == "decision":
            for seam in reversed(self.h.seams):
                if seam["id"] == cx.get("opened") or (seam["decided"] is None and seam["seam"] == cx.get("seam")):
                    seam["decided"] = {"choice": cx.get("choice"), "who": cx.get("who") or e.get("source_entity"),
                                       "note": cx.get("note", ""), "at": t, "how": e.get("source_type")}
                    break
        elif kind == "close":
            self.h.closed_at = t

    def judged(self, node: str) -> None:
        """Split a landed span where its judging began (RECONCILE on this node, or its evaluators starting ahead
        of it): waiting before, judging after."""
        attempt = self.current.get(node)
        last = attempt.spans[-1] if attempt and attempt.spans else None
        ahead = self.ahead.pop(node, None)
        if last is not None and last.phase == "landed" and last.end is None:
            began = max(self.reconcile_at if ahead is None else ahead, last.start)
            last.end = began
            attempt.spans.append(Span("judging", began))

    def status(self, node: str, cx: dict, t: float) -> None:
        status = cx.get("status")
        if status == "DISPATCHED":
            self.ahead.pop(node, None)  # an earlier attempt's evaluators that ran ahead: not this one's judging
            number = int(cx.get("attempt") or 1)
            attempt = self.current.get(node)
            if attempt is None or attempt.number != number:  # a resumed worker (WIDEN) keeps its attempt
                if attempt is not None:
                    self.finish(node, "superseded", t)
                attempt = Attempt(node, number)
                self.h.attempts.append(attempt)
                self.current[node] = attempt
            self.enter(node, "queued", t)
        elif status == "LANDED":
            last = self.current[node].spans[-1] if node in self.current and self.current[node].spans else None
            if last is None or last.phase != "landed" or last.end is not None:  # not already waiting since its result
                self.enter(node, "landed", t)
        elif status in ENDING:
            self.finish(node, ENDING[status], t)


def read(topic: str, entries: list[dict]) -> History:
    """The history of a campaign from its journal entries (in file order)."""
    if not entries:
        return History(topic, 0.0, 0.0)
    start = min(seconds(e["created_at"]) for e in entries)
    end = max(seconds(e["created_at"]) for e in entries) - start
    history = History(topic, start, end)
    reader = _Reader(history)
    # Held entries are written at the next commit, after the effects they precede: time orders them.
    for e in sorted(entries, key=lambda e: (e["created_at"], e.get("seq", 0))):
        reader.entry(e)
    return history
