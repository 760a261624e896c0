"""RECONCILE: judge the first LANDED node with the gates, never the worker's word.

Order (DESIGN §5): adherence of the campaign branch so far; then for the node (1) its evaluators,
(2) surface honesty, (3) coherence of its change; (4) premise freshness of every pending node;
(5) the verdict. A LOOPS_WITH group is judged as one: its evaluators on the members' combined tree,
each member's own gates on its own change, one verdict for all of them.
"""
from __future__ import annotations

from gates import adherence, coherence, evaluators, premise, reconcile_node
from gates.shared import case_names
from gates.shared.verdict import Verdict
from orchestrate import git
from orchestrate.engine import budget, evaluations, judge, probes, schedule, watch
from orchestrate.engine.context import Context
from orchestrate.engine.states import Outcome
from orchestrate.recorder.campaign import INVALIDATED, LANDED, PENDING, REWORK
from orchestrate.seams.choices import CHOICES
from orchestrate.workers import containment, returns, siblings


def handle(ctx: Context) -> Outcome:
    c = ctx.campaign
    # Only what was merged since the last audit is new: the audit stays linear over the campaign.
    since = ctx.audited_merges if ctx.audited else 0
    heads = {c.nodes[n].head for n in c.merged[since:]}
    made = {c.nodes[n].merge for n in c.merged}
    audit = adherence.check(ctx.root, c.topic, ctx.audited or c.baseline, node_heads=heads, merge_commits=made)
    if audit.code == 0:
        ctx.audited, ctx.audited_merges = c.tip, len(c.merged)
    else:
        entry = judge.record(ctx, None, audit)
        ctx.halt_reason = f"campaign/{c.topic} breaks adherence: {audit.summary}"
        ctx.emit("halt", {"reason": ctx.halt_reason, "gate": entry["id"]}, derived_from=[entry["id"]])
        return Outcome.ADHERENCE_FAILED
    stopped = schedule.stopped_by_environment(ctx)
    if stopped:  # all of them at once: one fix, one answer
        for n, why in stopped.items():
            judge.environment_stop(ctx, [n], why)
        ctx.subject = " ".join(stopped)
        return Outcome.ESCALATE
    # eager: a node that landed after a merge moved the head past its base was never probed (probes run as the
    # head moves, when it had not landed yet): probed now, before it is judged; all of them conflicting, they
    # start again from the head (rv77)
    if schedule.eager(ctx) and probes.after_merge(ctx) and not schedule.landed(ctx):
        return Outcome.REWORK
    siblings.before_reading(ctx)  # files that went uncompared, now to be read: compared first
    _prefetch(ctx)
    if not schedule.landed(ctx):  # eager: their evaluators run ahead (started as the run resumed here, or run
        return Outcome.RUNNING  # again after an amendment): judged once they are done
    node_id = schedule.landed(ctx)[0]
    ctx.subject = node_id
    group = [m for m in ctx.dag.group_of(node_id) if c.nodes[m].status == LANDED]
    if len(group) > 1:
        return _group(ctx, group)
    ns = c.nodes[node_id]
    node = ctx.dag.by_id[node_id]
    entries: list[str] = []
    if crossed := budget.crossed(ctx, node_id):  # over its budget: not merged, whatever its gates would say
        verdicts = [crossed]
        entries = [judge.record(ctx, node_id, crossed)["id"]]
        return _fail(ctx, node_id, verdicts, entries, final=True)
    if ns.rc not in (0, None):
        verdicts = [_worker_failed(ns)]
    else:
        evaluated = evaluations.taken(ctx, node_id) or evaluations.run(ctx, node_id)[1]
        if why := judge.cannot_start(evaluated):
            judge.record(ctx, node_id, evaluated)
            judge.environment_stop(ctx, [node_id], why)
            return Outcome.ESCALATE
        verdicts, entries = _judge(ctx, node_id, [evaluated])
        if blamed := watch.judged_blame(ctx, node_id):
            verdicts.append(blamed)
            entries.append(judge.record(ctx, node_id, blamed)["id"])
        split = _reviewers_disagree(node, evaluated)
        if split and all(v.ok for v in verdicts[1:]):
            ctx.emit("seam", {"seam": "review-divergence", "node": node_id, "choices": list(CHOICES["review-divergence"]),
                              "reason": "reviewer evaluators disagree", "show": split, "bound_to": ns.head,
                              "gates": entries}, derived_from=entries)
            return Outcome.NEEDS_HUMAN
    failed = [v for v in verdicts if not v.ok]
    if not failed:
        ctx.emit("verdict", {"node": node_id, "verdict": "accept", "at": ns.head}, derived_from=entries)
        ctx.out.line(f"{node_id}: ACCEPT (attempt {ns.attempt})")
        return Outcome.ACCEPT
    return _fail(ctx, node_id, failed, entries)


