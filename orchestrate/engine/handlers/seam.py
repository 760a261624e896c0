"""SEAM: settle the open seam from a recorded answer, an answers file, the DAG's policy, or a person; else pause.

`final-acceptance` is never settled by policy. What an answer does (rework, skip, accept, halt) is
decided here and only here.

Under the eager schedule a seam about one node (realignment, review-divergence, reserved-halt) does not
stop the rest: the person is told at once (notification, and the decide commands on the terminal), the
run goes on with whatever does not wait for that node, and an answer `orchestrate decide` leaves
meanwhile (seams/inbox.py) is applied at the runner's next step. The terminal prompt, which would stop
judging and merging while it waits, comes only once nothing else can progress; so does the pause.
"""
from __future__ import annotations

from orchestrate.engine import amend, answers, budget, schedule
from orchestrate.engine.context import Context
from orchestrate.engine.states import Outcome
from orchestrate.errors import DagInvalid
from orchestrate.recorder.campaign import NODE_SEAMS
from orchestrate.report.notify import decide_commands
from orchestrate.seams import choices as seams
from orchestrate.seams import inbox, prompt
from orchestrate.workers import handwork


def handle(ctx: Context) -> Outcome:
    c = ctx.campaign
    if c.decision is None and c.seam is None:  # its answer was applied already (a halt): nothing to settle
        ctx.halt_reason = c.halt or "no seam is open and no answer waits to be applied"
        return Outcome.HALTED
    if c.decision is None:
        answer = _unattended(ctx)
        if answer is None and goes_on(ctx):
            announce(ctx)
            ctx.subject = f"{c.seam['seam']} open" + (f" for {c.seam['node']}" if c.seam.get("node") else "")
            return Outcome.DEFERRED
        answer = answer or _prompted(ctx)
        if answer is None:
            return Outcome.PAUSED
        choice, note, who, source = answer
        seams.record(ctx, c.seam, choice, note, who, source)
    decision = c.decision
    ctx.emit("applied", {"decision": decision["id"]}, derived_from=[decision["id"]])
    ctx.subject = f"{decision['seam']} {decision['choice']}"
    outcome = _apply(ctx, decision)
    if c.seam is not None and goes_on(ctx):  # the next queued seam opens now: its person is told at once
        announce(ctx)
    return outcome


def goes_on(ctx: Context) -> bool:
    """Does the run go on past the open seam? Eager, a seam about one node, and something else to do."""
    seam = ctx.campaign.seam
    return (seam is not None and seam["seam"] in NODE_SEAMS and schedule.eager(ctx)
            and schedule.can_progress(ctx))


def announce(ctx: Context) -> None:
    """Tell the person about the open seam once per run: a notification and, above the live view, what to
    run. The run goes on meanwhile."""
    seam = ctx.campaign.seam
    if seam["id"] in ctx.announced:
        return
    ctx.announced.add(seam["id"])
    ctx.out.notify("seam", ctx.topic, seam=seam)
    ctx.out.always("\n".join(seams.details(seam)))
    if answers.taken(ctx):
        ctx.out.always("the run goes on with what does not wait for it; answer meanwhile with one of:")
        for command in decide_commands(ctx.topic, seam):
            ctx.out.always(f"  {command}")
    else:
        ctx.out.always("the run goes on with what does not wait for it, and asks once nothing else can progress")


