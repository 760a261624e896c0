"""A gate named with `-` (the built-in `outputs-present`, a plugin's `lint-check`) in a condition: `-` reads as
a minus, and validation said only "arithmetic operators are not allowed" (rv79). It is read with `_` in its
place, `src.gates.outputs_present.rc`, and the dashed spelling is told so."""
from __future__ import annotations

from tests.engine_helpers import campaign_repo, journal, statuses

DAG = """\
topic: dash
workers: {{sh: "./work.sh"}}
nodes:
  - {{id: N1, file_surface: [n1.txt], discipline: sh, outputs: [go]}}
  - {{id: N2, file_surface: [n2.txt], discipline: sh}}
edges:
  - {{id: e1, from: N1, to: N2, predicate: TRIGGERS, type: conditional, when: "{when}"}}
"""
WORKER = r"""#!/bin/sh
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr A-Z a-z).txt"
[ "$ORCH_NODE" != N1 ] || echo '{"go": true}' > "$ORCH_OUTPUTS"
"""


def test_a_dashed_gate_name_is_read_with_an_underscore(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG.format(when="src.gates.outputs_present.rc == 0"), WORKER)
    result = orch("run", cwd=repo)
    assert result.rc == 75 and "final-acceptance" in result.out, result.out + result.err
    assert statuses(repo, orch, "dash") == {"N1": "ACCEPTED", "N2": "ACCEPTED"}
    taken = [e["context"] for e in journal(repo, "dash") if e["kind"] == "edge_eval"]
    assert taken and taken[0]["taken"] is True and taken[0]["inputs"] == {"src.gates.outputs_present.rc": 0}, taken


def test_the_dashed_spelling_is_told_how_to_write_it(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG.format(when="src.gates.outputs-present.rc == 0"), WORKER)
    result = orch("validate", cwd=repo)
    assert result.rc == 1, result.out + result.err
    assert "a gate named with `-` is read with `_` in its place: src.gates.outputs_present.rc" in result.out


def test_a_name_is_resolved_by_the_gates_declared_not_by_those_that_ran():
    """rv80: with gates `a-b` and `a_b` declared and only `a-b` run, `src.gates.a_b.rc` read `a-b`'s code."""
    from types import SimpleNamespace

    from orchestrate.engine.routing import _MISSING, _value
    src = SimpleNamespace(gate_rcs={"a-b": 1})
    assert _value("src.gates.a_b.rc", src, {}, ["a-b", "a_b"]) is _MISSING
    assert _value("src.gates.a_b.rc", src, {}, ["a-b"]) == 1


def test_two_gates_a_condition_cannot_tell_apart_are_refused():
    """rv80: with gates `a-b` and `a_b` on one node, `a-b` could not be named at all."""
    import pytest

    from orchestrate.dag.condition import ConditionError, compile_condition
    with pytest.raises(ConditionError, match="N1 has gates a-b, a_b, which a condition cannot tell apart"):
        compile_condition("src.gates.a_b.rc == 0", gates=["a-b", "a_b"], source="N1")
    assert compile_condition("src.gates.a_b.rc == 0", gates=["a-b"], source="N1").names == ("src.gates.a_b.rc",)
