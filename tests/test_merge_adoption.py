"""A merge commit found on the campaign branch at MERGE is adopted as the one a killed runner made only when it
is the very commit the runner's write-ahead intent named, and only where everything of the campaign runs in
the sandbox (rv36, rv38, rv39, rv40: a worker or a campaign check without it could put another commit there,
the exact merge included, write the journal's tail and kill the runner)."""
from __future__ import annotations

import subprocess

import pytest

from orchestrate.workers import sandbox
from tests.engine_helpers import campaign_repo, cli, journal

DAG = """\
topic: adopt
mode: autonomous
defaults: {max_attempts: 1, sandbox: MODE}
workers: {sh: "./work.sh"}
nodes:
  - {id: A, title: writes a, file_surface: [a.txt], discipline: sh}
"""
WORKER = "#!/bin/sh\necho a > a.txt\n"


BWRAP = sandbox.probe()
needs_bwrap = pytest.mark.skipif(BWRAP is not None, reason=f"bubblewrap does not work here: {BWRAP}")


def _killed_before_the_branch_moved(tmp_path, mode: str = "bwrap", fault: str = "merge:1"):
    repo = campaign_repo(tmp_path, DAG.replace("MODE", mode), WORKER)
    done = cli(repo, "run", fault=fault)  # merge: the merge commit made, campaign/adopt not yet moved to it
    assert done.returncode == -9, done.stdout + done.stderr
    tip = repo.git("rev-parse", "campaign/adopt")
    head = repo.git("rev-parse", "node/adopt/A")
    return repo, tip, head


def _commit(repo, tree: str, tip: str, head: str, message: str = "merge node A: writes a", by: str = "") -> str:
    """A merge commit made by hand; `by`: made by someone else than the repository's identity (another commit
    than the runner's own, even in the same second)."""
    import os
    env = dict(os.environ, **({"GIT_AUTHOR_NAME": by, "GIT_COMMITTER_NAME": by} if by else {}))
    return subprocess.run(["git", "-C", str(repo), "commit-tree", tree, "-p", tip, "-p", head, "-m", message],
                          env=env, capture_output=True, text=True, check=True).stdout.strip()


@needs_bwrap
@pytest.mark.parametrize("when", ["as it moved the branch", "after the merge's result (rv40)"])
def test_the_merge_a_killed_runner_left_on_the_branch_is_adopted(tmp_path, when):
    if when.startswith("as"):
        repo, tip, head = _killed_before_the_branch_moved(tmp_path)
        made = [e["context"]["sha"] for e in journal(repo, "adopt") if e["context"].get("effect") == "advance"][-1]
        repo.git("update-ref", "refs/heads/campaign/adopt", made)  # where a runner killed just after moving it leaves it
    else:
        repo, made, head = _killed_before_the_branch_moved(tmp_path, fault="merged:1")  # the branch moved already
        assert made != repo.git("rev-parse", "main")
    done = cli(repo, "resume")
    assert done.returncode == 75 and "repair: A was merged" in done.stdout, done.stdout + done.stderr
    assert [e["context"]["sha"] for e in journal(repo, "adopt") if e["kind"] == "merge"] == [made]


def test_without_the_sandbox_not_even_the_runners_own_merge_is_adopted(tmp_path):
    """A worker or a campaign check without the sandbox could have written the journal's tail, the intent naming
    its own commit included, and killed the runner (rv40): such a campaign halts there, for a person to look."""
    repo, tip, head = _killed_before_the_branch_moved(tmp_path, mode="none")
    made = [e["context"]["sha"] for e in journal(repo, "adopt") if e["context"].get("effect") == "advance"][-1]
    repo.git("update-ref", "refs/heads/campaign/adopt", made)
    done = cli(repo, "resume")
    assert done.returncode == 1 and "repair:" not in done.stdout
    assert "the merge the stopped runner was making" in done.stderr and "it is not adopted" in done.stderr


@needs_bwrap
def test_a_commit_with_the_merges_parents_and_another_tree_is_not_adopted(tmp_path):
    repo, tip, head = _killed_before_the_branch_moved(tmp_path)
    blob = _fed(repo, "never judged\n", "hash-object", "-w", "--stdin")
    forged_tree = _fed(repo, f"100644 blob {blob}\tevil.txt\n" + repo.git("ls-tree", head) + "\n", "mktree")
    exact = repo.git("merge-tree", "--write-tree", tip, head)
    for forged in (_commit(repo, forged_tree, tip, head),  # any tree
                   _commit(repo, exact, tip, head, "merge node B: x"),
                   _commit(repo, exact, tip, head, by="a check")):  # rv39: the exact merge, made by a campaign
        # check that then killed the runner: not the commit the runner made and journalled
        repo.git("update-ref", "refs/heads/campaign/adopt", forged)
        done = cli(repo, "resume")
        text = done.stdout + done.stderr
        assert done.returncode != 0 and "repair:" not in text and "something other than orchestrate moved it" in text, text
        assert not [e for e in journal(repo, "adopt") if e["kind"] == "merge"]


def _fed(repo, text: str, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], input=text, capture_output=True, text=True,
                          check=True).stdout.strip()


@needs_bwrap
def test_the_exact_merge_put_on_the_branch_while_no_runner_was_merging_is_not_adopted(tmp_path):
    """rv38: a worker without the sandbox that computed the node's merge itself (merge-tree, commit-tree, the
    merge's message) and put it on the branch while the node waited to merge had it adopted as a dead runner's,
    the campaign checks never run on it. Only a merge the journal shows begun and not finished is adopted."""
    for n in range(1, 12):  # the runner killed as the transition into MERGE is recorded: no merge begun
        repo = campaign_repo(tmp_path / str(n), DAG.replace("MODE", "bwrap"), WORKER)
        cli(repo, "run", fault=f"commit:{n}")
        moves = [e["context"] for e in journal(repo, "adopt") if e["kind"] == "transition"]
        if moves and moves[-1]["to"] == "MERGE":
            break
    else:
        raise AssertionError("no kill point found where MERGE is next")
    tip, head = repo.git("rev-parse", "campaign/adopt"), repo.git("rev-parse", "node/adopt/A")
    exact = _commit(repo, repo.git("merge-tree", "--write-tree", tip, head), tip, head)
    repo.git("update-ref", "refs/heads/campaign/adopt", exact)
    done = cli(repo, "resume")
    text = done.stdout + done.stderr
    assert "repair:" not in text and "something other than orchestrate moved it" in text, text
