"""`orchestrate status`: the layer, every node's status and attempt, open seams, why nodes wait, whether a
runner is alive, and the other campaigns the recorder knows.

Layers are counted from 0 everywhere status prints, as in its JSON, `orchestrate layers` and the log.
"""
from __future__ import annotations

import json
from pathlib import Path

from orchestrate.recorder import segments
from orchestrate.recorder.campaign import Campaign

JUDGED_AHEAD = "being judged: its evaluators run"
RESTING = ("PAUSE", "HALT", "DONE")  # states a runner leaves the campaign in when it exits on purpose


def show(cwd: Path, topic: str | None, as_json: bool) -> str:
    """The text `orchestrate status` prints; also reached without the CLI framework (see entry.py)."""
    from orchestrate.recorder import topics
    from orchestrate.recorder.locate import peek, project
    layout = project(cwd)
    known = campaigns(layout.ledger)
    chosen = topics.pick(layout.ledger, topic, newest_ended=True)
    campaign = peek(layout, chosen)
    data = summary(campaign, plan=planner(campaign, layout.ledger))
    data["runner"] = runner(layout.scratch / "locks", chosen, data["state"], data["closed"])
    if not data["runner"]["alive"]:  # what the journal says runs was cut off with its runner
        for row in data["nodes"]:
            if row["waiting"] in ("worker running", "queued for a --jobs slot"):
                row["waiting"] = f"{row['waiting'].replace('worker running', 'was running')} when its runner " \
                                 "stopped: `orchestrate resume` picks it up"
            elif row["waiting"].startswith(JUDGED_AHEAD):  # they ended with it: resume runs them again
                row["waiting"] = row["waiting"].replace(JUDGED_AHEAD, "waiting to be judged")
            elif row["waiting"] == READY:  # no runner hands out slots now
                row["waiting"] = "its inputs have settled: it starts when `orchestrate resume` runs the campaign"
        if data["decision"]:  # a recorded answer waits: `orchestrate resume` applies it, whatever the state
            data["runner"]["resume"] = True
    data["left_answer"] = left = left_answer(layout.answer(chosen), data)  # null when none: keys stay put
    if left:
        for row in data["nodes"]:
            if left.get("node") and row["id"] == left["node"] and left["seam_id"] == (data["seams"] or [{}])[0].get("id"):
                row["waiting"] = f"answered {left['seam']} {left['choice']} (orchestrate decide): waiting to be applied"
    data["last_entry"] = _last_entry_time(layout.journal(chosen))
    data["others"] = [c for c in known if c["topic"] != chosen]
    data["usage"] = usage(layout.journal(chosen))
    from orchestrate.recorder import damage
    if note := damage.describe(layout.journal(chosen)):
        data.setdefault("flags", []).append(note)
    from orchestrate.recorder import guard
    if halt := guard.halted(layout.ledger, chosen):
        data.setdefault("flags", []).append(
            f"the last run halted on a journal write orchestrate did not make ({halt.get('what')}); "
            "`orchestrate resume` goes on once journal.jsonl holds only the runner's own lines (its hint says how)")
    if as_json:
        return json.dumps(data, indent=2)
    from orchestrate.printable import printable
    return printable("\n".join(render(data)))  # a seam's reason, a verdict's items: a worker's words


def left_answer(place: Path, data: dict) -> dict | None:
    """The answer `decide` left for a runner (seams/inbox.py) to the open seam or one queued behind it, which
    the runner (or `resume`, if it stopped first) applies: until then the seam still shows as open. Read only:
    a stale one is the runner's to remove."""
    try:
        left = json.loads(place.read_text())
    except (OSError, ValueError):
        return None
    asked = {s.get("id") for s in data["seams"] + data["queued_seams"]}
    if not isinstance(left, dict) or left.get("seam_id") not in asked:
        return None
    return {k: left.get(k) for k in ("seam_id", "seam", "node", "choice", "who", "note", "at")}


def campaigns(ledger: Path) -> list[dict]:
    """Every campaign the recorder has opened, newest first: {topic, lifecycle (open|close), ended (accepted
    at final acceptance, or abandoned), opened}."""
    from orchestrate.recorder import topics
    found = [{"topic": t, "lifecycle": mark, "ended": mark == "close" and topics.ended(ledger, t),
              "opened": _first_entry_time(ledger / "state" / t / "journal.jsonl")}
             for t, mark in topics.lifecycle(ledger).items()]
    return sorted(found, key=lambda c: (c["opened"], c["topic"]), reverse=True)


