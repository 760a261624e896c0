"""`orchestrate resume`: rebuild a campaign from its journal, reconcile with git, and continue.

Resume is reconstruction, not recall: the state comes from the newest valid checkpoint plus the
journal after it (or the whole journal with --from-log); then every effect the journal announced but
did not confirm is checked against git and repaired, each repair journalled and shown.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from orchestrate import git, proc
from orchestrate.atomic import sweep_temp_files, write_atomic
from orchestrate.engine.context import BATCH_ENDS, WRITE_AHEAD, Context
from orchestrate.errors import ForeignWrite, UsageError
from orchestrate.recorder import checkpoints, damage, guard, segments, topics
from orchestrate.recorder.campaign import DISPATCHED, LANDED, Campaign
from orchestrate.recorder.journal import Recorder
from orchestrate.recorder.upkeep import sync_index
from orchestrate.recorder.paths import Layout
from orchestrate.recorder.provenance import USAGE_EFFECTS
from orchestrate.recorder.sketch import find as sketch_path
from orchestrate.workers import handwork, pool, worktrees

REPAIR = {"source_entity": "orchestrate:resume", "source_type": "repair"}


def rebuild(layout: Layout, recorder: Recorder, *, from_log: bool, warn: Callable[[str], None],
            crashed: bool = False) -> Campaign:
    """The campaign state: checkpoint (if usable) plus the journal after it.

    `crashed` (the previous runner died holding the lock) allows undoing its half-done recorder edits;
    otherwise uncommitted recorder files are a person's edits and are left alone. A line orchestrate did
    not write stops it first (ForeignWrite naming `journal.jsonl:N`): nothing is settled, repaired or
    dispatched on a journal that is not the engine's.
    """
    damage.refuse(recorder.journal)
    settle_journal(layout, recorder, warn, crashed=crashed)
    lines = segments.read_bytes(recorder.journal).splitlines()
    if not lines:
        raise topics.unknown(layout.ledger, recorder.topic)

    campaign, from_checkpoint = checkpoints.restore(layout.checkpoints(recorder.topic), recorder.topic, lines, warn,
                                                    from_log=from_log)  # settle_journal settled its checkpoints
    entries_tail = [json.loads(raw) for raw in lines[-1:]]
    recorder.resume_seq(entries_tail if entries_tail else [])
    recorder.counter = max(recorder.counter, _max_id(lines))
    if from_checkpoint:
        _cross_check(campaign, lines, warn)
    return campaign


def _max_id(lines: list[bytes]) -> int:
    best = 0
    for raw in lines[-2000:]:  # ids grow with the journal; the newest lines hold the largest
        best = max(best, int(json.loads(raw)["id"].rsplit(":", 1)[1]))
    return best


def _cross_check(campaign: Campaign, lines: list[bytes], warn: Callable[[str], None]) -> None:
    """The journal wins: the tip is the last merge (or layer start) it recorded."""
    for raw in reversed(lines):
        e = json.loads(raw)
        ctx = e.get("context", {})
        tip = ctx.get("sha") if e["kind"] == "merge" else ctx.get("tip") if e["kind"] in ("layer", "open", "tip") else None
        if tip:
            if tip != campaign.tip:
                warn(f"checkpoint disagrees with the journal on tip ({campaign.tip[:12]} vs {tip[:12]}); using the journal")
                campaign.tip = tip
            return


def settle_journal(layout: Layout, recorder: Recorder, warn: Callable[[str], None], *, crashed: bool) -> None:
    """Make the journal and the recorder's files agree after a crash.

    Held (bookkeeping) entries are only ever written in one batch ending with a transition (or with the close
    of resume's repairs), just before a commit. Uncommitted entries after the last such end are therefore a
    torn batch: they are dropped,
    and the recorder's files go back to their last commit. A complete batch whose commit did not happen
    is committed now, with the files that belong to it.
    """
    ledger, journal = layout.ledger, recorder.journal
    if not journal.exists() and not journal.is_symlink():
        return
    if journal.is_symlink() or not journal.is_file():
        raise ForeignWrite(f"{journal}: not a plain file (orchestrate writes one); nothing was resumed or repaired",
                           hint=f"put it back with `rm -r {journal} && git -C {ledger} checkout HEAD -- "
                                f"{journal.relative_to(ledger)}`, then resume")
    recorder._truncate_torn_tail()
    rel = str(journal.relative_to(ledger))
    committed = git.git(ledger, "show", f"HEAD:{rel}", check=False).stdout.encode()
    folder = f"{rel.rsplit('/', 1)[0]}/{segments.SEALED}"
    held = {f"{segments.SEALED}/{name}": sha for name, (sha, _) in _committed_entries(ledger, folder).items()}
    seal = segments.pending(journal, committed, held)  # one the crash kept out of the last commit
    if changed := segments.unlike_head(journal, held, seal):
        _refuse_segments(ledger, journal, changed)
    if seal is not None:
        segments.settle(journal, committed, seal)
    current = journal.read_bytes()
    _refuse_after_foreign_write(ledger, recorder.topic, rel, current, committed)
    checkpoints.settle(ledger, recorder.topic, _committed_entries(ledger, f"state/{recorder.topic}/checkpoints"), warn)
    if current == committed:
        if crashed:
            _restore_recorder_files(layout, recorder.topic, rel, warn)
        return
    if not current.startswith(committed):
        raise ForeignWrite(f"{rel}: differs from its last commit in more than new lines (the engine only appends); "
                           "nothing was resumed or repaired",
                           hint=f"see `git -C {ledger} diff HEAD -- {rel}`; put it back with `git -C {ledger} checkout "
                                f"HEAD -- {rel}` (or commit a deliberate edit in {ledger}), then resume")
    tail = [json.loads(raw) for raw in current[len(committed):].splitlines()]
    last_transition = max((i for i, e in enumerate(tail) if e["kind"] in BATCH_ENDS), default=-1)
    after = tail[last_transition + 1:]
    # only answers after the last transition: `decide`'s own batch (it writes nothing else), its commit cut off;
    # the person's answer is kept, as the decision status shows and the campaign applies (rv75)
    answered = bool(after) and all(e["kind"] == "decision" for e in after)
    kept = tail if answered else tail[: last_transition + 1] + [e for e in after if e["kind"] in WRITE_AHEAD]
    if len(kept) != len(tail):
        sealed = segments.sealed(journal)
        before = committed if committed.strip() else sealed[-1].read_bytes() if sealed else b""
        seq = json.loads(before.splitlines()[-1])["seq"] if before.strip() else 0
        for e in kept:
            seq += 1
            e["seq"] = seq
        body = b"".join(json.dumps(e, sort_keys=True, separators=(",", ":")).encode() + b"\n" for e in kept)
        write_atomic(journal, committed + body)
        warn(f"dropped {len(tail) - len(kept)} journal entr(ies) of a state that did not finish; it runs again")
    if answered:
        d = after[-1]["context"]
        recorder.head = git.rev_parse(ledger, "HEAD") or ""
        recorder.commit(f"{recorder.topic}: decide {d.get('seam')} {d.get('choice')} ({d.get('who')})")
        warn(f"committed the answer {d.get('seam')} {d.get('choice')} by {d.get('who')}, recorded just before "
             "the command that recorded it stopped")
    elif last_transition >= 0:
        t = tail[last_transition]["context"]
        recorder.head = git.rev_parse(ledger, "HEAD") or ""
        recorder.commit(t.get("subject") or f"{recorder.topic}: {t['from']} {t['outcome']} -> {t['to']}")
        warn("committed a transition that was journalled just before the crash" if "from" in t else
             "committed the repairs of a resume that stopped before it committed them")
    elif crashed:
        _restore_recorder_files(layout, recorder.topic, rel, warn)


def _committed_entries(ledger: Path, folder: str) -> dict[str, tuple[str, int]]:
    """File name -> (blob id, size) of the files the recorder's last commit holds in `folder`."""
    found = {}
    for line in git.lines(ledger, "ls-tree", "-l", "HEAD", f"{folder}/"):
        meta, path = line.split("\t", 1)
        _, kind, sha, size = meta.split()
        if kind == "blob":
            found[path.rsplit("/", 1)[-1]] = (sha, int(size))
    return found


def _refuse_after_foreign_write(ledger: Path, topic: str, rel: str, current: bytes, committed: bytes) -> None:
    """The run before halted on a write it did not make (recorder/guard.py): go on only from the last commit or
    from exactly the lines that runner wrote since, so that a line in the engine's own shape appended by a
    worker is never committed and folded."""
    record = guard.halted(ledger, topic)
    if record is None:
        return
    if current != committed and not guard.written_by_runner(record, current):
        raise ForeignWrite(f"{rel}: holds lines this runner did not write (the run halted on them: "
                           f"{record.get('what')}); nothing was resumed or repaired",
                           hint=f"see `git -C {ledger} diff HEAD -- {rel}`; put it back with `git -C {ledger} "
                                f"checkout HEAD -- {rel}` (what the halted runner had not committed yet runs again), "
                                "then resume")
    guard.clear(ledger, topic)


def _refuse_segments(ledger: Path, journal: Path, changed: list[tuple[str, str]]) -> None:
    """ForeignWrite naming what in journal.d/ differs from the recorder's last commit, and the exact commands
    that put it back (never touching a seal resume will undo itself)."""
    state = journal.parent.relative_to(ledger)
    what = "; ".join(f"{label} {'differs from the last commit or is gone' if how == 'restore' else 'is not in the last commit'}"
                     for label, how in changed)
    steps = []
    if remove := [str(journal.parent / label) for label, how in changed if how == "remove"]:
        steps.append(f"rm -r {' '.join(remove)}")
    if restore := [str(state / label) for label, how in changed if how == "restore"]:
        steps.append(f"git -C {ledger} checkout HEAD -- {' '.join(restore)}")
    raise ForeignWrite(f"{journal.parent / segments.SEALED}: {what}: the journal's sealed segments were changed by "
                       "something other than orchestrate; nothing was resumed or repaired",
                       hint=f"put them back with `{' && '.join(steps)}`, then resume")


def _restore_recorder_files(layout: Layout, topic: str, journal_rel: str, warn: Callable[[str], None]) -> None:
    """Put the files this campaign's runner writes in a step (checkpoints, sketch and report, the active-dag
    pointer, and its DAG copy in the states that amend it) back to their last commit: a half-done state's
    edits. Its sealed segments are as committed by then (settle_journal refuses or undoes anything else).
    Nothing else in the recorder is this runner's to undo (rv75): the settings, the default DAG, another
    campaign's files (its runner may be writing them now), and the DAG copy edited while the runner was in
    a state that never amends it are a person's edits, made while no runner ran; such a DAG edit opens the
    dag-amendment seam. One the engine may have half-amended is put back, kept in .scratch/rejected/<topic>/."""
    ledger = layout.ledger
    sync_index(ledger)  # the crashed runner's commits left the index behind: status then shows only its edits
    changed = [ln[3:] for ln in git.git(ledger, "status", "--porcelain=v1", "--untracked-files=all").stdout.splitlines()]
    found = sketch_path(ledger, topic)
    sketch = f"log/{found.stem}" if found else None
    dag = f"state/{topic}/dag.yaml"
    for path in changed:
        if path == journal_rel or path.endswith(".tmp"):
            continue
        if not (path.startswith(f"state/{topic}/") or path == "active-dag" or path.rsplit(".", 1)[0] == sketch):
            continue
        if path == dag:
            if _last_state(ledger / journal_rel) not in AMENDING:
                continue
            if (ledger / path).is_file():
                kept = layout.scratch / "rejected" / topic / "dag.yaml"
                kept.parent.mkdir(parents=True, exist_ok=True)
                kept.write_bytes((ledger / path).read_bytes())
                warn(f"{ledger / path} differed from its last commit (the step the crash cut off amends it): put "
                     f"back; what it held is kept in {kept}")
        if git.git(ledger, "cat-file", "-e", f"HEAD:{path}", check=False):
            git.git(ledger, "checkout", "HEAD", "--", path)
        else:
            (ledger / path).unlink(missing_ok=True)


AMENDING = ("SURFACE_EXCEED", "SEAM")  # the states that write the campaign's DAG copy (engine/amend.py)


def _last_state(journal: Path) -> str:
    """The state the journal's last transition entered: the one a crashed runner was in."""
    for raw in reversed(segments.tail(journal, 1 << 20).splitlines()):
        if b'"transition"' in raw:
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            if entry.get("kind") == "transition":
                return entry["context"].get("to", "")
    return ""


def stale_git_locks(ctx: Context) -> list[Path]:
    """Lock files a killed git left in the recorder, our worktrees, and our refs (never the user's index)."""
    common = git.git_common_dir(ctx.root)
    topic = ctx.topic
    candidates = [ctx.layout.ledger / ".git" / "index.lock", ctx.layout.ledger / ".git" / "HEAD.lock"]
    candidates += list((ctx.layout.ledger / ".git" / "refs").rglob("*.lock"))
    wt_root = common / "worktrees"
    if wt_root.is_dir():
        ours = (str(ctx.layout.worktrees(topic)), str(ctx.layout.integration(topic)))
        for admin in wt_root.iterdir():
            gitdir = admin / "gitdir"
            if gitdir.exists() and gitdir.read_text().strip().startswith(ours):
                candidates += [admin / "index.lock", admin / "HEAD.lock", admin / "MERGE_HEAD.lock"]
    heads = common / "refs" / "heads"
    if heads.is_dir():
        candidates += [p for p in heads.rglob("*.lock")
                       if str(p.relative_to(heads)).startswith((f"campaign/{topic}", f"node/{topic}/"))]
    found = [p for p in candidates if p.exists()]
    for p in found:
        p.unlink()
    return found


def repair(ctx: Context) -> None:
    """Reconcile the journal's announced effects with git; journal and show every repair."""
    c = ctx.campaign
    from orchestrate.engine.handlers import merge
    merge.refuse_unadopted(ctx)
    for path in stale_git_locks(ctx):
        _repaired(ctx, "stale-lock", f"removed a stale git lock {path}")
    for path in sweep_temp_files(ctx.layout.ledger / "state" / c.topic):
        _repaired(ctx, "temp-file", f"removed a leftover temp file {path.name}")
    git.worktree_prune(ctx.root)
    worktrees.unlink_foreign_integration(ctx)  # before any git call in it
    integ = ctx.layout.integration(c.topic)
    if integ.exists() and not (integ / ".git").exists():
        import shutil
        shutil.rmtree(integ)
        _repaired(ctx, "integration", f"removed a half-created integration worktree {integ}")
    if (integ / ".git").exists() and git.git(integ, "rev-parse", "-q", "--verify", "MERGE_HEAD", check=False):
        git.merge_abort(integ)
        _repaired(ctx, "merge-abort", "aborted a merge left in progress in the integration worktree")
    if (integ / ".git").exists() and git.has_changes(integ):
        git.git(integ, "reset", "-q", "--hard", "HEAD")
        git.git(integ, "clean", "-q", "-fd")
        _repaired(ctx, "integration-reset", "cleared uncommitted changes in the integration worktree")
    pool.drop_left(ctx.root, ctx.layout.worktrees(c.topic))  # no repair: this process would never reuse them
    worktrees.learn(ctx.recorder.written())
    _begun_unrecorded(ctx)
    for ns in c.nodes.values():
        if ns.status == DISPATCHED and not ns.freeze and not handwork.is_human(ctx.dag, ns.id):
            _reconcile_worker(ctx, ns)
        elif ns.status in (LANDED, DISPATCHED) and ns.worktree and not (ctx.root / ns.worktree).exists() \
                and git.branch_exists(ctx.root, ns.branch):
            git.worktree_add(ctx.root, ctx.root / ns.worktree, ns.branch, "", new_branch=False)
            _repaired(ctx, "worktree", f"{ns.id}: worktree {ns.worktree} was missing; recreated from {ns.branch}")


def _reconcile_worker(ctx: Context, ns) -> None:
    """A worker the dead runner was waiting for: use its result if it finished, else stop it and retry."""
    from orchestrate.workers.local import WorkOutcome
    from orchestrate.workers.returns import returned
    entries = ctx.recorder.read()
    result = spawn = cut = None
    for e in entries:
        cx = e["context"]
        if e["kind"] == "result" and cx.get("node") == ns.id and cx.get("attempt") == ns.attempt:
            if cx.get("effect") == "worker-start":
                result = cx
            elif cx.get("effect") == "worker-spawn":
                spawn = cx
            elif cx.get("effect") == "worker-cut-off":  # a resume that died before its retry was recorded (rv80)
                cut = cx
    if result is not None:
        outcome = WorkOutcome(ns.id, ns.attempt, result["rc"], result.get("seconds", 0.0), result.get("timed_out", False),
                              result.get("log", ""), result.get("freeze"), result.get("freeze_error", ""))
        _repaired(ctx, "worker-result", f"{ns.id}: the worker of attempt {ns.attempt} had finished (rc {outcome.rc})")
        returned(ctx, outcome, journal_result=False)
        return
    if spawn is not None and spawn.get("pid") and _ours(spawn["pid"], ctx.topic, ns.id, ctx.root / ns.worktree):  # no pid: a remote task
        proc.kill_group(spawn["pid"])
        _repaired(ctx, "worker-kill", f"{ns.id}: stopped worker process group {spawn['pid']} left by the dead runner")
    if cut is None:  # journalled once: counted twice, the budget would be spent by what was never spent
        _cut_off_usage(ctx, ns)
    _repaired(ctx, "worker-retry", f"{ns.id}: attempt {ns.attempt} was cut off; it runs again as a new attempt")
    from orchestrate.engine import budget
    from orchestrate.workers.launch import start
    start(ctx, ns.id, ctx.campaign.tip, extra_env=budget.worker_env(ctx, ns.id))  # as DISPATCH tells it (rv79)


def _begun_unrecorded(ctx: Context) -> None:
    """Attempts whose worker began (its start is written ahead) though the node's own entry for them went with
    the batch a crash cut off (DISPATCH's, or a resume's retry's): their processes went with the dead runner's
    leftovers, and what they reported is spent, counted before anything starts again (rv81)."""
    c, entries = ctx.campaign, ctx.recorder.written()
    counted = {(cx["node"], cx["attempt"]) for e in entries if e["kind"] == "result"
               and (cx := e["context"]).get("effect") in USAGE_EFFECTS}
    for e in entries:
        cx = e["context"]
        if e["kind"] == "result" and cx.get("effect") == "worker-spawn" and cx["node"] in c.nodes \
                and cx["attempt"] > c.nodes[cx["node"]].attempt and (cx["node"], cx["attempt"]) not in counted:
            counted.add((cx["node"], cx["attempt"]))
            _cut_off_usage(ctx, c.nodes[cx["node"]], cx["attempt"])


def _cut_off_usage(ctx: Context, ns, attempt: int | None = None) -> None:
    """What the cut-off attempt (the node's, or `attempt`) reported to $ORCH_USAGE before it was stopped,
    journalled as its own row: it was spent, and the budget counts it before the retry is told what it may
    still spend (rv79)."""
    from orchestrate.workers.local import WorkOutcome
    from orchestrate.workers.returns import reported_usage
    attempt = attempt or ns.attempt
    said = reported_usage(ctx, WorkOutcome(ns.id, attempt, None, 0.0, False, "", None, ""))
    if said:
        ctx.emit("result", {"effect": "worker-cut-off", "node": ns.id, "attempt": attempt, **said},
                 source_entity=f"worker:{ns.id}", source_type="worker")


def _ours(pid: int, topic: str, node: str, worktree: Path) -> bool:
    """Is `pid` still the worker we started (not a reused pid, nor another checkout's worker of this node)?"""
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return proc.group_alive(pid)
    return {f"ORCH_TOPIC={topic}".encode(), f"ORCH_NODE={node}".encode(),
            f"ORCH_WORKTREE={worktree}".encode()} <= set(env)


def _repaired(ctx: Context, what: str, message: str) -> None:
    ctx.emit("repair", {"repair": what, "message": message}, **REPAIR)
    ctx.out.always(f"repair: {message}")


def pick(layout: Layout, topic: str | None) -> str:
    if topic is not None:  # an empty one is refused there, never taken for the campaign in flight
        return topics.pick(layout.ledger, topic)
    flying = sorted(set(topics.in_flight(layout.ledger)) | set(_unopened(layout)))
    if not flying:
        raise UsageError("no campaign is in flight", hint="`orchestrate status` shows the last one")
    if len(flying) > 1:
        raise UsageError(f"several campaigns are in flight: {', '.join(flying)}", hint="pass --topic")
    return flying[0]




def _unopened(layout: Layout) -> list[str]:
    """Topics whose journal holds an `open` entry that a crash kept out of the recorder's log."""
    found = []
    sync_index(layout.ledger)  # a runner's commits leave the index behind (recorder/journal.py)
    for line in git.lines(layout.ledger, "status", "--porcelain=v1", "--untracked-files=all", "--", "state"):
        path = line[3:]
        if path.endswith("/journal.jsonl") and path.count("/") == 2:
            topic = path.split("/")[1]
            if b'"kind":"open"' in (layout.ledger / path).read_bytes():
                found.append(topic)
    return found
