"""Starting a campaign, and reading one back from its journal."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrate import faults, git
from orchestrate.engine.context import Context
from orchestrate.engine.loop import drive
from orchestrate.engine.terminate import like_ctrl_c
from orchestrate.errors import Concurrency, Halted, UsageError
from orchestrate.recorder import topics
from orchestrate.recorder.campaign import Campaign
from orchestrate.recorder.journal import Recorder
from orchestrate.recorder.locate import load, peek, project
from orchestrate.recorder.lock import CampaignLock, runs_workers
from orchestrate.recorder.paths import Layout
from orchestrate.report.live import Reporter
from orchestrate.workers.local import LocalExecutor

if TYPE_CHECKING:
    from orchestrate.workers.executors import Choice


def read_answers(path: Path | None) -> dict:
    """`--answers FILE`: {seam: choice | {choice, note} | [those...]}."""
    if path is None:
        return {}
    import yaml

    from orchestrate.dag.load import read_text
    from orchestrate.seams.choices import CHOICES
    try:
        data = yaml.safe_load(read_text(path)) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise UsageError(f"{where}: malformed YAML: {getattr(exc, 'problem', None) or ' '.join(str(exc).split())}",
                         hint="fix the answers file") from None
    if not isinstance(data, dict) or any(k not in CHOICES for k in data):
        bad = [k for k in data if k not in CHOICES] if isinstance(data, dict) else ["(not a mapping)"]
        raise UsageError(f"{path}: unknown seam(s) {', '.join(map(str, bad))}", hint=f"seams: {', '.join(CHOICES)}")
    for seam, value in data.items():  # a wrong choice is refused now, not found at the seam after the whole run
        for item in value if isinstance(value, list) else [value]:
            choice = item.get("choice") if isinstance(item, dict) else item
            if choice not in CHOICES[seam]:
                raise UsageError(f"{path}: {seam}: `{choice}` is not one of its choices",
                                 hint=f"choices: {', '.join(CHOICES[seam])}; an answer is CHOICE or "
                                      "{choice: CHOICE, note: TEXT}, or a list of those")
    return {k: list(v) if isinstance(v, list) else v for k, v in data.items()}


@like_ctrl_c
def run_campaign(cwd: Path, dag_path: Path | None, *, topic: str | None, mode: str | None, jobs: int | None,
                 quiet: bool, answers: Path | None = None, executor: Choice | None = None,
                 interactive: bool | None = None, schedule: str | None = None) -> int:
    from orchestrate.seams import prompt
    prompt.force(interactive)
    layout = project(cwd)
    dag_file = (dag_path or layout.default_dag).resolve()
    if not dag_file.exists():
        from orchestrate.dag.load import missing
        raise missing(dag_file)
    replies = read_answers(answers)
    name = _topic_of(dag_file, topic, layout.root)
    from orchestrate.engine import settings
    if name is None or settings.problems(layout):  # an invalid DAG or config.yaml: DERIVE halts, writing nothing
        return drive(Context(layout=layout, campaign=Campaign(dag_path=str(dag_file)), recorder=None,
                             executor=LocalExecutor(1), out=Reporter(quiet=quiet), topic_override=topic,
                             mode_override=mode, answers=replies))
    with CampaignLock(layout.scratch / "locks", name):
        _refuse_reuse(layout, name)  # under the lock: a runner that just finished has left its branch
        with _executor(layout, executor, jobs) as ex:
            ctx = Context(layout=layout, campaign=Campaign(dag_path=str(dag_file)), recorder=None, executor=ex,
                          out=Reporter(quiet=quiet), topic_override=topic, mode_override=mode, answers=replies,
                          schedule_override=schedule, jobs_given=jobs is not None)
            return drive(_hooked(ctx))


def _refuse_bad_settings(layout) -> None:
    """config.yaml edited into something invalid while the campaign was stopped: refused before anything
    runs, as `run` refuses it, rather than met by the first node that reads it."""
    from orchestrate.engine import settings
    if found := settings.problems(layout):
        more = f" (and {len(found) - 1} more: `orchestrate validate` lists them)" if len(found) > 1 else ""
        raise UsageError(f"{found[0]}{more}", hint="fix config.yaml, then resume")


@like_ctrl_c
def resume_campaign(cwd: Path, *, topic: str | None, from_log: bool, jobs: int | None, quiet: bool,
                    answers: Path | None = None, executor: Choice | None = None,
                    interactive: bool | None = None) -> int:
    from orchestrate.engine import abandon, resume, watch
    from orchestrate.workers import siblings
    from orchestrate.seams import prompt
    prompt.force(interactive)
    layout = project(cwd)
    name = resume.pick(layout, topic)
    _refuse_bad_settings(layout)
    out = Reporter(quiet=quiet)
    with CampaignLock(layout.scratch / "locks", name, "resume") as lock:
        if lock.took_over:
            out.always(f"notice: took over the lock of pid {lock.took_over.get('pid')} on "
                       f"{lock.took_over.get('host')}, which is no longer running")
        killed = stop_leftovers(name, lock.took_over)  # first: one may be a git writing what rebuild reads
        recorder = Recorder(layout.ledger, name).pin()
        campaign = resume.rebuild(layout, recorder, from_log=from_log, warn=lambda m: out.always(f"warning: {m}"),
                                  crashed=lock.took_over is not None)
        if not campaign.dag_path:  # its runner died in DERIVE, before the campaign's `open` was recorded
            raise UsageError(f"campaign {name} was never opened: its runner stopped before recording it",
                             hint="start it again with `orchestrate run --dag PATH` (nothing of it is in use)")
        if campaign.closed:
            abandon.refuse_resume(recorder)
        if campaign.state == "HALT":
            _refuse_answered_halt(recorder, campaign)
        with _executor(layout, executor, jobs or campaign.jobs) as ex:  # (the run's, unless told otherwise)
            ctx = _hooked(Context(layout=layout, campaign=campaign, recorder=recorder, executor=ex,
                                  out=out, answers=read_answers(answers)))
            ctx.reload_dag()
            _say_stopped(ctx, lock.took_over, killed)
            _unqueue(ctx)
            # before repair starts an attempt again: what it then does to the git dir and the checkout is
            # compared with this (what the dead runner's workers did before is not seen)
            watch.arm(ctx)
            resume.repair(ctx)
            siblings.unread_after_resume(ctx)
            if campaign.state in ("HALT", "PAUSE"):
                campaign.state = _stopped_in(recorder, campaign.state)  # that state runs again: after a fix, or an answer
            if campaign.state == "SEAM" and campaign.seam is None and campaign.decision is None:
                # an accepted amendment that proved invalid halted: the layer's routing runs again, and the
                # (now fixed) DAG opens the dag-amendment seam first
                campaign.state = "CHECKPOINT"
            ctx.fill_slots = campaign.state == "AWAIT"
            out.line(f"resuming campaign {name} in {campaign.state}")
            return drive(ctx)


def stop_leftovers(topic: str, dead: dict | None) -> list[int]:
    """A runner that died (kill -9, a lost machine) leaves its workers, evaluators and campaign checks
    running, each carrying the runner's tags, and whatever git it had started (a checkout of a whole
    repository takes seconds), each carrying its origin (proc.ORIGIN, written in the lock): all are stopped
    before anything is read or started again. The pids killed."""
    if not dead or not dead.get("pid"):
        return []
    from orchestrate import reaping
    killed = reaping.kill_tagged({"ORCH_TOPIC": topic, "ORCH_RUNNER": str(dead["pid"])})
    if isinstance(origin := dead.get("origin"), str) and origin:
        killed += [pid for pid in reaping.kill_tagged({"ORCH_ORIGIN": origin}, orphans=False) if pid not in killed]
    return killed


def _say_stopped(ctx: Context, dead: dict | None, killed: list[int]) -> None:
    if killed:
        ctx.emit("repair", {"repair": "leftover-kill", "pids": killed, "runner": dead["pid"],
                            "message": f"stopped {len(killed)} process(es) the dead runner {dead['pid']} left"},
                 source_entity="orchestrate:resume", source_type="repair")
        ctx.out.always(f"repair: stopped {len(killed)} process(es) the dead runner (pid {dead['pid']}) left running: "
                       f"{' '.join(map(str, killed))}")


def _unqueue(ctx: Context) -> None:
    """Nodes that only waited for a slot when the runner stopped never ran: not an attempt, so they go
    back to how they were and start with the attempt number they were given."""
    from orchestrate.workers import handwork, launch
    for ns in ctx.campaign.nodes.values():
        if launch.never_ran(ns) and not handwork.is_human(ctx.dag, ns.id) and not _has_result(ctx, ns):
            launch.roll_back(ctx, ns.id)
            ctx.out.always(f"repair: {ns.id} was queued and never started; it starts as attempt {ns.attempt + 1}")


def _has_result(ctx: Context, ns) -> bool:
    return any(e["kind"] == "result" and e["context"].get("node") == ns.id and e["context"].get("effect") ==
               "worker-start" and e["context"].get("attempt") == ns.attempt and "rc" in e["context"]
               for e in ctx.recorder.written())


def _refuse_answered_halt(recorder: Recorder, campaign: Campaign) -> None:
    """A halt a person chose at a seam (or a refused final acceptance) stands: running its state again
    would find no seam to settle. Say so, and how to end the campaign; nothing is written."""
    from orchestrate.seams import choices as seams
    if _stopped_in(recorder, "HALT") != "SEAM":
        return
    last = next((e["context"] for e in reversed(recorder.read()) if e["kind"] == "decision"), {})
    if not seams.halt_stands(campaign, last):
        return
    name = recorder.topic
    raise Halted(f"campaign {name} is halted: {campaign.halt or 'a seam was answered halt'}",
                 hint=f"that was a person's answer, which resume does not undo: `orchestrate abandon --topic {name} "
                      f"--note WHY` ends it (its branches are kept); `orchestrate run --topic NEW` starts again")


def _stopped_in(recorder: Recorder, end: str) -> str:
    for entry in reversed(recorder.read()):
        if entry["kind"] == "transition" and entry["context"]["to"] == end:
            return entry["context"]["from"]
    return end


@like_ctrl_c
def decide(cwd: Path, seam: str, choice: str, *, topic: str | None, as_who: str | None, note: str,
           quiet: bool, edge: str | None = None, node: str | None = None) -> int:
    """Record an answer to the open seam; final acceptance completes the campaign at once."""
    from orchestrate.engine import resume
    from orchestrate.report.status import answer_text
    from orchestrate.seams import choices as seams
    layout = project(cwd)
    name = topic or _paused_topic(layout)
    out = Reporter(quiet=quiet)
    lock = CampaignLock(layout.scratch / "locks", name, "decide")
    try:
        lock.acquire()
    except Concurrency as busy:
        if lock.busy is None or not runs_workers(lock.busy):  # another decide, an abandon (or a holder not yet
            raise  # named, rv75): no runner to take an answer left for it; the person tries again in a moment
        return _leave_answer(layout, name, seam, choice, as_who, note, out, busy, node)  # eager runs go past a seam
    try:
        recorder = Recorder(layout.ledger, name).pin()
        campaign = resume.rebuild(layout, recorder, from_log=False, warn=lambda m: out.always(f"warning: {m}"))
        if gone := campaign.abandoned:  # its open seam stays in the state; nothing may answer it now
            raise UsageError(f"campaign {name} was abandoned by {gone['who']} at {gone['at'][:19]}: nothing is left "
                             "to decide", hint="start it again under another topic: orchestrate run --topic NEW")
        if campaign.decision is not None and campaign.seam is None:  # answered already, not yet applied
            raise UsageError(f"an answer is already recorded for campaign {name}, waiting to be applied: "
                             f"{answer_text(campaign.decision)}; no seam is open until then",
                             hint=f"`orchestrate resume --topic {name}` applies it, then asks any seam after it")
        seams.check_answer(campaign.seam, seam, choice, node)
        if edge is not None and campaign.seam.get("edge") != edge:
            raise UsageError(f"edge {edge} is not waiting at a guardrail (the open guardrail seam is on edge "
                             f"{campaign.seam.get('edge')})", hint="`orchestrate status` shows it")
        who = seams.who(layout.root, as_who)
        ctx = _hooked(Context(layout=layout, campaign=campaign, recorder=recorder, executor=LocalExecutor(1), out=out))
        ctx.reload_dag()
        from orchestrate.engine import answers
        if answers.taken(ctx):  # an answer left for a runner that died first is the one that stands
            from orchestrate.seams import inbox
            inbox.stands(layout, name, campaign.seam, campaign.queued)
        entry = seams.record(ctx, campaign.seam, choice, note, who, "human")
        recorder.commit(f"{name}: decide {seam} {choice} ({who})")
        out.always(f"recorded: {seam} {choice} by {who}, bound to {str(entry['context']['bound_to'])[:12]}")
        if seam != "final-acceptance":
            out.always(f"`orchestrate resume --topic {name}` applies it")
            return 0
        campaign.state = "SEAM"
        rc = drive(ctx)
        if choice == "accept" and rc == 0:
            out.always(f"campaign {name} accepted at {campaign.tip[:12]}; merging {campaign.branch} into your "
                       "branch, and pushing, stay yours to do")
        return 0
    finally:
        lock.release()


def _leave_answer(layout: Layout, name: str, seam: str, choice: str, as_who: str | None, note: str,
                  out: Reporter, busy: Exception, node: str | None = None) -> int:
    """`decide` while a runner holds the campaign: the answer is left for it (seams/inbox.py) when the seam
    is open and the campaign takes answers so; otherwise the runner's lock stands (exit 4)."""
    from orchestrate.recorder.locate import peek
    from orchestrate.seams import choices as seams
    from orchestrate.engine import answers
    from orchestrate.seams import inbox
    from orchestrate.recorder.campaign import NODE_SEAMS
    campaign = peek(layout, name)
    if campaign.seam is None and (answered := inbox.answered(layout, name, seam)):  # a moment ago, and applied (rv75)
        raise UsageError(f"seam {seam} is not open: it was answered {answered}, and the running campaign applied "
                         "that answer", hint="`orchestrate status` shows what it does now")
    if campaign.seam is None or campaign.seam["seam"] not in NODE_SEAMS:  # the runner is pausing, or no seam
        raise busy
    seams.check_answer(campaign.seam, seam, choice, node)
    ctx = Context(layout=layout, campaign=campaign, recorder=None, executor=LocalExecutor(1), out=Reporter(quiet=True))
    ctx.reload_dag()
    if not answers.taken(ctx):
        raise Concurrency(f"{busy}; its workers run without the sandbox, which could write an answer too, so "
                          "it takes answers once it pauses", hint="wait for the pause, then decide again") from None
    who = seams.who(layout.root, as_who)
    inbox.leave(layout, name, campaign.seam, choice, note, who)
    about = f" for node {campaign.seam['node']}" if campaign.seam.get("node") else ""
    out.always(f"left for the running campaign: {seam} {choice}{about} by {who}; its runner applies it at its next step "
               f"(if it has stopped meanwhile, `orchestrate resume --topic {name}` does)")
    return 0


