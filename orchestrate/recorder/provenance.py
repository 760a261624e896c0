"""Provenance queries over a campaign's journal: the lineage rules, and `orchestrate why NODE`.

The lineage rules (seeds-other §3.8), as data below: an accept verdict cites at least one passing gate
entry of the same node; a merge cites an accept verdict of the same node (and `why` checks that it
was given at the merged head); an edge's condition cites the entry that settled its source (its
merge, or its abandonment); a guardrail cites the taken edge decision, a discovery on an edge one of
those; a human
decision names who took it; every `derived_from` reference names an earlier entry. `why` prints the
chain for one node, newest merge first: merge -> verdict -> gates -> the node's transitions, with the
commits each step names.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from orchestrate.errors import ExitCode, OrchestrateError

# Every journal entry has exactly these; the recorder fills id, seq and created_at, callers never do.
FIELDS = ("id", "seq", "created_at", "source_entity", "source_type", "kind", "derived_from", "context")
# Who or what an entry comes from, a closed set (seeds-other §3.8, with the sources this engine has:
# "engine" for its own bookkeeping, "policy" and "answers" for seam answers that no person typed).
SOURCE_TYPES = ("answers", "decision", "engine", "gate", "human", "policy", "repair", "worker")


class ProvenanceError(OrchestrateError):
    """An entry would break a lineage rule: a bug in the engine, never the user's input."""

    exit_code = ExitCode.INTERNAL


def check_append(entry: dict, topic: str, counter: int, gate_of) -> None:
    """The rules an entry must meet before it is written (R2-R4); `gate_of(id)` is (node, exit code) of
    a gate entry or None, `counter` is the highest id number handed out so far."""
    kind, source_type = entry["kind"], entry["source_type"]
    if source_type not in SOURCE_TYPES:
        raise ProvenanceError(f"unknown source_type {source_type!r} on {kind}; valid values: {', '.join(SOURCE_TYPES)}")
    prefix = f"{topic}:"
    for ref in entry["derived_from"]:
        number = ref[len(prefix):] if isinstance(ref, str) and ref.startswith(prefix) else ""
        if not (number.isdigit() and 0 < int(number) < counter):
            raise ProvenanceError(f"referenced {ref} does not exist in campaign {topic}")
    if kind == "verdict" and entry["context"].get("verdict") == "accept":
        node = entry["context"].get("node")
        if not any(gate_of(ref) == (node, 0) for ref in entry["derived_from"]):
            raise ProvenanceError(f"cannot record verdict accept for {node} without provenance: derived_from must "
                                  f"cite at least one passing gate entry of {node}")


@dataclass
class Chain:
    node: str
    merge: dict | None = None
    verdict: dict | None = None
    gates: list[dict] = field(default_factory=list)
    steps: list[dict] = field(default_factory=list)  # the node's status changes and decisions, in order
    problems: list[str] = field(default_factory=list)
    recorder_commit: str | None = None
    usage: list[dict] = field(default_factory=list)  # one row per attempt that reported usage (or a bad file)

    def to_json(self) -> dict:
        return {"node": self.node, "merge": self.merge, "verdict": self.verdict, "gates": self.gates,
                "steps": self.steps, "problems": self.problems, "recorder_commit": self.recorder_commit,
                "usage": {"attempts": self.usage, "total": usage_total(self.usage)}}


# the results that carry an attempt's usage: its worker's end, and an attempt a dead runner's resume cut off
USAGE_EFFECTS = ("worker-start", "worker-cut-off")


def usage_rows(entries: list[dict], node: str | None = None) -> list[dict]:
    """What each attempt reported to $ORCH_USAGE, from its journalled result: {node, attempt, usage | error}."""
    rows = []
    for e in entries:
        cx = e["context"]
        if e["kind"] != "result" or cx.get("effect") not in USAGE_EFFECTS or (node and cx.get("node") != node):
            continue
        if isinstance(cx.get("usage"), dict):
            rows.append({"node": cx.get("node"), "attempt": cx.get("attempt"), "usage": cx["usage"]})
        elif cx.get("usage_error"):
            rows.append({"node": cx.get("node"), "attempt": cx.get("attempt"), "error": cx["usage_error"]})
    return rows


