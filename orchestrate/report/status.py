"""`orchestrate status`: the layer, every node's status and attempt, open seams, and why nodes wait."""
from __future__ import annotations

from pathlib import Path

from orchestrate.recorder.campaign import Campaign


def show(cwd: Path, topic: str | None, as_json: bool) -> str:
    """The text `orchestrate status` prints; also reached without the CLI framework (see entry.py)."""
    from orchestrate.recorder.locate import peek, pick_topic, project
    layout = project(cwd)
    data = summary(peek(layout, pick_topic(layout, topic, any_state=True)))
    if as_json:
        import json
        return json.dumps(data, indent=2)
    return "\n".join(render(data))


def summary(c: Campaign) -> dict:
    nodes = []
    for k, layer in enumerate(c.layers):
        for n in layer:
            s = c.nodes[n]
            nodes.append({"id": n, "layer": k, "status": s.status, "attempt": s.attempt, "branch": s.branch,
                          "merge": s.merge, "waiting": waiting_reason(c, n, k)})
    return {"topic": c.topic, "state": c.state, "layer": c.k, "layer_count": len(c.layers), "tip": c.tip,
            "baseline": c.baseline, "branch": c.branch, "mode": c.mode, "closed": c.closed,
            "accepted": c.accepted_by is not None, "halt": c.halt or None,
            "seams": [c.seam] if c.seam else [], "nodes": nodes,
            "flags": [f"guardrail {f['message'].removeprefix('guardrail ')}" for f in c.flags],
            "enabled": dict(c.enabled)}


def waiting_reason(c: Campaign, node: str, k: int) -> str:
    s = c.nodes[node]
    if s.status == "ACCEPTED":
        return c.enabled.get(node, "")
    if s.status in ("SKIPPED", "ABANDONED"):
        return s.feedback.splitlines()[0] if s.feedback else ""
    if c.seam and c.seam.get("node") == node:
        return f"seam {c.seam['seam']}: {c.seam.get('reason', '')}"
    if s.status == "INVALIDATED":
        return f"stale premise: {s.feedback}"
    if s.status == "REWORK":
        return f"gate failed: {s.feedback.splitlines()[0] if s.feedback else ''}"
    if k > c.k:
        return f"layer {k} starts after layer {c.k} is merged"
    if s.status == "DISPATCHED":
        return "worker running" if not s.freeze else f"frozen: {s.freeze.get('freeze')}"
    if s.status == "LANDED":
        return "waiting to be judged"
    return ""


def render(data: dict) -> list[str]:
    lines = [f"campaign {data['topic']}: {data['state']}, layer {data['layer'] + 1} of {data['layer_count']}, "
             f"tip {data['tip'][:12]} on {data['branch']} ({data['mode']})"]
    if data["halt"]:
        lines.append(f"halted: {data['halt'].splitlines()[0]}")
    for n in data["nodes"]:
        why = f"  <- {n['waiting']}" if n["waiting"] else ""
        lines.append(f"  L{n['layer']} {n['id']:<12} {n['status']:<11} attempt {n['attempt']}{why}")
    for seam in data["seams"]:
        lines.append(f"open seam {seam['seam']}: {seam.get('reason', '')} (choices: {', '.join(seam['choices'])})")
    for flag in data.get("flags", []):
        lines.append(f"warning: {flag}")
    if data["accepted"]:
        lines.append("accepted")
    return lines