def rediscover(cwd: Path, node: str, *, topic: str | None, as_who: str | None, note: str, quiet: bool) -> int:
    """Record that NODE's recorded worker resolution no longer stands: it is made again on resume."""
    from orchestrate.engine import resume
    from orchestrate.seams import choices as seams
    from orchestrate.workers import discovery
    layout = project(cwd)
    name = resume.pick(layout, topic)
    out = Reporter(quiet=quiet)
    with CampaignLock(layout.scratch / "locks", name, "realign"):
        recorder = Recorder(layout.ledger, name).pin()
        campaign = resume.rebuild(layout, recorder, from_log=False, warn=lambda m: out.always(f"warning: {m}"))
        who = seams.who(layout.root, as_who)
        ctx = _hooked(Context(layout=layout, campaign=campaign, recorder=recorder, executor=LocalExecutor(1), out=out))
        ctx.reload_dag()
        dropped = discovery.forget(ctx, node, who, note)
        recorder.commit(f"{name}: realign --rediscover {node} ({who})")
        out.always(f"recorded: {node} will choose its worker again (it had {dropped['name']} {dropped['version']}); "
                   f"`orchestrate resume --topic {name}` does it")
        return 0


def _paused_topic(layout: Layout) -> str:
    waiting = []
    for t in topics.lifecycle(layout.ledger):
        c, _ = load(layout, t)
        if c.seam:
            waiting.append(t)
    if len(waiting) == 1:
        return waiting[0]
    if not waiting:
        raise UsageError("no campaign is waiting at a seam", hint="`orchestrate status` shows where it is")
    raise UsageError(f"several campaigns wait at a seam: {', '.join(sorted(waiting))}", hint="pass --topic")