def usage_total(rows: list[dict]) -> dict:
    total = {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
    for row in rows:
        for key in total:
            total[key] += row.get("usage", {}).get(key, 0)
    total["cost_usd"] = round(total["cost_usd"], 6)
    return total


def attempt_usage(rows: list[dict]) -> dict:
    """What one attempt reported, from its rows with usage: a worker resumed in its attempt after its surface
    was widened reports once per run, and the runs add up; a single report is kept whole (its model too)."""
    return rows[0]["usage"] if len(rows) == 1 else usage_total(rows)


def usage_text(usage: dict) -> str:
    """`1200 in / 300 out tokens, $0.0420 (model)`: the one way usage is written for a person."""
    from orchestrate.printable import one_line
    model = f" ({one_line(str(usage['model']))})" if usage.get("model") else ""  # the worker's words: one line
    return (f"{usage.get('input_tokens', 0)} in / {usage.get('output_tokens', 0)} out tokens, "
            f"${usage.get('cost_usd', 0):.4f}{model}")


def _accept_cites_a_passing_gate(e: dict, by_id: dict) -> str | None:
    if e["kind"] != "verdict" or e["context"].get("verdict") != "accept":
        return None
    node = e["context"].get("node")
    if any(by_id.get(r, {}).get("kind") == "gate" and by_id[r]["context"].get("node") == node
           and by_id[r]["context"].get("code") == 0 for r in e.get("derived_from", ())):
        return None
    return (f"entry {e['id']}: accept verdict for {node} without provenance: derived_from must cite at least "
            f"one passing gate entry of {node}")


def _references_exist(e: dict, by_id: dict) -> str | None:
    missing = [r for r in e.get("derived_from", ()) if r not in by_id or by_id[r]["seq"] >= e["seq"]]
    return f"entry {e['id']}: referenced {', '.join(missing)} does not exist before it" if missing else None


def _human_decision_names_who(e: dict, by_id: dict) -> str | None:
    if e["kind"] == "decision" and e.get("source_type") == "human" and not e["context"].get("who"):
        return f"entry {e['id']}: a human decision that does not say who took it"
    return None


def _merge_cites_an_accept(e: dict, by_id: dict) -> str | None:
    if e["kind"] != "merge":
        return None
    node = e["context"].get("node")
    if any(by_id.get(r, {}).get("kind") == "verdict" and by_id[r]["context"].get("node") == node
           and by_id[r]["context"].get("verdict") == "accept" for r in e.get("derived_from", ())):
        return None
    return f"entry {e['id']}: merge of {node} cites no accept verdict of {node}"


def _settles(entry: dict, node: str) -> bool:
    """Is `entry` what made `node` ACCEPTED (its merge) or ABANDONED?"""
    cx = entry.get("context", {})
    return cx.get("node") == node and (entry["kind"] == "merge"
                                       or (entry["kind"] == "node" and cx.get("status") == "ABANDONED"))


def _crossing_is_grounded(e: dict, by_id: dict) -> str | None:
    """An edge decision cites what it stands on: an edge_eval its source's settling entry; a guardrail
    the taken edge_eval (or, on a static edge, that settling entry); an edge's discovery one of those."""
    cx = e["context"]
    cited = [by_id[r] for r in e.get("derived_from", ()) if r in by_id]
    if e["kind"] == "edge_eval":
        ok = any(_settles(c, cx.get("from")) for c in cited)
    elif e["kind"] == "guardrail":
        ok = any(_settles(c, cx.get("from")) or (c["kind"] == "edge_eval" and c["context"].get("edge") == cx.get("edge")
                                                  and c["context"].get("taken")) for c in cited)
    elif e["kind"] == "discovery" and cx.get("edge"):
        ok = bool(cited)
    else:
        return None
    return None if ok else f"entry {e['id']}: {e['kind']} on edge {cx.get('edge')} cites no decision it stands on"


RULES = (_references_exist, _crossing_is_grounded, _accept_cites_a_passing_gate, _merge_cites_an_accept, _human_decision_names_who)


def problems(entries: list[dict]) -> list[str]:
    """Every lineage rule broken anywhere in the journal (the merge rule is checked per node by `chain`)."""
    return [message for _, message in breaches(entries)]


def breaches(entries: list[dict]) -> list[tuple[dict, str]]:
    """(entry, message) for every lineage rule an entry breaks."""
    by_id = {e["id"]: e for e in entries}
    return [(e, p) for e in entries for rule in RULES if (p := rule(e, by_id))]


def chain(entries: list[dict], node: str) -> Chain:
    """The lineage of `node`'s newest merge (or, unmerged, of its newest verdict)."""
    by_id = {e["id"]: e for e in entries}
    mine = [e for e in entries if e["context"].get("node") == node]
    result = Chain(node)
    merges = [e for e in mine if e["kind"] == "merge"]
    verdicts = [e for e in mine if e["kind"] == "verdict"]
    if merges:
        result.merge = merges[-1]
        head = result.merge["context"].get("head")
        accepted = [v for v in verdicts if v["context"].get("verdict") == "accept" and v["seq"] < result.merge["seq"]
                    and v["context"].get("at") == head]
        if accepted:
            result.verdict = accepted[-1]
        else:
            result.problems.append(f"entry {result.merge['id']}: merge of {node} follows no accept verdict at "
                                   f"{str(head)[:12]}")
    elif verdicts:
        result.verdict = verdicts[-1]
    if result.verdict is not None:
        result.gates = [by_id[r] for r in result.verdict.get("derived_from", ())
                        if by_id.get(r, {}).get("kind") == "gate"]
    result.steps = [e for e in mine if e["kind"] in ("node", "decision", "seam")
                    and (e["kind"] != "node" or "status" in e["context"])]
    relevant = [e for e in (result.merge, result.verdict) if e] + result.gates + result.steps
    result.problems += [p for e in relevant for rule in RULES if (p := rule(e, by_id))]
    result.usage = usage_rows(entries, node)
    return result


def render(c: Chain) -> list[str]:
    lines = []
    if c.merge and c.merge["context"].get("empty"):
        m = c.merge["context"]
        lines.append(f"{c.node} had nothing to merge (its worker changed nothing); accepted at {m['sha'][:12]} "
                     f"(entry {c.merge['id']}, {c.merge['created_at']})")
    elif c.merge:
        m = c.merge["context"]
        lines.append(f"{c.node} merged as {m['sha'][:12]} from {m['branch']} at {m['head'][:12]} "
                     f"(entry {c.merge['id']}, {c.merge['created_at']})")
        if c.recorder_commit:
            lines.append(f"  recorded in recorder commit {c.recorder_commit[:12]}")
    else:
        lines.append(f"{c.node} is not merged")
    if c.verdict:
        v = c.verdict
        lines.append(f"  <- verdict {v['context']['verdict']} at {str(v['context'].get('at'))[:12]} (entry {v['id']}, "
                     f"by {v['source_entity']})")
        for g in c.gates:
            gc = g["context"]
            lines.append(f"     <- gate {gc['gate']}: exit {gc['code']}: {gc.get('summary', '')} (entry {g['id']})")
    for s in c.steps:
        cx = s["context"]
        if s["kind"] == "node":
            extra = f" attempt {cx['attempt']} on {cx['branch']}" if cx.get("branch") else ""
            why = f": {cx['feedback'].splitlines()[0]}" if cx.get("feedback") else ""
            lines.append(f"  {s['created_at']} {cx['status']}{extra}{why} (entry {s['id']})")
        elif s["kind"] == "seam":
            lines.append(f"  {s['created_at']} seam {cx.get('seam')}: {cx.get('reason', '')} (entry {s['id']})")
        else:
            lines.append(f"  {s['created_at']} decision {cx.get('seam')} {cx.get('choice')} by {cx.get('who')} "
                         f"({s['source_type']}, entry {s['id']})")
    for row in c.usage:
        said = usage_text(row["usage"]) if "usage" in row else f"malformed usage file: {row['error']}"
        lines.append(f"  usage attempt {row['attempt']}: {said}")
    if c.usage:
        lines.append(f"  usage total: {usage_text(usage_total(c.usage))}")
    lines += [f"lineage problem: {p}" for p in c.problems]
    return lines
