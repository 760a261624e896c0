"""The evaluators gate: every acceptance command exits 0 in the worktree; exit codes are never lost or faked."""
from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from gates import evaluators
from orchestrate.dag.model import Check


def run(worktree, *commands, timeout=600, log=True):
    return evaluators.check([Check(f"e{i}", c) for i, c in enumerate(commands, 1)], worktree,
                            log_path=worktree / "ev.log" if log else None, default_timeout=timeout)


def statuses(verdict):
    return [i.status for i in verdict.items]


# ---- check() ----------------------------------------------------------------------------------

def test_every_evaluator_passing_is_0(repo):
    v = run(repo, "true", "test -f README.md", "grep -q project README.md")
    assert v.code == 0 and statuses(v) == ["PASS"] * 3
    assert v.summary == "PASS: 3 evaluator(s) passed"
    assert v.items[0].line().startswith("PASS") and "e1  <- rc 0 (" in v.items[0].line()
    assert [r["rc"] for r in v.data["results"]] == [0, 0, 0]


def test_a_failing_evaluator_is_1_and_names_its_last_output_line(repo):
    v = run(repo, "true", "echo working; echo 'assertion failed: 2 != 3' >&2; exit 3")
    assert v.code == 1 and statuses(v) == ["PASS", "FAIL"]
    assert v.items[1].detail == "rc 3: assertion failed: 2 != 3"
    assert v.summary == "FAIL: 1 of 2 evaluator(s) failed"


def test_every_evaluator_runs_even_after_a_failure(repo):
    v = run(repo, "exit 1", "touch ran-anyway")
    assert v.code == 1 and (repo / "ran-anyway").exists() and statuses(v) == ["FAIL", "PASS"]


def test_a_pipe_whose_first_command_fails_fails(repo):
    v = run(repo, "false | true")
    assert v.code == 1 and v.items[0].status == "FAIL" and v.data["results"][0]["rc"] == 1
    assert run(repo, "grep -q absent-text README.md | cat").code == 1


def test_a_missing_command_is_2_never_a_pass(repo):
    v = run(repo, "true", "no-such-command-anywhere --flag")
    assert v.code == 2 and statuses(v) == ["PASS", "ERROR"]
    assert v.items[1].detail.startswith("cannot start: ") and "not found" in v.items[1].detail
    assert v.summary.startswith("ERROR: ")


def test_a_missing_command_outranks_a_failure_and_both_are_counted(repo):
    v = run(repo, "exit 1", "no-such-command-anywhere")
    assert v.code == 2 and v.summary == "ERROR: 1 of 2 evaluator(s) could not start; 1 failed"


def test_a_file_that_is_not_executable_is_2(repo):
    (repo / "check.sh").write_text("#!/bin/sh\nexit 0\n")
    v = run(repo, "./check.sh")
    assert v.code == 2 and v.items[0].status == "ERROR" and "rc 126" in v.items[0].detail


def test_a_missing_worktree_is_2(tmp_path):
    v = evaluators.check([Check("unit", "true")], tmp_path / "gone")
    assert v.code == 2 and statuses(v) == ["ERROR"] and "does not exist" in v.items[0].detail
    assert "does not exist" in v.summary


def test_a_timeout_is_1_and_kills_the_whole_command(repo):
    # a fractional extra interval makes this sleep's command line unique without changing it
    marker = f"0.00{uuid.uuid4().int % 10**12:012d}"
    v = run(repo, f"sleep 30 {marker} | cat", timeout=1)
    assert v.code == 1 and statuses(v) == ["TIMEOUT"]
    assert v.items[0].detail == "killed after 1s"
    assert v.data["results"][0]["timed_out"] is True
    survivors = subprocess.run(["pgrep", "-f", f"sleep 30 {marker}"], capture_output=True, text=True)
    assert survivors.returncode == 1, survivors.stdout


def test_the_log_holds_a_header_and_the_full_output_of_each_evaluator(repo):
    many = "; ".join(f"echo line-{n}" for n in range(50))
    v = run(repo, many, "echo to-stderr >&2; exit 4")
    log = (repo / "ev.log").read_text()
    assert v.data["log"] == str(repo / "ev.log")
    assert f"== e1: `{many}`" in log and f"cwd {repo}" in log and "rc 0," in log
    assert all(f"line-{n}\n" in log for n in range(50))
    assert "== e2: `echo to-stderr >&2; exit 4`" in log and "rc 4," in log and "to-stderr" in log
    assert log.index("line-49") < log.index("== e2")


def test_the_log_directory_is_created(repo):
    log = repo / "runs" / "N1" / "evaluators-1.log"
    evaluators.check([Check("a", "echo hello")], repo, log_path=log)
    assert "hello" in log.read_text()


def test_results_record_name_rc_seconds_and_timeout(repo):
    v = run(repo, "exit 0", "exit 5", log=False)
    assert v.data["log"] is None
    assert [(r["name"], r["rc"], r["timed_out"]) for r in v.data["results"]] == [("e1", 0, False), ("e2", 5, False)]
    assert all(isinstance(r["seconds"], float) for r in v.data["results"])


def test_evaluators_run_in_the_worktree_with_the_given_environment(repo):
    v = evaluators.check([Check("env", 'test "$(pwd)" = "$PWD" && test -f README.md && test "$FLAVOUR" = mint')],
                         repo, env={"FLAVOUR": "mint"})
    assert v.code == 0


