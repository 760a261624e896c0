"""The report's DAG drawing where edges crowd: labels of edges that cross, or share a curve (a PRODUCES
edge and its guardrail), are spread along their curves; measured as Chromium lays them out."""
from __future__ import annotations

from orchestrate.report import svg_dag
from orchestrate.report.shape import Link, Shape
from tests.test_report import label_layout, needs_browser

# Three edges crossing at one point between the columns, one of them guarded, and two edges with one curve.
CROWD = Shape(columns=[["A", "B", "C"], ["D", "E", "F"]],
              links=[Link("A", "F", "PRODUCES", "static", "e1", guardrail="block"),
                     Link("B", "E", "COMPOSES", "static", "e2"),
                     Link("C", "D", "PRODUCES", "static", "e3"),
                     Link("A", "D", "TRIGGERS", "taken", "e4"),
                     Link("A", "D", "PRODUCES", "static", "e5", guardrail="reroute")],
              groups=[])


def page(tmp_path, crossed=None):
    svg = svg_dag.render(CROWD, {n: "ACCEPTED" for n in "ABCDEF"}, {}, [], crossed)
    out = tmp_path / "crowd.html"
    out.write_text(f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>crowd</title></head>'
                   f"<body>{svg}</body></html>")
    return out, svg


@needs_browser
def test_labels_of_crossing_and_shared_edges_do_not_overlap(tmp_path):
    drawn, _ = page(tmp_path)
    placed = label_layout(drawn, tmp_path)
    assert placed["data-labels"] == "7"  # e1 PRODUCES + guard, e2, e3, e4 taken, e5 PRODUCES + guard
    assert placed["data-overlaps"] == "0" and placed["data-covered"] == "0"


def test_a_guardrail_names_its_action_and_what_its_crossing_did(tmp_path):
    _, svg = page(tmp_path, {"e1": {"violated": True, "message": "guardrail lint on edge e1 (A -> F): 3 errors"},
                             "e5": {"violated": False}})
    assert 'data-edge="e1" data-action="block" data-violated="true"' in svg
    assert "violated: blocked (guardrail lint on edge e1 (A -&gt; F): 3 errors)</title>" in svg
    assert 'paint-order="stroke">block!</text>' in svg
    assert 'data-edge="e5" data-action="reroute" data-violated="false"' in svg and "): passed</title>" in svg
    _, svg = page(tmp_path, None)
    assert 'paint-order="stroke">block</text>' in svg and "): not crossed yet</title>" in svg
