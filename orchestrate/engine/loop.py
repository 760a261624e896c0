"""The loop: run the current state's handler, look the next state up in the table, record, repeat.

Before a state runs, a DAG a person edited since it was last approved opens the dag-amendment seam
instead (amend.edited says where that is checked); nothing uses the edit until it is accepted there.
It stops at a terminal state (HALT, SEAM). Ctrl-C (and SIGTERM, which engine/terminate.py turns into
one) kills every worker's process group, records the interruption and exits 130; `orchestrate resume`
continues from the journal.
"""
from __future__ import annotations

from orchestrate import proc, reaping
from orchestrate.engine import amend, evaluations, schedule, watch
from orchestrate.engine.context import Context
from orchestrate.engine.handlers import HANDLERS
from orchestrate.engine.states import TERMINAL, Outcome, State
from orchestrate.engine.table import next_state
from orchestrate.errors import ExitCode, Interrupted, OrchestrateError
from orchestrate.recorder import checkpoints, sketch
from orchestrate.recorder.campaign import LANDED
from orchestrate.report.notify import Notifier, decide_commands
from orchestrate.seams import choices as seams
from orchestrate.workers import handwork, launch

# A checkpoint holds the whole state, so writing one per merge would make a campaign quadratic; one
# per this many journal entries bounds what resume replays while the cost per node stays flat.
CHECKPOINT_EVERY = 200


def drive(ctx: Context) -> int:
    from orchestrate.engine import settings
    # a typo in `notify:` stops the run before it starts: a new campaign's DERIVE lists it with the others
    fresh_and_bad = ctx.recorder is None and settings.problems(ctx.layout)
    ctx.out.notifier = None if fresh_and_bad else Notifier.from_config(ctx.layout)
    proc.before_unconfined(lambda: watch.look_first(ctx))  # evaluators and checks run outside the sandbox
    proc.become_subreaper()  # what judging leaves in a session of its own is adopted here, and ended below
    ctx.judged = lambda nodes, ran: watch.after_judging(ctx, nodes, ran)
    try:
        return _finish(ctx, _walk(ctx))
    finally:
        proc.before_unconfined(None)
        ctx.out.wait_notifiers()  # after the final line: a slow notifier delays the exit, never the news
        # the run rests, halts or is interrupted: nothing it started outlives it, whatever an evaluator, a
        # check or a tripwire left in a session of its own (a worker's leftovers went when it returned)
        reaping.kill_tagged(ctx.runner_tags())
        evaluations.stop(ctx)  # their processes were just killed: the threads waiting on them end


