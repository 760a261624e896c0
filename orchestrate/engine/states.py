"""The engine's states and the outcomes a handler can return."""
from __future__ import annotations

from enum import Enum


class State(str, Enum):
    DERIVE = "DERIVE"
    RUN_LAYER = "RUN_LAYER"
    DISPATCH = "DISPATCH"
    AWAIT = "AWAIT"
    SURFACE_EXCEED = "SURFACE_EXCEED"
    RECONCILE = "RECONCILE"
    MERGE = "MERGE"
    CHECKPOINT = "CHECKPOINT"
    BOUNDARY = "BOUNDARY"
    REALIGN = "REALIGN"
    CLOSE = "CLOSE"
    SEAM = "SEAM"
    PAUSE = "PAUSE"
    HALT = "HALT"
    DONE = "DONE"


class Outcome(str, Enum):
    VALID = "valid"
    INVALID = "invalid"
    READY = "ready"
    DISPATCHED = "dispatched"
    RETURNED = "returned"
    SURFACE_EXCEED = "surface-exceed"
    REFUTED_PREMISE = "refuted-premise"
    RESERVED_HALT = "reserved-halt"
    WIDEN = "widen"
    SERIALIZE = "serialize"
    REFUSED = "refused"
    ACCEPT = "accept"
    REWORK = "rework"
    ESCALATE = "escalate"
    ADHERENCE_FAILED = "adherence-failed"
    MERGED = "merged"
    LANDED = "landed"
    NEXT = "next"
    LAYER_DONE = "layer-done"
    NEXT_LAYER = "next-layer"
    LAST_LAYER = "last-layer"
    INCOHERENT = "incoherent"
    AMENDED = "amended"
    REDISPATCH = "redispatch"
    RESCHEDULED = "rescheduled"
    NEEDS_HUMAN = "needs-human"
    CLOSED = "closed"
    FAILED = "failed"
    PAUSED = "paused"
    SKIP = "skip"
    HALTED = "halt"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    REVIEWED = "reviewed"
    ABANDONED = "abandoned"
    CROSSING = "crossing-decided"
    RUNNING = "running"
    DEFERRED = "deferred"


START = State.DERIVE
TERMINAL = frozenset({State.HALT, State.PAUSE, State.DONE})
