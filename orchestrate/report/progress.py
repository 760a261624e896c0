"""A run as a person watches it: overall progress, and what each active node is doing right now.

The loop reports each state it enters and AWAIT reports the executor's workers; from those this builds
the live view's header and node lines (on a terminal) and the one-line summary (elsewhere). It holds
plain values only, replaced whole, so the live view's refresh thread can read them while the engine runs.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from orchestrate.printable import printable
from orchestrate.recorder.campaign import ABANDONED, ACCEPTED, LANDED, SKIPPED, Campaign
from orchestrate.report.status import layer_text

SETTLED = (ACCEPTED, SKIPPED, ABANDONED)
PHASES = ("running", "queued", "judging", "merging", "landed")  # the order node lines are shown in
# The log each phase writes into the node's run folder, named as workers/launch.py, RECONCILE and MERGE
# name them; the live view shows its last line.
LOGS = {"running": "attempt-{n}.log", "queued": "", "landed": "attempt-{n}.log",
        "judging": "evaluators-{n}.log", "merging": "checks-{n}.log"}
FOCUS_PHASE = {"RECONCILE": "judging", "MERGE": "merging"}
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f]")
TAIL_BYTES = 4096


@dataclass(frozen=True)
class Active:
    node: str
    phase: str
    since: float | None  # clock time the phase began; None for phases without a duration (queued, landed)
    log: Path | None


@dataclass(frozen=True)
class Snapshot:
    topic: str = ""
    layer: int = 0  # 0-based, like Campaign.k
    layers: int = 0
    done: int = 0
    total: int = 0
    state: str = ""
    active: tuple[Active, ...] = ()


class Progress:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.started = clock()
        self.snap = Snapshot()
        self._campaign: Campaign | None = None  # read on the engine's thread only, never while rendering
        self._runs: Path | None = None
        self._attempts: dict[str, int] = {}

    def state(self, state: str, c: Campaign, runs: Path | None, focus: Iterable[str] = ()) -> None:
        """The loop enters `state`; `focus` is the node (or LOOPS_WITH group) it judges or merges."""
        now = self.clock()
        nodes = [n for layer in c.layers for n in layer]
        self._runs = runs
        self._attempts = {n: c.nodes[n].attempt for n in nodes if n in c.nodes}
        focus = list(focus)
        active = [self._active(n, FOCUS_PHASE[state], now) for n in focus if state in FOCUS_PHASE]
        active += [self._active(n, "landed", None) for n in c.with_status(LANDED) if n not in focus]
        self._campaign = c
        self.snap = Snapshot(c.topic, c.k, len(c.layers), sum(1 for n in nodes if c.nodes[n].status in SETTLED),
                             len(nodes), state, tuple(active))

    def workers(self, running: list[tuple[str, float]], queued: Iterable[str]) -> None:
        """AWAIT polled the executor: `running` as it reports them (queued ones included), `queued`."""
        now, waiting = self.clock(), list(queued)
        active = [self._active(n, "running", now - seconds) for n, seconds in running if n not in waiting]
        active += [self._active(n, "queued", None) for n in waiting]
        shown = {a.node for a in active}
        landed = [n for n in self._campaign.with_status(LANDED) if n not in shown] if self._campaign else []
        active += [self._active(n, "landed", None) for n in landed]
        self.snap = Snapshot(**{**self.snap.__dict__, "active": tuple(active)})

    def _active(self, node: str, phase: str, since: float | None) -> Active:
        name = LOGS[phase].format(n=self._attempts.get(node, 0))
        return Active(node, phase, since, self._runs / node / name if self._runs and name else None)

    def counts(self) -> dict[str, int]:
        return {p: sum(1 for a in self.snap.active if a.phase == p) for p in PHASES}

    def header(self) -> str:
        s, n = self.snap, self.counts()
        elapsed, state = f"elapsed {duration(self.clock() - self.started)}", f" | {s.state}" if s.state else ""
        if not s.layers:  # DERIVE has yet to read the plan
            return f"{s.topic or 'campaign'} | starting | {elapsed}{state}"
        return (f"{s.topic} | {layer_text(s.layer, s.layers)} | {s.done}/{s.total} done | {n['running']} running | "
                f"{n['queued']} queued | {n['judging']} judging | {elapsed}{state}")

    def node_lines(self) -> list[str]:
        now, width = self.clock(), max((len(a.node) for a in self.snap.active), default=0)
        lines = []
        for a in sorted(self.snap.active, key=lambda a: PHASES.index(a.phase)):
            spent = duration(now - a.since) if a.since is not None else ""
            tail = last_line(a.log) if a.log else ""
            lines.append(f"  {a.node:<{width}}  {a.phase:<8} {spent:>7}  {tail}".rstrip())
        return lines

    def summary(self) -> str:
        s, n, now = self.snap, self.counts(), self.clock()
        running = [f"{a.node} {duration(now - a.since)}" for a in s.active if a.phase == "running" and a.since is not None]
        layer = f"{layer_text(s.layer, s.layers)}, " if s.layers else ""
        return (f"progress: {s.topic} {layer}{s.done}/{s.total} done, {n['running']} running"
                + (f" ({', '.join(running)})" if running else "")
                + f", {n['queued']} queued, {n['judging']} judging, elapsed {duration(now - self.started)}")


def duration(seconds: float) -> str:
    seconds = max(seconds, 0.0)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"


def last_line(path: Path) -> str:
    """The last non-empty line of a log, without the control sequences a worker may have printed."""
    from orchestrate import git_files
    try:  # a worker can put a FIFO in its log's place (its run folder is writable, in the sandbox too)
        text = git_files.tail(path, TAIL_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""
    for line in reversed(text.splitlines()):
        clean = printable(_CONTROL.sub("", line)).strip()  # and C1 controls, bidi overrides (rv68)
        if clean:
            return clean
    return ""
