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
    held = [(Path(entry["worktree"]).name, entry["worktree"]) for entry in git.worktrees(ctx.root)
            if entry["worktree"].startswith(mine)]  # failed attempts were kept for inspection until now
    integ = ctx.layout.integration(c.topic)
    worktrees.remove_all(ctx, held + ([("(integration)", str(integ))] if integ.exists() else []))
    ctx.layout.active_dag.unlink(missing_ok=True)
    missing = not_accepted(ctx)
    reason = (f"campaign/{c.topic} is complete at {c.tip[:12]}" if not missing else
              f"campaign/{c.topic} ends at {c.tip[:12]} without {len(missing)} of {len(c.nodes)} node(s): "
              + ", ".join(f"{n} ({c.nodes[n].status})" for n in missing))
    ctx.emit("seam", {"seam": "final-acceptance", "node": None, "choices": list(CHOICES["final-acceptance"]),
                      "bound_to": c.tip, "reason": reason,
                      "show": [f"not accepted: {n}: {why}" for n, why in missing.items()] + [
                          f"review: git log --first-parent {c.baseline[:12]}..{c.branch}",
                          f"retrospective: {sketch.find(ctx.layout.ledger, c.topic)}"]})
    return Outcome.CLOSED


def not_accepted(ctx: Context) -> dict[str, str]:
    """Every node that is not ACCEPTED, with why, in the journal's words: who skipped it at which seam
    (and for which node it was skipped along), the edge or condition that left it out, why it was abandoned."""
    c = ctx.campaign
    why: dict[str, str] = {}
    decision: dict = {}
    for e in ctx.recorder.read():
        cx = e["context"]
        if e["kind"] == "decision":
            decision = cx
        elif e["kind"] == "node" and cx.get("status") in ("SKIPPED", "ABANDONED"):
            n = cx["node"]
            if cx.get("feedback", "").startswith("skipped ("):
                why[n] = cx["feedback"]
            elif cx["status"] == "ABANDONED":
                first = (cx.get("feedback") or "").strip().splitlines()[:1]
                why[n] = (f"abandoned after {cx.get('failures', '?')} failed attempt(s) (on_exhausted: continue)"
                          + (f": {first[0]}" if first else ""))
            elif decision.get("choice") == "skip":
                along = "" if decision.get("node") == n else f", along with {decision.get('node')}, which it needs"
                note = f": {decision['note']}" if decision.get("note") else ""
                why[n] = f"skipped by {decision.get('who')} at the {decision.get('seam')} seam{along}{note}"
    return {n: why.get(n, f"{s.status.lower()}") for n, s in c.nodes.items() if s.status != "ACCEPTED"}


def retrospective(ctx: Context) -> str:
    c = ctx.campaign
    dag = ctx.dag
    entries = ctx.recorder.read()
    # read as the report reads them, so the two agree (evaluators run ahead of RECONCILE are judging too)
    from orchestrate.report import history
    phases = history.read(c.topic, entries)
    judging, merging = phases.spent("judging"), phases.spent("merging")
    rows = ["| node | status | attempts | worker s | judging s | merge s | merge |", "|---|---|---|---|---|---|---|"]
    for n in c.merged + [x for x in c.nodes if x not in c.merged]:
        s = c.nodes[n]
        rows.append(f"| {n} | {s.status} | {s.attempt} | {s.seconds:.1f} | {judging.get(n, 0.0):.1f} | "
                    f"{merging.get(n, 0.0):.1f} | {s.merge[:12] or '-'} |")
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
    review[3:3] = flaky(ctx, entries)
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


def flaky(ctx: Context, entries: list[dict]) -> list[str]:
    """A retry accepted with exactly the change an earlier attempt was refused for (the same tree diff)
    says more about the gate than about the work: likely a flaky evaluator."""
    attempts: dict[str, dict[int, dict]] = {}  # node -> attempt -> {base, head, failed: [gate...]}
    for e in entries:
        cx = e["context"]
        n = cx.get("node")
        if not n:
            continue
        ns = attempts.setdefault(n, {})
        if e["kind"] == "node" and cx.get("status") == "DISPATCHED" and cx.get("attempt"):
            ns[cx["attempt"]] = {"base": cx.get("base", ""), "head": "", "failed": [], "verdict": ""}
        current = ns[max(ns)] if ns else None
        if current is None:
            continue
        if e["kind"] == "node" and cx.get("head") and "prior" not in cx:  # not an attempt undone
            current["head"] = cx["head"]
        elif e["kind"] == "gate" and cx.get("code"):
            current["failed"].append(cx["gate"])
        elif e["kind"] == "verdict":
            current["verdict"] = cx.get("verdict", "")
    found = []
    for n, runs in attempts.items():
        accepted = [a for a, r in runs.items() if r["verdict"] == "accept" and r["head"]]
        if not accepted:
            continue
        good = runs[accepted[-1]]
        for a, r in sorted(runs.items()):
            if a < accepted[-1] and r["verdict"] in ("rework", "escalate") and r["head"] and r["failed"] \
                    and r["head"] != r["base"] and _change(ctx, r) == _change(ctx, good):
                found.append(f"{n}: attempt {accepted[-1]} was accepted with the same change attempt {a} was "
                             f"refused for (identical tree diff), by {', '.join(sorted(set(r['failed'])))}: "
                             "likely a flaky evaluator; run it again on that change before trusting it.")
                break
    return found


def _change(ctx: Context, run: dict) -> list[str]:
    """An attempt's change as (status, path, resulting blob): equal for byte-identical changes even when
    their bases differ elsewhere."""
    raw = git.lines(ctx.root, "diff-tree", "-r", "--no-commit-id", "--no-renames", run["base"], run["head"])
    return sorted(" ".join(ln.split()[3:5]) + " " + ln.split("\t", 1)[-1] for ln in raw if ln.startswith(":"))
