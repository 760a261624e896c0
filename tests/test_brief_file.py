"""`brief_file:` a node's brief kept in a file next to the DAG: handed to the worker whole, refused by
validation when it cannot be, and refused with a hint (never a traceback) when it changed since."""
from __future__ import annotations

import pytest

from tests.engine_helpers import campaign_repo, journal

# The worker proves it was given the file's text: it copies the brief's last line into its output.
WORKER = '#!/bin/sh\ntail -n 1 "$ORCH_BRIEF" > a.txt\n'
DAG = """\
topic: briefs
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1}
nodes:
  - {id: A, title: alpha, file_surface: [a.txt], discipline: sh, brief_file: prompts/A.md,
     evaluators: [{name: said, run: "grep -qx 'the words of the brief' a.txt"}]}
"""


@pytest.fixture
def repo(tmp_path):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    (repo / ".ledger" / "state" / "prompts").mkdir()
    return repo


def brief(repo):
    return repo / ".ledger" / "state" / "prompts" / "A.md"


def test_the_file_is_the_worker_s_brief(repo, orch):
    brief(repo).write_text("# Alpha\n\nthe words of the brief\n")
    ran = orch("run", "--no-interactive", cwd=repo)
    assert ran.rc == 75 and repo.git("show", "campaign/briefs:a.txt") == "the words of the brief"


@pytest.mark.parametrize("make, said", [
    (None, "`prompts/A.md` does not exist (paths are relative to the DAG file's folder)"),
    (lambda p: p.mkdir(), "`prompts/A.md` is a folder, not a file"),
    (lambda p: p.write_bytes(b"\xff\xfe words\n"), "`prompts/A.md` is not UTF-8 text (byte 0): save it as UTF-8"),
])
def test_a_brief_file_that_cannot_be_read_is_invalid(repo, orch, make, said):
    if make:
        make(brief(repo))
    checked = orch("validate", cwd=repo)
    assert checked.rc == 1 and f"dag.yaml:5: nodes.A.brief_file: {said}" in checked.out
    ran = orch("run", "--no-interactive", cwd=repo)
    assert ran.rc == 1 and "nothing was written" in ran.out and not (repo / ".ledger" / "state" / "briefs").exists()


def test_a_brief_file_spoiled_during_the_campaign_stops_the_dispatch_with_a_hint(repo, orch):
    brief(repo).write_text("not what the evaluator wants\n")
    assert orch("run", "--no-interactive", cwd=repo).rc == 75  # A failed its one attempt: realignment
    assert orch("decide", "realignment", "rework", "--note", "again", cwd=repo).rc == 0
    brief(repo).write_bytes(b"\xff the words of the brief\n")
    stopped = orch("resume", "--no-interactive", cwd=repo)  # resume validates the campaign's DAG again
    assert stopped.rc == 1 and "Traceback" not in stopped.err, stopped.err
    assert "nodes.A.brief_file: `prompts/A.md` is not UTF-8 text (byte 0): save it as UTF-8" in stopped.err
    brief(repo).write_text("the words of the brief\n")
    assert orch("resume", "--no-interactive", cwd=repo).rc == 75
    verdicts = [e["context"]["verdict"] for e in journal(repo, "briefs") if e["kind"] == "verdict"]
    assert verdicts[-1] == "accept"


def test_a_brief_file_spoiled_after_validation_is_refused_at_dispatch_with_a_hint(tmp_path):
    from orchestrate.dag.model import Node
    from orchestrate.errors import UsageError
    from orchestrate.workers.brief import brief_text
    (tmp_path / "A.md").write_bytes(b"\xff words\n")
    node = Node(id="A", title="alpha", depends_on=(), file_surface=("a.txt",), worker="true", brief_file="A.md")
    with pytest.raises(UsageError) as refused:
        brief_text(node, topic="t", attempt=1, worktree=tmp_path, branch="b", base="c", return_file=tmp_path / "r",
                   brief_dir=tmp_path)
    assert refused.value.message.startswith(f"{tmp_path / 'A.md'}: node A's brief_file is not UTF-8 text")
    assert "fix the file, then `orchestrate resume`" in refused.value.hint



def _cli(repo, *args):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "orchestrate", *map(str, args)], cwd=repo, capture_output=True,
                          text=True, timeout=120)


def test_a_campaign_s_dag_copy_finds_and_misses_its_briefs_in_the_recorded_folder(tmp_path):
    """rv70: briefs beside plans/dag.yaml; the campaign's copy in .ledger/state/briefs/ resolves them in plans/
    (recorded when it opened). A missing one says where it was looked for and why, not "relative to the DAG
    file's folder" (the copy's folder, where it never looks); `run --dag <copy>` finds them there too."""
    repo = campaign_repo(tmp_path, DAG, WORKER)
    (repo / "plans" / "prompts").mkdir(parents=True)
    (repo / "plans" / "dag.yaml").write_text(DAG)
    (repo / "plans" / "prompts" / "A.md").write_text("the words of the brief\n")
    assert _cli(repo, "run", "--dag", "plans/dag.yaml", "--no-interactive").returncode == 75
    copy = repo / ".ledger" / "state" / "briefs" / "dag.yaml"

    again = _cli(repo, "run", "--dag", copy, "--topic", "again", "--no-interactive")
    assert again.returncode == 75, again.stdout + again.stderr
    assert repo.git("show", "campaign/again:a.txt") == "the words of the brief"
    opened = next(e for e in journal(repo, "again") if e["kind"] == "open")
    assert opened["context"]["brief_dir"] == str((repo / "plans").resolve())  # the first campaign's, kept

    (repo / "plans" / "prompts" / "A.md").unlink()
    checked = _cli(repo, "validate", "--dag", copy)
    folder = (repo / "plans").resolve()
    assert checked.returncode == 1 and checked.stdout.splitlines()[0] == (
        f"{copy}:5: nodes.A.brief_file: `prompts/A.md` does not exist (looked in {folder}: a "
        "campaign's copy of its DAG resolves brief_file against the folder of the DAG its campaign was opened "
        "from, recorded when it opened, not beside the copy)"), checked.stdout
    refused = _cli(repo, "run", "--dag", copy, "--topic", "third", "--no-interactive")
    assert refused.returncode == 1 and f"does not exist (looked in {folder}:" in refused.stdout + refused.stderr
