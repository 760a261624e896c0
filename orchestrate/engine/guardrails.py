"""Guardrails on edges (seeds-other §3.6), run when a taken edge is crossed, before its target is dispatched.

`output` gates judge what the source contributed: they run in a checkout of the source's merge commit
with ORCH_BASE (the campaign head before that merge) and ORCH_HEAD (the merge). `input` gates judge the
tip the target would branch from. Exit 0 passes, 1 is a violation, anything else means the gate itself
failed: the run halts naming it, and nothing counts as pass or violation. A violation is handled by the
edge's `on_violation`: `block` opens the `guardrail` seam (answered by `orchestrate approve --edge` or
`orchestrate skip --edge`, in every mode: a guardrail is a sovereignty gate), `reroute` leaves the edge
untaken and enables its on-demand `reroute_target`, `warn` crosses and records a flag that `status` and
the close report show. Each result is journalled once and reused on resume, never run again, except an
`input` pass judged on a head the target no longer branches from: a node decided early (eager) or left
waiting for a `--jobs` slot starts from a newer head, so DISPATCH has it judged again (`stale`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from gates.shared.verdict import Verdict
from orchestrate import git
from orchestrate.dag.model import Check
from orchestrate.recorder.campaign import PENDING


class GuardrailCrashed(Exception):
    """A guardrail gate exited neither 0 nor 1: it could not judge, so the run halts."""


@dataclass
class Blocked(Exception):
    """A `block` guardrail was violated and nobody has answered yet: the run stops at a seam."""

    seam: dict


def cross(ctx, taken: list) -> list:
    """The (edge, taken) pairs into one node, each guarded taken edge replaced by whether it is crossed.
    Every guardrail runs (or is reused) and is recorded first; then the most severe violation acts first
    (block > reroute > warn, seeds-other §3.6): an unanswered block opens its seam before any reroute
    enables its target or a warning is flagged. Once answered (approve or skip), each other edge acts as
    it would alone: an approval names one edge, it waives no other edge's violation."""
    c = ctx.campaign
    guarded = [e for e, t in taken if t and e.guardrails]
    recorded = {}
    for edge in guarded:
        found = c.guardrails.get(edge.id)
        recorded[edge.id] = _run(ctx, edge) if found is None or _stale(c, edge, found) else found
    for edge in guarded:
        if recorded[edge.id]["violated"] and edge.guardrails["on_violation"] == "block" \
                and recorded[edge.id].get("answer") is None:
            raise Blocked({"seam": "guardrail", "node": edge.dst, "edge": edge.id,
                           "choices": ["approve", "skip", "halt"], "reason": f"blocked: {recorded[edge.id]['message']}",
                           "bound_to": c.nodes[edge.src].merge or c.tip, "gates": [recorded[edge.id]["entry"]]})
    return [(e, _act(ctx, e, recorded[e.id]) if e in guarded else t) for e, t in taken]


def _act(ctx, edge, recorded: dict) -> bool:
    """Apply a recorded result's `on_violation`: is the edge crossed? Its flag or enable is journalled once."""
    c = ctx.campaign
    if not recorded["violated"]:
        return True
    action = edge.guardrails["on_violation"]
    if action == "warn":
        if not any(f.get("edge") == edge.id for f in c.flags):
            ctx.emit("flag", {"edge": edge.id, "node": edge.dst, "message": recorded["message"]},
                     derived_from=[recorded["entry"]])
        return True
    if action == "reroute":
        target = edge.guardrails["reroute_target"]
        if target not in c.enabled:
            ctx.emit("enable", {"node": target, "edge": edge.id,
                                "reason": f"rerouted from {edge.dst}: {recorded['message']}"},
                     derived_from=[recorded["entry"]])
            ctx.out.line(f"{target}: enabled (reroute of {_where(edge)})")
        return False
    return recorded["answer"] == "approve"


def stale(ctx, node_id: str) -> bool:
    """Did an `input` guardrail into the pending `node_id` pass on a head other than the one it would now
    branch from? A violation stands: it was acted on already (flagged, rerouted, or asked about)."""
    c = ctx.campaign
    return c.nodes[node_id].status == PENDING and any(
        _stale(c, e, c.guardrails.get(e.id)) for e in ctx.dag.incoming(node_id) if e.guardrails)


def _stale(c, edge, recorded) -> bool:
    return bool(recorded and edge.guardrails.get("input") and not recorded["violated"]
                and recorded.get("head") not in (None, c.tip))


