"""The DAG as an inline SVG: layers as columns, nodes filled by status (and the status written in each),
edges drawn by predicate, LOOPS_WITH groups boxed, the critical path outlined."""
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


def render(shape: Shape, status: dict[str, str], titles: dict[str, str], critical: list[str]) -> str:
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
    for link in shape.links:
        if link.src in xy and link.dst in xy:
            out.append(_edge(link, xy[link.src], xy[link.dst]))
    on_path = set(critical)
    for n, (x, y) in xy.items():
        out.append(_plugin(n, x, y) if n in shape.plugins else
                   _node(n, x, y, status.get(n, "PLANNED"), titles.get(n, ""), n in on_path))
    out.append("</svg>")
    return "\n".join(out)


def _edge(link: Link, a: tuple[int, int], b: tuple[int, int]) -> str:
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
    t = 0.55  # past the middle, where edges leaving one node have spread apart
    mx = (1 - t) ** 3 * x1 + 3 * (1 - t) ** 2 * t * c1[0] + 3 * (1 - t) * t ** 2 * c2[0] + t ** 3 * x2
    my = (1 - t) ** 3 * y1 + 3 * (1 - t) ** 2 * t * c1[1] + 3 * (1 - t) * t ** 2 * c2[1] + t ** 3 * y2
    arrow = "" if link.predicate == "LOOPS_WITH" else ' marker-end="url(#arrow)"'
    dashed = f' stroke-dasharray="{dash}"' if dash else ""
    label = link.label or link.predicate
    text = ""
    if link.predicate != "TRIGGERS" or link.kind != "static":
        short = {"taken": "taken", "untaken": "not taken", "undecided": "if"}.get(link.kind, link.predicate)
        text = (f'<text x="{mx:.0f}" y="{my - 4:.0f}" text-anchor="middle" font-size="10" fill="{colour}" '
                f'stroke="#fff" stroke-width="3" paint-order="stroke">'
                f'{escape(short)}</text>')
    return (f'<g class="edge" data-edge="{escape(link.edge_id)}" data-predicate="{link.predicate}" '
            f'data-kind="{link.kind}"><title>{escape(link.src)} → {escape(link.dst)}: {escape(label)}</title>'
            f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="{width}"{dashed}{arrow}/>{text}</g>')


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
            '<li><span class="swatch" style="border:3px solid #111"></span>on the critical path</li></ul>')
