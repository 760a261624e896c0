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


def test_a_dag_that_is_not_utf8_names_the_line_of_the_first_bad_byte(tmp_path, orch):
    path = tmp_path / "dag.yaml"
    path.write_bytes(b"topic: t\nnodes:\n  - {id: caf\xe9}\n")
    result = orch("validate", "--dag", path)
    assert result.rc == 2
    assert f"{path}:3: not UTF-8 text (byte 28)" in result.err and "save the DAG as UTF-8" in result.err, result.err


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


def test_with_json_an_invalid_plan_lists_its_problems_in_the_error(tmp_path, orch):
    """`layers --json` on a plan that does not validate: the JSON error carries every problem, each with
    its file, line, field, code and message, so a script need not parse the stderr lines."""
    import json
    repo = make_repo(tmp_path / "repo")
    bad = repo / "bad.yaml"
    bad.write_text("topic: t\nnodes:\n  - {id: A, title: a, worker: 'true', depends_on: [B], file_surface: [x]}\n")
    result = orch("layers", "--dag", bad, "--json", cwd=repo)
    said = json.loads(result.out)
    assert result.rc == 1 and said["exit_code"] == 1, result.out + result.err
    assert said["problems"] == [{"file": str(bad), "line": 3, "field": "nodes.A.depends_on", "code": "dangling",
                                 "message": "`B` is not a node of this DAG"}], said


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


def test_a_command_line_error_is_one_line_naming_the_help_to_read(orch, tmp_path):
    """Click's own form (a usage line, a 'Try' line, a blank and the error) is said in one line, as every other
    error orchestrate reports; --json gets the same error as JSON."""
    for args, said in ((["run", "--jobs", "0"], "'--jobs' / '-j': 0 is not in the range x>=1"),
                       (["graph", "--dag", str(tmp_path)], "is a directory"),
                       (["decide"], "Missing argument 'SEAM'"),
                       (["bogus"], "No such command 'bogus'")):
        bad = orch(*args, cwd=tmp_path)
        command = "orchestrate" + ("" if args[0] == "bogus" else f" {args[0]}")
        assert bad.rc == 2 and bad.out == "", bad.err
        assert bad.err.splitlines() == [bad.err.strip()] and bad.err.startswith("orchestrate: error: "), bad.err
        assert said in bad.err and f"(`{command} --help` lists what it takes)" in bad.err, bad.err
    as_json = orch("validate", "--json", "--bogus", cwd=tmp_path)
    assert json.loads(as_json.out) == {"error": "No such option '--bogus'",
                                       "hint": "`orchestrate validate --help` lists what it takes", "exit_code": 2}


def test_a_bug_prints_a_traceback_and_exits_70(demo, orch, monkeypatch):
    import orchestrate.dag.load as dagfile

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(dagfile, "check_dag", broken)
    result = orch("validate", "--dag", demo)
    assert result.rc == 70 and "Traceback" in result.err and "bug" in result.err


@pytest.mark.parametrize("errno_, filename, rc", [(28, "/r/.ledger/state/t/journal.jsonl", 2),
                                                   (30, "/r/.ledger/state/t", 2), (30, None, 70), (2, "/r/x", 70)])
def test_a_file_system_that_refuses_a_write_is_one_line_not_a_bug(demo, orch, monkeypatch, errno_, filename, rc):
    """rv45: a full disk or a read-only recorder is the environment's, said in one line naming the place: exit 2
    when nothing was written yet (a run stopped midway is rv46's test). Any other OSError, or one naming no
    file, is still a bug."""
    import orchestrate.dag.load as dagfile

    def refused(*args, **kwargs):
        raise OSError(errno_, os.strerror(errno_), *([filename] if filename else []))

    monkeypatch.setattr(dagfile, "check_dag", refused)
    result = orch("validate", "--dag", demo)
    assert result.rc == rc, result.err
    if rc != 70:
        assert result.err.startswith(f"orchestrate: error: {filename}: {os.strerror(errno_)} (")
        assert result.err.count("\n") == 1 and "Traceback" not in result.err and "nothing was changed" in result.err
    else:
        assert "Traceback" in result.err


def test_a_read_only_recorder_stops_run_in_one_line_and_changes_nothing(tmp_path):
    """rv45: a read-only `.ledger/` (a mount, or modes) ended `run` in a traceback, exit 70. As root modes bind
    nobody, so a read-only bind mount in a mount namespace of the test's own stands in."""
    repo = make_repo(tmp_path / "repo")
    cli = [sys.executable, "-c", "import sys; from orchestrate.cli.main import main; sys.exit(main())"]
    subprocess.run(cli + ["init"], cwd=repo, check=True, capture_output=True)
    ledger = repo / ".ledger"
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ledger, capture_output=True, text=True).stdout
    if os.geteuid() == 0:
        script = f'mount --bind {ledger} {ledger} && mount -o remount,ro,bind {ledger} && exec "$@"'
        if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode:
            pytest.skip("root without a mount namespace of its own: no read-only place to write to")
        done = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", *cli, "run", "--no-interactive"],
                              cwd=repo, capture_output=True, text=True)
    else:
        subprocess.run(["chmod", "-R", "a-w", str(ledger)], check=True)
        try:
            done = subprocess.run(cli + ["run", "--no-interactive"], cwd=repo, capture_output=True, text=True)
        finally:
            subprocess.run(["chmod", "-R", "u+w", str(ledger)], check=True)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(f"orchestrate: error: {ledger}") and done.stderr.count("\n") == 1, done.stderr
    assert "make it writable by you" in done.stderr and "nothing was changed" in done.stderr
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=ledger, capture_output=True, text=True).stdout == head


