"""Watching what workers must leave alone: a fingerprint before a layer's workers start, compared each time
one returns (workers/fingerprint.py says what is watched).

A change to the shared git dir or to the recorder's files is blamed on every node that ran during the
interval: those attempts fail with a message saying what changed, and planted config, hooks and
attributes and edited recorder files are put back at once, before orchestrate's next git call or commit.
A journal changed by anyone but this runner halts the campaign (the recorder's ForeignWrite). A change to
the user's checkout is a warning naming the running nodes. The checkout is looked at (a `git status` of
it, the one costly part) only around what could write it: a worker without the sandbox, and every other
process started outside it (an evaluator or check runs code a worker wrote), is preceded by a look unless
a recent one stands, and followed by one at the next check. A worker in the sandbox sees the checkout
read-only (workers/containment.py), so while only such workers run, ran or wait, it is not looked at.
"""
from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path

from orchestrate import git, proc
from orchestrate.engine.context import Context
from orchestrate.errors import GitError, Halted
from orchestrate.recorder.campaign import DISPATCHED
from orchestrate.workers import fingerprint, watched

def refresh(ctx: Context) -> None:
    """Before more workers start: with none running, a new fingerprint (`arm`); with some running (the
    eager schedule), what changed since the last look is theirs first."""
    live = _live(ctx)
    if live and ctx.watch is not None:
        check(ctx, [], live)
    else:
        arm(ctx)


def arm(ctx: Context, taken: fingerprint.Fingerprint | None = None) -> None:
    """Before workers start when none runs (also after a resume: whatever happened before is not seen).
    `taken`: a fingerprint just taken, which is the state as it is now. Otherwise the git dir, refs and
    recorder files are read anew, and the checkout too if what could write it runs, waits or has run since
    the last look, unless that look is recent; an older look is dropped. Every worker that ran before was
    checked when it returned; a process about to start that could write the checkout has it looked at
    first when no look stands (workers/launch.py, and proc's hook for every other process)."""
    git.identity_env(ctx.root)  # the run's identity, read before a worker can edit the config it is read from
    last = ctx.watch
    recent = last is not None and bool(last.checkout) and time.monotonic() - last.looked < fingerprint.STANDS_FOR
    ctx.watch = taken or _take(ctx, last if recent else None, look=_exposed(ctx))
    if ctx.recorder is not None:  # a foreign journal line names the nodes that were running
        ctx.recorder.suspects = lambda: list(getattr(ctx.executor, "live", ())) or _dispatched(ctx)
        ctx.recorder.pinned = lambda: _pinned(ctx)
        ctx.recorder.put_back = lambda: guard_recorder(ctx)


def _pinned(ctx: Context) -> dict:
    if ctx.watch is None or not (live := _live(ctx)):
        return {}
    _adopt_amendments(ctx, live)
    # as the recorder's commit holds them: a linked `dag.yaml` compared by the file it leads to read as a change
    # on every commit while a worker ran (rv83)
    return {path: watched.committed(record) for path, record in ctx.watch.recorder.items()}


def _adopt_amendments(ctx: Context, suspects: list[str]) -> None:
    """Edits of a plan that are no worker's are learnt by the watch, not put back. The engine amends the
    campaign's DAG copy itself (a WIDEN, a realigned premise) while other workers may run, and records the
    new file's hash: a copy with that hash is the engine's. And while only workers in the sandbox ran, run
    or wait, and nothing else started outside it, `.ledger/` was read-only to all of them: an edit of a
    plan is a person's, which the dag-amendment seam shows before the campaign uses it (amend.edited)."""
    dags = [Path(ctx.campaign.dag_path)] if ctx.campaign.dag_path else []
    person = not _exposed(ctx, suspects)
    for dag in [*dags, ctx.layout.default_dag] if person else dags:
        if dag not in ctx.watch.recorder:
            continue
        before, now = ctx.watch.recorder[dag], fingerprint.read_watched(dag)
        if now == before or now is None or now[:1] != b"f":  # a link, or what cannot be read: never adopted (rv25)
            continue
        text = fingerprint.content(now)
        if person:
            kept = "kept for the dag-amendment seam" if dag in dags else "kept (it is not this campaign's plan)"
            ctx.out.always(f"{fingerprint.shown(dag)} was edited while only workers in the sandbox ran ({', '.join(suspects)}; "
                           f"they cannot write it): {kept}")
            ctx.watch.recorder[dag] = now
        elif ctx.campaign.dag_hash and hashlib.sha256(text).hexdigest() == ctx.campaign.dag_hash and \
                (before is None or before.partition(b"\0")[0] == now.partition(b"\0")[0]):  # the engine keeps the mode
            ctx.watch.recorder[dag] = now
    if person and ctx.layout.config in ctx.watch.recorder:
        _persons_settings(ctx, suspects)


