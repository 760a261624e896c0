"""Fault injection for the crash tests: `ORCHESTRATE_FAULT=point:N` SIGKILLs this process the N-th time
it reaches `point`. Points: append (a journal append numbered, not yet written), flush (journal written, commit
not begun), commit (commit object made, branch not moved), merge (the merge commit made, campaign/<topic> not
moved to it), merged (the branch moved and the result written, the merge's own entries not yet), poll (waiting on
workers), spawned (a worker's start journalled, its node's own entry for the attempt still held),
seal (a journal segment linked, the live file not yet started anew), sealed (a seal made, not yet committed).
`point:N:term` sends SIGTERM instead (an interrupt, as `kill PID` or Ctrl-C, landing exactly there).
Unset, it costs one dictionary lookup.
"""
from __future__ import annotations

import os
import signal

_counts: dict[str, int] = {}


def reach(point: str) -> None:
    spec = os.environ.get("ORCHESTRATE_FAULT")
    if not spec:
        return
    name, _, rest = spec.partition(":")
    if name != point:
        return
    nth, _, how = rest.partition(":")
    _counts[point] = _counts.get(point, 0) + 1
    if _counts[point] == int(nth or 1):
        os.kill(os.getpid(), signal.SIGTERM if how == "term" else signal.SIGKILL)
