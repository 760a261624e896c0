"""Evaluators run ahead (eager schedule): a landed node's evaluators start the moment the loop sees it land,
in threads (up to --jobs at once), while the loop goes on taking in returns, enforcing timeouts, judging,
merging and dispatching; RECONCILE judges the node once they are done (schedule.landed leaves it out until
then). Evaluators are the slow part of judging; run in the loop's thread, one node's would stop the campaign
for as long as they take.

Only where every worker runs in the sandbox: then nothing but a node's own evaluators can write its worktree
while they run, and they run sandboxed too (workers/containment.py). A worker without the sandbox could write
a worktree being judged; there evaluators run as before, in RECONCILE, while the loop waits (what lands
together still runs at once: reconcile._prefetch). A group (LOOPS_WITH), a worker that failed and a node with
a budget are judged in RECONCILE as before.

A verdict stands for the evaluators it ran: after a DAG amendment changed a node's evaluators, it is run
again. What the evaluators' code changed of what is watched is looked at when each run ends
(watch.after_judging), and a worker's return is compared with the nodes being judged among the suspects
(watch._live). When the run stops (a pause waits for them; a halt, an interrupt or an error stops them: none
more starts, the running ones are killed), the watch looks as well, before the run's last commit.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor, wait

from gates import evaluators
from gates.shared.verdict import Verdict
from orchestrate.recorder.campaign import LANDED

AHEAD_TAG = "ORCH_AHEAD"  # node+attempt, in the environment of what its evaluators run ahead start


def run(ctx, node_id: str, stop: threading.Event | None = None) -> tuple[tuple, Verdict]:
    """The node's evaluators, in its worktree (in the sandbox when judging is sandboxed): (the checks, verdict)."""
    from orchestrate.workers import containment
    ns = ctx.campaign.nodes[node_id]
    checks = ctx.dag.effective_checks(node_id)
    log = ctx.layout.runs(ctx.campaign.topic) / node_id / f"evaluators-{ns.attempt}.log"
    env = {**ctx.runner_tags(), **({AHEAD_TAG: f"{node_id}+{ns.attempt}"} if stop is not None else {})}
    with containment.judging(ctx, ctx.root / ns.worktree, (node_id,)):
        return checks, evaluators.check(checks, ctx.root / ns.worktree, env=env, log_path=log,
                                        default_timeout=ctx.dag.by_id[node_id].timeout,
                                        stop=stop.is_set if stop is not None else None)


def taken(ctx, node_id: str) -> Verdict | None:
    """The verdict of the node's evaluators run ahead of its judging, if they were the ones in force now."""
    got = ctx.evaluated.pop((node_id, ctx.campaign.nodes[node_id].attempt), None)
    return got[1] if got is not None and got[0] == ctx.dag.effective_checks(node_id) else None


def ahead(ctx) -> bool:
    """Do evaluators run ahead now: eager, and every machine node in the sandbox as the DAG and the config say
    now (a person may edit either while the run goes on)? An edit that turns it off stops new runs ahead, and
    schedule._eager starts no worker without the sandbox while one is in flight. One that turns it on is
    adopted only while no worker without it runs or waits (engine/watch.py), so none does when runs start."""
    if ctx.campaign.schedule != "eager" or ctx.dag is None:
        return False
    from orchestrate.workers import containment, handwork
    mode = containment.campaign_mode(ctx)
    cached = getattr(ctx, "_ahead", None)
    if cached is None or cached[0] is not ctx.dag or cached[1] != mode:  # the DAG itself: an id can be reused
        ctx._ahead = (ctx.dag, mode, all(containment.enabled(ctx, n) for n in ctx.dag.nodes
                                         if not handwork.is_human(ctx.dag, n.id)))
    return ctx._ahead[2]


def _eligible(ctx, node_id: str) -> bool:
    ns, dag = ctx.campaign.nodes[node_id], ctx.dag
    return (len(dag.group_of(node_id)) == 1 and ns.rc in (0, None) and bool(dag.effective_checks(node_id))
            and not dag.by_id[node_id].budget and ns.accepted_at != ns.head)


def pending(ctx, node_id: str) -> bool:
    """Is the landed node waiting for evaluators that run ahead (running, not started yet, or to run again
    because the DAG's were amended)? Not one a seam holds (a review divergence asks a person about evaluators
    that already ran). A run in flight is waited for whatever holds now: an amendment that turned running ahead
    off, or made the node ineligible, would have it judged, merged and its worktree handed on while the run went
    on writing there (rv53)."""
    if (node_id, ctx.campaign.nodes[node_id].attempt) in ctx.evaluating:
        return True
    if not ahead(ctx) or not _eligible(ctx, node_id):
        return False
    from orchestrate.engine import probes, schedule
    got = ctx.evaluated.get((node_id, ctx.campaign.nodes[node_id].attempt))
    return ((got is None or got[0] != ctx.dag.effective_checks(node_id)) and node_id not in schedule.held(ctx)
            and not probes.starts_again(ctx, node_id))