def _walk(ctx: Context) -> State:
    state = State(ctx.campaign.state)
    moved = None  # the transition out of `state`, once emitted
    try:
        if ctx.recorder is not None and ctx.recorder.held:  # only resume's repairs are held here (an attempt started
            # again among them): recorded before the run goes on, else `status` shows the attempt cut off as the one
            # running and an interrupt loses them (rv45); here, where an interrupt stops the workers it started
            subject = f"{ctx.topic}: resume repaired what its runner left"
            ctx.emit("repaired", {"subject": subject})  # the batch is whole: a crash at its commit keeps it
            ctx.recorder.commit(subject)
        while state not in TERMINAL:
            evaluations.tick(ctx)  # eager: evaluators that ended are taken in, those of nodes that landed start
            ctx.out.state(state.value, ctx.campaign, ctx.layout.runs(ctx.topic), _focus(ctx, state))
            if amend.edited(ctx):  # a person's edit of the plan is settled before anything uses it
                amend.open_seam(ctx)
                outcome = Outcome.AMENDED
            else:
                outcome = HANDLERS[state](ctx)
            nxt = next_state(state, outcome)
            if nxt in (State.PAUSE, State.HALT) and ctx.recorder is not None:
                if ctx.executor.running():
                    _settle_workers(ctx, nxt, state)
                evaluations.settle(ctx, wait_for_them=nxt is State.PAUSE)  # what their code changed is put back
            detail, ctx.subject = ctx.subject, ""
            verdicts = [e["context"] for e in ctx.recorder.held if e["kind"] == "verdict"] if ctx.recorder else []
            if ctx.recorder is not None:
                subject = detail if detail.startswith("log: ") else (
                    f"{ctx.topic}: {state.value} {outcome.value} -> {nxt.value}" + (f" ({detail})" if detail else ""))
                moved = ctx.emit("transition", {"from": state.value, "outcome": outcome.value, "to": nxt.value,
                                                "detail": detail, "subject": subject})
                if nxt in TERMINAL:
                    _sketch_status(ctx, nxt.value)
                if nxt in TERMINAL or (state is State.CHECKPOINT and ctx.recorder.seq + len(ctx.recorder.held)
                                       - ctx.checkpointed >= CHECKPOINT_EVERY):
                    _checkpoint(ctx, f"{state.value} -> {nxt.value}")
                if nxt in TERMINAL and ctx.campaign.closed:  # the committed report shows what was decided after CLOSE
                    from orchestrate.report import html as report_html
                    report_html.refresh(ctx.layout, ctx.topic)
                ctx.recorder.commit(subject)
                _notify(ctx, nxt, verdicts)
            ctx.out.line(f"{state.value} -> {nxt.value} ({outcome.value}{': ' + detail if detail else ''})")
            state, moved = nxt, None
    except KeyboardInterrupt:
        if ctx.recorder is not None:
            ctx.recorder.finish_cut_off()
        if moved is not None and ctx.recorder is not None and _recorded(ctx.recorder, moved):
            # the transition is in the journal (the interrupt landed while it was committed, or just after): the run
            # is in the state it records, which resume comes back to; DISPATCH's nodes were recorded, not undone
            state = State(moved["context"]["to"])  # (rv63: their workers' attempts were erased, A's cut off unseen)
            # and its own commit, which the interrupt may have cut off, is made: one commit per transition, and a
            # campaign's `log: open` subject is what close-check looks for (without it, CLOSE halted for good)
            ctx.recorder.commit(moved["context"]["subject"])
        queued = [r.node for r in getattr(ctx.executor, "queue", ())]
        ctx.executor.cancel_all()
        ctx.out.stop_live()
        if ctx.recorder is not None:
            # this DISPATCH's own DISPATCHED entries are still held, never to be recorded: undo what they began.
            # A node an earlier round dispatched (eager) was recorded and may be running: it is cut off, not undone
            unrecorded = [n for n in _held_dispatches(ctx) if n not in queued] if state is State.DISPATCH else []
            ctx.recorder.held.clear()  # the half-done state runs again on resume
            for node in queued + unrecorded:  # never started, or never recorded: not an attempt
                if launch.never_ran(ctx.campaign.nodes[node]) or node in unrecorded:
                    launch.roll_back(ctx, node)
            evaluations.settle(ctx, wait_for_them=False)  # stopped; what their code changed is put back
            ctx.emit("interrupt", {"state": state.value})
            ctx.recorder.commit(f"{ctx.topic}: interrupted in {state.value}")
        raise Interrupted(f"interrupted in {state.value}; workers stopped",
                          hint="`orchestrate resume` continues from here") from None
    except Exception as exc:  # a halt raised mid-state (a foreign write, a bug): no worker outlives the runner
        ctx.executor.cancel_all()
        try:
            evaluations.settle(ctx, wait_for_them=False)
        except Exception:  # noqa: BLE001 - the first error is the one to report; drive kills what is left
            pass
        if isinstance(exc, OrchestrateError) and ctx.recorder is not None:
            ctx.out.notify("halt", ctx.topic, message=f"{ctx.topic}: halted in {state.value}: {exc}")
        raise
    finally:
        ctx.out.stop_live()
    return state


def _held_dispatches(ctx: Context) -> list[str]:
    """The nodes the interrupted DISPATCH gave an attempt: their DISPATCHED entries wait for its transition."""
    held = [e["context"]["node"] for e in ctx.recorder.held
            if e["kind"] == "node" and e["context"].get("status") == "DISPATCHED"]
    return [n for n in dict.fromkeys(held) if (ns := ctx.campaign.nodes[n]).status == "DISPATCHED" and ns.prior
            and not ns.freeze and not handwork.is_human(ctx.dag, n)]


