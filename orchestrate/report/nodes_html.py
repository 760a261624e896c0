"""One section of the HTML report per node: status, attempts and their phases (and the usage each
reported), every gate verdict with its attempt and the first lines of its output, surface, the diffstat
of its merge, seams and decisions, log links."""
from __future__ import annotations

import os
from html import escape
from pathlib import Path

from orchestrate.report.timeline import duration

FIRST_LINES = 3  # of a gate's output: enough to see why, short enough to scan


def section(data, node: str, status: str, here: Path) -> str:
    c, h, dag = data.campaign, data.history, data.dag
    spec = dag.by_id.get(node)
    state = c.nodes.get(node)
    rows = [("status", f'<span class="status">{status.lower()}</span>'),
            ("attempts", str(state.attempt if state else 0)),
            ("surface", ", ".join(f"<code>{escape(t)}</code>" for t in (spec.file_surface if spec else ())) or "-")]
    if state and state.widened:
        rows.append(("widened", ", ".join(f"<code>{escape(t)}</code>" for t in state.widened)))
    merge = h.merges.get(node)
    if merge:
        rows.append(("merge", f"<code>{escape(merge['sha'][:12])}</code> from <code>{escape(merge.get('branch', ''))}"
                              f"</code>" + (f" · {escape(diffstat(data, merge))}" if not merge.get("empty") else
                                            " · nothing to merge")))
    if state and state.feedback and status != "ACCEPTED":
        rows.append(("why", escape(state.feedback.splitlines()[0])))
    if node in c.enabled:
        rows.append(("enabled", escape(str(c.enabled[node]))))
    mine = [r for r in data.usage if r["node"] == node and "usage" in r]
    if mine:
        from orchestrate.recorder.provenance import usage_text, usage_total
        said = usage_text(usage_total(mine))
        rows.append(("usage", f'<span class="usage" data-usage-node="{escape(node)}">{escape(said)}</span>'
                              f" over {attempts(mine)} attempt(s)"))
    runs = relative(str(data.layout.runs(data.topic) / node), here, data.layout.root)
    rows.append(("logs", f'<a href="{escape(runs)}/">{escape(runs)}/</a>'))
    title = f" — {escape(spec.title)}" if spec and spec.title and spec.title != node else ""
    parts = [f'<section id="node-{escape(node)}" data-node="{escape(node)}" data-status="{status}">',
             f'<h3>{escape(node)}{title} <span class="status">{status.lower()}</span></h3>',
             "<table>" + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>",
             _attempts(data, node, here), _gates(h.gates.get(node, [])), seams(h, node), "</section>"]
    return "\n".join(p for p in parts if p)


def attempts(rows: list[dict]) -> int:
    """How many attempts `rows` (provenance.usage_rows) come from: a worker resumed in its attempt after its
    surface was widened reports once per run, and it is still one attempt."""
    return len({(r["node"], r["attempt"]) for r in rows})


def diffstat(data, merge: dict) -> str:
    """`git diff --shortstat` of a merge against its first parent. On the first miss every merge of the
    campaign is read in one `git diff-tree --stdin` (a process per node made CLOSE's report O(nodes)
    processes); a merge commit never changes, so what was read stands for the next report of the run."""
    root = str(data.layout.root)
    if (root, merge["sha"]) not in _diffstats:
        wanted = {m["sha"] for m in data.history.merges.values() if not m.get("empty")} | {merge["sha"]}
        _diffstats.update(((root, sha), stat) for sha, stat in _read_diffstats(data.layout.root, wanted).items())
    return _diffstats.get((root, merge["sha"]), "no change")


def _read_diffstats(root: Path, shas: set[str]) -> dict[str, str]:
    from orchestrate import git
    wanted = sorted(s for s in shas if len(s) in (40, 64) and not s.strip("0123456789abcdef"))
    pairs = [(sha, git.rev_parse(root, f"{sha}^1")) for sha in wanted]
    lines = "".join(f"{sha} {parent}\n" for sha, parent in pairs if parent)
    done = git.git(root, "diff-tree", "--stdin", "--shortstat", input=lines, check=False) if lines else None
    found = {sha: "no change" for sha, parent in pairs if parent}
    current = None
    for line in (done.stdout.splitlines() if done else ()):
        if line in found:
            current = line
        elif current and line.strip():
            found[current] = line.strip()
    return found


