"""README, Working copies: "`keep_ignored: true` ... keeps the files the new base's own ignore rules match (its
`.gitignore` files and `.git/info/exclude`, not your global excludes file)". Node A leaves three ignored build
caches in its worktree, one for each kind of ignore rule; node B, re-using A's working copy, writes down which
survived."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.engine_helpers import campaign_repo, journal
from tests.test_pool import DAG

WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  A)
    echo A > a.txt && git add a.txt && git commit -qm A
    for d in build excluded globally; do mkdir -p "$d" && echo warm > "$d/cache.o"; done ;;
  B)
    for f in build/cache.o excluded/cache.o globally/cache.o; do
      test -e "$f" && echo "$f" >> b.txt
    done
    echo end >> b.txt && git add b.txt && git commit -qm B ;;
esac
"""


@pytest.mark.parametrize("keep", [True, False])
def test_keep_ignored_honours_gitignore_and_info_exclude_but_not_the_global_excludes_file(tmp_path, orch, keep):
    dag = DAG.format(mode="none").replace("sandbox: none", f"sandbox: none, keep_ignored: {str(keep).lower()}")
    repo = campaign_repo(tmp_path, dag, WORKER, {".gitignore": "build/\n"})
    with (repo / ".git" / "info" / "exclude").open("a") as fh:  # the repository's own exclude file
        fh.write("excluded/\n")
    global_ignore = Path(os.environ["HOME"]) / ".config" / "git" / "ignore"  # git's default core.excludesFile
    global_ignore.parent.mkdir(parents=True)
    global_ignore.write_text("globally/\n")
    assert repo.git("check-ignore", "build/x", "excluded/x", "globally/x").split() == [
        "build/x", "excluded/x", "globally/x"]  # to git, all three are ignored

    done = orch("run", "--no-interactive", cwd=repo)
    assert done.rc == 75, done.out + done.err
    adds = {e["context"]["node"]: e["context"] for e in journal(repo, "pool")
            if e["kind"] == "result" and e["context"].get("effect") == "worktree-add"}
    assert adds["B"].get("reused"), "B did not reuse A's working copy: this test would prove nothing"
    seen = repo.git("show", "campaign/pool:b.txt").splitlines()
    assert seen == (["build/cache.o", "excluded/cache.o", "end"] if keep else ["end"])


def test_after_a_restart_a_worktree_s_admin_dir_still_holds_no_campaign_branch(tmp_path, monkeypatch):
    """rv26: the admin dirs orchestrate made were known only to the process that made them. After a restart, a
    landed node's worker that had pointed its admin dir at a `.git` of its own in $HOME (naming it back), HEAD on
    campaign/<topic>, halted every merge of `resume`. The journal says which admin dir each worktree was made
    with: learnt at resume, none of them holds the branch."""
    from types import SimpleNamespace

    from orchestrate.errors import Halted
    from orchestrate.recorder.paths import Layout
    from orchestrate.workers import worktrees
    from tests.helpers import make_repo
    repo = make_repo(tmp_path / "repo", {"f.txt": "x\n"})
    repo.git("branch", "campaign/t")
    path = repo / ".scratch" / "worktrees" / "t" / "A"
    repo.git("worktree", "add", "-q", "--detach", str(path))
    admin = Path(repo.git("-C", str(path), "rev-parse", "--absolute-git-dir"))
    decoy = tmp_path / "home" / "decoy"
    decoy.mkdir(parents=True)
    (decoy / ".git").write_text(f"gitdir: {admin}\n")
    (admin / "gitdir").write_text(f"{decoy}/.git\n")
    (admin / "HEAD").write_text("ref: refs/heads/campaign/t\n")
    ctx = SimpleNamespace(campaign=SimpleNamespace(branch="campaign/t"), topic="t", root=repo, layout=Layout(repo))
    monkeypatch.setattr(worktrees, "_made_here", {})  # a new process
    with pytest.raises(Halted):
        worktrees.free_branch(ctx)
    worktrees.learn([{"kind": "result", "context": {"effect": "worktree-add", "path": str(path), "admin": str(admin)}}])
    worktrees.free_branch(ctx)
    worktrees.learn([{"kind": "result", "context": {"effect": "worktree-remove", "path": str(path)}}])
    with pytest.raises(Halted):  # once it is removed, an admin dir of that name is no longer known as ours
        worktrees.free_branch(ctx)
