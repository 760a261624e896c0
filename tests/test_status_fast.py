"""`status` answered by the console script without the CLI framework must say what the CLI says, and
the checkout found from the .git entries must be the one git names."""
from __future__ import annotations

import subprocess
import sys

import pytest

from orchestrate import git
from tests.engine_helpers import campaign_repo

DAG = """\
topic: quick
workers: {sh: "./work.sh"}
nodes:
  - {id: A, file_surface: [a.txt], discipline: sh}
  - {id: B, depends_on: [A], file_surface: [b.txt], discipline: sh}
"""
WORKER = "#!/bin/sh\necho \"$ORCH_NODE\" > \"$(echo $ORCH_NODE | tr AB ab).txt\"\n"


def console(repo, *args: str) -> subprocess.CompletedProcess:
    code = "import sys; from orchestrate.cli.entry import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=repo, capture_output=True, text=True)


@pytest.fixture
def ran(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert orch("run", "--quiet", cwd=repo).rc == 75
    return repo


@pytest.mark.parametrize("args", [(), ("--json",), ("--topic", "quick"), ("--topic=quick", "--json")])
def test_the_quick_status_says_what_the_cli_says(ran, orch, args):
    quick = console(ran, "status", *args)
    assert quick.returncode == 0, quick.stderr
    assert quick.stdout == orch("status", *args, cwd=ran).out
    assert "quick" in quick.stdout


def test_errors_and_help_still_go_through_the_cli(ran, tmp_path):
    unknown = console(ran, "status", "--topic", "nope")
    assert unknown.returncode == 2 and "no campaign `nope`" in unknown.stderr and "Traceback" not in unknown.stderr
    assert "Usage:" in console(ran, "status", "--help").stdout
    outside = console(tmp_path, "status")
    assert outside.returncode == 2 and "not inside a git repository" in outside.stderr


def test_the_main_checkout_is_found_from_a_linked_worktree_and_a_subfolder(repo, tmp_path):
    repo.git("worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    (repo / "sub" / "deeper").mkdir(parents=True)
    for start in (repo, repo / "sub" / "deeper", tmp_path / "side"):
        assert git.main_worktree(start) == repo.resolve()
    assert git._main_worktree_from_files(tmp_path / "side") == repo.resolve()


def test_campaigns_are_listed_from_their_journals(ran):
    from orchestrate.recorder import topics
    assert topics.lifecycle(ran / ".ledger") == {"quick": "close"}  # CLOSE ran; final acceptance is pending
    assert topics.in_flight(ran / ".ledger") == []