_diffstats: dict[tuple[str, str], str] = {}


def _attempts(data, node: str, here: Path) -> str:
    attempts = data.history.of(node)
    if not attempts:
        return ""
    from orchestrate.recorder.provenance import attempt_usage, usage_text
    reported: dict = {}  # attempt -> its rows: a widened worker resumed in its attempt reports once per run
    for r in data.usage:
        if r["node"] == node:
            reported.setdefault(r["attempt"], []).append(r)
    rows = ["<tr><th>attempt</th><th>outcome</th><th>phases</th><th>worker</th><th>usage</th><th>log</th></tr>"]
    for a in attempts:
        mine = reported.get(a.number, [])
        good, bad = [r for r in mine if "usage" in r], [r for r in mine if "usage" not in r]
        usage = " ".join(([f'<span class="usage" data-usage-attempt="{a.number}">'
                           f'{escape(usage_text(attempt_usage(good)))}</span>'] if good else [])
                         + [f"malformed usage file: {escape(str(r['error']))}" for r in bad])
        phases = ", ".join(f"{s.phase} {duration(s.length(data.history.end))}" + ("" if s.end is not None else " …")
                           for s in a.spans)
        worker = "" if a.worker_rc is None else f"exit {a.worker_rc}" + (
            f" after {a.worker_seconds:.1f}s" if a.worker_seconds is not None else "")
        links = " ".join(f'<a href="{escape(relative(log, here, data.layout.root))}">{escape(Path(log).name)}</a>'
                         for log in a.logs)
        rows.append(f"<tr><td>{a.number}</td><td>{escape(a.outcome or 'in flight')}</td><td>{escape(phases)}</td>"
                    f"<td>{escape(worker)}</td><td>{usage}</td><td>{links}</td></tr>")
    return "<table class=\"attempts\">" + "".join(rows) + "</table>"


def _gates(entries: list[dict]) -> str:
    if not entries:
        return ""
    rows = ["<tr><th>attempt</th><th>gate</th><th>verdict</th><th>by</th><th>output</th></tr>"]
    for g in entries:
        word = "pass" if g.get("code") == 0 else ("fail" if g.get("code") == 1 else f"exit {g.get('code')}")
        items = list(g.get("items") or [])[:FIRST_LINES]
        more = len(g.get("items") or []) - len(items) + int(g.get("more_items") or 0)
        text = "\n".join([str(g.get("summary", ""))] + items + ([f"… {more} more"] if more > 0 else []))
        attempt = g.get("attempt")
        rows.append(f'<tr class="gate" data-attempt="{attempt or ""}"><td>{attempt or "-"}</td>'
                    f"<td>{escape(str(g.get('gate')))}</td><td>{word} ({g.get('code')})</td>"
                    f"<td>{escape(str(g.get('by') or ''))}</td><td><pre>{escape(text)}</pre></td></tr>")
    return "<table class=\"gates\">" + "".join(rows) + "</table>"


def seams(h, node: str | None) -> str:
    """The seams opened on `node` (None: on the campaign, like final-acceptance) and how each was decided."""
    mine = [s for s in h.seams if s["node"] == node]
    if not mine:
        return ""
    items = []
    for s in mine:
        d = s["decided"]
        answer = (f"decided <b>{escape(str(d['choice']))}</b> by {escape(str(d['who']))} ({escape(str(d['how']))}) "
                  f"at +{duration(d['at'])}" + (f": {escape(d['note'])}" if d.get("note") else "")) if d else \
            "<b>open</b>"
        items.append(f"<li>seam {escape(str(s['seam']))} at +{duration(s['at'])}: {escape(s['reason'])} — "
                     f"{answer}</li>")
    return "<ul class=\"seams\">" + "".join(items) + "</ul>"


def relative(target: str, here: Path, root: Path) -> str:
    """A link from the report's folder to `target` (a path the journal recorded, absolute or repo-relative)."""
    path = Path(target) if os.path.isabs(target) else root / target
    return Path(os.path.relpath(path, here)).as_posix()