def _unattended(ctx: Context) -> tuple[str, str, str, str] | None:
    """An answer that needs nobody at this terminal: left by `decide`, in the answers file, or the policy."""
    seam = ctx.campaign.seam
    name = seam["seam"]
    if name == "dag-amendment" and _undone(ctx):
        ctx.out.line("seam dag-amendment: the edit was undone, the DAG is the version last approved: nothing to amend")
        return "accept", "the edit was undone: the DAG is the version last approved", "orchestrate", "policy"
    left = inbox.waiting(ctx.layout, ctx.topic, seam, ctx.campaign.queued) if answers.taken(ctx) else None
    if left is not None:
        ctx.out.always(f"seam {name}: {left['who']} answered {left['choice']} (orchestrate decide)")
        return left["choice"], left.get("note") or "", left["who"], "human"
    queued = ctx.answers.get(name)
    if isinstance(queued, list):
        queued = queued.pop(0) if queued else None
    if queued is not None:
        choice, note = (queued, "") if isinstance(queued, str) else (queued.get("choice"), queued.get("note", ""))
        if choice in seam["choices"]:
            ctx.out.line(f"seam {name}: answered {choice} from the answers file")
            return choice, note or "", _who(ctx) or "answers-file", "answers"
        ctx.out.always(f"warning: the answers file says {choice!r} for {name}, which offers {seam['choices']}")
    if ctx.campaign.mode == "autonomous" and name == "realignment":
        decided = _policy(ctx, seam)
        if decided is not None:
            return decided
    return None


def _undone(ctx: Context) -> bool:
    """Is the campaign's DAG copy the version last approved again (the person took the edit back)? Then the
    dag-amendment seam has nothing to ask (rv75: it stayed open, to be accepted as a no-op)."""
    from orchestrate.recorder.approved import file_hash
    try:
        return bool(ctx.campaign.dag_hash) and file_hash(ctx.dag_file) == ctx.campaign.dag_hash
    except OSError:
        return False


def _prompted(ctx: Context) -> tuple[str, str, str, str] | None:
    seam = ctx.campaign.seam
    if prompt.interactive():
        who = _who(ctx)
        if who is None:
            ctx.out.always("cannot record an answer: set `git config user.email`; pausing instead")
            return None
        if seam["id"] not in ctx.announced:  # whoever is away from this terminal is needed here
            ctx.announced.add(seam["id"])
            ctx.out.notify("seam", ctx.topic, seam=seam)
        asked = prompt.ask(seam)
        if asked is not None:
            return asked[0], asked[1], who, "human"
    return None


def _who(ctx: Context) -> str | None:
    try:
        return seams.who(ctx.root, None)
    except Exception:  # noqa: BLE001 - no identity configured: the caller says what to do
        return None


def _policy(ctx: Context, seam: dict) -> tuple[str, str, str, str] | None:
    """The DAG's `policy.realignment.<case>` rule, counting policy reworks per node against `limit`."""
    rule = (ctx.dag.policy.get("realignment") or {}).get(seam.get("case", ""))
    if not rule:
        return None
    node = seam.get("node")
    used = sum(1 for d in ctx.campaign.policy_log if d == node)
    choice = rule["choice"]
    if choice == "rework" and used >= rule.get("limit", 1):
        choice = rule.get("then", "halt")
    ctx.out.line(f"seam realignment ({seam['case']}) for {node}: policy chooses {choice}")
    return choice, f"policy realignment.{seam['case']}", "policy", "policy"