def test_no_evaluators_is_a_pass_with_nothing_run(tmp_path):
    v = evaluators.check([], tmp_path / "not-even-there")
    assert v.code == 0 and v.summary == "PASS: no evaluators declared" and v.items == ()


# ---- the command line -------------------------------------------------------------------------

def test_cli_commands_are_named_cmd1_cmd2(repo, orch):
    result = orch("gate", "evaluators", "--worktree", repo, "--command", "true", "--command", "exit 1")
    assert result.rc == 1
    assert result.out.splitlines()[0].split()[:2] == ["PASS", "cmd1"]
    assert result.out.splitlines()[1].split()[:2] == ["FAIL", "cmd2"]
    assert result.out.splitlines()[-1] == "FAIL: 1 of 2 evaluator(s) failed"


def test_cli_json(repo, orch):
    result = orch("gate", "evaluators", "--worktree", repo, "--command", "true", "--command", "exit 7",
                  "--log", repo / "out.log", "--json")
    verdict = json.loads(result.out)
    assert result.rc == 1 and verdict["gate"] == "evaluators" and verdict["code"] == 1 and not verdict["ok"]
    assert [r["rc"] for r in verdict["data"]["results"]] == [0, 7]
    assert verdict["data"]["log"] == str(repo / "out.log") and (repo / "out.log").exists()
    assert [i["status"] for i in verdict["items"]] == ["PASS", "FAIL"]


def test_cli_missing_command_and_missing_worktree_are_2(repo, tmp_path, orch):
    assert orch("gate", "evaluators", "--worktree", repo, "--command", "no-such-command-anywhere").rc == 2
    assert orch("gate", "evaluators", "--worktree", tmp_path / "gone", "--command", "true").rc == 2


def test_cli_timeout(repo, orch):
    result = orch("gate", "evaluators", "--worktree", repo, "--command", "sleep 30", "--timeout", "1")
    assert result.rc == 1 and "TIMEOUT" in result.out and "killed after 1s" in result.out



@pytest.mark.parametrize("args, reason", [
    (("--command", "true", "--dag", "d.yaml"), "give --command, or --dag with --node, not both"),
    (("--dag", "d.yaml"), "give --dag PATH with --node ID, or at least one --command CMD"),
    (("--command", "true", "--timeout", "-1"), "`-1` must be a positive number of seconds"),
])
def test_arguments_that_do_not_go_together_are_2_with_usage_and_reason(repo, orch, args, reason):
    result = orch("gate", "evaluators", "--worktree", repo, *args)
    assert result.rc == 2 and result.err.startswith("usage:") and reason in result.err

def dag_file(tmp_path):
    path = tmp_path / "dag.yaml"
    path.write_text("workers: {c: x}\nnodes:\n"
                    "  - id: A\n    file_surface: [a]\n    discipline: c\n    evaluators:\n"
                    "      - {name: readme, run: 'test -f README.md'}\n"
                    "      - {name: slow, run: 'sleep 30', timeout: 1}\n"
                    "  - {id: B, file_surface: [b], discipline: c}\n")
    return path


def test_cli_from_the_dag(repo, tmp_path, orch):
    dag = dag_file(tmp_path)
    result = orch("gate", "evaluators", "--dag", dag, "--node", "A", "--worktree", repo, "--log", tmp_path / "a.log")
    assert result.rc == 1
    assert [ln.split()[:2] for ln in result.out.splitlines()[:2]] == [["PASS", "readme"], ["TIMEOUT", "slow"]]
    assert "== slow: `sleep 30`" in (tmp_path / "a.log").read_text()
    none = orch("gate", "evaluators", "--dag", dag, "--node", "B", "--worktree", repo)
    assert none.rc == 0 and none.out.strip() == "PASS: no evaluators declared"


def test_cli_unknown_node_is_2(repo, tmp_path, orch):
    result = orch("gate", "evaluators", "--dag", dag_file(tmp_path), "--node", "AA", "--worktree", repo)
    assert result.rc == 2 and "no node `AA`" in result.err and "Traceback" not in result.err


def test_wrong_arguments_are_2_with_usage(repo, tmp_path, orch):
    cases = [
        (),                                                     # nothing at all
        ("--worktree", repo),                                   # nothing to run
        ("--command", "true"),                                  # no worktree
        ("--worktree", repo, "--dag", tmp_path / "dag.yaml"),   # --dag without --node
        ("--worktree", repo, "--command", "true", "--node", "A"),
        ("--worktree", repo, "--command", "true", "--timeout", "soon"),
        ("--worktree", repo, "--command", "true", "--timeout", "0"),
        ("--worktree", repo, "--bogus"),
    ]
    for args in cases:
        result = orch("gate", "evaluators", *args)
        assert result.rc == 2, args
        assert "usage:" in result.err and "Traceback" not in result.err, args
    missing = orch("gate", "evaluators", "--dag", tmp_path / "nope.yaml", "--node", "A", "--worktree", repo)
    assert missing.rc == 2 and "nope.yaml" in missing.err


def test_help_lists_the_exit_codes(orch):
    result = orch("gate", "evaluators", "--help")
    assert result.rc == 0 and "Exit codes" in result.out
    for code in ("0 ", "1 ", "2 "):
        assert f"  {code}" in result.out
    assert "--command" in result.out and "--worktree" in result.out


def test_module_entry_point(repo):
    done = subprocess.run([sys.executable, "-m", "gates.evaluators", "--worktree", str(repo), "--command", "true"],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "PASS: 1 evaluator(s) passed" in done.stdout