def in_flight(ctx) -> list[str]:
    """The nodes whose evaluators run now."""
    return sorted(node for node, _ in ctx.evaluating)


def finished(ctx) -> bool:
    """Has an evaluator run ended that `tick` has not taken in yet?"""
    return any(future.done() for future, _ in ctx.evaluating.values())


def tick(ctx) -> None:
    """Take in the evaluator runs that ended, then start those of nodes that landed since."""
    _take_in(ctx, [key for key, (future, _) in ctx.evaluating.items() if future.done()])
    if not ahead(ctx):
        return
    c = ctx.campaign
    if ctx.unread and any(pending(ctx, n) for n in c.with_status(LANDED)):
        # a resumed runner's landed worktrees went uncompared (workers/siblings.py): compared, and put back, before
        # their evaluators read them, never while they run there (rv68: the put-back raced the evaluator's writes)
        from orchestrate.workers import siblings
        siblings.before_reading(ctx)
    from orchestrate.engine import probes
    for node_id in c.with_status(LANDED):
        key = (node_id, c.nodes[node_id].attempt)
        if key in ctx.evaluating or not pending(ctx, node_id):
            continue
        probes.on_landing(ctx, node_id)  # one whose judged head cannot merge starts again instead
        if not pending(ctx, node_id):
            continue
        if ctx.judge_pool is None:
            ctx.judge_pool = ThreadPoolExecutor(max_workers=getattr(ctx.executor, "jobs", None) or 4,
                                                thread_name_prefix="evaluators")
            ctx.judge_stop = threading.Event()
        ran = ctx.judge_runs  # read before the thread can start a process: after, its run could go unlooked-at
        ctx.evaluating[key] = (ctx.judge_pool.submit(run, ctx, node_id, ctx.judge_stop), ran)
        if ctx.recorder is not None:  # where its judging began, for the report's timeline and for status
            ctx.emit("result", {"effect": "evaluators-start", "node": node_id, "attempt": key[1]})
        ctx.out.line(f"{node_id}: evaluators started (attempt {key[1]})")


def _take_in(ctx, done: list, keep: bool = True) -> None:
    """The verdicts of ended runs (kept unless the run is stopping), then the watch's look after their code."""
    if not done:
        return
    ran = min(ctx.evaluating[key][1] for key in done)
    for key in done:
        future, _ = ctx.evaluating.pop(key)
        if keep:
            ctx.evaluated[key] = future.result()  # a bug in a thread is raised here, in the loop's
    from orchestrate.engine import watch
    watch.after_judging(ctx, sorted({node for node, _ in done}), ran)  # a blamed node's verdict fails when judged


def settle(ctx, *, wait_for_them: bool) -> None:
    """The run stops with evaluators in flight. A pause waits for them; a halt, an interrupt or an error stops
    them (none more starts; the running ones are killed). Either way what their code changed of what is watched
    is put back and blamed, and their verdicts are not kept: a resume runs them again."""
    if not ctx.evaluating:
        return
    futures = [future for future, _ in ctx.evaluating.values()]
    if not wait_for_them:
        ctx.judge_stop.set()
        tags = ctx.runner_tags()
        kill_until_done(futures, [{**tags, AHEAD_TAG: f"{node}+{attempt}"} for node, attempt in ctx.evaluating])
    else:
        ctx.out.always(f"waiting for the evaluators of {', '.join(in_flight(ctx))} to end before stopping")
    wait(futures)
    _take_in(ctx, list(ctx.evaluating), keep=False)


KILL_AGAIN = 0.2  # seconds between kills of what stopped runs start


def kill_until_done(futures, tags: list[dict]) -> None:
    """Kill what carries one of `tags` until every run has ended, not once: a thread that asked `stop()` just before
    it was set starts its process after the first kill (rv53); each thread starts at most that one, killed here."""
    from orchestrate import reaping
    while True:
        for each in tags:
            reaping.kill_tagged(each, orphans=False)
        if not wait(futures, timeout=KILL_AGAIN).not_done:
            return


def stop(ctx) -> None:
    """After the run's processes were killed (loop.drive): the threads end."""
    pool, ctx.judge_pool = ctx.judge_pool, None
    if ctx.judge_stop is not None:
        ctx.judge_stop.set()
    if ctx.evaluating:  # one may have started after drive's kill, before the stop was set
        kill_until_done([future for future, _ in ctx.evaluating.values()], [ctx.runner_tags()])
    ctx.evaluating.clear()
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)
