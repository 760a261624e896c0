"""HANDLERS: the only place states meet code. Each handler does its state's work and returns an Outcome.

May use: the engine's context, states and helpers, and every room below the engine; never another
handler, the loop, the runner or the CLI.
"""
from __future__ import annotations

from orchestrate.engine.handlers import (
    await_,
    boundary,
    checkpoint,
    close,
    derive,
    dispatch,
    merge,
    realign,
    reconcile,
    run_layer,
    seam,
    surface_exceed,
)
from orchestrate.engine.states import State

HANDLERS = {
    State.DERIVE: derive.handle,
    State.RUN_LAYER: run_layer.handle,
    State.DISPATCH: dispatch.handle,
    State.AWAIT: await_.handle,
    State.SURFACE_EXCEED: surface_exceed.handle,
    State.RECONCILE: reconcile.handle,
    State.MERGE: merge.handle,
    State.CHECKPOINT: checkpoint.handle,
    State.BOUNDARY: boundary.handle,
    State.REALIGN: realign.handle,
    State.CLOSE: close.handle,
    State.SEAM: seam.handle,
}