def usage(journal: Path) -> dict | None:
    """What the workers reported to $ORCH_USAGE: {"nodes": {node: total}, "total": total}; None when
    none reported. Only the lines that can hold a report are parsed: status stays fast on long journals."""
    from orchestrate.recorder import provenance
    try:
        data = segments.read_bytes(journal)
    except OSError:
        return None
    if b'"usage' not in data:
        return None
    effects = [f'"{effect}"'.encode() for effect in provenance.USAGE_EFFECTS]  # the results that carry usage
    entries = []
    for line in data.split(b"\n"):
        if b'"usage' in line and any(effect in line for effect in effects):
            try:
                entries.append(json.loads(line))
            except ValueError:
                continue  # a line torn by a crash: resume settles it
    rows = [r for r in provenance.usage_rows(entries) if "usage" in r]
    if not rows:
        return None
    nodes = {n: provenance.usage_total([r for r in rows if r["node"] == n]) for n in dict.fromkeys(r["node"] for r in rows)}
    return {"nodes": nodes, "total": provenance.usage_total(rows)}


def _first_entry_time(journal: Path) -> str:
    try:
        return json.loads(segments.first_line(journal)).get("created_at", "")
    except (OSError, ValueError, AttributeError):
        return ""


def _last_entry_time(journal: Path) -> str:
    """The time of the journal's last complete entry: when the campaign last recorded a step."""
    try:
        lines = segments.tail(journal, 65536).split(b"\n")
    except OSError:
        return ""
    for line in reversed(lines):
        try:
            return json.loads(line).get("created_at", "")
        except (ValueError, AttributeError):
            continue
    return ""


def runner(locks: Path, topic: str, state: str, closed: bool) -> dict:
    """Who holds the campaign: the lock's holder details (pid, host, since) and whether it is alive.

    The holder file is written by the runner under its flock and removed when it exits; one left
    behind by a runner that was killed names a pid that is gone.
    """
    from orchestrate.recorder.lock import CampaignLock
    try:
        holder = json.loads(CampaignLock(locks, topic).info.read_text())
    except (OSError, ValueError):
        holder = None
    unknown = dict.fromkeys(("pid", "host", "command", "started", "origin"))  # the same keys, held or not
    if isinstance(holder, dict):
        from orchestrate.recorder.lock import holder_alive
        alive = holder_alive(holder)
        return {**unknown, **holder, "alive": alive, "resume": not alive}
    return {**unknown, "alive": False, "resume": state not in RESTING and not (closed and state == "DONE")}


def planner(c: Campaign, ledger: Path):
    """The campaign's DAG as last approved (a person's edit waits for its seam), read at most once and only
    when a row needs it (why an eager PENDING node waits names its inputs): reading a 10,000-node plan costs
    about half a second, which the status of a campaign with no such node never pays. None when it cannot
    be read: the row says less."""
    read: list = []

    def plan():
        if not read:
            from orchestrate.errors import OrchestrateError
            from orchestrate.recorder import approved
            try:
                read.append(approved.load(ledger, Path(c.dag_path), c))
            except (OrchestrateError, OSError):
                read.append(None)
        return read[0]
    return plan


def summary(c: Campaign, plan=None) -> dict:
    nodes = []
    for k, layer in enumerate(c.layers):
        for n in layer:
            s = c.nodes[n]
            nodes.append({"id": n, "layer": k, "status": s.status, "attempt": s.attempt, "branch": s.branch,
                          "merge": s.merge, "waiting": waiting_reason(c, n, k, plan)})
    return {"topic": c.topic, "state": c.state, "layer": c.k, "layer_count": len(c.layers), "tip": c.tip,
            "baseline": c.baseline, "branch": c.branch, "mode": c.mode, "closed": c.closed,
            "accepted": c.accepted_by is not None, "abandoned": c.abandoned, "halt": c.halt or None,
            # an abandoned campaign asks nothing any more: the seam it was stopped at stays in its history
            "seams": [c.seam] if c.seam and not c.abandoned else [],
            "queued_seams": [] if c.abandoned else list(c.queued), "nodes": nodes,
            "decision": None if c.abandoned else recorded_answer(c),
            "flags": [f"guardrail {f['message'].removeprefix('guardrail ')}" for f in c.flags],
            "enabled": dict(c.enabled), "conflicts": pending_conflicts(c)}


def recorded_answer(c: Campaign) -> dict | None:
    """The answer `decide` recorded that no step has applied yet (a paused campaign's runner is gone, so
    `orchestrate resume` applies it): until then no seam is open, and the seams behind it are not asked."""
    d = c.decision
    if d is None:
        return None
    return {"seam": d.get("seam"), "node": d.get("node"), "choice": d.get("choice"), "who": d.get("who"),
            "note": d.get("note", ""), "entry": d.get("id")}


def pending_conflicts(c: Campaign) -> dict:
    """node -> the conflict an early probe found between its judged head and the campaign head, until the
    node is dispatched again or merged (engine/probes.py): {paths, with, onto, head, entry}."""
    return {n: {"paths": p["conflicts"], "with": p["merged"], "onto": p["onto"], "head": p["head"],
                "entry": p["entry"]} for n, p in c.conflicts.items()}


