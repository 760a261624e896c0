"""rv83: plans that validated and then stopped a campaign mid-run (or were refused for the wrong reason)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.engine_helpers import campaign_repo
from tests.helpers import make_repo

VALID = """\
workers: {sh: "./work.sh"}
nodes:
  - id: A
    file_surface: [a.txt]
    discipline: sh
"""
WORKER = """#!/bin/sh
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr A-Z a-z).txt"
[ -z "$ORCH_OUTPUTS" ] || echo '{"x": 1}' > "$ORCH_OUTPUTS"
"""


def _validate(tmp_path, orch, text: str):
    dag = tmp_path / "dag.yaml"
    dag.write_text(text)
    return dag, orch("validate", "--dag", dag, cwd=make_repo(tmp_path / "repo"))


def test_a_param_yaml_reads_as_a_date_is_refused_not_an_internal_error_when_an_edge_reads_it(tmp_path, orch):
    """`params: {a: 2024-01-01}` validated; the edge reading it journalled a date: TypeError, exit 70."""
    dag = ("params: {day: 2024-01-01}\nworkers: {sh: ./work.sh}\nnodes:\n"
           "  - {id: A, file_surface: [a.txt], discipline: sh, outputs: [x]}\n"
           "  - {id: B, file_surface: [b.txt], discipline: sh}\n"
           "edges: [{id: e, from: A, to: B, predicate: TRIGGERS, type: conditional, when: 'src.outputs.x == params.day'}]\n")
    repo = campaign_repo(tmp_path, dag, WORKER)
    done = orch("run", "--no-interactive", cwd=repo)
    assert done.rc == 1, done.out + done.err
    assert ("dag.yaml:1: params.day: expected text, a number, true/false or null, got a date (YAML reads an unquoted "
            "2024-01-01 as one); quote it: day: '2024-01-01'") in done.out + done.err, done.out + done.err
    _, done = _validate(tmp_path, orch, "params: {blob: !!binary aGVsbG8=, names: !!set {x}}\n" + VALID)
    assert done.rc == 1 and "params.blob: expected text, a number, true/false or null, got binary data" in done.out
    assert "params.names: expected text, a number, true/false or null, got a set" in done.out, done.out


def test_a_key_written_beside_a_merge_overrides_it_and_is_no_duplicate(tmp_path, orch):
    """`- <<: *a` then `id: B`: YAML's merge, where the key written there wins, was refused as `duplicate key
    id (first at line 3); YAML would silently keep the last one`: untrue, and the plan could not be written so."""
    text = ("workers: {sh: ./work.sh}\nnodes:\n  - &a {id: A, file_surface: [a.txt], discipline: sh}\n"
            "  - <<: *a\n    id: B\n    file_surface: [b.txt]\n")
    dag, done = _validate(tmp_path, orch, text)
    assert done.rc == 0, done.out
    assert '"layers": [["A", "B"]]' in orch("layers", "--dag", dag, "--json").out
    dag, done = _validate(tmp_path, orch, text.replace("    id: B\n", "    id: B\n    id: C\n"))
    assert done.rc == 1 and f"{dag}:6: id: duplicate key `id` (first at line 5)" in done.out, done.out


@pytest.mark.parametrize("head, line", [
    ("defaults: []\n", "1: defaults: expected a mapping, got a list"),
    ("defaults: 0\n", "1: defaults: expected a mapping, got a number"),
    ("policy: {realignment: ''}\n", "1: policy.realignment: expected a mapping, got text"),
])
def test_a_mapping_field_given_an_empty_value_of_another_type_is_refused_not_taken_as_empty(tmp_path, orch, head,
                                                                                              line):
    """`defaults: []` (or `0`, `''`, `false`) read as no defaults at all: what the author meant was lost quietly."""
    dag, done = _validate(tmp_path, orch, head + VALID)
    assert done.rc == 1 and f"{dag}:{line}" in done.out, done.out


def test_workers_given_an_empty_list_is_refused(tmp_path, orch):
    dag, done = _validate(tmp_path, orch, "workers: []\nnodes: [{id: A, file_surface: [a.txt], worker: ./work.sh}]\n")
    assert done.rc == 1 and f"{dag}:1: workers: expected a mapping discipline -> command, got a list" in done.out
    assert _validate(tmp_path, orch, "workers: ~\nnodes: [{id: A, file_surface: [a.txt], worker: ./w}]\n")[1].rc == 0


def test_a_dag_yaml_linked_to_a_plan_elsewhere_runs_to_its_end(tmp_path, orch):
    """`.ledger/state/dag.yaml -> ~/plans/x.yaml` validated, then the run stopped as its first worker started:
    `state/dag.yaml keep changing behind the engine's back`: the watch compared the file the link leads to
    with what git commits of a link, the link itself."""
    repo = campaign_repo(tmp_path, VALID, WORKER)
    plan = tmp_path / "plans" / "x.yaml"
    plan.parent.mkdir()
    default = repo / ".ledger" / "state" / "dag.yaml"
    default.rename(plan)
    default.symlink_to(plan)
    assert orch("validate", cwd=repo).rc == 0
    done = orch("run", "--no-interactive", cwd=repo)
    assert done.rc == 75, done.out + done.err
    assert "behind the engine's back" not in done.out + done.err
    assert repo.git("show", "campaign/x:a.txt") == "A"  # the topic: the stem of the plan the link leads to


def test_a_brief_file_that_is_a_fifo_or_a_device_is_refused_not_read_forever(tmp_path):
    """`brief_file: pipe.md` (a FIFO no one writes) held validate for good; `/dev/zero` read until memory ran out."""
    os.mkfifo(tmp_path / "pipe.md")
    for name, said in (("pipe.md", "`pipe.md` is not a regular file (prw"), ("/dev/zero", "`/dev/zero` is not a "
                                                                                           "regular file (crw")):
        dag = tmp_path / "dag.yaml"
        dag.write_text(VALID + f"    brief_file: {name}\n")
        done = subprocess.run([sys.executable, "-m", "orchestrate", "validate", "--dag", str(dag)], cwd=tmp_path,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
        assert done.returncode == 1 and f"{dag}:6: nodes.A.brief_file: {said}" in done.stdout, done.stdout


def test_an_inline_evaluator_or_action_named_as_an_implicit_gate_is_refused(tmp_path, orch):
    """`gates: {outputs-present: ...}` was refused, an evaluator `{name: outputs-present, ...}` not: its results
    and the engine's own gate's were recorded under one name, which `src.gates.outputs_present.rc` then read."""
    dag, done = _validate(tmp_path, orch, VALID + "    outputs: [x]\n    evaluators: [{name: outputs-present, run: 'true'}]\n")
    assert done.rc == 1, done.out
    assert f"{dag}:7: nodes.A.evaluators[0].name: `outputs-present` is the name of an implicit gate" in done.out
    dag, done = _validate(tmp_path, orch, VALID + "  - {id: B, file_surface: [b.txt], discipline: sh}\n"
                          "edges: [{id: e, from: A, to: 'plugin:p', predicate: EXTENDS, actions: [{name: payload-present}]}]\n")
    assert f"{dag}:7: edges[0].actions[0].name: `payload-present` is the name of an implicit gate" in done.out


def test_a_fallback_worker_nothing_carries_out_is_refused_before_the_run_starts(tmp_path, orch):
    """`worker: {capabilities: [x], fallback_worker: ./work.sh}` was taken and ignored: with no plugin providing
    x, the run halted mid-way saying `no fallback is declared`."""
    repo = campaign_repo(tmp_path, "nodes:\n  - {id: A, file_surface: [a.txt], worker: {capabilities: [nosuch], "
                                   "fallback_worker: ./work.sh}}\n", WORKER)
    done = orch("run", "--no-interactive", cwd=repo)
    assert done.rc == 1, done.out + done.err
    assert "dag.yaml:2: nodes.A.worker.fallback_worker: this engine has no fallback worker" in done.out + done.err
    assert "no fallback is declared" not in done.out + done.err
    assert not (repo / ".ledger" / "state" / "dag").exists()


def test_a_key_yaml_reads_as_a_boolean_or_null_is_named_as_written(tmp_path, orch):
    """`yes: 1` in a node was `nodes.A.True: unknown key True`: a word the author never wrote."""
    dag, done = _validate(tmp_path, orch, VALID + "    yes: 1\n    ~: 2\n")
    assert done.rc == 1, done.out
    assert (f"{dag}:6: nodes.A.true: YAML reads this key (yes, no, on, off, true or false) as true, which names no "
            "field; quote it if you meant the text") in done.out, done.out
    assert f"{dag}:7: nodes.A.null: YAML reads this key (~, null or nothing) as null" in done.out, done.out
    assert "True" not in done.out and "None" not in done.out


@pytest.mark.parametrize("field", ['evaluators: [{name: e, run: "true\\0x"}]', 'worker: "./work.sh\\0"',
                                   'tripwires: [{run: "true\\0"}]', 'title: "a\\0b"'])
def test_a_nul_written_as_an_escape_is_refused_not_an_internal_error_mid_run(tmp_path, orch, field):
    """`run: "true\\0x"` validated; the run died starting it (ValueError: embedded null byte, exit 70)."""
    repo = campaign_repo(tmp_path, VALID + f"    {field}\n", WORKER)
    done = orch("run", "--no-interactive", cwd=repo)
    assert done.rc == 1, done.out + done.err
    assert "dag.yaml:6: a value holds the character U+0000 (`\\0`), which no command" in done.out + done.err
    dag = tmp_path / "dag.json"
    dag.write_text('{"workers": {"sh": "true"}, "nodes": [{"id": "A", "file_surface": ["a"], "discipline": "sh", '
                   '"title": "a\\u0000"}]}')
    assert "dag.json:1: a value holds the character U+0000" in orch("validate", "--dag", dag).out


def test_a_json_plan_with_half_a_character_is_refused_not_an_internal_error_mid_run(tmp_path, orch):
    """JSON's `\\ud800` (no other half) validated, as the YAML reader would not have let it; the run died writing
    the command (UnicodeEncodeError, exit 70). A whole pair, and an escaped backslash, are fine."""
    plan = ('{"workers": {"sh": "./work.sh"},\n "nodes": [{"id": "A", "file_surface": ["a.txt"], "discipline": "sh",\n'
            ' "evaluators": [{"name": "e", "run": "true \\ud800"}]}]}\n')
    repo = campaign_repo(tmp_path, plan, WORKER)
    done = orch("run", "--no-interactive", cwd=repo)
    assert done.rc == 1, done.out + done.err
    assert "dag.yaml:3: `\\ud800` is half of a character (a lone surrogate)" in done.out + done.err
    (repo / ".ledger" / "state" / "dag.yaml").write_text(plan.replace("true \\ud800", "echo \\ud83d\\ude00 \\\\ud800"))
    assert orch("validate", cwd=repo).rc == 0