def _apply(ctx: Context, d: dict) -> Outcome:
    seam, choice, node, note = d["seam"], d["choice"], d.get("node"), d.get("note") or ""
    if choice == "halt":
        ctx.halt_reason = f"{d['who']} chose to halt at seam {seam}" + (f": {note}" if note else "")
        ctx.emit("halt", {"reason": ctx.halt_reason}, derived_from=[d["id"]])
        return Outcome.HALTED
    if seam == "final-acceptance":
        if choice == "accept":
            return Outcome.ACCEPTED
        ctx.halt_reason = f"final acceptance refused by {d['who']}" + (f": {note}" if note else "")
        ctx.emit("halt", {"reason": ctx.halt_reason}, derived_from=[d["id"]])
        return Outcome.REJECTED
    if seam == "handwork" and choice == "done":
        handwork.done(ctx, node)
        return Outcome.RETURNED
    if seam == "budget":  # raise (halt was settled above): dispatching resumes under the recorded limit
        return budget.raised(ctx, d)
    if seam == "guardrail":  # approve crosses the edge, skip leaves it untaken; the layer is decided again
        ctx.emit("crossing", {"edge": d["edge"], "answer": choice, "who": d["who"]}, derived_from=[d["id"]])
        return Outcome.CROSSING
    if choice == "skip":
        skipped = seams.skip_with_dependents(ctx, node, d)
        ctx.out.line(f"skipped {', '.join(skipped)}")
        return Outcome.SKIP
    if seam == "dag-amendment":
        if (held := _shown_version(ctx, d)) is not None:
            return held
        try:
            dag = ctx.reload_dag(edited=True)
        except DagInvalid as exc:
            ctx.halt_reason = "the amended DAG is invalid:\n" + "\n".join(f"  {p}" for p in exc.problems)
            ctx.emit("halt", {"reason": ctx.halt_reason}, derived_from=[d["id"]])
            return Outcome.HALTED
        # the current layer is planned again too: a node the amendment adds with nothing to wait for joins
        # it (a halted boundary, as in the red demo, is never passed until that fix has run)
        past = ctx.campaign.layers[: ctx.campaign.k]
        from orchestrate.recorder.approved import file_hash
        ctx.emit("schedule", {"layers": past + amend.remaining_layers(dag, past), "dag_hash": file_hash(ctx.dag_file),
                              "reason": f"amendment accepted by {d['who']}"}, derived_from=[d["id"]])
        return Outcome.AMENDED
    if seam == "review-divergence" and choice == "accept":  # the person's accept, grounded in the gates shown
        ns = ctx.campaign.nodes[node]
        ctx.emit("verdict", {"node": node, "verdict": "accept", "at": ns.head, "by": d["who"]},
                 derived_from=[d["id"]] + list(d.get("gates", [])))
        return Outcome.REVIEWED
    # rework: a new attempt, the human's note in its brief; a stale premise is updated to what holds now
    if d.get("case") == "stale-premise" or ctx.campaign.nodes[node].status == "INVALIDATED":
        amend.update_premises(ctx, node, f"premises of {node} realigned by {d['who']}: {note or 'no note'}")
    if d.get("case") == "environment":  # one fix of the environment answers every node it stopped
        for other, ns in ctx.campaign.nodes.items():
            if other != node and ns.env_error:
                ctx.emit("node", {"node": other, "env_error": ""})
    seams.rework(ctx, node, note, d["who"])
    return Outcome.REWORK


def _shown_version(ctx: Context, d: dict) -> Outcome | None:
    """An accepted amendment adopts the version its seam showed. Edited again since (rv75: the later edit was
    adopted unseen, a widened surface with it), the shown version is put back and the later edit kept in
    .scratch/rejected/<topic>/, to be copied back and shown by the seam it opens then."""
    from orchestrate.atomic import write_atomic
    from orchestrate.recorder.approved import file_hash, recorded_text
    shown, path = d.get("shown"), ctx.dag_file
    try:
        now = file_hash(path)
    except OSError:
        now = None
    if not shown or now == shown or (d.get("source_type") == "policy" and now == ctx.campaign.dag_hash):
        return None  # (the policy's accept of an edit taken back adopts the approved version: `_undone`)
    text = recorded_text(ctx.layout.ledger, path, shown)
    if text is None:
        ctx.halt_reason = f"{path} was edited again after the dag-amendment seam showed it, and the version shown is gone"
        ctx.emit("halt", {"reason": ctx.halt_reason}, derived_from=[d["id"]])
        return Outcome.HALTED
    if now is not None:
        kept = ctx.layout.scratch / "rejected" / ctx.topic / path.name
        kept.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(kept, path.read_bytes().decode())
        ctx.out.always(f"{path} was edited again after the seam showed it: the version shown is the one accepted; "
                       f"the later edit is kept in {kept}: copy it back (cp {kept} {path}) and the seam asks about it")
    write_atomic(path, text.decode())
    return None
