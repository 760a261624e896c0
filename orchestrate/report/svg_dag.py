"""The DAG as an inline SVG: layers as columns, nodes filled by status (and the status written in each),
edges drawn by predicate (a guardrail as a diamond naming its action), LOOPS_WITH groups boxed, the
critical path outlined; edge labels spread along their curves so they do not pile up."""
from __future__ import annotations

from html import escape

from orchestrate.report.shape import Link, Shape

# Light fills with dark text keep every status readable (contrast above 7:1); the word is always shown.
STATUS_FILL = {"ACCEPTED": "#b7e4c7", "REWORK": "#ffd8a8", "INVALIDATED": "#ffc9c9", "ABANDONED": "#e5dbff",
               "SKIPPED": "#e9ecef", "PENDING": "#ffffff", "DISPATCHED": "#a5d8ff", "LANDED": "#99e9f2",
               "COMPLETE": "#d3f9d8", "PLANNED": "#ffffff"}
# predicate or condition -> (colour, width, dash); also the legend
EDGE_STYLE = {"TRIGGERS": ("#495057", 1.5, ""), "PRODUCES": ("#0b5394", 2.5, ""),
              "COMPOSES": ("#495057", 1.5, "8 3"), "EXTENDS": ("#862e9c", 1.5, "2 3"),
              "LOOPS_WITH": ("#c35a00", 3.0, ""), "taken": ("#2b8a3e", 2.0, ""),
              "untaken": ("#868e96", 1.5, "4 4"), "undecided": ("#495057", 1.5, "6 3")}
COL, ROW, W, H, PAD = 240, 74, 150, 50, 24


def style_of(link: Link) -> tuple[str, float, str]:
    if link.kind in ("taken", "untaken", "undecided"):
        return EDGE_STYLE[link.kind]
    return EDGE_STYLE.get(link.predicate, EDGE_STYLE["TRIGGERS"])


def render(shape: Shape, status: dict[str, str], titles: dict[str, str], critical: list[str],
           crossed: dict[str, dict] | None = None) -> str:
    """`crossed`: edge id -> the newest guardrail check the journal recorded on it (see html.crossings)."""
    pos = shape.position()
    height = max((len(c) for c in shape.columns), default=1)
    width, tall = PAD * 2 + COL * max(len(shape.columns), 1) - (COL - W), PAD * 2 + ROW * height - (ROW - H) + 24
    xy = {n: (PAD + k * COL, PAD + 24 + r * ROW) for n, (k, r) in pos.items()}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" id="dag" role="img" aria-labelledby="dag-title" '
           f'width="{width}" height="{tall}" viewBox="0 0 {width} {tall}" font-family="sans-serif" font-size="12">',
           '<title id="dag-title">The campaign DAG: one column per layer, nodes coloured and labelled by status'
           '</title>',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="context-stroke"/></marker></defs>']
    for k in range(len(shape.columns)):
        out.append(f'<text x="{PAD + k * COL}" y="{PAD + 8}" fill="#495057">layer {k}</text>')
    for group in shape.groups:
        boxes = [xy[m] for m in group if m in xy]
        if boxes:
            x0, y0 = min(b[0] for b in boxes) - 8, min(b[1] for b in boxes) - 8
            x1, y1 = max(b[0] for b in boxes) + W + 8, max(b[1] for b in boxes) + H + 8
            out.append(f'<rect class="group" data-group="{escape(" ".join(group))}" x="{x0}" y="{y0}" '
                       f'width="{x1 - x0}" height="{y1 - y0}" rx="10" fill="none" stroke="#c35a00" '
                       f'stroke-dasharray="6 4"><title>LOOPS_WITH group: {escape(", ".join(group))}</title></rect>')
    placer = Placer([(x, y, x + W, y + H) for x, y in xy.values()])
    for link in shape.links:
        if link.src in xy and link.dst in xy:
            out.append(_edge(link, xy[link.src], xy[link.dst], placer, (crossed or {}).get(link.edge_id)))
    on_path = set(critical)
    for n, (x, y) in xy.items():
        out.append(_plugin(n, x, y) if n in shape.plugins else
                   _node(n, x, y, status.get(n, "PLANNED"), titles.get(n, ""), n in on_path))
    out.append("</svg>")
    return "\n".join(out)