def _prefetch(ctx: Context) -> None:
    """Run the evaluators of every landed node at once, up to --jobs of them, before the first is judged:
    evaluators are the slow part of judging and each runs in its own node's worktree, so judging N landed
    nodes costs about the slowest one, not the sum. The verdicts are recorded as each node is judged."""
    c = ctx.campaign
    todo = [n for n in schedule.landed(ctx) if len(ctx.dag.group_of(n)) == 1 and c.nodes[n].rc in (0, None)
            and (n, c.nodes[n].attempt) not in ctx.evaluated and ctx.dag.effective_checks(n)
            and not ctx.dag.by_id[n].budget]  # a budget may stop the node before its evaluators run
    if len(todo) < 2:
        return
    import threading
    from concurrent.futures import ThreadPoolExecutor
    width = min(len(todo), getattr(ctx.executor, "jobs", None) or len(todo))
    pool, ran = ThreadPoolExecutor(max_workers=width, thread_name_prefix="evaluators"), ctx.judge_runs
    stop, futures = threading.Event(), {}
    try:
        for n in todo:
            futures[n] = pool.submit(evaluations.run, ctx, n, stop)
        for n, future in futures.items():
            ctx.evaluated[(n, c.nodes[n].attempt)] = future.result()
        watch.after_judging(ctx, todo, ran)  # each blamed node's verdict fails when it is judged
    except BaseException:  # Ctrl-C or a crash: none more starts (rv53: a thread went on to its node's next
        # evaluator), those running must not outlive the runner, and what their code changed is put back and
        # blamed, as for evaluators run ahead (evaluations.settle)
        stop.set()
        evaluations.kill_until_done(list(futures.values()), [ctx.runner_tags()])
        watch.after_judging(ctx, todo, ran)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _judge(ctx: Context, node_id: str, shared: list[Verdict]) -> tuple[list[Verdict], list[str]]:
    """Run the node's own gates (surface honesty, coherence, payload and outputs contracts, plugin gates)
    and record them with the `shared` verdicts (its evaluators) under the node: (verdicts, entry ids)."""
    c = ctx.campaign
    ns = c.nodes[node_id]
    node = ctx.dag.by_id[node_id]
    worktree = ctx.root / ns.worktree
    # coherence runs the project's configured evaluators in the worktree, and gate plugins their commands
    # What runs the node's code in its worktree (its evaluators, coherence's configured evaluators, each gate
    # plugin) may rewrite what the next one reads: the worktree is put back to the commit before each such reader
    # that follows one (rv36, rv38): what they judge is what is merged.
    readers, evaluated = coherence.needs_checkout(ctx.layout.ledger), bool(ctx.dag.effective_checks(node_id))
    with containment.judging(ctx, worktree, (node_id,)):
        if evaluated and readers:
            shared = shared + _put_back(ctx, ns, worktree)
        touched = reconcile_node.changes_between(ctx.root, ns.base, ns.head)
        checks = shared + [
            reconcile_node.check(node_id, node.file_surface, touched,
                                 case_names.collisions(ctx.root, ns.base, ns.head, reconcile_node.added(touched))),
            coherence.check(ctx.root, ns.base, ns.head, ledger=ctx.layout.ledger, topic=c.topic,
                            worktree=worktree, project_gates=False),
        ] + [_payload(ctx, e, ns.head) for e in ctx.dag.outgoing(node_id) if e.predicate == "PRODUCES"]
        if node.outputs:
            checks.append(_outputs(ctx, node, ns))
        entries = [judge.record(ctx, node_id, v)["id"] for v in checks]
        ran = readers or evaluated
        for gate in _plugin_gates(ctx, node_id):
            if ran and (wrong := _put_back(ctx, ns, worktree)):
                checks += wrong
                entries.append(judge.record(ctx, node_id, wrong[0])["id"])
            v, entity = _plugin_gate(ctx, gate, node_id, worktree, ns)
            checks.append(v)
            entries.append(judge.record(ctx, node_id, v, source_entity=entity)["id"])
            ran = True
    _freshness(ctx, node_id, worktree)
    return checks, entries


