"""The report's critical path and the makespan's lower bound: the heaviest chain of ordering edges by the
time its nodes took, outlined in the DAG drawing; the bound the larger of that chain and all work spread
over the run's --jobs, or over the most workers that ran at once when the journal has no --jobs."""
from __future__ import annotations

import re

from orchestrate.report import svg_dag
from orchestrate.report.history import Attempt, History, Span
from orchestrate.report.shape import critical_path, shape
from orchestrate.report.timeline import Bound, peak_running

# A -> B -> D and C -> D: two chains into D; E stands alone.
PLAN = """\
topic: bound
workers: {sh: "true"}
nodes:
  - {id: A, file_surface: [a], discipline: sh}
  - {id: B, depends_on: [A], file_surface: [b], discipline: sh}
  - {id: C, file_surface: [c], discipline: sh}
  - {id: D, depends_on: [B, C], file_surface: [d], discipline: sh}
  - {id: E, file_surface: [e], discipline: sh}
"""


def _plan(tmp_path):
    from orchestrate.dag.load import load_dag
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN)
    return load_dag(path)


def test_the_critical_path_is_the_heaviest_chain_by_the_time_its_nodes_took(tmp_path):
    dag = _plan(tmp_path)
    assert critical_path(dag, {"A": 1, "B": 2, "C": 4, "D": 1, "E": 5}) == (["C", "D"], 5)
    assert critical_path(dag, {"A": 3, "B": 2, "C": 4, "D": 1, "E": 5}) == (["A", "B", "D"], 6)
    assert critical_path(dag, {"A": 1, "B": 1, "C": 1, "D": 1, "E": 9}) == (["E"], 9)  # a lone node can be it


def test_the_lower_bound_is_the_critical_path_or_all_work_over_the_slots_whichever_is_larger():
    assert Bound(makespan=20, critical=6, work=30, slots=3, path=[]).lower == 10
    assert Bound(makespan=20, critical=12, work=30, slots=3, path=[]).lower == 12
    assert Bound(makespan=20, critical=6, work=30, slots=0, path=[]).lower == 30  # no slot known: one


def test_without_jobs_the_slots_are_the_most_workers_that_ran_at_once():
    def attempt(node, *running):
        return Attempt(node, 1, [Span("queued", start - 1, start) for start, _ in running[:1]]
                       + [Span("running", start, end) for start, end in running])
    history = History("bound", 0.0, 20.0, [attempt("A", (0, 10)), attempt("B", (2, 5)), attempt("C", (4, 8)),
                                           attempt("D", (10, 12)), attempt("E", (12, None))])
    assert peak_running(history) == 3  # A, B and C at 4 s; queued time is not running
    chain = History("bound", 0.0, 6.0, [attempt("A", (0, 2)), attempt("B", (2, 4)), attempt("C", (4, 6))])
    assert peak_running(chain) == 1  # one ending as the next starts: one at a time


def test_the_drawing_outlines_the_nodes_of_the_critical_path(tmp_path):
    dag = _plan(tmp_path)
    svg = svg_dag.render(shape(dag, {}), {n: "ACCEPTED" for n in "ABCDE"}, {}, ["A", "B", "D"])
    groups = {m.group(1): m.group(0) for m in re.finditer(r'<g class="node" data-node="(\w)".*?</g>', svg, re.S)}
    outlined = {n for n, g in groups.items() if 'stroke-width="3"' in g and "· critical" in g}
    assert sorted(groups) == list("ABCDE") and outlined == {"A", "B", "D"}, svg
