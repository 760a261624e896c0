"""`orchestrate graph`: the DAG as Mermaid (pastes into GitHub Markdown), Graphviz DOT, or text.

Statuses are written as words in the labels (`D1 accepted`), so the picture reads without colour.
Layers are numbered as `orchestrate layers` and `show` number them: a plan's `complete: true` nodes are
drawn, but in a band of their own ahead of layer 0 (the shape is made with `settle=True`).
"""
from __future__ import annotations

from orchestrate.report.shape import Link, Shape

FORMATS = ("mermaid", "dot", "text")
# Mermaid link syntax per edge style; LOOPS_WITH is undirected (the group is reconciled together)
MERMAID_ARROW = {"PRODUCES": "==>", "COMPOSES": "-.->", "EXTENDS": "-.->", "LOOPS_WITH": "---",
                 "untaken": "-.->", "undecided": "-.->"}
DOT_STYLE = {"TRIGGERS": "", "PRODUCES": "penwidth=2.5, color=\"#0b5394\"",
             "COMPOSES": "style=dashed, arrowtail=diamond, dir=both", "EXTENDS": "style=dotted, color=\"#862e9c\"",
             "LOOPS_WITH": "dir=none, penwidth=3, color=\"#c35a00\"", "taken": "color=\"#2b8a3e\", penwidth=2",
             "untaken": "style=dashed, color=\"#868e96\"", "undecided": "style=dashed"}


def _key(link: Link) -> str:
    return link.kind if link.kind in ("taken", "untaken", "undecided") else link.predicate


def _label(node: str, status: dict[str, str] | None) -> str:
    return f"{node} {status[node].lower()}" if status and node in status else node


SETTLED_NOTE = "complete (settled before the run, in no layer)"


def _bands(shape: Shape) -> list[tuple[str, list[str]]]:
    """(heading, nodes) per band: the complete nodes' band first when there is one, then `layer k`."""
    bands = [(SETTLED_NOTE, shape.settled)] if shape.settled else []
    return bands + [(f"layer {k}", column) for k, column in enumerate(shape.columns)]


def mermaid(shape: Shape, status: dict[str, str] | None) -> str:
    ids = {n: f"n{i}" for i, n in enumerate(n for _, band in _bands(shape) for n in band)}
    lines = ["flowchart LR"]
    grouped = {m for g in shape.groups for m in g}
    for heading, band in _bands(shape):
        # Mermaid has no numbered ranks: a comment per band says which layer `orchestrate layers` puts it in
        lines.append(f"    %% {heading}: {' '.join(band)}")
        for n in band:
            if n not in grouped:
                lines.append(f'    {ids[n]}["{_label(n, status)}"]')
    for i, group in enumerate(shape.groups):
        lines.append(f'    subgraph g{i} ["LOOPS_WITH group"]')
        lines += [f'        {ids[m]}["{_label(m, status)}"]' for m in group if m in ids]
        lines.append("    end")
    for link in shape.links:
        if link.src in ids and link.dst in ids:
            arrow = MERMAID_ARROW.get(_key(link), "-->")
            text = _link_text(link)
            lines.append(f"    {ids[link.src]} {arrow}|{text}| {ids[link.dst]}" if text
                         else f"    {ids[link.src]} {arrow} {ids[link.dst]}")
    if status:
        for word in sorted({s.lower() for s in status.values()}):
            members = [ids[n] for n, s in status.items() if s.lower() == word and n in ids]
            if members:
                lines.append(f"    classDef {word} {_MERMAID_CLASS.get(word, 'fill:#fff')}")
                lines.append(f"    class {','.join(members)} {word}")
    return "\n".join(lines) + "\n"


_MERMAID_CLASS = {"accepted": "fill:#b7e4c7", "rework": "fill:#ffd8a8", "invalidated": "fill:#ffc9c9",
                  "abandoned": "fill:#e5dbff,stroke-dasharray:4 3", "skipped": "fill:#e9ecef,stroke-dasharray:4 3",
                  "pending": "fill:#ffffff", "dispatched": "fill:#a5d8ff", "landed": "fill:#99e9f2",
                  "complete": "fill:#d3f9d8"}


def _link_text(link: Link) -> str:
    """A label safe inside Mermaid's `|...|` and DOT's quotes: no pipes, quotes or brackets."""
    if link.predicate == "TRIGGERS" and link.kind == "static" and not link.label:
        return ""
    text = link.label or link.predicate
    if link.kind in ("taken", "untaken", "undecided"):
        text = f"{link.predicate} {link.kind}"
    for bad in '|"[]{}()<>;#`':
        text = text.replace(bad, " ")
    return " ".join(text.split())


def dot(shape: Shape, status: dict[str, str] | None, topic: str) -> str:
    from orchestrate.report.svg_dag import STATUS_FILL
    lines = [f'digraph "{topic}" {{', "  rankdir=LR;", '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", '
             'fontname="sans-serif"];']
    for heading, band in _bands(shape):
        lines.append(f"  // {heading}")
        lines.append(f"  {{ rank=same; {' '.join(_q(n) for n in band)} }}")
        for n in band:
            if n in shape.plugins:
                lines.append(f'  {_q(n)} [shape=oval, fillcolor="#f3f0ff"];')
            else:
                fill = STATUS_FILL.get(status[n], "#ffffff") if status and n in status else "#ffffff"
                lines.append(f'  {_q(n)} [label={_q(_label(n, status))}, fillcolor="{fill}"];')
    for i, group in enumerate(shape.groups):
        lines.append(f'  subgraph cluster_g{i} {{ label="LOOPS_WITH"; style=dashed; {" ".join(_q(m) for m in group)} }}')
    for link in shape.links:
        attrs = [a for a in (DOT_STYLE.get(_key(link), ""), f"label={_q(_link_text(link))}" if _link_text(link) else "")
                 if a]
        lines.append(f"  {_q(link.src)} -> {_q(link.dst)}" + (f" [{', '.join(attrs)}]" if attrs else "") + ";")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def text(shape: Shape, status: dict[str, str] | None) -> str:
    lines = []
    for heading, band in _bands(shape):
        lines.append(f"{heading}: " + "  ".join(f"[{_label(n, status)}]" for n in band))
    if shape.links:
        lines.append("edges:")
        width = max(len(f"{link.src} -> {link.dst}") for link in shape.links)
        for link in shape.links:
            what = link.label or link.predicate
            if link.kind in ("taken", "untaken", "undecided"):
                what = link.label
            lines.append(f"  {f'{link.src} -> {link.dst}':<{width}}  {what}")
    for group in shape.groups:
        lines.append(f"LOOPS_WITH group: {' '.join(group)}")
    from orchestrate.printable import printable
    return printable("\n".join(lines)) + "\n"  # a condition's text is the plan author's, escapes and all