class Placer:
    """Puts each edge label at the first point along its curve where it covers no node and no label placed
    before it (failing that, just above or below the curve), so labels of edges that leave one node, share
    a curve or cross do not pile up on one spot."""
    TRIES = (0.55, 0.42, 0.68, 0.3, 0.8, 0.5, 0.62, 0.36, 0.74)
    SHIFTS = (0, -14, 14, -28, 28, -42, 42)

    def __init__(self, taken: list[tuple[float, float, float, float]]) -> None:
        self.taken = list(taken)

    def place(self, at, width: float, height: float = 13, left: float | None = None) -> tuple[float, float]:
        """`at(t)` is the curve's point at t, `left` how far the box reaches left of it (default: centred);
        returns the point chosen (and keeps its box)."""
        left = width / 2 if left is None else left
        best, least = None, None
        for shift in self.SHIFTS:
            for t in self.TRIES:
                cx, cy = at(t)
                cy += shift
                box = (cx - left, cy - height / 2, cx - left + width, cy + height / 2)
                cover = sum(_overlap(box, other) for other in self.taken)
                if least is None or cover < least:
                    best, least = (box, (cx, cy)), cover
                if cover == 0:
                    self.taken.append(box)
                    return cx, cy
        self.taken.append(best[0])
        return best[1]


def _overlap(a, b) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def text_width(text: str, size: float = 10) -> float:
    return len(text) * size * 0.6 + 6  # sans-serif averages under 0.6 em a character; a margin besides


