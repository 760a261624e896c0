"""rv68: judging code (a node's evaluators, sandboxed, the worktree's admin dir bound writable) replaces the
admin dir's `index` with a link to the user's index (`<git dir>/index`); the `.git` link is left alone, so
`git_files.linked` holds. The put-back before coherence's configured evaluators (`returns._cleared` ->
`pool.own_index`) of a worktree this runner did not make (a resume: no index copy in `pool._made`) runs
`git read-tree -m HEAD` there, and git writes an index through a link: the user's index is replaced by the
node's tree (their `git status` shows the node's files staged)."""
from __future__ import annotations

import pytest

from tests.engine_helpers import campaign_repo, cli, journal, recorder_subjects

DAG = """\
topic: il
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1, sandbox: bwrap}
nodes:
  - {id: A, title: links its index, file_surface: [a.txt, plant.sh], discipline: sh,
     evaluators: [{name: t, run: "sh plant.sh"}]}
"""
WORKER = r"""#!/bin/sh
set -eu
echo a > a.txt
cat > plant.sh <<'SH'
admin=$(git rev-parse --absolute-git-dir)
common=$(git rev-parse --path-format=absolute --git-common-dir)
rm -f "$admin/index" && ln -s "$common/index" "$admin/index"
SH
git add a.txt plant.sh && git commit -qm A
"""


def _repo(where):
    repo = campaign_repo(where, DAG, WORKER)
    (repo / ".ledger" / "config.yaml").write_text("coherence:\n  evaluators: [{name: c, run: 'true'}]\n")
    return repo


def test_a_resumed_put_back_never_writes_the_users_index_through_a_link_in_the_admin_dir(tmp_path):
    from orchestrate.workers import sandbox
    if (why := sandbox.probe()) is not None:
        pytest.skip(why)
    reference = _repo(tmp_path / "ref")
    cli(reference, "run")
    flushes = recorder_subjects(reference)[1:]
    at = next(i for i, s in enumerate(flushes) if "-> RECONCILE" in s)
    for n in range(5):  # a cut where A's evaluators, started ahead, ran before the kill (nearly always the first)
        repo = _repo(tmp_path / f"cut{n}")
        index = (repo / ".git" / "index").read_bytes()
        assert cli(repo, "run", fault=f"flush:{at + 1}").returncode == -9
        assert journal(repo, "il")[-1]["context"].get("to") == "RECONCILE"
        assert (repo / ".git" / "index").read_bytes() == index
        if (repo / ".git" / "worktrees" / "A" / "index").is_symlink():
            break
    else:
        pytest.skip("the evaluators never ran before the kill")
    resumed = cli(repo, "resume")
    text = resumed.stdout + resumed.stderr
    staged = repo.git("status", "--porcelain")
    assert (repo / ".git" / "index").read_bytes() == index, text + "\nuser's checkout now:\n" + staged


def test_the_put_back_before_coherence_never_writes_through_a_link_in_the_admin_dir(tmp_path, monkeypatch):
    """The same link met by `returns.cleared_again` in a worktree this runner has no index copy of (a resumed
    run): own_index's `read-tree` would write the user's index through it. The admin dir is cleared first, and
    a link where the index should be fails the put-back."""
    from types import SimpleNamespace
    from orchestrate import git
    from orchestrate.workers import pool, returns
    from tests.helpers import make_repo
    monkeypatch.setattr(pool, "_made", {})
    repo = make_repo(tmp_path / "repo", {"f.txt": "x\n"})
    base = git.out(repo, "rev-parse", "HEAD")
    tree = tmp_path / "trees" / "A"
    git.worktree_add(repo, tree, "node/t/A", "HEAD")
    (tree / "a.txt").write_text("a\n")
    git.git(tree, "add", "a.txt")
    git.git(tree, "-c", "user.name=w", "-c", "user.email=w@x", "commit", "-qm", "A")
    head = git.out(tree, "rev-parse", "HEAD")
    admin = git.admin_dir(tree)
    (admin / "index").unlink()
    (admin / "index").symlink_to(repo / ".git" / "index")
    before = (repo / ".git" / "index").read_bytes()
    ctx = SimpleNamespace(root=repo, dag=SimpleNamespace(keep_ignored=False))
    why = returns.cleared_again(ctx, tree, base, head)
    assert (repo / ".git" / "index").read_bytes() == before
    assert "index in its worktree's git admin dir is not a file" in why, why