def _persons_settings(ctx: Context, suspects: list[str]) -> None:
    """config.yaml edited while only workers in the sandbox ran: a person's edit, as a plan's is (above). It is
    kept when valid, and what is read of it from now on (a coherence setting, the sandbox of the next
    dispatch) follows it; one with problems is put back, the edit kept aside, so that a bad setting is never
    met halfway. No worker is blamed either way."""
    path, before = ctx.layout.config, ctx.watch.recorder[ctx.layout.config]
    if fingerprint.read_watched(path) == before:
        return
    from orchestrate.engine import settings
    how = "edited" if path.exists() else "deleted"
    said = f"{fingerprint.shown(path)} was {how} while only workers in the sandbox ran ({', '.join(suspects)}; " \
           "they cannot write it)"
    if problems := settings.problems(ctx.layout):
        put_back = fingerprint.restore_file(path, before, _kept(ctx))
        first = problems[0]
        what = f"{first.field}: {first.message}" if first.field else first.message
        ctx.out.always(f"{said}, and line {first.line} has a problem ({what}): put back "
                       f"{', '.join(put_back)}; fix the edit there, then copy it back")
    elif not path.exists():
        ctx.out.always(f"{said}: the defaults hold from now on")
    else:
        ctx.out.always(f"{said}: kept; what the run reads of it from now on follows it")
    ctx.watch.recorder[path] = fingerprint.read_watched(path)


def guard_recorder(ctx: Context) -> None:
    """At a recorder commit while workers run: recorder files edited since the fingerprint are put back
    (the commit would otherwise carry them into the recorder's history), and the running nodes are
    blamed; their attempts fail when they return."""
    changed = fingerprint.recorder_changes(ctx.watch)
    if changed:
        _blame(ctx, _live(ctx), changed, fingerprint.restore_recorder(ctx.watch, _kept(ctx)))


def _live(ctx: Context) -> list[str]:
    """Workers running now, and nodes whose evaluators run ahead (engine/evaluations.py: code of theirs runs);
    between layers a person may edit the DAG (the amendment seam's case)."""
    return sorted(set(getattr(ctx.executor, "live", ())) | {node for node, _ in ctx.evaluating})


def check(ctx: Context, finished: list[str], running: list[str], *, during: str = "while it ran") -> None:
    """After `finished` returned while `running` still run: blame, restore, report; then re-arm."""
    if ctx.watch is None:
        arm(ctx)
        return
    suspects = sorted(set(finished) | set(running))
    if ctx.recorder is not None:  # the journal first: nothing else is trusted if it was written behind our back
        ctx.recorder.suspects = lambda: suspects
        ctx.recorder.verify()
    _adopt_amendments(ctx, suspects)
    now = _take(ctx, None if _exposed(ctx, suspects) else ctx.watch)
    changed, checkout = fingerprint.compare(ctx.watch, now)
    changed += _campaign_branch(ctx)
    if checkout:
        ctx.out.always(f"warning: the checkout changed while {', '.join(suspects)} ran: {'; '.join(checkout)} "
                       "(left as it is: it may be your own work)")
    if changed:  # put back, and what was put back stays what is compared with: a worker still running that
        # writes the file again meanwhile is not taken in as the new state (rv26). The checkout is never put back.
        put_back = fingerprint.restore(ctx.watch, keep=_kept(ctx))
        _blame(ctx, suspects, changed, put_back, during)
        arm(ctx, fingerprint.rebased(_take(ctx, now), ctx.watch))
        if failed := [what for what in put_back if fingerprint.NOT_PUT_BACK in what]:
            raise Halted(f"changed while {', '.join(suspects)} ran, and not put back: {'; '.join(failed)}",
                         hint="put it back by hand (git would read it as it is now), then `orchestrate resume`")
    else:  # the look just taken is the state the workers still running go on from: no second look
        arm(ctx, now)


def after_judging(ctx: Context, nodes: list[str], ran: int) -> None:
    """After code a worker wrote ran to judge `nodes` (evaluators, checks, plugin gates; in the sandbox they
    may still write `$HOME`, without it the shared git dir too), when judging started anything since the
    count `ran`: what changed of what is watched is put back and blamed on those nodes and on the workers
    still running, as when a worker returns; else the next fingerprint would take it in (rv34). A judged
    node's blame (`ctx.blamed`) fails its verdict (`judged_blame`)."""
    if ctx.judge_runs != ran and ctx.watch is not None:
        check(ctx, [], sorted(set(nodes) | set(_live(ctx))), during="while it ran or was judged")