def _edge(link: Link, a: tuple[int, int], b: tuple[int, int], placer: Placer, check: dict | None) -> str:
    colour, width, dash = style_of(link)
    if b[0] > a[0]:  # forward: right side to left side
        x1, y1, x2, y2 = a[0] + W, a[1] + H / 2, b[0], b[1] + H / 2
        bend = (x2 - x1) / 2
        c1, c2 = (x1 + bend, y1), (x2 - bend, y2)
    elif b[0] == a[0] and link.predicate == "LOOPS_WITH":  # group peers stand one above the other
        x1, y1, x2, y2 = a[0] + W / 2, min(a[1], b[1]) + H, b[0] + W / 2, max(a[1], b[1])
        c1, c2 = (x1, y1), (x2, y2)
    else:  # backwards: an arc on the left
        x1, y1, x2, y2 = a[0], a[1] + H / 2, b[0], b[1] + H / 2
        reach = min(20 + abs(y2 - y1) / 4, PAD - 4)
        c1, c2 = (x1 - reach, y1), (x2 - reach, y2)
    d = f"M{x1},{y1} C{c1[0]},{c1[1]} {c2[0]},{c2[1]} {x2},{y2}"

    def at(t: float) -> tuple[float, float]:
        return ((1 - t) ** 3 * x1 + 3 * (1 - t) ** 2 * t * c1[0] + 3 * (1 - t) * t ** 2 * c2[0] + t ** 3 * x2,
                (1 - t) ** 3 * y1 + 3 * (1 - t) ** 2 * t * c1[1] + 3 * (1 - t) * t ** 2 * c2[1] + t ** 3 * y2)
    arrow = "" if link.predicate == "LOOPS_WITH" else ' marker-end="url(#arrow)"'
    dashed = f' stroke-dasharray="{dash}"' if dash else ""
    label = link.label or link.predicate
    parts = []
    if link.guardrail:  # placed first: its diamond is the one mark that should sit on the curve itself
        parts.append(_guardrail(link, at, placer, check))
    if link.predicate != "TRIGGERS" or link.kind != "static":
        short = {"taken": "taken", "untaken": "not taken", "undecided": "if"}.get(link.kind, link.predicate)
        mx, my = placer.place(at, text_width(short))
        parts.append(f'<text class="edge-label" x="{mx:.0f}" y="{my + 3.5:.0f}" text-anchor="middle" font-size="10" '
                     f'fill="{colour}" stroke="#fff" stroke-width="3" paint-order="stroke">{escape(short)}</text>')
    return (f'<g class="edge" data-edge="{escape(link.edge_id)}" data-predicate="{link.predicate}" '
            f'data-kind="{link.kind}"><title>{escape(link.src)} → {escape(link.dst)}: {escape(label)}</title>'
            f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="{width}"{dashed}{arrow}/>{"".join(parts)}</g>')


GUARD_WORD = {"warn": "flagged", "block": "blocked", "reroute": "rerouted"}  # what a violation did


def _guardrail(link: Link, at, placer: Placer, check: dict | None) -> str:
    """A diamond on the edge naming its guardrail's action (what it does on a violation), filled and with a
    `!` when the crossing violated it; the tooltip says what happened. Short: columns stand close."""
    violated = bool(check and check.get("violated"))
    word = link.guardrail + ("!" if violated else "")
    state = f"violated: {GUARD_WORD.get(link.guardrail, 'violated')}" if violated else (
        "passed" if check else "not crossed yet")
    mx, my = placer.place(at, text_width(word) + 10, left=7)  # the diamond on the curve, its words after
    fill = "#c92a2a" if violated else "#fff"
    said = escape(state + (f" ({check['message']})" if check and check.get("message") else ""))
    return (f'<g class="guardrail" data-edge="{escape(link.edge_id)}" data-action="{escape(link.guardrail)}" '
            f'data-violated="{"true" if violated else "false"}"><title>guardrail on {escape(link.edge_id)} '
            f'(on_violation: {escape(link.guardrail)}): {said}</title>'
            f'<path d="M{mx:.1f},{my - 6:.1f} l6,6 l-6,6 l-6,-6 z" fill="{fill}" stroke="#c92a2a" stroke-width="1.5"/>'
            f'<text class="edge-label" x="{mx + 9:.1f}" y="{my + 3.5:.0f}" font-size="10" fill="#a61e4d" '
            f'stroke="#fff" stroke-width="3" paint-order="stroke">{escape(word)}</text></g>')


def _node(n: str, x: int, y: int, status: str, title: str, critical: bool) -> str:
    fill = STATUS_FILL.get(status, "#ffffff")
    stroke, width = ("#111", 3) if critical else ("#495057", 1)
    dash = ' stroke-dasharray="4 3"' if status in ("SKIPPED", "ABANDONED") else ""
    title = "" if title == n else title  # an untitled node is titled by its id: say it once
    short = title if len(title) <= 22 else title[:21] + "…"
    word = status.lower() + (" · critical" if critical else "")
    return (f'<g class="node" data-node="{escape(n)}" data-status="{status}"><title>{escape(n)}: {escape(title)} '
            f'({status.lower()})</title><a href="#node-{escape(n)}">'
            f'<rect x="{x}" y="{y}" width="{W}" height="{H}" rx="6" fill="{fill}" stroke="{stroke}" '
            f'stroke-width="{width}"{dash}/>'
            f'<text x="{x + 8}" y="{y + 16}" font-weight="bold" fill="#111">{escape(n)}</text>'
            f'<text x="{x + W - 8}" y="{y + 16}" text-anchor="end" fill="#111">{escape(word)}</text>'
            f'<text x="{x + 8}" y="{y + 36}" fill="#343a40">{escape(short)}</text></a></g>')


def _plugin(n: str, x: int, y: int) -> str:
    return (f'<g class="plugin" data-plugin="{escape(n)}"><title>gate plugin {escape(n)}</title>'
            f'<rect x="{x}" y="{y + 10}" width="{W}" height="{H - 20}" rx="15" fill="#f3f0ff" stroke="#862e9c"/>'
            f'<text x="{x + W / 2}" y="{y + H / 2 + 4}" text-anchor="middle" fill="#111">{escape(n)}</text></g>')


def legend() -> str:
    """Status swatches and edge styles, as HTML (readable without the SVG's colours)."""
    items = [f'<li><span class="swatch" style="background:{fill}"></span>{s.lower()}</li>'
             for s, fill in STATUS_FILL.items() if s not in ("COMPLETE", "PLANNED")]
    lines = []
    for name, (colour, width, dash) in EDGE_STYLE.items():
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        lines.append(f'<li><svg width="40" height="10" aria-hidden="true"><line x1="0" y1="5" x2="40" y2="5" '
                     f'stroke="{colour}" stroke-width="{width}"{dashed}/></svg> '
                     f'{escape(name if name.isupper() else "conditional, " + name)}</li>')
    return (f'<ul class="legend">{"".join(items)}</ul><ul class="legend">{"".join(lines)}'
            '<li><span class="swatch" style="border:3px solid #111"></span>on the critical path</li>'
            '<li><svg width="14" height="14" aria-hidden="true"><path d="M7,1 l6,6 l-6,6 l-6,-6 z" fill="#fff" '
            'stroke="#c92a2a" stroke-width="1.5"/></svg> a guardrail and its action (filled, with !: violated when '
            'crossed)</li></ul>')