@contextmanager
def _executor(layout: Layout, choice: Choice | None, jobs: int | None):
    """The chosen executor, closed (its cluster connection dropped) however the run ends; its workers stopped
    when the run ends by an exception."""
    from orchestrate.workers import executors
    ex = executors.build(layout, choice or executors.choose(layout, kind=None, scheduler=None, remote=None), jobs)
    try:
        yield ex
    except BaseException:  # a signal or an error before the loop's own handling (resume's repairs start
        ex.cancel_all()  # cut-off attempts again): no worker it started outlives the runner
        raise
    finally:
        ex.close()


def _hooked(ctx: Context) -> Context:
    """Journal each worker's pid as it starts, so resume can stop a worker its dead runner left."""
    def spawned(request, pid: int | None) -> None:
        ctx.emit("result", {"effect": "worker-spawn", "node": request.node, "attempt": request.attempt, "pid": pid})
        faults.reach("spawned")
        if request.node != ctx.launching:  # it waited in the queue: its attempt begins only now
            ctx.out.line(f"{request.node}: started attempt {request.attempt} (it was queued)")
    ctx.executor.on_spawn = spawned
    return ctx


def _topic_of(dag_file: Path, topic: str | None, root: Path) -> str | None:
    """The campaign's topic, once its base is known to name a commit: a failure that exits 2 (no commits
    yet, a typo in `base:`) must come before the campaign lock creates anything."""
    from orchestrate.dag.load import base_problem, check_dag
    from orchestrate.recorder.topics import brief_dir
    # a campaign's own DAG copy finds its briefs where its campaign recorded, not beside the copy (as DERIVE)
    dag, _ = check_dag(dag_file, topic=topic, brief_dir=brief_dir(dag_file))
    if dag is None:
        return None
    if git.rev_parse(root, "HEAD") is None and git.rev_parse(root, dag.base) is None:
        git.git(root, "rev-parse", "--git-dir")  # a repository git cannot read (a bad .git/config) says so here
        raise UsageError(f"{root} has no commit yet: a campaign starts from one",
                         hint="make a first commit (`git add -A && git commit -m start`), then run again")
    if (wrong := base_problem(dag, root)) is not None:  # (and no problem: `base:` names a commit here)
        raise UsageError(str(wrong))
    return dag.topic


