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

What the evaluators' code changed of what is watched is looked at when each finishes (watch.after_judging),
and a worker's return is compared with the nodes being judged among the suspects (watch._live). The threads'
processes carry the runner's tags: an interrupt or the run's end kills them (loop.drive), and `stop` joins
the threads.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from gates import evaluators
from gates.shared.verdict import Verdict
from orchestrate.recorder.campaign import LANDED


def run(ctx, node_id: str) -> Verdict:
    """The node's evaluators, in its worktree (in the sandbox when judging is sandboxed)."""
    from orchestrate.workers import containment
    ns = ctx.campaign.nodes[node_id]
    log = ctx.layout.runs(ctx.campaign.topic) / node_id / f"evaluators-{ns.attempt}.log"
    with containment.judging(ctx, ctx.root / ns.worktree, (node_id,)):
        return evaluators.check(ctx.dag.effective_checks(node_id), ctx.root / ns.worktree, env=ctx.runner_tags(),
                                log_path=log, default_timeout=ctx.dag.by_id[node_id].timeout)


def ahead(ctx) -> bool:
    """Do evaluators run ahead in this campaign: eager, and every machine node in the sandbox?"""
    if ctx.campaign.schedule != "eager" or ctx.dag is None:
        return False
    key = id(ctx.dag)
    if getattr(ctx, "_ahead", (None, False))[0] != key:
        from orchestrate.workers import containment, handwork
        ctx._ahead = (key, all(containment.enabled(ctx, n) for n in ctx.dag.nodes
                               if not handwork.is_human(ctx.dag, n.id)))
    return ctx._ahead[1]


def _eligible(ctx, node_id: str) -> bool:
    ns, dag = ctx.campaign.nodes[node_id], ctx.dag
    return (len(dag.group_of(node_id)) == 1 and ns.rc in (0, None) and bool(dag.effective_checks(node_id))
            and not dag.by_id[node_id].budget and ns.accepted_at != ns.head)


def pending(ctx, node_id: str) -> bool:
    """Is the landed node waiting for evaluators that run ahead (running, or not started yet)? Not one a seam
    holds (a review divergence asks a person about evaluators that already ran)."""
    if not ahead(ctx) or not _eligible(ctx, node_id):
        return False
    from orchestrate.engine import schedule
    return (node_id, ctx.campaign.nodes[node_id].attempt) not in ctx.evaluated and node_id not in schedule.held(ctx)


def in_flight(ctx) -> list[str]:
    """The nodes whose evaluators run now."""
    return sorted(node for node, _ in ctx.evaluating)


def finished(ctx) -> bool:
    """Has an evaluator run ended that `tick` has not taken in yet?"""
    return any(future.done() for future, _ in ctx.evaluating.values())


def tick(ctx) -> None:
    """Take in the evaluator runs that ended, then start those of nodes that landed since."""
    done = [key for key, (future, _) in ctx.evaluating.items() if future.done()]
    if done:
        ran = min(ctx.evaluating[key][1] for key in done)
        for key in done:
            future, _ = ctx.evaluating.pop(key)
            ctx.evaluated[key] = future.result()  # a bug in a thread is raised here, in the loop's
        from orchestrate.engine import watch
        watch.after_judging(ctx, [node for node, _ in done], ran)  # each blamed node's verdict fails when judged
    if not ahead(ctx):
        return
    c = ctx.campaign
    for node_id in c.with_status(LANDED):
        key = (node_id, c.nodes[node_id].attempt)
        if key in ctx.evaluating or not pending(ctx, node_id):
            continue
        if ctx.judge_pool is None:
            width = getattr(ctx.executor, "jobs", None) or 4
            ctx.judge_pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix="evaluators")
        ctx.evaluating[key] = (ctx.judge_pool.submit(run, ctx, node_id), ctx.judge_runs)
        if ctx.recorder is not None:  # where its judging began, for the report's timeline and for status
            ctx.emit("result", {"effect": "evaluators-start", "node": node_id, "attempt": key[1]})
        ctx.out.line(f"{node_id}: evaluators started (attempt {key[1]})")


def stop(ctx) -> None:
    """After the run's processes were killed (loop.drive): the threads end, nothing they found is used."""
    pool, ctx.judge_pool = ctx.judge_pool, None
    ctx.evaluating.clear()
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)

