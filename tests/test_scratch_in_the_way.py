"""`.scratch` (orchestrate's scratch space) that is a file is input that cannot be used: exit 2 (DESIGN §10) and
one line naming it and the fix, nothing changed; it ended `run` with exit 1, naming `.scratch/locks`."""
from __future__ import annotations

import pytest

from tests.engine_helpers import campaign_repo, checkout_state, cli, recorder_subjects

DAG = """\
topic: sw
workers: {sh: "./work.sh"}
nodes:
  - {id: N1, file_surface: [n1.txt], discipline: sh}
"""


@pytest.mark.parametrize("command", [("run",), ("resume",), ("decide", "final-acceptance", "accept", "--as", "t@x")])
def test_a_file_where_the_scratch_folder_goes_is_one_line_and_exit_2(tmp_path, command):
    repo = campaign_repo(tmp_path, DAG, "#!/bin/sh\necho 1 > n1.txt\n")
    if command != ("run",):
        assert cli(repo, "run").returncode == 75  # at final acceptance
    import shutil
    shutil.rmtree(repo / ".scratch", ignore_errors=True)
    (repo / ".scratch").write_text("a file\n")
    before, subjects = checkout_state(repo), recorder_subjects(repo)
    done = cli(repo, *command)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"{repo / '.scratch'}: a file where orchestrate keeps a folder" in done.stderr, done.stderr
    assert f"mv {repo / '.scratch'}" in done.stderr, done.stderr  # the fix
    assert checkout_state(repo) == before and recorder_subjects(repo) == subjects
    assert (repo / ".scratch").read_text() == "a file\n"


@pytest.mark.parametrize("folder", ["runs", "worktrees", "integration"])
def test_a_file_where_a_folder_of_the_scratch_space_goes_is_one_line_and_exit_2(tmp_path, folder):
    """It was met once the campaign was under way: a traceback, exit 70."""
    repo = campaign_repo(tmp_path, DAG, "#!/bin/sh\necho 1 > n1.txt\n")
    (repo / ".scratch").mkdir(exist_ok=True)
    (repo / ".scratch" / folder).write_text("a file\n")
    subjects = recorder_subjects(repo)
    done = cli(repo, "run")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"{repo / '.scratch' / folder}: a file where orchestrate keeps a folder" in done.stderr, done.stderr
    assert recorder_subjects(repo) == subjects  # no campaign was opened
