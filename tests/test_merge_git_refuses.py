"""MERGE when git itself refuses to merge (a setting it rejects, a full disk, a lock), not a conflict: the
campaign halts naming git's own words, as merge-tree's failure does, no attempt is spent, and `resume`
merges the node once the environment is fixed. Merged in the integration worktree (campaign checks) and
in the object store alone (none), it is the same stop."""
from __future__ import annotations

import json

import pytest

from orchestrate import git
from orchestrate.engine.handlers import merge
from tests import engine_helpers
from tests.engine_helpers import campaign_repo, first_parent_chain, journal
from tests.helpers import make_repo

WORKER = r"""#!/bin/sh
set -eu
mkdir -p a && echo "$ORCH_NODE attempt $ORCH_ATTEMPT" > a/one.txt
git add -A && git commit -qm "$ORCH_NODE attempt $ORCH_ATTEMPT"
"""
DAG = """\
topic: gr
workers: {sh: "./work.sh"}
defaults: {max_attempts: 2, timeout: 60}
CHECKS
nodes:
  - {id: A, title: alpha, depends_on: [], file_surface: [a/], discipline: sh}
"""


def cli(repo, *args: str):
    return engine_helpers.cli(repo, *args, timeout=300)


@pytest.mark.parametrize("checks", ["", 'checks: [{name: fine, run: "true"}]'], ids=["merge-tree", "worktree"])
def test_a_merge_git_refuses_halts_naming_git_and_resume_merges_without_spending_an_attempt(tmp_path, checks):
    repo = campaign_repo(tmp_path, DAG.replace("CHECKS", checks), WORKER)
    base = repo.git("rev-parse", "HEAD")
    # every `git merge` (and merge-tree) now dies before merging anything: no path can conflict
    repo.git("config", "merge.conflictstyle", "bogus")
    halted = cli(repo, "run", "--no-interactive")
    said = halted.stdout + halted.stderr
    assert halted.returncode == 1, said
    assert "unknown style 'bogus' given for 'merge.conflictstyle'" in halted.stderr, said
    assert "`orchestrate resume` continues" in halted.stderr, said
    assert "CONFLICT" not in said and "merge refused" not in said and "REWORK" not in said
    entries = journal(repo, "gr")
    assert not [e for e in entries if e["kind"] == "node" and e["context"].get("status") == "REWORK"]
    assert not [e for e in entries if e["kind"] == "merge"]
    assert repo.git("rev-parse", "campaign/gr") == base
    integ = repo / ".scratch" / "integration" / "gr"
    if checks:  # the merge was made there: nothing of it is left for resume to find
        assert repo.git("-C", str(integ), "rev-parse", "HEAD") == base
        assert repo.git("-C", str(integ), "status", "--porcelain", "--untracked-files=all") == ""
        assert repo.git("-C", str(integ), "rev-parse", "-q", "--verify", "MERGE_HEAD", check=False) == ""

    repo.git("config", "--unset", "merge.conflictstyle")
    done = cli(repo, "resume", "--no-interactive", "--topic", "gr")
    assert done.returncode == 75, done.stdout + done.stderr
    assert "A: merged into campaign/gr" in done.stdout, done.stdout
    nodes = {n["id"]: n for n in json.loads(cli(repo, "status", "--json", "--topic", "gr").stdout)["nodes"]}
    assert (nodes["A"]["status"], nodes["A"]["attempt"]) == ("ACCEPTED", 1)
    assert [s for _, s in first_parent_chain(repo, base, "campaign/gr")] == ["merge node A: alpha"]
    assert repo.git("show", "campaign/gr:a/one.txt") == "A attempt 1"


def test_heads_of_a_group_that_conflict_before_the_last_stay_a_conflict(tmp_path):
    """The octopus gives up on heads that conflict before the last one and git puts the index back: no path
    is left unmerged, yet it is the group's conflict, to rework, not the environment's."""
    repo = make_repo(tmp_path / "repo", {"f.txt": "base\n", "g.txt": "base\n"})
    base = repo.head()
    heads = []
    for name, path, text in (("h1", "f.txt", "one\n"), ("h2", "f.txt", "two\n"), ("h3", "g.txt", "three\n")):
        repo.git("switch", "-q", "-c", name, base)
        heads.append(repo.commit(name, {path: text}))
    repo.git("switch", "-q", "--detach", base)
    done = git.git(repo, "merge", "--no-ff", "--no-commit", "--no-edit", *heads, check=False)
    assert done.rc != 0 and git.conflicted_paths(repo) == []
    assert merge._heads_conflict(done)
    git.merge_abort(repo)
    refused = git.git(repo, "-c", "merge.conflictstyle=bogus", "merge", "--no-ff", "--no-commit", "--no-edit",
                      heads[2], check=False)
    assert refused.rc != 0 and not merge._heads_conflict(refused)