def _put_back(ctx: Context, ns, worktree) -> list[Verdict]:
    """The worktree put back to the node's commit alone (returns.cleared_again); a failing verdict when it could
    not be."""
    why = returns.cleared_again(ctx, worktree, ns.base, ns.head)
    return [Verdict("worktree", 1, f"FAIL: after code of the node's ran in its worktree, {why}")] if why else []


def _worker_failed(ns) -> Verdict:
    stated = ns.rc == 2 and ("freeze" in ns.feedback or "its attempt failed" in ns.feedback)  # set by returns
    reason = ns.feedback if stated else (
        "the worker timed out" if ns.rc == 124 else f"the worker exited {ns.rc}")
    return Verdict("worker", 1, f"FAIL: {reason}; log: {ns.log}")


def _fail(ctx: Context, node_id: str, failed: list[Verdict], entries: list[str], *,
          group_id: str | None = None, final: bool = False) -> Outcome:
    """Record a non-accept verdict for one node: rework, escalate, or abandon (`final`: no rework, as
    when the node crossed its budget)."""
    ns = ctx.campaign.nodes[node_id]
    node = ctx.dag.by_id[node_id]
    failures = ns.failures + 1
    feedback = judge.failure_text(failed)
    verdict = judge.next_verdict(node, failures)
    if final and verdict == "rework":
        verdict = "abandon" if node.on_exhausted == "continue" else "escalate"
    extra = {"group_id": group_id} if group_id else {}
    entry = ctx.emit("verdict", {"node": node_id, "verdict": verdict, "at": ns.head, "reasons": feedback, **extra},
                     derived_from=entries)
    ctx.out.line(f"{node_id}: {verdict.upper()} ({judge.attempt_text(ns.attempt, failures, judge.budget(node))}): "
                 + "; ".join(judge.said(v) for v in failed))
    if verdict == "abandon":
        judge.abandon(ctx, node_id, failures, feedback, derived_from=[entry["id"]])
        return Outcome.ABANDONED
    ctx.emit("node", {"node": node_id, "status": REWORK, "failures": failures, "feedback": feedback,
                      "verdict": verdict})
    return Outcome.ESCALATE if verdict == "escalate" else Outcome.REWORK


