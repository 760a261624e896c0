"""CLOSE: adherence audit, the retrospective with its Sufficiency Review, `log: close`, close-check."""
from __future__ import annotations

import os
from pathlib import Path

from gates import adherence, close_check
from orchestrate import git
from orchestrate.engine import judge
from orchestrate.engine.context import Context
from orchestrate.engine.states import Outcome
from orchestrate.recorder import provenance, sketch
from orchestrate.report import html as report_html
from orchestrate.seams.choices import CHOICES
from orchestrate.workers import worktrees


def handle(ctx: Context) -> Outcome:
    c = ctx.campaign
    heads = {s.head for s in c.nodes.values() if s.merge}
    made = {s.merge for s in c.nodes.values() if s.merge}
    audit = adherence.check(ctx.root, c.topic, c.baseline, node_heads=heads, merge_commits=made)
    entry = judge.record(ctx, None, audit)
    if audit.code != 0:
        ctx.halt_reason = f"campaign/{c.topic} fails the adherence audit: {audit.summary}"
        ctx.emit("halt", {"reason": ctx.halt_reason}, derived_from=[entry["id"]])
        return Outcome.FAILED
    if not c.closed:  # a resumed CLOSE does not write its retrospective twice
        path = sketch.find(ctx.layout.ledger, c.topic)
        sketch.append(path, retrospective(ctx))
        sketch.set_status(path, "CLOSE")
        ctx.emit("close", {"tip": c.tip, "merged": list(c.merged)}, derived_from=[entry["id"]])
        ctx.recorder.commit(f"log: close {c.topic} retrospective")
    # Written from the committed journal, not from memory; the transition's commit records the file.
    report_html.write(ctx.layout, c.topic)
    verdict = close_check.check(ctx.layout.ledger, c.topic)
    entry = judge.record(ctx, None, verdict)
    if verdict.code != 0:
        ctx.halt_reason = f"the recorder's close entry is incomplete: {verdict.summary}"
        ctx.emit("halt", {"reason": ctx.halt_reason}, derived_from=[entry["id"]])
        return Outcome.FAILED
    mine = str(ctx.layout.worktrees(c.topic)) + os.sep
    for entry in git.worktrees(ctx.root):  # failed attempts were kept for inspection until now
        if entry["worktree"].startswith(mine):
            worktrees.remove(ctx, Path(entry["worktree"]).name, entry["worktree"])
    integ = ctx.layout.integration(c.topic)
    if integ.exists():
        worktrees.remove(ctx, "(integration)", str(integ))
    ctx.layout.active_dag.unlink(missing_ok=True)
    ctx.emit("seam", {"seam": "final-acceptance", "node": None, "choices": list(CHOICES["final-acceptance"]),
                      "bound_to": c.tip, "reason": f"campaign/{c.topic} is complete at {c.tip[:12]}",
                      "show": [f"review: git log --first-parent {c.baseline[:12]}..{c.branch}",
                               f"retrospective: {sketch.find(ctx.layout.ledger, c.topic)}"]})
    return Outcome.CLOSED


def retrospective(ctx: Context) -> str:
    c = ctx.campaign
    dag = ctx.dag
    rows = ["| node | status | attempts | seconds | merge |", "|---|---|---|---|---|"]
    for n in c.merged + [x for x in c.nodes if x not in c.merged]:
        s = c.nodes[n]
        rows.append(f"| {n} | {s.status} | {s.attempt} | {s.seconds:.1f} | {s.merge[:12] or '-'} |")
    no_evaluators = [n.id for n in dag.nodes if not n.evaluators and not n.complete]
    no_tripwires = [n.id for n in dag.nodes if not n.tripwires and not n.complete]
    reworked = [n for n, s in c.nodes.items() if s.attempt > 1]
    review = [
        "No gate judged whether each change does what its brief intended beyond the evaluators it declared; "
        "a person should read the merged diff of campaign/" + c.topic + " before accepting it.",
        ("Nodes with no evaluators were accepted on surface honesty and coherence alone: "
         + ", ".join(no_evaluators) + ".") if no_evaluators else
        "Every node declared at least one evaluator, but the evaluators themselves were not reviewed for strength.",
        ("Nodes with no tripwires had no premise re-checked before dispatch: " + ", ".join(no_tripwires) + ".")
        if no_tripwires else "Every node declared tripwires; premises outside them were not checked.",
        ("Nodes that needed more than one attempt deserve a closer look: " + ", ".join(reworked) + ".")
        if reworked else "Every node was accepted on its first attempt.",
        "Coherence searched for literal references to removed paths and configured names; renamed concepts "
        "described in prose, and behaviour outside the repository, were not checked.",
    ]
    if c.flags:  # `warn` guardrails crossed with a violation: the one place a person must see them
        review.insert(0, "Guardrails warned and the campaign crossed anyway: " + "; ".join(
            f"{f['message']} (node {f['node']})" for f in c.flags) + ".")
    return "\n".join([
        "## Retrospective", "",
        f"Campaign `{c.topic}` merged {len(c.merged)} node(s) into `{c.branch}` in {len(c.layers)} layer(s); "
        f"baseline {c.baseline[:12]}, final tip {c.tip[:12]}.", "", *rows, "",
        "## Sufficiency Review", "", *[f"- {r}" for r in review], "",
        sketch.usage_section(provenance.usage_rows(ctx.recorder.read())),
    ])
