"""evaluators and premise: commands run with timeouts, exit codes never lost (reference §8.3, §9.2)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gates import evaluators, premise
from gates.core.dagfile import Check, Tripwire


def run_ev(tmp_path, *commands, timeout=600):
    return evaluators.check([Check(f"e{i}", c) for i, c in enumerate(commands)], tmp_path,
                            log_path=tmp_path / "ev.log", default_timeout=timeout)


def test_all_pass(tmp_path):
    v = run_ev(tmp_path, "true", "test -d .")
    assert v.code == 0 and [r["rc"] for r in v.data["results"]] == [0, 0]


def test_a_failure_fails(tmp_path):
    v = run_ev(tmp_path, "true", "echo nope >&2; exit 3")
    assert v.code == 1 and v.items[1].status == "FAIL" and "rc 3: nope" in v.items[1].detail


def test_a_pipe_does_not_hide_a_failing_first_command(tmp_path):
    assert run_ev(tmp_path, "false | true").code == 1


def test_a_command_that_cannot_start_is_2_not_a_pass(tmp_path):
    v = run_ev(tmp_path, "no-such-command-anywhere --flag")
    assert v.code == 2 and v.items[0].status == "ERROR"
    assert evaluators.check([Check("x", "true")], tmp_path / "missing").code == 2


def test_a_timeout_fails_and_kills_the_command(tmp_path):
    v = run_ev(tmp_path, "sleep 30; : orchestrate-evaluator-timeout-marker", timeout=1)
    assert v.code == 1 and v.items[0].status == "TIMEOUT"
    alive = subprocess.run(["pgrep", "-f", "orchestrate-evaluator-timeout-marker"], capture_output=True)
    assert alive.returncode == 1


def test_the_log_holds_every_command_and_its_output(tmp_path):
    run_ev(tmp_path, "echo first-output", "echo second-output; exit 4")
    log = (tmp_path / "ev.log").read_text()
    assert "== e0: `echo first-output`" in log and "first-output" in log and "rc 4" in log


def test_no_evaluators_pass(tmp_path):
    assert evaluators.check([], tmp_path).summary == "PASS: no evaluators declared"


def test_evaluators_cli(tmp_path, orch):
    result = orch("gate", "evaluators", "--worktree", tmp_path, "--command", "true", "--command", "exit 1", "--json")
    verdict = json.loads(result.out)
    assert result.rc == 1 and verdict["code"] == 1 and verdict["data"]["results"][1]["rc"] == 1
    assert orch("gate", "evaluators", "--worktree", tmp_path).rc == 2  # nothing to run


def spec(tmp_path, text):
    path = tmp_path / "spec.tsv"
    path.write_text(text)
    return path


def test_premise_fresh(tmp_path, orch):
    (tmp_path / "README.md").write_text("campaign skill\n")
    path = spec(tmp_path, "0\ttest -f README.md\n# a comment\n\n0\tgrep -q skill README.md")
    result = orch("gate", "premise", "N", path, "--cwd", tmp_path)
    assert result.rc == 0 and result.out.count("FRESH  ") == 2 and "FRESH: node N" in result.out


def test_premise_stale_when_an_expected_absence_is_gone(tmp_path, orch):
    (tmp_path / "later.txt").write_text("now it exists\n")
    result = orch("gate", "premise", "N", spec(tmp_path, "1\tgrep -q exists later.txt\tnobody writes it yet\n"),
                  "--cwd", tmp_path)
    assert result.rc == 1 and "STALE" in result.out and "(got 0, want 1)" in result.out
    assert "nobody writes it yet" in result.out and "INVALIDATED: node N has 1 stale premise" in result.out


@pytest.mark.parametrize("text,fragment", [
    ("0 test -f x\n", "no TAB"), ("zero\ttrue\n", "not a number"), ("# only\n\n", "declares no tripwires"),
    ("0\t\n", "empty command"),
])
def test_malformed_specs_are_2(tmp_path, orch, text, fragment):
    result = orch("gate", "premise", "N", spec(tmp_path, text))
    assert result.rc == 2 and fragment in result.err


def test_premise_usage_errors(tmp_path, orch):
    assert orch("gate", "premise").rc == 2
    assert orch("gate", "premise", "N", tmp_path / "missing.tsv").rc == 2


def test_a_tripwire_that_hangs_is_stale_after_its_timeout(tmp_path):
    v = premise.check("N", [Tripwire("sleep 30", 0, "", 1)], tmp_path)
    assert v.code == 1 and "timed out after 1s" in v.items[0].subject


def test_premises_from_the_dag(tmp_path, orch):
    dag = tmp_path / "dag.yaml"
    dag.write_text("workers: {c: x}\nnodes:\n  - {id: A, file_surface: [a], discipline: c,\n"
                   "     tripwires: [{run: 'test ! -e a', expect: 0, why: 'a is new'}]}\n"
                   "  - {id: B, file_surface: [b], discipline: c}\n")
    assert orch("gate", "premise", "--dag", dag, "--node", "A", "--cwd", tmp_path).rc == 0
    (tmp_path / "a").write_text("")
    assert orch("gate", "premise", "--dag", dag, "--node", "A", "--cwd", tmp_path).rc == 1
    assert "declares no premises" in orch("gate", "premise", "--dag", dag, "--node", "B").out


def test_module_entry_point():
    done = subprocess.run([sys.executable, "-m", "gates.premise", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "INVALIDATED" in done.stdout
