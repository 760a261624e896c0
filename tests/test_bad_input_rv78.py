"""rv78: bad input that got no line, hung, or validated and then stopped a campaign."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from tests.helpers import make_repo

VALID = """\
workers: {sh: "true"}
nodes:
  - id: A
    file_surface: [a.txt]
    discipline: sh
"""


def _orch(repo, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orchestrate", *args], cwd=repo, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout, env=dict(os.environ, CI="true"))


def test_a_control_character_in_the_dag_is_named_by_its_line_with_the_escape_to_write(tmp_path):
    dag = tmp_path / "dag.yaml"
    dag.write_text(VALID + '    title: "red \x1b[31m"\n')
    repo = make_repo(tmp_path / "repo")
    done = _orch(repo, "validate", "--dag", str(dag), "--json")
    assert done.returncode == 1, done.stderr
    (problem,) = json.loads(done.stdout)
    assert problem["line"] == 6, problem
    assert "U+001B" in problem["message"] and "`\\x1b`" in problem["message"]
    assert "<unicode string>" not in problem["message"] and "position" not in problem["message"]


def test_a_control_character_in_config_yaml_is_named_by_its_line(tmp_path):
    repo = make_repo(tmp_path / "repo")
    assert _orch(repo, "init").returncode == 0
    (repo / ".ledger" / "config.yaml").write_text("coherence:\n  names: [\"a\x00b\"]\n")
    done = _orch(repo, "validate")
    assert done.returncode == 1
    assert "config.yaml:2: malformed YAML: the character U+0000" in done.stdout, done.stdout


def test_a_pipe_where_config_yaml_should_be_is_refused_not_waited_on(tmp_path):
    repo = make_repo(tmp_path / "repo")
    assert _orch(repo, "init").returncode == 0
    config = repo / ".ledger" / "config.yaml"
    config.unlink()
    os.mkfifo(config)  # no writer will ever come: reading it blocked validate (and run) for good
    done = _orch(repo, "validate", timeout=20)
    assert done.returncode == 1, done.stderr
    assert "config.yaml: cannot read the config: not a regular file" in done.stdout, done.stdout


def test_config_yaml_that_is_a_list_says_so_in_words(tmp_path):
    repo = make_repo(tmp_path / "repo")
    assert _orch(repo, "init").returncode == 0
    (repo / ".ledger" / "config.yaml").write_text("- coherence\n")
    done = _orch(repo, "validate")
    assert "expected a mapping of settings at the top, got a list" in done.stdout, done.stdout
    assert "Sequence" not in done.stdout


def test_a_tripwire_expecting_an_exit_code_no_command_can_give_is_invalid(tmp_path):
    repo = make_repo(tmp_path / "repo")
    for expect, ok in (("300", False), ("-1", False), ("255", True), ("0", True)):
        dag = tmp_path / f"dag{expect}.yaml"
        dag.write_text(VALID + f"    tripwires: [{{run: \"true\", expect: {expect}}}]\n")
        done = _orch(repo, "validate", "--dag", str(dag))
        assert done.returncode == (0 if ok else 1), (expect, done.stderr)
        if not ok:
            assert f"{dag}:6: nodes.A.tripwires[0].expect: must be 0 to 255" in done.stdout, done.stdout


def test_an_error_whose_line_cannot_be_written_keeps_its_exit_code(tmp_path):
    """`2>/dev/full`: the one line is lost, but a script still reads the documented code (2 here), not the 1 of
    an interpreter that died printing it."""
    with open("/dev/full", "w") as full:
        for args, want in ((["status"], 2), (["validate", "--dag", str(tmp_path / "none.yaml")], 2)):
            done = subprocess.run([sys.executable, "-m", "orchestrate", *args], cwd=tmp_path, stdout=subprocess.PIPE,
                                  stderr=full, stdin=subprocess.DEVNULL, timeout=60, env=dict(os.environ, CI="true"))
            assert done.returncode == want, (args, done.returncode)


def test_report_refuses_to_replace_a_pipe_or_device_named_by_o(tmp_path):
    """The report is written whole and renamed into place: run as root, `report -o /dev/full` (or
    /dev/null, /dev/stdout) replaced the device node with a regular file and said it succeeded."""
    repo = make_repo(tmp_path / "repo")
    assert _orch(repo, "init").returncode == 0
    assert _orch(repo, "run", "--no-interactive", timeout=180).returncode == 75  # the starter plan, paused at the end
    pipe = tmp_path / "report.html"
    os.mkfifo(pipe)
    done = _orch(repo, "report", "-o", str(pipe))
    assert done.returncode == 2, done.stderr
    assert "not a regular file" in done.stderr, done.stderr
    assert stat.S_ISFIFO(os.lstat(pipe).st_mode)
    written = tmp_path / "new.html"
    assert _orch(repo, "report", "-o", str(written)).returncode == 0 and written.is_file()


def test_a_gate_given_an_invalid_dag_names_each_problem_with_its_line(tmp_path):
    """A gate said only `ERROR: dag.yaml: 1 problem(s) in the DAG`: no line, no fix; `validate` had to be run."""
    dag = tmp_path / "dag.yaml"
    dag.write_text(VALID + "    colour: red\n")
    repo = make_repo(tmp_path / "repo")
    done = subprocess.run([sys.executable, "-m", "orchestrate", "gate", "authorize", "--dag", str(dag), "--path", "a.txt"],
                          cwd=repo, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert f"{dag}:6: nodes.A.colour: unknown key `colour`" in done.stdout, done.stdout
    as_json = subprocess.run([sys.executable, "-m", "orchestrate", "gate", "authorize", "--dag", str(dag), "--path",
                              "a.txt", "--json"], cwd=repo, capture_output=True, text=True, timeout=60)
    verdict = json.loads(as_json.stdout)
    assert verdict["code"] == 2 and [i["status"] for i in verdict["items"]] == ["INVALID"], verdict
    assert f"{dag}:6:" in verdict["items"][0]["subject"]


def test_an_empty_topic_is_refused_not_taken_for_the_campaign_in_flight(tmp_path):
    """`orchestrate abandon --topic "$T" --note ...` with T unset abandoned whichever campaign was in flight."""
    repo = make_repo(tmp_path / "repo")
    assert _orch(repo, "init").returncode == 0
    assert _orch(repo, "run", "--no-interactive", timeout=180).returncode == 75
    for args in (["abandon", "--note", "wrong one"], ["decide", "final-acceptance", "accept"], ["status"],
                 ["status", "--json"], ["realign", "--rediscover", "first"],  # realign: rv84
                 ["graph"], ["clean"]):  # they said "no campaign ``"
        done = _orch(repo, *args, "--topic", "")
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "--topic is empty" in done.stderr, done.stderr
    status = json.loads(_orch(repo, "status", "--json").stdout)
    assert status["abandoned"] is None and status["accepted"] is not True, status


@pytest.mark.parametrize("field, line", [
    ("depends_on: 5", "nodes.A.depends_on: expected a list"),
    ("outputs: [[x]]", "nodes.A.outputs: every entry must be text"),
    ("evaluators: [{name: [x], run: \"true\"}]", "nodes.A.evaluators[0].name: expected text"),
])
def test_a_wrong_type_inside_a_node_is_a_problem_not_an_internal_error(tmp_path, field, line):
    """Each was a TypeError out of validation: exit 70 and a traceback for a typo in the plan."""
    dag = tmp_path / "dag.yaml"
    dag.write_text(VALID + f"    {field}\n")
    done = _orch(make_repo(tmp_path / "repo"), "validate", "--dag", str(dag))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and f"{dag}:6: {line}" in done.stdout, done.stdout


def test_an_id_that_is_a_list_is_a_problem_not_an_internal_error(tmp_path):
    dag = tmp_path / "dag.yaml"
    dag.write_text(VALID + "  - {id: [B], file_surface: [b.txt], discipline: sh}\n"
                   "edges: [{id: e, from: A, to: [B], predicate: TRIGGERS, type: discovery}]\n")
    done = _orch(make_repo(tmp_path / "repo"), "validate", "--dag", str(dag))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and f"{dag}:6: nodes[1].id:" in done.stdout, done.stdout


def test_a_problem_quoting_a_value_with_a_newline_stays_one_line(tmp_path):
    dag = tmp_path / "dag.yaml"
    dag.write_text(VALID.replace("id: A", 'id: "A\\nB"'))
    done = _orch(make_repo(tmp_path / "repo"), "validate", "--dag", str(dag))
    assert done.returncode == 1, done.stderr
    (line,) = [ln for ln in done.stdout.splitlines() if ".id:" in ln]
    assert "`A\\nB` is not a valid id" in line, done.stdout
    assert all(ln.startswith(str(dag)) for ln in done.stdout.splitlines()), done.stdout


def test_init_with_git_info_exclude_in_odd_shapes_is_one_line_not_a_traceback(tmp_path):
    """A folder at .git/info/exclude, a file at .git/info, or a Latin-1 comment in exclude: each was exit 70."""
    repo = make_repo(tmp_path / "repo")
    info = repo / ".git" / "info"
    shutil.rmtree(info)
    (info / "exclude").mkdir(parents=True)
    done = _orch(repo, "init")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert ".git/info/exclude: cannot add .ledger/ and .scratch/ to it" in done.stderr, done.stderr
    shutil.rmtree(info)
    info.write_text("")
    done = _orch(repo, "init")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    info.unlink()
    info.mkdir()
    (info / "exclude").write_bytes(b"# caf\xe9\n")
    done = _orch(repo, "init")
    assert done.returncode == 0, done.stderr
    assert (info / "exclude").read_bytes() == b"# caf\xe9\n.ledger/\n.scratch/\n"


def test_run_in_a_repository_whose_git_config_git_cannot_read_says_so_not_no_commit_yet(tmp_path):
    repo = make_repo(tmp_path / "repo")
    assert _orch(repo, "init").returncode == 0
    with open(repo / ".git" / "config", "a") as config:
        config.write("[core\n")
    done = _orch(repo, "run", "--no-interactive")
    assert done.returncode == 2, done.stderr
    assert "bad config line" in done.stderr and "no commit yet" not in done.stderr, done.stderr