def _run(ctx, edge) -> dict:
    c = ctx.campaign
    src = c.nodes[edge.src]
    rails = edge.guardrails
    results, logs = [], []
    for side in ("output", "input"):
        names = rails.get(side) or []
        if not names:
            continue
        # an ABANDONED source (a conditional edge on its status) merged nothing: it contributed nothing (rv79)
        at = (src.merge or c.tip) if side == "output" else c.tip
        env = {"ORCH_TOPIC": c.topic, "ORCH_NODE": edge.dst, "ORCH_EDGE": edge.id, "ORCH_HEAD": at,
               "ORCH_BASE": _before(ctx, src, at) if side == "output" else at}
        log = ctx.layout.runs(c.topic) / "guardrails" / f"{edge.id}-{side}.log"
        logs.append(str(log))
        for name, verdict, entity in _check(ctx, names, at, env, log, edge.src):
            results.append({"gate": name, "side": side, "rc": verdict.code, "summary": verdict.summary,
                            "entity": entity})
    crashed = [r for r in results if r["rc"] not in (0, 1)]
    violated = [r for r in results if r["rc"] == 1]
    where = _where(edge)
    first = violated[0] if violated else None
    message = (f"guardrail {first['gate']} on {where}: {_first_line(first['summary'])}" if first
               else f"guardrails on {where} pass")
    ctx.emit("guardrail", {"edge": edge.id, "from": edge.src, "to": edge.dst, "results": results,
                                   "violated": bool(violated) and not crashed, "crashed": bool(crashed),
                                   "action": rails["on_violation"], "message": message, "logs": logs,
                                   "head": c.tip},
                     source_type="gate", derived_from=_cites(c, edge))
    if crashed:
        r = crashed[0]
        raise GuardrailCrashed(f"guardrail gate {r['gate']} crashed on edge {edge.id} (exit {r['rc']}); see "
                               f"{logs[0] if len(logs) == 1 else ' and '.join(logs)}")
    ctx.out.line(f"{where}: {message}" + (f"; {rails['on_violation']}" if violated else ""))
    return c.guardrails[edge.id]


def _cites(c, edge) -> list[str]:
    """The decision that took the edge: its condition's evaluation, or for a static edge the source's
    settling entry (its merge)."""
    decided = c.edges.get(edge.id)
    if decided and decided.get("entry"):
        return [decided["entry"]]
    settled = c.nodes[edge.src].settled_entry
    return [settled] if settled else []


def _before(ctx, src, at: str) -> str:
    """The campaign head just before the source's merge: the diff ORCH_BASE..ORCH_HEAD is its contribution."""
    if not src.merge or src.head == src.base:  # nothing was merged (or it was ABANDONED): no contribution
        return at
    return git.out(ctx.root, "rev-parse", f"{src.merge}^1")


def _check(ctx, names: list[str], at: str, env: dict, log, source: str) -> list[tuple[str, Verdict, str | None]]:
    """Run the named gates (of the edge from `source`) in a scratch checkout of `at`: (name, verdict, plugin entity or None) each."""
    from gates import evaluators
    from orchestrate.engine import plugin_gates as plugingates
    dag = ctx.dag
    scratch = ctx.layout.scratch / "guardrails" / ctx.topic / env["ORCH_EDGE"]
    if scratch.exists():
        git.worktree_remove(ctx.root, scratch)
    scratch.parent.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    git.worktree_add_detached(ctx.root, scratch, at)
    try:
        own = {c.name for c in dag.by_id[source].evaluators}  # the source's own command gate comes first
        plugin_gates = {n: g for n, g in plugingates.of_dag(dag).items() if n not in own}
        found = {}
        commands = tuple(_command(dag, n, source) for n in names if n not in plugin_gates)
        from orchestrate.workers import containment
        if commands:  # one run for the side's command gates, so their log is one file
            with containment.judging(ctx, scratch):
                verdict = evaluators.check(commands, scratch, log_path=log, env=env)
            rcs = {r["name"]: r["rc"] for r in verdict.data.get("results", [])}
            for item in verdict.items:
                rc = rcs.get(item.subject, 2)
                rc = rc if item.status in ("PASS", "FAIL") else 2  # a timeout or a command that cannot start
                detail = re.sub(r"^rc \d+(: )?", "", item.detail)
                found[item.subject] = (Verdict(item.subject, rc, detail or f"exit {rc}"), None)
        for name in names:
            if name in plugin_gates:
                if ctx.gate_plugins is None:
                    ctx.gate_plugins = plugingates.load(dag, lambda m: ctx.out.always(f"warning: {m}"))
                with containment.judging(ctx, scratch):
                    found[name] = plugingates.run(ctx, plugin_gates[name], scratch, env)
        return [(name, *found[name]) for name in names]
    finally:
        git.worktree_remove(ctx.root, scratch)


def _command(dag, name: str, source: str) -> Check:
    """A guardrail names a `gates:` instance or an evaluator of the edge's source (never another node's
    evaluator that happens to share the name)."""
    own = next((c for c in dag.by_id[source].evaluators if c.name == name), None)
    if own is not None:
        return own
    spec = dag.gates[name]
    return Check(name, spec["run"], spec.get("timeout"))


def _first_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[0] if lines else "(no output)"


def _where(edge) -> str:
    return f"edge {edge.id} ({edge.src} -> {edge.dst})"
