"""The CLI's contract for the foundation commands: exit codes, JSON shapes, one-line errors, never a traceback."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import DEMO_DAG, make_repo

DEMO_LAYERS = '{"layer_count": 2, "layers": [["D1"], ["D2", "D3", "D4"]]}'


@pytest.fixture
def demo(tmp_path):
    path = tmp_path / "dag.yaml"
    path.write_text(DEMO_DAG)
    return path


def test_validate_the_demo(demo, orch):
    result = orch("validate", "--dag", demo)
    assert result.rc == 0 and "valid" in result.out and "4 nodes, 2 layers" in result.out


def test_layers_json_is_exactly_the_schedule(demo, orch):
    result = orch("layers", "--dag", demo, "--json")
    assert result.rc == 0 and result.out.strip() == DEMO_LAYERS


def test_layers_text_shows_the_serial_rest(demo, orch):
    assert "layer 1: D2 D3  | serial: D4" in orch("layers", "--dag", demo).out


def test_without_d4_serialize_validate_names_both_nodes_and_the_file(demo, orch):
    demo.write_text(DEMO_DAG.replace(", serialize: true", ""))
    result = orch("validate", "--dag", demo)
    assert result.rc == 1
    assert "D2" in result.out and "D4" in result.out and "demo/a.txt" in result.out
    as_json = json.loads(orch("validate", "--dag", demo, "--json").out)
    assert as_json[0]["code"] == "surface-conflict" and as_json[0]["line"] == 8
    assert orch("layers", "--dag", demo).rc == 1


@pytest.mark.parametrize("make_bad", ["missing", "directory", "binary"])
def test_unusable_input_exits_2_with_one_line(tmp_path, orch, make_bad):
    path = tmp_path / "dag.yaml"
    if make_bad == "directory":
        path.mkdir()
    elif make_bad == "binary":
        path.write_bytes(b"\xff\xfe\x00nodes")
    result = orch("validate", "--dag", path)
    assert result.rc == 2
    assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_exits_2(tmp_path, orch):
    path = tmp_path / "dag.yaml"
    path.write_text(DEMO_DAG)
    path.chmod(0)
    assert orch("validate", "--dag", path).rc == 2


def test_the_default_dag_is_the_recorders(tmp_path, orch):
    repo = make_repo(tmp_path / "repo")
    assert orch("init", cwd=repo).rc == 0
    (repo / ".ledger" / "state" / "dag.yaml").write_text(DEMO_DAG)
    (repo / "sub").mkdir()
    result = orch("layers", "--json", cwd=repo / "sub")
    assert result.rc == 0 and result.out.strip() == DEMO_LAYERS


def test_outside_a_repository_without_dag_exits_2(tmp_path, orch):
    result = orch("validate", cwd=tmp_path)
    assert result.rc == 2 and "not inside a git repository" in result.err


def test_with_json_an_error_is_json_on_stdout_too(tmp_path, orch):
    """A script reading `--json` output gets why there is nothing else, not an empty stdout; the one line on
    stderr stays. Without --json, stdout stays empty."""
    import json
    for args in (("validate", "--json"), ("status", "--json"), ("layers", "--json", "--bogus")):
        result = orch(*args, cwd=tmp_path)
        said = json.loads(result.out)
        assert result.rc == 2 and said["exit_code"] == 2 and result.err, args
        assert "not inside a git repository" in said["error"] or "No such option" in said["error"], said
    assert orch("validate", cwd=tmp_path).out == ""
    done = subprocess.run([sys.executable, "-c", "import sys; from orchestrate.cli.entry import main; "
                           "sys.argv[1:] = ['status', '--json']; sys.exit(main())"], cwd=tmp_path,
                          capture_output=True, text=True)  # the console script's quick `status`, without click
    assert done.returncode == 2 and json.loads(done.stdout)["exit_code"] == 2, done.stdout + done.stderr


def test_a_json_error_never_follows_output_already_written(capsys):
    """Output a command printed before it failed is what its reader parses: no second object after it."""
    import click
    from orchestrate.cli import main, pipe
    with pipe.guarded():
        click.echo('{"partial": true}')
        main._json_error(True, "failed later", None, 1)
    assert capsys.readouterr().out == '{"partial": true}\n'


def test_version_and_usage_errors(orch):
    assert orch("--version").out.startswith("orchestrate, version")
    bad = orch("validate", "--bogus")
    assert bad.rc == 2 and "No such option" in bad.err


def test_a_bug_prints_a_traceback_and_exits_70(demo, orch, monkeypatch):
    import orchestrate.dag.load as dagfile

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(dagfile, "check_dag", broken)
    result = orch("validate", "--dag", demo)
    assert result.rc == 70 and "Traceback" in result.err and "bug" in result.err


def test_python_dash_m_runs_the_cli():
    done = subprocess.run([sys.executable, "-m", "orchestrate", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "Exit codes" in done.stdout


def test_every_command_has_help(orch):
    for command in ["init", "validate", "layers", "run", "resume", "status", "decide", "gate", "table",
                    "demo", "replay"]:
        result = orch(command, "--help")
        assert result.rc == 0 and "Usage" in result.out, command


def test_a_bad_topic_option_is_blamed_on_the_option_not_the_dag(demo, orch):
    for command in ("run", "validate"):
        done = orch(command, "--dag", demo, "--topic", "Bad/Topic", cwd=demo.parent)
        assert done.rc == 2, (command, done.out, done.err)
        assert done.err.startswith("orchestrate: error: --topic: `Bad/Topic` is not a valid topic"), done.err
        assert "dag.yaml" not in done.err and "DERIVE" not in done.out
    listed = orch("validate", "--dag", demo, "--topic", "Bad/Topic", "--json", cwd=demo.parent)
    assert listed.rc == 1 and [p["field"] for p in json.loads(listed.out)] == ["--topic"], listed.out + listed.err
