"""The timeline (Gantt) as an inline SVG: one row per node, one bar per attempt split into its phases
(landed: back from its worker, waiting to be judged), reworks and seams marked (an open seam as a band
to the chart's right edge), the critical path outlined; and the makespan against its lower bound."""
from __future__ import annotations

from dataclasses import dataclass
from html import escape

from orchestrate.report.history import WAITING, History

PHASE_FILL = {"queued": "#dee2e6", "running": "#74c0fc", "landed": "#c5f6fa", "judging": "#ffe066",
              "merging": "#8ce99a"}
LEFT, WIDTH, ROW, TOP = 130, 820, 26, 34
OPEN_TAIL = 0.12  # of the width, kept right of the last event for a seam still open: a band, not a line


@dataclass
class Bound:
    makespan: float
    critical: float  # the heaviest chain of work along ordering edges
    work: float  # every attempt's running, judging and merging time
    slots: int  # --jobs when the journal knows it, else the most attempts that ran at once
    path: list[str]
    jobs_known: bool = False

    @property
    def lower(self) -> float:
        return max(self.critical, self.work / max(self.slots, 1))


def busy(history: History) -> dict[str, float]:
    """Seconds each node spent running, being judged or merged, over all its attempts (waiting excluded)."""
    total: dict[str, float] = {}
    for a in history.attempts:
        total[a.node] = total.get(a.node, 0.0) + sum(s.length(history.end) for s in a.spans
                                                     if s.phase not in WAITING)
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
    still_open = any(seam["decided"] is None for seam in history.seams)
    plot = WIDTH * (1 - OPEN_TAIL) if still_open else WIDTH  # the tail is "from then on", not time

    def x(t: float) -> float:
        return LEFT + (t - t0) / span * plot

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" id="timeline" role="img" aria-labelledby="timeline-title" '
           f'width="{LEFT + WIDTH + 20}" height="{tall}" viewBox="0 0 {LEFT + WIDTH + 20} {tall}" '
           f'font-family="sans-serif" font-size="12">',
           '<title id="timeline-title">Timeline: one bar per attempt, split into queued, running, landed '
           '(waiting to be judged), judging and merging</title>']
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
    out += [_seam(seam, x, tall) for seam in history.seams]
    out.append("</svg>")
    return "\n".join(out)


def _seam(seam: dict, x, tall: int) -> str:
    """A seam shaded from opening to decision; one still open reaches the chart's right edge, labelled."""
    sx, decided, name = x(seam["at"]), seam["decided"], escape(str(seam["seam"]))
    ex = x(decided["at"]) if decided else LEFT + WIDTH
    state = f"decided {decided['choice']}" if decided else "open"
    word = f"seam {name}" + ("" if decided else " (open)")
    inside = ex - sx > len(word) * 6 + 8  # the label fits in the band: write it there
    tx, anchor = (sx + 4, "start") if inside or sx < LEFT + WIDTH * 0.7 else (sx - 3, "end")
    return (f'<g class="seam" data-seam="{name}" data-open="{"false" if decided else "true"}"><title>seam {name}'
            f'{" on " + escape(seam["node"]) if seam["node"] else ""}: {escape(seam["reason"])} ({escape(state)})'
            f'</title><rect class="seam-band" x="{sx:.1f}" y="{TOP - 4}" width="{max(ex - sx, 2):.1f}" '
            f'height="{tall - TOP - 20}" fill="#f783ac" fill-opacity="{0.18 if decided else 0.28}"/>'
            f'<line x1="{sx:.1f}" y1="{TOP - 4}" x2="{sx:.1f}" y2="{tall - 24}" stroke="#c2255c" stroke-width="2"/>'
            f'<text x="{tx:.1f}" y="{tall - 10}" text-anchor="{anchor}" font-size="10" fill="#a61e4d">{word}</text>'
            f'</g>')


def legend() -> str:
    items = "".join(f'<li><span class="swatch" style="background:{fill}"></span>{phase}'
                    f'{" (waiting to be judged)" if phase == "landed" else ""}</li>'
                    for phase, fill in PHASE_FILL.items())
    return (f'<ul class="legend">{items}<li>✗ an attempt that did not merge (see the node below)</li>'
            '<li><span class="swatch" style="background:#fbd3e3"></span>a seam, shaded until decided (still open: '
            'to the right edge)</li>'
            '<li>★ on the critical path</li></ul>')