READY = "its inputs have settled: waiting for a --jobs slot"
SETTLED = ("ACCEPTED", "SKIPPED", "ABANDONED")  # what a node's dependents wait for (engine/schedule.py)


def waiting_reason(c: Campaign, node: str, k: int, plan=None) -> str:
    """One line for the node's row; a seam's whole reason is printed by its `open seam` line. `plan` gives
    the DAG, which only an eager PENDING node's reason reads (its inputs)."""
    s = c.nodes[node]
    if s.status == "ACCEPTED":
        return c.enabled.get(node, "")
    if s.status in ("SKIPPED", "ABANDONED"):
        return s.feedback.splitlines()[0] if s.feedback else ""
    if c.decision is not None and c.decision.get("node") == node:  # its worker state says nothing until then
        return f"answered {c.decision['seam']} {c.decision.get('choice')}: waiting for the answer to be applied"
    if c.seam and c.seam.get("node") == node:
        reason = c.seam.get("reason", "")
        return f"seam {c.seam['seam']}: {reason.splitlines()[0] if reason else ''}"
    later = next((q for q in c.queued if q.get("node") == node), None)
    if later is not None:  # behind the open seam or, none open, behind an answer not yet applied
        ahead = "the open one" if c.seam else "the recorded answer is applied"
        return f"seam {later['seam']}, asked after {ahead}"
    if s.status == "INVALIDATED":
        return f"stale premise: {s.feedback}"
    if s.status == "REWORK":
        return f"gate failed: {s.feedback.splitlines()[0] if s.feedback else ''}"
    if s.env_error:
        return f"stopped by the environment: {s.env_error.splitlines()[0]}"
    if s.status == "DISPATCHED" and s.freeze:
        return f"frozen: {s.freeze.get('freeze')}"
    if s.status == "DISPATCHED":
        return "worker running" if s.spawned >= s.attempt else "queued for a --jobs slot"
    if s.status == "LANDED" and (peers := _group_waits(c, node, plan)):
        return peers
    if s.status == "LANDED":
        conflict = "; its merge will conflict (see below)" if c.probes.get(node, {}).get("clean") is False else ""
        judged = s.accepted_at and s.accepted_at == s.head
        if judged:
            return "accepted, waiting to be merged" + conflict
        return (JUDGED_AHEAD if s.judging == s.attempt else "waiting to be judged") + conflict
    if s.status == "PENDING" and c.schedule == "eager" and plan is not None and (dag := plan()) is not None \
            and node in dag.by_id:
        return _eager_pending(c, node, dag)
    if k > c.k:  # under eager, a node starts once its own sources settle, whatever layer the rest is in
        return (f"layer {k} starts after layer {c.k} is merged" if c.schedule == "layered"
                else "starts once what it depends on has merged")
    return ""


def _group_waits(c: Campaign, node: str, plan) -> str:
    """A landed LOOPS_WITH member is judged with its whole group: what the group still waits for (a peer's
    seam, a peer not landed yet), or "" when it waits for nothing but its judging."""
    dag = plan() if plan is not None else None
    if dag is None or node not in dag.by_id:
        return ""
    peers = [m for m in dag.group_of(node) if m != node and m in c.nodes]
    for seam in ([c.seam] if c.seam else []) + list(c.queued):
        if seam.get("node") in peers:
            return f"its LOOPS_WITH group waits for seam {seam['seam']} for {seam['node']}"
    out = [m for m in peers if c.nodes[m].status not in ("LANDED",) + SETTLED]
    return f"judged with its LOOPS_WITH group once {', '.join(out)} {'has' if len(out) == 1 else 'have'} landed" \
        if out else ""


def _eager_pending(c: Campaign, node: str, dag) -> str:
    """Eager: a PENDING node starts once its inputs settle and a slot is free (engine/schedule.py), except a
    serialized node, which waits to run alone, and a person's node, which waits until no worker runs."""
    inputs = [d for d in dag.layer_deps().get(node, ()) if d in c.nodes and c.nodes[d].status not in SETTLED]
    if inputs:
        shown = ", ".join(inputs[:3]) + (f" and {len(inputs) - 3} more" if len(inputs) > 3 else "")
        return f"starts once {shown} {'has' if len(inputs) == 1 else 'have'} merged"
    if node in c.serial or any(dag.by_id[m].serialize for m in dag.group_of(node)):
        return "serialized: runs alone once the rest of its layer and the layers before it have settled"
    if (dag.by_id[node].worker_spec or {}).get("kind") == "human":
        return "a person's node: starts once no worker runs"
    return READY