def _group(ctx: Context, members: list[str]) -> Outcome:
    """A LOOPS_WITH group, judged on one combined tree (seeds-other §3.2): the members' heads merged
    together onto the tip in a scratch worktree, where the union of their evaluators runs once; each
    member's own gates run on its own change. All or nothing: one failure reworks every member."""
    c = ctx.campaign
    group_id = "+".join(members)
    ctx.subject = group_id
    combined = _combined_evaluators(ctx, members, group_id)
    if why := judge.cannot_start(combined):
        judge.environment_stop(ctx, members, why)
        return Outcome.ESCALATE
    outcomes: dict[str, tuple[list[Verdict], list[str]]] = {}
    for m in members:
        ns = c.nodes[m]
        if ns.rc not in (0, None):
            outcomes[m] = ([_worker_failed(ns)], [])
        else:
            outcomes[m] = _judge(ctx, m, [combined])
    for m in members:
        if blamed := watch.judged_blame(ctx, m):
            outcomes[m][0].append(blamed)
            outcomes[m][1].append(judge.record(ctx, m, blamed)["id"])
    if all(v.ok for verdicts, _ in outcomes.values() for v in verdicts):
        for m in members:
            ctx.emit("verdict", {"node": m, "verdict": "accept", "at": c.nodes[m].head, "group_id": group_id},
                     derived_from=outcomes[m][1])
        ctx.out.line(f"group {group_id}: ACCEPT on the combined tree")
        return Outcome.ACCEPT
    failing = [f"{m}: {judge.said(v)}" for m, (verdicts, _) in outcomes.items() for v in verdicts if not v.ok]
    worst = Outcome.REWORK
    for m in members:
        own = [v for v in outcomes[m][0] if not v.ok]
        reason = own or [Verdict("group", 1, f"FAIL: its LOOPS_WITH group {group_id} failed on the combined tree: "
                                 + "; ".join(failing))]
        outcome = _fail(ctx, m, reason, outcomes[m][1], group_id=group_id)
        if outcome is Outcome.ESCALATE or (outcome is Outcome.ABANDONED and worst is Outcome.REWORK):
            worst = outcome
    return worst


def _combined_evaluators(ctx: Context, members: list[str], group_id: str) -> Verdict:
    """The union of the members' effective evaluators, run once on the members merged onto the tip."""
    c = ctx.campaign
    checks = sorted(ctx.dag.checks_for(tuple(members)), key=lambda check: check.name)
    scratch = ctx.layout.scratch / "groups" / c.topic / group_id
    if scratch.exists():
        git.worktree_remove(ctx.root, scratch)
    scratch.parent.mkdir(parents=True, exist_ok=True)
    git.worktree_add_detached(ctx.root, scratch, c.tip)
    try:
        heads = [c.nodes[m].head for m in members if c.nodes[m].head and c.nodes[m].head != c.nodes[m].base]
        if heads:
            done = git.git(scratch, "merge", "--no-ff", "--no-commit", *heads, check=False,
                           env=git.identity_env(scratch))
            if done.rc != 0:
                conflicts = git.conflicted_paths(scratch)
                return Verdict("trial-merge", 3, f"CONFLICT: the members of {group_id} do not merge together "
                               f"onto the campaign head ({', '.join(conflicts) or (done.stderr or done.stdout).strip()})")
        timeout = max(ctx.dag.by_id[m].timeout for m in members)
        log = ctx.layout.runs(c.topic) / members[0] / f"group-{c.nodes[members[0]].attempt}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with containment.judging(ctx, scratch, tuple(members)):
            return evaluators.check(tuple(checks), scratch, log_path=log,
                                    default_timeout=timeout, env=ctx.runner_tags())
    finally:
        git.worktree_remove(ctx.root, scratch)


def _plugin_gates(ctx: Context, node_id: str) -> list:
    from orchestrate.engine import plugin_gates as plugingates
    gates = plugingates.for_node(ctx.dag, node_id)
    if gates and ctx.gate_plugins is None:
        ctx.gate_plugins = plugingates.load(ctx.dag, lambda m: ctx.out.always(f"warning: {m}"))
    return gates


def _plugin_gate(ctx: Context, gate, node_id: str, worktree, ns) -> tuple[Verdict, str]:
    from orchestrate.engine import plugin_gates as plugingates
    env = {**ctx.runner_tags(), "ORCH_NODE": node_id, "ORCH_BASE": ns.base, "ORCH_HEAD": ns.head}
    return plugingates.run(ctx, gate, worktree, env)