def _recorded(recorder, entry: dict) -> bool:
    """Is `entry` in the journal (written by this runner: an interrupt mid-append counts it once the file holds it)?"""
    return any(e["id"] == entry["id"] for e in reversed(recorder.written()))  # (it is among the last ones)


def _settle_workers(ctx: Context, end: State, state: State) -> None:
    """Workers still running when the run stops (the eager schedule lets a seam or a halt come while some
    run). A pause waits for them and keeps what they made: it is judged on resume. A halt stops them:
    their attempts do not count, and they start again from the campaign head on resume, but for a halt a
    person chose at a seam, which resume refuses (runner._refuse_answered_halt): that message says so."""
    names = ", ".join(sorted(n for n, _ in ctx.executor.running()))
    if end is State.PAUSE:
        ctx.out.always(f"waiting for {names} to return before pausing (what they make is judged on resume)")
        from orchestrate.engine.collect import collect
        collect(ctx, until_all=True)
        return
    nodes = [n for n, _ in ctx.executor.running()]
    ctx.executor.cancel_all()
    for node in nodes:
        launch.roll_back(ctx, node)
    if state is State.SEAM and seams.halt_stands(ctx.campaign, _last_decision(ctx)):
        ctx.out.always(f"stopped {names}: their attempts do not count; a halt chosen at a seam is not resumed: "
                       f"`orchestrate abandon --topic {ctx.topic} --note WHY` ends the campaign (its branches are "
                       f"kept), `orchestrate run --topic NEW` starts again")
        return
    ctx.out.always(f"stopped {names}: their attempts do not count; they start again on resume")


def _last_decision(ctx: Context) -> dict:
    """The latest decision, recorded this step (held) or before."""
    for entry in reversed([*ctx.recorder.written(), *ctx.recorder.held]):
        if entry["kind"] == "decision":
            return entry["context"]
    return {}


def _focus(ctx: Context, state: State) -> list[str]:
    """The node, or LOOPS_WITH group, that RECONCILE is about to judge or MERGE to merge."""
    if state not in (State.RECONCILE, State.MERGE) or ctx.dag is None:
        return []
    ready = schedule.landed(ctx)
    return [m for m in ctx.dag.group_of(ready[0]) if ctx.campaign.nodes[m].status == LANDED] if ready else []


def _notify(ctx: Context, nxt: State, verdicts: list[dict]) -> None:
    """The notifications a recorded transition calls for: each verdict, a pause at a seam, a halt, done."""
    c = ctx.campaign
    for v in verdicts:
        ctx.out.notify("verdict", c.topic, node=v["node"], verdict=v["verdict"])
    if nxt is State.PAUSE and c.seam and c.seam["id"] not in ctx.announced:
        ctx.out.notify("seam", c.topic, seam=c.seam)
    elif nxt is State.HALT:
        reason = (ctx.halt_reason or c.halt).splitlines()
        ctx.out.notify("halt", c.topic, message=f"{c.topic}: halted" + (f": {reason[0]}" if reason else ""))
    elif nxt is State.DONE:
        ctx.out.notify("done", c.topic, message=f"{c.topic}: campaign done, {c.branch} at {c.tip[:12]}")


def _checkpoint(ctx: Context, message: str) -> None:
    """Snapshot the folded state next to the journal entry it covers, in the same recorder commit."""
    rec = ctx.recorder
    rec.flush()
    path = checkpoints.write(ctx.layout.checkpoints(ctx.topic), ctx.campaign, log_seq=rec.seq,
                             log_entry_id=rec.last_id, message=message)
    rec.guard.wrote_checkpoint(path)
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
    for command in decide_commands(c.topic, seam):
        ctx.out.always(f"  {command}")
    if seam.get("seam") != "final-acceptance":
        ctx.out.always(f"then: orchestrate resume --topic {c.topic}")
    for later in c.queued:  # seams opened while this one was open: each is asked once those before it are
        ctx.out.always(f"asked after it: seam {later['seam']}" + (f" for node {later['node']}" if later.get("node") else ""))
    return ExitCode.PAUSED