def layer_text(k: int, count: int) -> str:
    """`layer 1 (layers 0-2)`: layers count from 0 everywhere (status, the live view, logs, JSON, report)."""
    if count == 0:
        return "no layers"
    return f"layer {min(k, count - 1)} (layers 0-{count - 1})"


def _indented(head: str, text: str) -> list[str]:
    first, *rest = (text or "").splitlines() or [""]
    return [f"{head}{first}"] + [f"    {line}" for line in rest]


def render(data: dict) -> list[str]:
    state = f"abandoned in {data['state']}" if data.get("abandoned") else data["state"]
    lines = [f"campaign {data['topic']}: {state}, {layer_text(data['layer'], data['layer_count'])}, "
             f"tip {data['tip'][:12]} on {data['branch']} ({data['mode']})"]
    lines += _runner_lines(data.get("runner"), data.get("last_entry", ""))
    if gone := data.get("abandoned"):
        lines += _indented(f"abandoned by {gone['who']} at {gone['at'][:19]}: ", gone["note"])
    if data["halt"]:
        lines += _indented("halted: ", data["halt"])
    for n in data["nodes"]:
        why = f"  <- {n['waiting']}" if n["waiting"] else ""
        lines.append(f"  L{n['layer']} {n['id']:<12} {n['status']:<11} attempt {n['attempt']}{why}")
    for seam in data["seams"]:
        node = f"node {seam['node']}; " if seam.get("node") else ""
        block = _indented(f"open seam {seam['seam']}: ", seam.get("reason", ""))
        block[0] += f" ({node}choices: {', '.join(seam['choices'])})"
        lines += block + [f"    {line}" for extra in seam.get("show", []) for line in str(extra).splitlines()]
    if answer := data.get("decision"):
        who = data.get("runner") or {}
        by = "the runner applies it at its next step" if who.get("alive") else \
            f"`orchestrate resume --topic {data['topic']}` applies it"
        lines.append(f"answer recorded, waiting to be applied: {answer_text(answer)}; {by}")
        if answer.get("note"):
            lines += _indented("    note: ", answer["note"])
    if left := data.get("left_answer"):
        who = data.get("runner") or {}
        by = "the runner applies it at its next step" if who.get("alive") else \
            f"`orchestrate resume --topic {data['topic']}` applies it"
        lines.append(f"answer left by `orchestrate decide`, waiting to be applied: {answer_text(left)}; {by}")
    for seam in data.get("queued_seams", []):
        node = f" for node {seam['node']}" if seam.get("node") else ""
        reason = (seam.get("reason") or "").splitlines()
        lines.append(f"asked after it: seam {seam['seam']}{node}" + (f": {reason[0]}" if reason else ""))
    for node, found in data.get("conflicts", {}).items():
        merged = ", ".join(found["with"]) or "earlier nodes"
        lines.append(f"pending conflict: {node} at {found['head'][:12]} conflicts with {found['onto'][:12]} "
                     f"(after {merged} merged) in {', '.join(found['paths'])}")
    lines += _usage_lines(data.get("usage"))
    for flag in data.get("flags", []):
        lines.append(f"warning: {flag}")
    if data["accepted"]:
        lines.append("accepted")
    for other in data.get("others", []):
        state = "in flight" if other["lifecycle"] == "open" else "ended" if other["ended"] else \
            "closed, not accepted (final acceptance open or refused)"
        lines.append(f"other campaign {other['topic']}: {state}, opened {other['opened'] or '?'} "
                     f"(`orchestrate status --topic {other['topic']}`)")
    return lines


def _usage_lines(used: dict | None) -> list[str]:
    if not used:
        return []
    from orchestrate.recorder.provenance import usage_text
    width = max(map(len, used["nodes"]))
    return ([f"usage reported by workers: {usage_text(used['total'])} in all"]
            + [f"  {node:<{width}}  {usage_text(total)}" for node, total in used["nodes"].items()])


def _runner_lines(who: dict | None, last: str) -> list[str]:
    if not who:
        return []
    since = f"; last step recorded {last}" if last else ""
    if who["alive"]:
        from orchestrate.recorder.lock import runs_workers
        held = "runner" if runs_workers(who) else f"held by `orchestrate {who['command']}`"
        return [f"{held}: pid {who['pid']} on {who['host']}, since {who['started']}{since}"]
    if who["pid"] is not None:
        return [f"no runner is alive (pid {who['pid']} on {who['host']} is gone){since}; "
                "`orchestrate resume` continues"]
    if who["resume"]:
        return [f"no runner is alive{since}; `orchestrate resume` continues"]
    return []


def answer_text(d: dict) -> str:
    """`handwork skip for node H by p@x`: a recorded answer, as `status` and `decide` name it."""
    node = f" for node {d['node']}" if d.get("node") else ""
    return f"{d.get('seam')} {d.get('choice')}{node} by {d.get('who')}"
