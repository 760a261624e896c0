"""The loop: run the current state's handler, look the next state up in the table, record, repeat.

It stops at a terminal state (HALT, SEAM). Ctrl-C kills every worker's process group, records the
interruption and exits 130; `orchestrate resume` continues from the journal.
"""
from __future__ import annotations

from orchestrate.engine.context import Context
from orchestrate.engine.handlers import HANDLERS
from orchestrate.engine.states import TERMINAL, State
from orchestrate.engine.table import next_state
from orchestrate.errors import ExitCode, Interrupted
from orchestrate.recorder import checkpoints, sketch
from orchestrate.seams import choices as seams

# A checkpoint holds the whole state, so writing one per merge would make a campaign quadratic; one
# per this many journal entries bounds what resume replays while the cost per node stays flat.
CHECKPOINT_EVERY = 200


def drive(ctx: Context) -> int:
    state = State(ctx.campaign.state)
    try:
        while state not in TERMINAL:
            outcome = HANDLERS[state](ctx)
            nxt = next_state(state, outcome)
            detail, ctx.subject = ctx.subject, ""
            if ctx.recorder is not None:
                subject = detail if detail.startswith("log: ") else (
                    f"{ctx.topic}: {state.value} {outcome.value} -> {nxt.value}" + (f" ({detail})" if detail else ""))
                ctx.emit("transition", {"from": state.value, "outcome": outcome.value, "to": nxt.value,
                                        "detail": detail, "subject": subject})
                if nxt in TERMINAL:
                    _sketch_status(ctx, nxt.value)
                if nxt in TERMINAL or (state is State.CHECKPOINT and ctx.recorder.seq + len(ctx.recorder.held)
                                       - ctx.checkpointed >= CHECKPOINT_EVERY):
                    _checkpoint(ctx, f"{state.value} -> {nxt.value}")
                ctx.recorder.commit(subject)
            ctx.out.line(f"{state.value} -> {nxt.value} ({outcome.value}{': ' + detail if detail else ''})")
            state = nxt
    except KeyboardInterrupt:
        ctx.executor.cancel_all()
        ctx.out.stop_live()
        if ctx.recorder is not None:
            ctx.recorder.held.clear()  # the half-done state runs again on resume
            ctx.emit("interrupt", {"state": state.value})
            ctx.recorder.commit(f"{ctx.topic}: interrupted in {state.value}")
        raise Interrupted(f"interrupted in {state.value}; workers stopped",
                          hint="`orchestrate resume` continues from here") from None
    except Exception:  # a halt raised mid-state (a foreign write, a bug): no worker outlives the runner
        ctx.executor.cancel_all()
        raise
    finally:
        ctx.out.stop_live()
    return _finish(ctx, state)


def _checkpoint(ctx: Context, message: str) -> None:
    """Snapshot the folded state next to the journal entry it covers, in the same recorder commit."""
    rec = ctx.recorder
    rec.flush()
    checkpoints.write(ctx.layout.checkpoints(ctx.topic), ctx.campaign, log_seq=rec.seq,
                      log_entry_id=rec.last_id, message=message)
    ctx.checkpointed = rec.seq


def _sketch_status(ctx: Context, status: str) -> None:
    path = sketch.find(ctx.layout.ledger, ctx.topic)
    if path is not None:
        sketch.set_status(path, status)


def _finish(ctx: Context, state: State) -> int:
    c = ctx.campaign
    if state is State.HALT:
        for p in ctx.problems:
            ctx.out.always(str(p))
        ctx.out.always(f"halted: {ctx.halt_reason or c.halt}")
        return ExitCode.FAILED
    if state is State.DONE:
        ctx.out.always(f"campaign {c.topic} is done: {c.branch} at {c.tip[:12]}")
        return ExitCode.OK
    seam = c.seam or {}
    ctx.out.always("paused at " + "\n".join(seams.details(seam)))
    ctx.out.always("answer it with one of:")
    for choice in seam.get("choices", []):
        ctx.out.always(f"  orchestrate decide {seam.get('seam')} {choice} --topic {c.topic} --note \"...\"")
    if seam.get("seam") != "final-acceptance":
        ctx.out.always(f"then: orchestrate resume --topic {c.topic}")
    return ExitCode.PAUSED