def _outputs(ctx: Context, node, ns) -> Verdict:
    """outputs-present: the attempt's ORCH_OUTPUTS file, as journalled when its worker returned, is a JSON object
    with every declared key."""
    from orchestrate.dag.edges import OUTPUTS_GATE
    from orchestrate.workers import returns
    from orchestrate.workers.brief import outputs_path
    path = outputs_path(returns.run_dir(ctx, node.id), ns.attempt)
    reported = _reported_outputs(ctx, node.id, ns.attempt) or returns.read_outputs(path, node.outputs)
    if "error" in reported:
        return Verdict(OUTPUTS_GATE, 1, f"FAIL: {reported['error']}")
    if reported.get("absent"):
        return Verdict(OUTPUTS_GATE, 1, f"FAIL: {node.id} declares outputs {', '.join(node.outputs)} but wrote no "
                       f"$ORCH_OUTPUTS file ({path.name})")
    values = reported["values"]
    missing = [k for k in node.outputs if k not in values]
    if missing:
        return Verdict(OUTPUTS_GATE, 1, f"FAIL: {path.name} lacks declared output(s) {', '.join(missing)}")
    return Verdict(OUTPUTS_GATE, 0, f"PASS: {', '.join(f'{k}={values[k]!r}' for k in node.outputs)}",
                   data={"outputs": {k: values[k] for k in node.outputs}})


def _reported_outputs(ctx: Context, node_id: str, attempt: int) -> dict | None:
    """What the attempt's journalled result says its outputs file held (workers/returns.py `reported_outputs`);
    None for a result journalled by an orchestrate that did not record it (the file is read as it is now)."""
    from itertools import chain
    result = next((e["context"] for e in chain(reversed(ctx.recorder.held), reversed(ctx.recorder.written()))
                   if e["kind"] == "result" and e["context"].get("effect") == "worker-start"
                   and e["context"].get("node") == node_id and e["context"].get("attempt") == attempt), {})
    return result.get("outputs_reported")


def _payload(ctx: Context, edge, head: str) -> Verdict:
    """A PRODUCES edge's contract, judged on the producer: every payload path exists at its head."""
    from orchestrate.dag.edges import payload_gate
    missing = [p for p in edge.payload if not git.git(ctx.root, "cat-file", "-e", f"{head}:{p}", check=False)]
    if not missing:
        return Verdict(payload_gate(edge.id), 0, f"PASS: {', '.join(edge.payload)} present for {edge.dst}")
    return Verdict(payload_gate(edge.id), 1, f"FAIL: {edge.src} must produce {', '.join(missing)} for {edge.dst} "
                   f"(edge {edge.id}); not found at {head[:12]}")


def _reviewers_disagree(node, verdict: Verdict) -> list[str]:
    """When some `review: true` evaluators pass and others fail, a person settles it; else []."""
    reviewers = {e.name for e in node.evaluators if e.review}
    results = {r["name"]: r["rc"] for r in verdict.data.get("results", []) if r["name"] in reviewers}
    if len(reviewers) < 2 or len(set(rc == 0 for rc in results.values())) < 2:
        return []
    others_fail = any(r["rc"] != 0 for r in verdict.data.get("results", []) if r["name"] not in reviewers)
    if others_fail:
        return []
    return [f"{name}: {'pass' if rc == 0 else f'fail (rc {rc})'}" for name, rc in sorted(results.items())]


def _freshness(ctx: Context, judged: str, worktree) -> None:
    """Re-check the premises of every pending node against the judged node's tree."""
    for other in ctx.campaign.nodes.values():
        if other.status != PENDING or other.id == judged:
            continue
        node = ctx.dag.by_id.get(other.id)
        if node is None or not node.tripwires:
            continue
        with containment.judging(ctx, worktree, (judged,)):  # the judged node's tree runs the tripwires
            v = premise.check(other.id, node.tripwires, worktree)
        entry = judge.record(ctx, other.id, v)
        if v.code == 1:
            ctx.emit("node", {"node": other.id, "status": INVALIDATED, "feedback": v.summary},
                     derived_from=[entry["id"]])
            ctx.out.line(f"{other.id}: INVALIDATED by {judged}: {v.summary}")
