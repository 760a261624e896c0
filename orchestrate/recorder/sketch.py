"""The sketch: the campaign's narrative in `log/<date>-<topic>.md` (a YAML header, rounds, retrospective)."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import yaml

from orchestrate.atomic import write_atomic
from orchestrate.recorder.provenance import attempt_usage, usage_text, usage_total


def path_for(ledger: Path, topic: str, opened: str | None = None) -> Path:
    day = (opened or datetime.now(timezone.utc).strftime("%Y-%m-%d"))[:10]
    return ledger / "log" / f"{day}-{topic}.md"


def find(ledger: Path, topic: str) -> Path | None:
    matches = sorted((ledger / "log").glob(f"????-??-??-{topic}.md"))
    return matches[-1] if matches else None


def header(fields: dict) -> str:
    return "```yaml\n" + yaml.safe_dump(fields, sort_keys=False, width=100) + "```\n"


def open_sketch(path: Path, fields: dict, narrative: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, f"# Campaign {fields['TOPIC']}\n\n{header(fields)}\n{narrative}\n")


def set_status(path: Path, status: str) -> None:
    text = path.read_text()
    start, end = text.index("```yaml\n") + 8, text.index("```\n", text.index("```yaml\n") + 8)
    fields = yaml.safe_load(text[start:end]) or {}
    fields["STATUS"] = status
    write_atomic(path, text[: start - 8] + header(fields) + text[end + 4:])


def append(path: Path, section: str) -> None:
    """Add a section at the end (the whole file is rewritten atomically: a crash never leaves half of it)."""
    write_atomic(path, path.read_text() + "\n" + section.rstrip() + "\n")


def usage_section(rows: list[dict]) -> str:
    """The retrospective's "Usage" section: every attempt that reported usage, each node's sum, the total;
    "" when no worker reported any (a campaign of shell commands has nothing to say here)."""
    if not rows:
        return ""
    lines = ["## Usage", "", "| node | attempt | usage |", "|---|---|---|"]
    nodes: dict[str, list[dict]] = {}
    attempts: dict[tuple, list[dict]] = {}  # a worker resumed in its attempt (surface widened) reports per run
    for row in rows:
        nodes.setdefault(row["node"], []).append(row)
        attempts.setdefault((row["node"], row["attempt"]), []).append(row)
    for (node, attempt), mine in attempts.items():
        good = [r for r in mine if "usage" in r]
        said = usage_text(attempt_usage(good)) if good else "malformed usage file (warning)"
        said += "; a malformed usage file (warning)" if good and len(good) < len(mine) else ""
        said = said.replace("|", "\\|").replace("<", "&lt;")  # a model the worker named `a | b<details>`: no cell end, no HTML
        lines.append(f"| {node} | {attempt} | {said} |")
    for node, mine in nodes.items():
        lines.append(f"| {node} | all | {usage_text(usage_total(mine))} |")
    lines += ["", f"Campaign total: {usage_text(usage_total(rows))}.", ""]
    return "\n".join(lines)