def judged_blame(ctx: Context, node: str):
    """The failing verdict of a judged node that changed what no worker may change while it was judged, or None."""
    from gates.shared.verdict import Verdict
    why = ctx.blamed.pop(node, "")
    return Verdict("watch", 1, f"FAIL: {why}") if why else None


def _blame(ctx: Context, suspects: list[str], changed: list[str], put_back: list[str],
           during: str = "while it ran") -> None:
    what = "; ".join(changed) + (f" (put back: {', '.join(put_back)})" if put_back else "")
    for node in suspects:
        ctx.blamed[node] = f"node {node}: {during}, {what}; its attempt failed"
    ctx.emit("guard", {"nodes": suspects, "changes": changed, "restored": put_back})
    who = ", ".join(suspects) or "judging (code of the campaign head, in the integration worktree)"
    ctx.out.always(f"{who}: changed what no worker may change: {what}")


def _campaign_branch(ctx: Context) -> list[str]:
    """The campaign branch moves only by this runner's merges, each recorded as the new tip before anything
    looks again; the adherence audit names a foreign commit on it, this names who ran meanwhile."""
    c = ctx.campaign
    if not c.branch or not c.tip:
        return []
    at = git.rev_parse(ctx.root, f"refs/heads/{c.branch}")
    return [] if at == c.tip else [f"ref refs/heads/{c.branch} moved {c.tip[:12]} -> {(at or 'deleted')[:12]}"]


def _kept(ctx: Context):
    return ctx.layout.scratch / "rejected" / ctx.topic


def _exposed(ctx: Context, suspects: list[str] = ()) -> bool:
    """Could the checkout have been written since the last look: by a worker that ran in the interval
    (`suspects`), runs or waits for a slot, or by any other process started outside the sandbox? Only the
    attempts this runner started in the sandbox, with no writable folder inside the checkout, could not
    (`ctx.sealed`)."""
    if ctx.watch is not None and proc.unconfined() != ctx.watch.mark:
        return True
    waiting = [request.node for request in getattr(ctx.executor, "queue", ())]
    return any(node not in ctx.sealed for node in (*suspects, *_live(ctx), *waiting))


_looking = threading.Lock()


def look_first(ctx: Context) -> None:
    """Before a process starts outside the sandbox (proc calls it, from any thread, while the loop drives
    the run: engine/loop.py): a look at the checkout for it to be compared with, unless one stands."""
    with _looking:
        try:
            fingerprint.look_before_start(ctx.watch, ctx.root)
        except GitError:  # the look at the next check says what is wrong; the process still starts
            pass


def _take(ctx: Context, seen: fingerprint.Fingerprint | None = None, look: bool = True) -> fingerprint.Fingerprint:
    # This campaign's node branches are each judged by the sha read when its worker returned (a branch
    # moved after that is reported at MERGE), and its campaign branch is compared with the recorded tip:
    # neither is fingerprinted, because this runner moves them itself while other workers run.
    return fingerprint.take(ctx.root, set(), recorder_files=_recorder_files(ctx),
                            recorder_git=ctx.layout.ledger / ".git",
                            other_topics=_other_topics(ctx) + [ctx.topic], seen=seen, look=look)


def _recorder_files(ctx: Context) -> list[Path]:
    """What the engine reads back from the recorder while workers run: its settings and the plan."""
    files = [ctx.layout.config, ctx.layout.default_dag]
    if ctx.campaign.dag_path:
        dag = Path(ctx.campaign.dag_path)
        at, default = (path.parent.resolve() / path.name for path in (dag, ctx.layout.default_dag))  # not where a
        if ctx.layout.ledger.resolve() in at.parents and at != default:  # link a worker put there leads: the place
            files.append(dag)
    return files


def _other_topics(ctx: Context) -> list[str]:
    """The campaigns the recorder knows besides this one: each runner verifies its own branches."""
    state = ctx.layout.ledger / "state"
    try:
        return sorted(p.name for p in state.iterdir() if p.name != ctx.topic and (p / "journal.jsonl").exists())
    except OSError:
        return []


def _dispatched(ctx: Context) -> list[str]:
    return ctx.campaign.with_status(DISPATCHED)
