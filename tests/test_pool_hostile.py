"""What a worker or an evaluator leaves in a pooled working copy (workers/pool.py) reaches neither the next
node's worktree nor what orchestrate's own git reads there: a file whose name is not UTF-8, and an admin dir
whose `commondir` names a git dir of the evaluator's making. End to end in both sandbox modes, and at the
pool's own level for what the campaign cannot show alone."""
from __future__ import annotations

import os

from orchestrate import git
from orchestrate.workers import pool
from tests import test_hostile_workers as hostile
from tests.engine_helpers import journal
from tests.helpers import make_repo

mode, settled = hostile.mode, hostile.settled  # the fixtures (settled: autouse: the user's .git, no process left)

ODD = os.fsdecode(b"\xff")  # a byte that is no UTF-8: as Python names such a file

# A fails (its worktree is pooled) after leaving, ignored by a .gitignore of its own, a folder whose name is
# not UTF-8; B, run after it in A's re-based working copy, has its leftovers committed with `git add -A`.
UNNAMED = r"""#!/bin/sh
if [ "$ORCH_NODE" = A ]; then
  mkdir -p src && printf '*\n' > src/.gitignore
  mkdir -p "src/$(printf '\377')" && echo "planted by A" > "src/$(printf '\377')/evil.txt"
  exit 1
fi
mkdir -p src && echo b > src/b.txt
"""
UNNAMED_DAG = """\
topic: hostile
mode: autonomous
defaults: {max_attempts: 1, sandbox: MODE}
workers: {sh: "./work.sh"}
nodes:
  - {id: A, file_surface: [src/.gitignore], discipline: sh, on_exhausted: continue, max_rework: 1}
  - {id: B, file_surface: [src/], discipline: sh, serialize: true}
"""


def reused(repo, node: str) -> bool:
    return any(e["kind"] == "result" and e["context"].get("effect") == "worktree-add"
               and e["context"].get("node") == node and e["context"].get("reused") for e in journal(repo, "hostile"))


def test_a_file_whose_name_is_not_utf8_does_not_reach_the_next_node(tmp_path, orch, mode):
    from tests.engine_helpers import campaign_repo
    repo = campaign_repo(tmp_path, UNNAMED_DAG.replace("MODE", mode), UNNAMED, files={"src/keep.txt": "keep\n"})
    hostile._WATCHED.append((repo, "hostile", hostile.git_dir_state(repo)))
    result = orch("run", "--jobs", "1", cwd=repo)
    assert "B: merged into campaign/hostile" in result.out + result.err, result.out + result.err
    assert reused(repo, "B"), "B did not reuse A's working copy: this test would prove nothing"
    assert repo.git("ls-tree", "-r", "--name-only", "campaign/hostile", "src") == "src/b.txt\nsrc/keep.txt"


def _spare(tmp_path, files: dict[str, str]):
    """A repository, a worktree pooled from it (as `keep` pools a finished node's) and the folder it re-bases to."""
    repo = make_repo(tmp_path / "repo", files)
    home = tmp_path / "trees"
    first = home / "N1"
    git.worktree_add(repo, first, "node/t/N1", "HEAD")
    pool.record(first, home)
    return repo, home, first


def test_a_rebase_removes_what_is_not_utf8_and_keeps_only_what_the_base_ignores(tmp_path):
    """With keep_ignored: an ignored build folder with such a name stays, an untracked one goes, and so
    does a repository planted in a tracked folder with such a name."""
    repo, home, first = _spare(tmp_path, {".gitignore": "build*/\n", f"d{ODD}/f.txt": "tracked\n"})
    for rel in (f"build{ODD}/out.o", f"src{ODD}/evil.txt", f"d{ODD}/.git/HEAD", f"top{ODD}.txt"):
        (first / rel).parent.mkdir(parents=True, exist_ok=True)
        (first / rel).write_text("left by the worker\n")
    assert pool.keep(repo, first, home)
    second = home / "N2"
    assert pool.take(repo, second, home, "HEAD", "node/t/N2", keep_ignored=True)
    assert (second / f"build{ODD}" / "out.o").is_file()
    assert not (second / f"src{ODD}").exists() and not (second / f"top{ODD}.txt").exists()
    assert not (second / f"d{ODD}" / ".git").exists() and (second / f"d{ODD}" / "f.txt").is_file()