def _refuse_reuse(layout: Layout, topic: str) -> None:
    """A topic names one campaign: refuse to start it twice (nothing is written yet), saying what the
    existing one waits for (a closed campaign has not ended while final acceptance is open or refused)."""
    opened = any(e["kind"] == "open" for e in Recorder(layout.ledger, topic).read())
    if not (git.branch_exists(layout.root, f"campaign/{topic}") and opened):
        return
    if topic in topics.in_flight(layout.ledger):
        hint = f"`orchestrate resume --topic {topic}` continues it"
    elif topics.ended(layout.ledger, topic):
        hint = "choose another topic with --topic"
    elif (peek(layout, topic).seam or {}).get("seam") == "final-acceptance":
        raise UsageError(f"campaign/{topic} already exists and waits at final acceptance",
                         hint=f"answer it: `orchestrate decide final-acceptance accept --topic {topic} "
                              f"--note \"...\"`, or reject; `orchestrate status --topic {topic}` shows it; --topic NEW "
                              "starts another campaign")
    else:
        raise UsageError(f"campaign/{topic} already exists and was refused at final acceptance",
                         hint=f"`orchestrate status --topic {topic}` shows why; `orchestrate abandon --topic {topic} "
                              "--note WHY` ends it; --topic NEW starts another campaign")
    raise UsageError(f"campaign/{topic} already exists", hint=hint)