def test_a_write_refused_once_the_run_has_recorded_is_exit_1_for_resume(tmp_path, orch, monkeypatch):
    """rv46: after the campaign had recorded entries, a refused write still said exit 2, "nothing was changed"."""
    import errno

    from orchestrate.engine.handlers import dispatch  # imported here: else it would bind the stand-in for good
    repo = make_repo(tmp_path / "repo")
    assert orch("init", cwd=repo).rc == 0

    def refused(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(repo / ".scratch" / "runs"))

    monkeypatch.setattr(dispatch, "start", refused)
    said = orch("run", "--no-interactive", cwd=repo)
    assert said.rc == 1 and said.err.count("\n") == 1, said.err
    assert "then `orchestrate resume` continues from the last recorded state" in said.err
    assert "nothing was changed" not in said.err


def test_a_git_that_fails_once_the_run_has_recorded_is_exit_1_for_resume(tmp_path, orch, monkeypatch):
    """rv46: a git failing mid-run (a kept writer ended by a read-only recorder) was exit 2, "nothing was
    changed", by its error's class; before anything is recorded it stays 2."""
    from orchestrate.engine.handlers import dispatch  # imported here: else it would bind the stand-in for good
    from orchestrate.errors import GitError
    repo = make_repo(tmp_path / "repo")
    assert orch("init", cwd=repo).rc == 0

    def failed(*args, **kwargs):
        raise GitError(["hash-object", "-t", "commit"], None, message="git hash-object -t commit gave it ended")

    monkeypatch.setattr(dispatch, "start", failed)
    said = orch("run", "--no-interactive", cwd=repo)
    assert said.rc == 1 and said.err.count("\n") == 1, said.err
    assert "gave it ended (fix that, then `orchestrate resume` continues" in said.err, said.err
    import orchestrate.dag.load as dagfile
    monkeypatch.setattr(dagfile, "check_dag", failed)
    assert orch("validate", cwd=repo).rc == 2  # nothing recorded: still a usage or environment error


def test_a_recorder_made_read_only_midway_stops_the_run_for_resume_not_as_unchanged(tmp_path):
    """rv46: the one line said exit 2, "nothing was changed", once a node had merged and the recorder had
    commits; following its hint (run again) then failed (the campaign branch exists). A worker of the second node
    makes `.ledger/` read-only (a mount of the test's own namespace, which the run shares)."""
    if os.geteuid() != 0 or subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode:
        pytest.skip("needs root and a mount namespace of its own: the recorder is made read-only by a mount")
    repo = make_repo(tmp_path / "repo")
    cli = [sys.executable, "-c", "import sys; from orchestrate.cli.main import main; sys.exit(main())"]
    subprocess.run(cli + ["init"], cwd=repo, check=True, capture_output=True)
    ledger = repo / ".ledger"
    (ledger / "state" / "dag.yaml").write_text(
        "topic: ro\nmode: autonomous\ndefaults: {sandbox: none}\n"
        f"workers: {{w: 'echo x > \"$ORCH_NODE.txt\" && if [ \"$ORCH_NODE\" = B ] && mkdir {tmp_path}/once 2>/dev/null; "
        f"then for i in $(seq 100); do mount -o remount,ro,bind {ledger} 2>/dev/null && exit 0; sleep 0.1; done; "
        "exit 9; fi'}\n"
        "nodes:\n  - {id: A, file_surface: [A.txt], discipline: w}\n"
        "  - {id: B, depends_on: [A], file_surface: [B.txt], discipline: w}\n")
    done = subprocess.run(["unshare", "-m", "sh", "-c", f'mount --bind {ledger} {ledger} && exec "$@"', "sh", *cli,
                           "run"], cwd=repo, capture_output=True, text=True)
    # where the write fails (the journal, a file, the branch's move, a kept git writer) depends on when the mount
    # lands; whichever it is, one line, exit 1, and never "nothing was changed" nor a move by another runner
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stdout + done.stderr
    assert "`orchestrate resume` continues" in done.stderr, done.stderr
    assert "moved under this runner" not in done.stderr and "nothing was changed" not in done.stderr, done.stderr
    again = subprocess.run(cli + ["resume"], cwd=repo, capture_output=True, text=True)  # writable again here
    assert again.returncode == 75 and "final-acceptance" in again.stdout, again.stdout + again.stderr
    assert subprocess.run(["git", "show", "campaign/ro:B.txt"], cwd=repo, capture_output=True, text=True).stdout == "x\n"


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
    assert listed.rc == 2 and [p["field"] for p in json.loads(listed.out)] == ["--topic"], listed.out + listed.err