def test_a_rebase_without_keep_ignored_removes_an_ignored_name_that_is_not_utf8(tmp_path):
    repo, home, first = _spare(tmp_path, {".gitignore": "build*/\n"})
    (first / f"build{ODD}").mkdir()
    (first / f"build{ODD}" / "out.o").write_text("left by the worker\n")
    assert pool.keep(repo, first, home)
    assert pool.take(repo, home / "N2", home, "HEAD", "node/t/N2")
    assert not (home / "N2" / f"build{ODD}").exists()


# A's evaluator (code A's worker wrote, run where A's admin dir is writable) points the admin dir's commondir
# at a copy of the git dir it makes in $HOME, whose config orchestrate's re-base would then read.
COMMONDIR = r"""#!/bin/sh
if [ "$ORCH_NODE" = A ]; then
cat > evil.sh <<"EOS"
admin=$(git rev-parse --git-dir); common=$(git rev-parse --git-common-dir)
rm -rf "$HOME/fake"; cp -a "$common" "$HOME/fake"
echo "$(cd "$common" && pwd)/objects" > "$HOME/fake/objects/info/alternates"
git config -f "$HOME/fake/config" core.sparseCheckout true
echo "$HOME/fake" > "$admin/commondir"
EOS
else echo b > b.txt; fi
"""
COMMONDIR_DAG = """\
topic: hostile
mode: autonomous
defaults: {max_attempts: 1, sandbox: MODE}
workers: {sh: "./work.sh"}
nodes:
  - {id: A, file_surface: [evil.sh], discipline: sh, evaluators: [{name: t, run: 'sh evil.sh'}]}
  - {id: B, file_surface: [b.txt], discipline: sh, depends_on: [A]}
"""


def test_an_admin_dir_whose_commondir_was_rewritten_is_not_reused(tmp_path, orch, mode):
    """The next node gets a fresh worktree, not one whose git reads the planted git dir, and it is not
    blamed for what A's evaluator did."""
    repo = hostile.campaign_repo(tmp_path, COMMONDIR_DAG.replace("MODE", mode), COMMONDIR)
    before = hostile.checkout_state(repo)
    result = orch("run", cwd=repo)
    text = result.out + result.err
    assert "rewrote its worktree's .git link" not in text, text
    assert "B: merged into campaign/hostile" in text, text
    assert not reused(repo, "B")
    assert repo.git("show", "campaign/hostile:b.txt") == "b"
    assert hostile.checkout_state(repo) == before


def _planted_git_dir(tmp_path, repo) -> str:
    """A copy of the repository's git dir, as the evaluator above makes one: the same refs and objects."""
    import shutil
    fake = tmp_path / "fake"
    shutil.copytree(repo / ".git", fake, symlinks=True)
    return str(fake)


def test_a_spare_whose_commondir_was_rewritten_after_it_was_pooled_is_removed(tmp_path):
    repo, home, first = _spare(tmp_path, {"f.txt": "x\n"})
    assert pool.keep(repo, first, home)
    spare = pool.folder(home) / "spare-N1"
    (git.admin_dir(spare) / "commondir").write_text(_planted_git_dir(tmp_path, repo) + "\n")
    assert not pool.take(repo, home / "N2", home, "HEAD", "node/t/N2")
    assert not spare.exists() and not (home / "N2").exists()


def test_a_worktree_whose_commondir_was_rewritten_is_not_pooled(tmp_path):
    repo, home, first = _spare(tmp_path, {"f.txt": "x\n"})
    (git.admin_dir(first) / "commondir").write_text(_planted_git_dir(tmp_path, repo) + "\n")
    assert not pool.keep(repo, first, home)
    assert not (pool.folder(home) / "spare-N1").exists()
