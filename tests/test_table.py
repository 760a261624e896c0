"""The transition table's shape, and its agreement with DESIGN §5."""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from orchestrate.engine.handlers import HANDLERS
from orchestrate.engine.states import START, TERMINAL, State
from orchestrate.engine.table import TRANSITIONS, next_state, render

DESIGN = Path(__file__).resolve().parents[2] / "shared" / "DESIGN.md"


def test_each_state_outcome_pair_appears_once():
    pairs = Counter((t.state, t.outcome) for t in TRANSITIONS)
    assert [p for p, n in pairs.items() if n > 1] == []


def test_one_start_state_that_nothing_returns_to():
    assert START is State.DERIVE
    assert all(t.next is not START for t in TRANSITIONS)


def test_every_state_reachable_from_the_start():
    seen, todo = {START}, [START]
    while todo:
        s = todo.pop()
        for t in TRANSITIONS:
            if t.state is s and t.next not in seen:
                seen.add(t.next)
                todo.append(t.next)
    assert seen == set(State)


def test_no_trap_state_every_state_reaches_an_end():
    can_end = set(TERMINAL)
    changed = True
    while changed:
        changed = False
        for t in TRANSITIONS:
            if t.state not in can_end and t.next in can_end:
                can_end.add(t.state)
                changed = True
    assert can_end == set(State)
    assert all(any(t.state is s for t in TRANSITIONS) for s in State if s not in TERMINAL)
    assert not any(t.state in TERMINAL for t in TRANSITIONS)


def test_every_non_terminal_state_has_a_handler_and_only_those():
    assert set(HANDLERS) == set(State) - TERMINAL


def test_lookup_refuses_an_unknown_pair():
    from orchestrate.engine.states import Outcome
    assert next_state(State.DERIVE, Outcome.VALID) is State.RUN_LAYER
    with pytest.raises(KeyError):
        next_state(State.DERIVE, Outcome.MERGED)


def _design_rows() -> dict[str, set[str]]:
    """{state: names of the states its outcome column leads to}, from DESIGN §5."""
    text = DESIGN.read_text()
    section = text[text.index("## 5. The state machine"):text.index("## 6.")]
    names = {s.value for s in State}
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] not in names:
            continue
        # "-> REWORK of that node" names an outcome, not a state: a rework is a new DISPATCH
        targets = {"DISPATCH" if t == "REWORK" else t for t in re.findall(r"\b([A-Z][A-Z_]+)\b", cells[2])}
        if re.search(r"->\s*seam", cells[2]):
            targets.add("SEAM")
        rows[cells[0]] = targets & (names | {"SEAM"})
    return rows


@pytest.mark.skipif(not DESIGN.exists(), reason="shared/DESIGN.md is not beside this checkout")
def test_table_matches_design_section_5():
    design = _design_rows()
    assert set(design) == {s.value for s in State} - {"SEAM", "PAUSE", "DONE"}
    ours: dict[str, set[str]] = {}
    for t in TRANSITIONS:
        ours.setdefault(t.state.value, set()).add(t.next.value)
    for state, targets in design.items():
        assert targets <= ours.get(state, set()), f"{state}: DESIGN leads to {targets}, table to {ours.get(state)}"
        extra = ours.get(state, set()) - targets
        for t in TRANSITIONS:  # any transition DESIGN does not list must say so in its note
            if t.state.value == state and t.next.value in extra:
                assert t.note.startswith("(+)"), f"{state} -> {t.next.value} is not in DESIGN and not marked (+)"


def test_printed_table_lists_every_row(orch):
    result = orch("table")
    assert result.rc == 0
    assert render() in result.out
    for t in TRANSITIONS:
        assert f"| {t.state.value} | {t.outcome.value} | {t.next.value} |" in result.out
