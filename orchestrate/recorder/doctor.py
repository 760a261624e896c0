"""`orchestrate doctor`: a read-only audit of a campaign's journal (seeds-other §3.8, R7).

The recorder refuses to write an entry that breaks a provenance rule, so a problem found here means the
journal was edited by hand, written by another tool, or damaged. Each entry is checked for the eight
provenance fields, a contiguous `seq`, a UTC `created_at`, a known `source_type`, a unique id and a
list `derived_from`; then the lineage rules of `provenance.RULES` run over the whole journal. A torn
last line is what a crash mid-append leaves (resume drops it), so it is a warning, not a problem.

Then campaign/<topic> is audited against the journal by the adherence gate (gates/adherence.py, run as
its own command: the recorder does not import gates), given the merge commits and node heads the journal
records: a merge on the branch that orchestrate did not record making (a worker's forgery) is FORGED, a
commit made directly on it is DIRECT; each is a problem naming the commit.

Last, the recorder's own history: every object its refs reach must be in its store (`git fsck
--connectivity-only`), or an old commit of the record cannot be read back. A tree git said it wrote and did
not (git_pipe.py) was found so.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from orchestrate import git, proc
from orchestrate.recorder import provenance, segments


@dataclass
class Report:
    journal: str
    entries: int = 0
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"journal": self.journal, "entries": self.entries, "problems": self.problems,
                "warnings": self.warnings, "ok": not self.problems}


def audit(journal: Path) -> Report:
    report = Report(str(journal))
    data, where = segments.read(journal)
    lines = data.split(b"\n")
    torn = lines.pop() if lines else b""  # after the last newline: empty, or a torn append
    if torn.strip():
        report.warnings.append(f"{where(len(lines) + 1)}: the last line is incomplete (a crash mid-append); "
                               "resume drops it")
    kept: list[tuple[int, dict]] = []  # (line, entry) for every entry with an id, for the lineage rules
    seen: set[str] = set()
    previous_seq = 0
    for number, raw in enumerate(lines, 1):
        place = where(number)
        try:
            entry = json.loads(raw)
        except ValueError as exc:
            report.problems.append(f"{place}: not a JSON object ({exc})")
            continue
        if not isinstance(entry, dict):
            report.problems.append(f"{place}: not a JSON object")
            continue
        report.entries += 1
        label = f"{place}: entry {entry.get('id', '(no id)')}"
        missing = [f for f in provenance.FIELDS if f not in entry]
        report.problems += [f"{label} has no {f}" for f in missing]
        problems = _field_problems(entry, previous_seq, seen)
        report.problems += [f"{label}: {p}" for p in problems]
        if isinstance(entry.get("seq"), int) and not isinstance(entry["seq"], bool):
            previous_seq = entry["seq"]
        if isinstance(entry.get("id"), str):
            seen.add(entry["id"])
            kept.append((number, _for_lineage(entry, number)))
    line_of = {id(e): n for n, e in kept}
    for entry, problem in provenance.breaches([e for _, e in kept]):
        report.problems.append(f"{where(line_of[id(entry)])}: {problem}")
    if not report.problems:  # the merges are read from a sound journal only
        _audit_branch(journal, [e for _, e in kept], report)
    _audit_history(journal.parents[2], report)
    return report


def _audit_history(ledger: Path, report: Report) -> None:
    """Every object the recorder's refs reach is in its store: each one missing is a problem. The refs are read
    first and fsck walks from them: left to itself, git 2.39's fsck lists the objects before it reads the refs,
    and a commit landing between the two (a runner of this or another topic) was reported missing (rv43: 29 of
    40 looks while a runner committed). The repository is named, never searched for: a recorder too damaged to
    be one would otherwise have had the project above it checked instead."""
    where = f"--git-dir={ledger / '.git'}"
    step, done = "for-each-ref", git.git(ledger, where, "for-each-ref", "--format=%(objectname)", check=False)
    if done.rc == 0:
        tips = sorted(set(done.stdout.split()))
        if not tips:
            return  # nothing committed yet
        step, done = "fsck", git.git(ledger, where, "fsck", "--connectivity-only", "--no-dangling", "--no-progress",
                                     *tips, check=False)
    if done.rc == 0:
        return
    said = [line for line in done.stdout.splitlines() if line.startswith("missing ")]
    said += [line for line in done.stderr.splitlines() if line.startswith(("error: ", "fatal: "))]
    report.problems += [f"{ledger}: the recorder's history is damaged: {line}"
                        for line in said or [f"git {step} exited {done.rc}"]]


def _audit_branch(journal: Path, entries: list[dict], report: Report) -> None:
    """The adherence gate over campaign/<topic>, with the merges and heads the journal records."""
    import sys

    from orchestrate.recorder.campaign import Campaign, apply
    campaign = Campaign()
    try:
        for entry in entries:
            apply(campaign, entry)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        report.warnings.append(f"campaign/{journal.parent.name} not audited: the journal does not fold ({exc!r})")
        return
    if not campaign.baseline:
        return  # opened no branch yet
    root = journal.parents[3]  # <root>/.ledger/state/<topic>/journal.jsonl
    args = [sys.executable, "-m", "gates.adherence", "--json", "--topic", campaign.topic, "--base",
            campaign.baseline, "--repo", str(root)]
    for ns in campaign.nodes.values():
        if ns.merge:
            args += ["--merge-commit", ns.merge] + (["--node-head", ns.head] if ns.head else [])
    if not [ns for ns in campaign.nodes.values() if ns.merge]:
        args += ["--merge-commit", campaign.baseline]  # "none were made": any merge on the chain is forged
    done = proc.run(args, cwd=root)
    try:
        verdict = json.loads(done.stdout)
    except ValueError:
        verdict = None
    if done.rc == 0:
        return
    if done.rc != 1 or not isinstance(verdict, dict):
        why = (done.stderr.strip() or done.stdout.strip()).splitlines()
        report.warnings.append(f"campaign/{campaign.topic} not audited: {why[-1] if why else f'exit {done.rc}'}")
        return
    for item in verdict.get("items", []):
        if isinstance(item, dict) and item.get("status") in ("FORGED", "DIRECT", "FOREIGN"):
            report.problems.append(f"campaign/{campaign.topic}: {item['status']} {item.get('subject', '')}: "
                                   f"{item.get('detail', '')}".rstrip(": "))
    if not report.problems:
        report.problems.append(f"campaign/{campaign.topic}: {verdict.get('summary', 'fails the adherence audit')}")


def _for_lineage(entry: dict, number: int) -> dict:
    """The entry as the lineage rules read it. A damaged field already has its own problem, so it is
    made harmless here rather than dropping the entry: a later entry that cites it still finds it (no
    false "does not exist"), and the rules never crash on a wrong type. Order is the line order, which
    is the seq order of a sound journal."""
    refs = entry.get("derived_from")
    return {**entry, "seq": number, "kind": entry.get("kind") if isinstance(entry.get("kind"), str) else "",
            "context": entry["context"] if isinstance(entry.get("context"), dict) else {},
            "derived_from": [r for r in refs if isinstance(r, str)] if isinstance(refs, list) else []}


def _field_problems(entry: dict, previous_seq: int, seen: set[str]) -> list[str]:
    found = []
    seq = entry.get("seq")
    if "seq" in entry and (not isinstance(seq, int) or isinstance(seq, bool) or seq != previous_seq + 1):
        found.append(f"seq is {seq!r}, expected {previous_seq + 1}")
    stamp = entry.get("created_at")
    if "created_at" in entry and not _utc(stamp):
        found.append(f"created_at {stamp!r} is not a UTC time ending in Z")
    source_type = entry.get("source_type")
    if "source_type" in entry and source_type not in provenance.SOURCE_TYPES:
        found.append(f"unknown source_type {source_type!r}; valid values: {', '.join(provenance.SOURCE_TYPES)}")
    refs = entry.get("derived_from")
    if "derived_from" in entry and not isinstance(refs, list):
        found.append("derived_from is not a list")
    elif isinstance(refs, list) and (odd := [r for r in refs if not isinstance(r, str)]):
        found.append(f"derived_from holds {', '.join(json.dumps(r) for r in odd)}, not entry ids")
    if "context" in entry and not isinstance(entry["context"], dict):
        found.append("context is not an object")
    if "id" in entry and not isinstance(entry["id"], str):
        found.append(f"id {json.dumps(entry['id'])} is not a string")
    elif entry.get("id") in seen:
        found.append("the id is used by an earlier entry")
    return found


def _utc(stamp: object) -> bool:
    if not isinstance(stamp, str) or not stamp.endswith("Z"):
        return False
    try:
        moment = datetime.fromisoformat(stamp[:-1])
    except ValueError:
        return False
    return "T" in stamp and moment.tzinfo is None  # a time of day, and no other offset before the Z


def render(report: Report) -> list[str]:
    lines = [f"warning: {w}" for w in report.warnings] + report.problems
    verdict = "no problems" if not report.problems else f"{len(report.problems)} problem(s)"
    lines.append(f"{report.journal}: {report.entries} entries, {verdict}")
    return lines
