"""`orchestrate report`: one self-contained HTML file of a campaign, finished or in flight.

It reads only the recorder (the journal and the campaign's copy of the DAG) and git (diffstats), never
the engine's memory, so the report written at CLOSE and one asked for later agree. No network, no
script: inline CSS and SVG, readable from `file://` and with JavaScript off.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from pathlib import Path

from orchestrate.recorder.campaign import Campaign, apply
from orchestrate.recorder.paths import Layout
from orchestrate.report import history as hist
from orchestrate.report import nodes_html, svg_dag, timeline
from orchestrate.report.status import layer_text
from orchestrate.report.shape import critical_path, shape

CSS = """
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem;color:#111;background:#fff}
h1{margin-bottom:.2rem} h2{border-bottom:1px solid #dee2e6;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0} td,th{border:1px solid #dee2e6;padding:.25rem .5rem;text-align:left;
vertical-align:top} th{background:#f8f9fa} code,pre{font-family:ui-monospace,monospace;font-size:.9em}
pre{background:#f8f9fa;padding:.4rem;margin:.2rem 0;white-space:pre-wrap}
.figure{overflow-x:auto;border:1px solid #dee2e6;padding:.5rem}
.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.4rem 1.2rem;margin:.4rem 0;font-size:.9em}
.swatch{display:inline-block;width:1.1em;height:1em;border:1px solid #495057;vertical-align:middle;margin-right:.3em}
.status{font-weight:bold;padding:0 .3em;border:1px solid #495057;border-radius:3px}
.muted{color:#495057} .warn{color:#a61e4d}
"""


@dataclass
class Data:
    layout: Layout
    topic: str
    campaign: Campaign
    entries: list[dict]
    dag: object  # orchestrate.dag.model.Dag: the campaign's own copy, as last approved
    history: hist.History
    usage: list[dict]  # provenance.usage_rows: what each attempt reported to $ORCH_USAGE
    jobs: int | None = None  # the run's --jobs, when the journal recorded it


def crossings(entries: list[dict]) -> dict[str, dict]:
    """Edge id -> its newest guardrail check (action, violated, message), as the journal recorded it."""
    return {e["context"]["edge"]: e["context"] for e in entries
            if e["kind"] == "guardrail" and e["context"].get("edge")}


def collect(layout: Layout, topic: str) -> Data:
    from orchestrate.recorder import approved
    from orchestrate.recorder.journal import Recorder
    entries = Recorder(layout.ledger, topic).read()
    if not entries:
        from orchestrate.recorder import topics
        raise topics.unknown(layout.ledger, topic)
    campaign = Campaign()
    for entry in entries:
        apply(campaign, entry)
    # the copy under this layout, not the journal's path: a recorder moved with its project still reads
    # (deleted, the recorder still holds what the hash approved); read as approved, never a person's edit
    # the dag-amendment seam has not accepted, half-typed or not: decide's refresh and `report` use this
    copy = layout.state(topic) / "dag.yaml"
    dag = approved.load(layout.ledger, copy if copy.exists() or campaign.dag_hash else Path(campaign.dag_path),
                        campaign)
    from orchestrate.recorder.provenance import usage_rows
    jobs = next((e["context"].get("jobs") for e in entries if e["kind"] == "open"), None)
    return Data(layout, topic, campaign, entries, dag, hist.read(topic, entries), usage_rows(entries),
                jobs if isinstance(jobs, int) and jobs > 0 else None)


def statuses(campaign: Campaign, dag) -> dict[str, str]:
    found = {n: s.status for n, s in campaign.nodes.items()}
    for node in dag.nodes:
        found.setdefault(node.id, "COMPLETE" if node.complete else "PENDING")
    return found


def default_path(data: Data) -> Path:
    """`.ledger/log/<date>-<topic>.html`, beside the sketch (else dated by the campaign's first entry)."""
    from orchestrate.recorder import sketch
    found = sketch.find(data.layout.ledger, data.topic)
    if found is not None:
        return found.with_suffix(".html")
    return sketch.path_for(data.layout.ledger, data.topic, data.entries[0]["created_at"]).with_suffix(".html")


def write(layout: Layout, topic: str, out: Path | None = None, *, jobs: int | None = None) -> Path:
    """Render the report of `topic` and write it (atomically) to `out` or beside the sketch. `jobs`, the
    run's worker slots, bounds the makespan when the journal does not record them. The folder beside the
    sketch is made when missing; `out`'s is the caller's to check (`report -o` refuses a missing one)."""
    from orchestrate.atomic import write_atomic
    from orchestrate.errors import UsageError
    data = collect(layout, topic)
    if jobs is not None:
        data.jobs = jobs
    if out is None:
        path = default_path(data)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, render(data, path.parent))
        return path
    try:
        write_atomic(out, render(data, out.parent))
    except OSError as exc:  # a place the person named (read-only, /proc, no permission): their input, not a bug
        raise UsageError(f"{out}: cannot write the report there: {exc.strerror or exc}",
                         hint="pass -o FILE in a folder you can write to") from None
    return out


def refresh(layout: Layout, topic: str) -> Path | None:
    """Rewrite the committed report beside the sketch from the journal as it is now, once the campaign has
    closed (CLOSE wrote the first one); None before that. Called after a decision that follows CLOSE (the
    final-acceptance seam, accepted or refused), it reads only flushed entries: flush the recorder first,
    and commit afterwards so the recorder holds the file that matches its journal."""
    data = collect(layout, topic)
    if not data.campaign.closed:
        return None
    from orchestrate.atomic import write_atomic
    path = default_path(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, render(data, path.parent))
    return path


def render(data: Data, here: Path) -> str:
    c, h, dag = data.campaign, data.history, data.dag
    status = statuses(c, dag)
    work = timeline.busy(h)
    path, critical = critical_path(dag, work)
    bound = timeline.Bound(h.makespan, critical, sum(work.values()), data.jobs or timeline.peak_running(h), path,
                           data.jobs is not None)
    picture = shape(dag, c.edges)
    order = [n for column in picture.columns for n in column if n not in picture.plugins]
    titles = {n.id: n.title for n in dag.nodes}
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    slots = "the run's --jobs" if bound.jobs_known else "the most workers that ran at once"
    body = [
        f"<h1>Campaign {escape(c.topic)}</h1>",
        f'<p class="muted">{escape(_state_line(c))} · report written {stamp} from the recorder</p>',
        _attention(c),
        "<h2>DAG</h2>",
        f'<div class="figure">{svg_dag.render(picture, status, titles, path, crossings(data.entries))}</div>',
        svg_dag.legend(),
        "<h2>Timeline</h2>", f'<div class="figure">{timeline.render(h, order, path)}</div>', timeline.legend(),
        f"<p>Makespan <b>{timeline.duration(bound.makespan)}</b> against a lower bound of "
        f"<b>{timeline.duration(bound.lower)}</b>: the larger of the critical path "
        f"({' → '.join(map(escape, path)) or '-'}, {timeline.duration(bound.critical)} of work) and all work "
        f"({timeline.duration(bound.work)}) spread over {bound.slots or 1} slot(s), "
        f"{slots}.</p>",
        "<h2>Summary</h2>", _summary(data, status, bound), nodes_html.seams(h, None),
        "<h2>Nodes</h2>", *[nodes_html.section(data, n, status[n], here) for n in order],
    ]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width\"><title>orchestrate: {escape(c.topic)}</title>"
            f"<style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _state_line(c: Campaign) -> str:
    if c.accepted_by:
        return f"accepted by {c.accepted_by.get('who', '?')}"
    if c.halt:
        return f"halted: {c.halt.splitlines()[0]}"
    if c.seam:
        return f"paused at seam {c.seam.get('seam')}"
    return "closed" if c.closed else f"in flight ({c.state}, {layer_text(c.k, len(c.layers))})"


def _summary(data: Data, status: dict[str, str], bound: timeline.Bound) -> str:
    c, h = data.campaign, data.history
    counts: dict[str, int] = {}
    for s in status.values():
        counts[s] = counts.get(s, 0) + 1
    reworks = sum(1 for a in h.attempts if a.outcome in ("rework", "escalate"))
    rows = [("nodes", f"{len(status)}: " + ", ".join(f"{v} {k.lower()}" for k, v in sorted(counts.items()))),
            ("layers", str(len(c.layers))), ("branch", f"<code>{escape(c.branch)}</code>"),
            ("baseline → tip", f"<code>{c.baseline[:12]}</code> → <code>{c.tip[:12]}</code>"),
            ("mode", escape(c.mode)), ("attempts", str(len(h.attempts))), ("reworks", str(reworks)),
            ("escalations", f"{h.escalations} (realignment seams)"), ("seams", str(len(h.seams))),
            ("makespan", timeline.duration(bound.makespan)), ("lower bound", timeline.duration(bound.lower)),
            ("work", f"{timeline.duration(bound.work)} running, judging and merging"),
            ("recorded", f"{timeline.duration(h.end)} from the first journal entry to the last"
                         + (f", closed at +{timeline.duration(h.closed_at)}" if h.closed_at is not None else "")),
            ("usage", _usage(data.usage))]
    table = "<table>" + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"
    flags = ""
    if c.flags:
        flags = "<p><b>Flags</b> (warn guardrails crossed):</p><ul>" + "".join(
            f"<li>{escape(str(f.get('message')))} (node {escape(str(f.get('node')))})</li>" for f in c.flags) + "</ul>"
    return table + flags


def _usage(rows: list[dict]) -> str:
    """The campaign's total of what workers reported, or why there is none."""
    from orchestrate.recorder.provenance import usage_text, usage_total
    good = [r for r in rows if "usage" in r]
    bad = len(rows) - len(good)
    if not good:
        return "no worker reported usage" + (f" ({bad} malformed usage file(s))" if bad else "")
    return (f'<span class="usage" data-usage-total="{escape(usage_text(usage_total(rows)))}">'
            f"{escape(usage_text(usage_total(rows)))}</span> over {nodes_html.attempts(good)} attempt(s) that reported it"
            + (f"; {bad} malformed usage file(s), not counted" if bad else ""))


def _attention(c: Campaign) -> str:
    """What a person must act on, first: a halt, or the open seam with the exact commands that answer it."""
    extra = []
    if c.halt:
        extra.append(f'<p class="warn"><b>Halted:</b> {escape(c.halt)}</p>')
    if c.seam:
        commands = "\n".join(f"orchestrate decide {c.seam['seam']} {choice} --topic {c.topic} --note \"...\""
                             for choice in c.seam.get("choices", []))
        extra.append(f"<p><b>Open seam {escape(str(c.seam['seam']))}</b>"
                     f"{' on ' + escape(c.seam['node']) if c.seam.get('node') else ''}: "
                     f"{escape(c.seam.get('reason', ''))}. Answer it with one of:</p><pre>{escape(commands)}</pre>")
    return "".join(extra)

