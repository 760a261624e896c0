"""The timeline (Gantt) as an inline SVG: one row per node, one bar per attempt split into its phases,
reworks and seams marked, the critical path outlined; and the makespan against its lower bound."""
from __future__ import annotations

from dataclasses import dataclass
from html import escape

from orchestrate.report.history import History

PHASE_FILL = {"queued": "#dee2e6", "running": "#74c0fc", "judging": "#ffe066", "merging": "#8ce99a"}
LEFT, WIDTH, ROW, TOP = 130, 820, 26, 34


@dataclass
class Bound:
    makespan: float
    critical: float  # the heaviest chain of work along ordering edges
    work: float  # every attempt's running, judging and merging time
    slots: int  # the most attempts that ran at once
    path: list[str]

    @property
    def lower(self) -> float:
        return max(self.critical, self.work / max(self.slots, 1))


def busy(history: History) -> dict[str, float]:
    """Seconds each node spent running, being judged or merged, over all its attempts (queueing excluded)."""
    total: dict[str, float] = {}
    for a in history.attempts:
        total[a.node] = total.get(a.node, 0.0) + sum(s.length(history.end) for s in a.spans if s.phase != "queued")
    return total


def peak_running(history: History) -> int:
    marks = sorted([(s.start, 1) for a in history.attempts for s in a.spans if s.phase == "running"]
                   + [(s.end if s.end is not None else history.end, -1)
                      for a in history.attempts for s in a.spans if s.phase == "running"], key=lambda m: (m[0], m[1]))
    level = peak = 0
    for _, step in marks:
        level += step
        peak = max(peak, level)
    return peak


def duration(t: float) -> str:
    if t < 60:
        return f"{t:.1f}s"
    m, s = divmod(round(t), 60)
    return f"{m}m{s:02d}s" if m < 60 else f"{m // 60}h{m % 60:02d}m"


def render(history: History, order: list[str], critical: list[str]) -> str:
    t0 = min((s.start for a in history.attempts for s in a.spans), default=0.0)
    t1 = max([s.end if s.end is not None else history.end for a in history.attempts for s in a.spans] + [t0]
             + [seam["at"] for seam in history.seams])
    span = max(t1 - t0, 1e-3)
    rows = {n: i for i, n in enumerate(order)}
    tall = TOP + ROW * max(len(order), 1) + 28

    def x(t: float) -> float:
        return LEFT + (t - t0) / span * WIDTH

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" id="timeline" role="img" aria-labelledby="timeline-title" '
           f'width="{LEFT + WIDTH + 20}" height="{tall}" viewBox="0 0 {LEFT + WIDTH + 20} {tall}" '
           f'font-family="sans-serif" font-size="12">',
           '<title id="timeline-title">Timeline: one bar per attempt, split into queued, running, judging and '
           'merging</title>']
    for i in range(6):
        t = t0 + span * i / 5
        out.append(f'<line x1="{x(t):.1f}" y1="{TOP - 6}" x2="{x(t):.1f}" y2="{tall - 24}" stroke="#e9ecef"/>'
                   f'<text x="{x(t):.1f}" y="{TOP - 10}" text-anchor="middle" fill="#495057">'
                   f'{duration(t - t0)}</text>')
    on_path = set(critical)
    for n, r in rows.items():
        y = TOP + r * ROW
        mark = " ★" if n in on_path else ""
        weight = ' font-weight="bold"' if n in on_path else ""
        out.append(f'<text x="{LEFT - 8}" y="{y + 15}" text-anchor="end"{weight} fill="#111">'
                   f'{escape(n)}{mark}</text>')
    for a in history.attempts:
        if a.node not in rows or not a.spans:
            continue
        y = TOP + rows[a.node] * ROW
        stroke = ' stroke="#111" stroke-width="2"' if a.node in on_path else ""
        parts = []
        for s in a.spans:
            end = s.end if s.end is not None else history.end
            parts.append(f'<rect class="phase" data-phase="{s.phase}" x="{x(s.start):.1f}" y="{y + 3}" '
                         f'width="{max(x(end) - x(s.start), 1.5):.1f}" height="{ROW - 8}" '
                         f'fill="{PHASE_FILL[s.phase]}"{stroke}><title>{escape(a.node)} attempt {a.number}: '
                         f'{s.phase} {duration(end - s.start)}{"" if s.end is not None else " (still)"}'
                         f'</title></rect>')
        last = a.spans[-1]
        end = x(last.end if last.end is not None else history.end)
        if a.outcome not in ("merged", ""):
            parts.append(f'<text x="{end + 2:.1f}" y="{y + 15}" font-size="11" fill="#c92a2a">✗<title>attempt '
                         f'{a.number} of {escape(a.node)}: {escape(a.outcome)}</title></text>')
        out.append(f'<g class="attempt" data-node="{escape(a.node)}" data-attempt="{a.number}" '
                   f'data-outcome="{escape(a.outcome or "in flight")}">{"".join(parts)}</g>')
    for seam in history.seams:
        sx = x(seam["at"])
        decided = seam["decided"]
        ex = x(decided["at"]) if decided else x(t1)
        out.append(f'<g class="seam" data-seam="{escape(str(seam["seam"]))}"><title>seam {escape(str(seam["seam"]))}'
                   f'{" on " + escape(seam["node"]) if seam["node"] else ""}: {escape(seam["reason"])}</title>'
                   f'<rect x="{sx:.1f}" y="{TOP - 4}" width="{max(ex - sx, 2):.1f}" height="{tall - TOP - 20}" '
                   f'fill="#f783ac" fill-opacity="0.18"/>'
                   f'<line x1="{sx:.1f}" y1="{TOP - 4}" x2="{sx:.1f}" y2="{tall - 24}" stroke="#c2255c" '
                   f'stroke-dasharray="3 3"/><text x="{sx + 3 if sx < LEFT + WIDTH * 0.8 else sx - 3:.1f}" y="{tall - 10}" '
                   f'text-anchor="{"start" if sx < LEFT + WIDTH * 0.8 else "end"}" font-size="10" fill="#a61e4d">'
                   f'seam {escape(str(seam["seam"]))}</text></g>')
    out.append("</svg>")
    return "\n".join(out)


def legend() -> str:
    items = "".join(f'<li><span class="swatch" style="background:{fill}"></span>{phase}</li>'
                    for phase, fill in PHASE_FILL.items())
    return (f'<ul class="legend">{items}<li>✗ an attempt that did not merge (see the node below)</li>'
            '<li><span class="swatch" style="background:#fbd3e3"></span>a seam, open until decided</li>'
            '<li>★ on the critical path</li></ul>')

