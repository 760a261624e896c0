"""rv83: a condition whose types already decide it (a gate's exit code compared with text, an ordering on text
and a number, `and` on a number) validated, and halted the run only when its source settled."""
from __future__ import annotations

import json

import pytest

from tests.engine_helpers import campaign_repo

DAG = """\
topic: types
workers: {{sh: "./work.sh"}}
params: {{level: 3, name: x, flag: true}}
nodes:
  - {{id: N1, file_surface: [n1.txt], discipline: sh, outputs: [size], evaluators: [{{name: unit, run: "true"}}]}}
  - {{id: N2, file_surface: [n2.txt], discipline: sh}}
edges:
  - {{id: e1, from: N1, to: N2, predicate: TRIGGERS, type: conditional,
     when: {when}}}
"""
WORKER = """#!/bin/sh
echo '{"size": 1}' > "$ORCH_OUTPUTS"; echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr A-Z a-z).txt"
"""


@pytest.mark.parametrize("when, said", [
    ("src.gates.unit.rc == 'pass'", "`src.gates.unit.rc == 'pass'` is never true: src.gates.unit.rc is a gate's "
                                    "exit code (a number: 0 when it passed) and 'pass' is text; write "
                                    "src.gates.unit.rc == 0 for passed, != 0 for failed"),
    ("src.gates.unit.rc != true", "is always true"),
    ("src.status > 3", "`src.status > 3` cannot be decided: > needs two numbers or two texts, and src.status is text"
                       " and 3 is a number; compare with == or != instead"),
    ("params.name >= src.rework_count", "params.name is text ('x' in params:)"),
    ("src.rework_count and src.outputs.size > 1", "'and' needs true or false, but src.rework_count is a number; "
                                                  "compare it, as in src.rework_count > 0"),
    ("src.outputs.size > 1 or params.level", "'or' needs true or false, but params.level is a number"),
    ("not 'x'", "'not' needs true or false"),
    ("src.gates.unit.rc", "a condition needs true or false, but src.gates.unit.rc is a gate's exit code (a number: 0 "
                          "when it passed); compare it, as in src.gates.unit.rc == 0"),
    ("src.status in 3", "'in' needs a list on its right"),
    ("src.rework_count in src.status", "'in' needs a list on its right (or a text in a text)"),
    ("src.gates.unit.rc in ['0', 'ok']", "is never true: src.gates.unit.rc is a gate's exit code (a number: 0 "
                                         "when it passed) and the list holds none; list a number"),
    ("params.flag == 'yes'", "`params.flag == 'yes'` is never true"),
])
def test_a_condition_whose_types_decide_it_is_refused_by_validate_and_run(tmp_path, orch, when, said):
    repo = campaign_repo(tmp_path, DAG.format(when=json.dumps(when)), WORKER)
    done = orch("validate", cwd=repo)
    assert done.rc == 1, done.out + done.err
    (line,) = [line for line in done.out.splitlines() if "dag.yaml:" in line]
    assert "dag.yaml:9: edges[0].when: " in line and said in line, line
    run = orch("run", "--quiet", cwd=repo)
    assert run.rc == 1 and "edges[0].when" in run.out + run.err, run.out + run.err
    assert not (repo / ".ledger" / "topics" / "types").exists()


@pytest.mark.parametrize("when", ["src.gates.unit.rc == 0 and src.outputs.size > params.level",
                                  "src.outputs.size in [1, 'a'] or params.name in ['a', 1]", "src.outputs.size",
                                  "src.status < 'B' and not (params.flag == false)", "params.name in src.status"])
def test_conditions_that_may_hold_still_validate(tmp_path, orch, when):
    repo = campaign_repo(tmp_path, DAG.format(when=json.dumps(when)), WORKER)
    done = orch("validate", cwd=repo)
    assert done.rc == 0, done.out
