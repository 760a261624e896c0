"""Pooled working copies (workers/pool.py): a node that reuses a finished node's worktree sees exactly its
base, whatever the worker before it left behind, with and without the sandbox."""
from __future__ import annotations

from pathlib import Path

import pytest

from orchestrate.workers import sandbox
from tests.engine_helpers import campaign_repo, journal

# A's first attempt leaves what a careless or hostile worker leaves: an ignored build folder with a nested
# repository in it, a tracked file changed and hidden from `git add -A` (assume-unchanged: the attempt
# fails for it), a merge "in progress" and a lock mark in its worktree's admin dir. Its second attempt,
# then B, re-use that worktree; B writes down what it finds.
WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  A)
    echo A > a.txt && git add a.txt && git commit -qm A
    [ "$ORCH_ATTEMPT" = 1 ] || exit 0
    mkdir -p build/deep && echo junk > build/out.o && echo junk > build/deep/x
    mkdir -p build/nested && git -C build/nested init -q && echo n > build/nested/n.txt
    echo hostile > shared.txt && git update-index --assume-unchanged shared.txt
    admin="$(git rev-parse --git-dir)"
    git rev-parse HEAD > "$admin/MERGE_HEAD" && echo "reason" > "$admin/locked" ;;
  B)
    admin="$(git rev-parse --git-dir)"
    { echo "shared: $(cat shared.txt)"
      echo "status: $(git status --porcelain --ignored --untracked-files=all -- . ':!b.txt' | tr '\n' ' ')"
      echo "flags: $(git ls-files -v | grep -v '^H' | tr '\n' ' ')"
      for f in build "$admin/MERGE_HEAD" "$admin/locked"; do test -e "$f" && echo "left: $f"; done
      echo "a: $(cat a.txt)"
    } > b.txt 2>&1 || true
    git add b.txt && git commit -qm B ;;
esac
"""
DAG = """\
topic: pool
workers: {{sh: "./work.sh"}}
defaults: {{sandbox: {mode}, max_attempts: 2}}
nodes:
  - {{id: A, title: leaves a mess, depends_on: [], file_surface: [a.txt], discipline: sh}}
  - {{id: B, title: looks around, depends_on: [A], file_surface: [b.txt], discipline: sh}}
"""
FILES = {".gitignore": "build/\n", "shared.txt": "original\n"}
BWRAP = sandbox.probe()


@pytest.mark.parametrize("mode", ["none", pytest.param("bwrap", marks=pytest.mark.skipif(
    BWRAP is not None, reason=f"bubblewrap does not work here: {BWRAP}"))])
def test_a_reused_worktree_holds_exactly_the_new_base(tmp_path, orch, mode):
    repo = campaign_repo(tmp_path, DAG.format(mode=mode), WORKER, FILES)
    done = orch("run", "--no-interactive", cwd=repo)
    assert done.rc == 75, done.out + done.err
    adds = {e["context"]["node"]: e["context"] for e in journal(repo, "pool")
            if e["kind"] == "result" and e["context"].get("effect") == "worktree-add"}
    assert adds["B"].get("reused"), "B did not reuse A's working copy: this test would prove nothing"
    failed = [e["context"]["feedback"] for e in journal(repo, "pool") if e["kind"] == "node"
              and e["context"].get("node") == "A" and "though the worker" in e["context"].get("feedback", "")]
    assert failed and "shared.txt" in failed[0]  # A's first attempt, for the change it hid
    seen = dict(line.partition(": ")[::2] for line in repo.git("show", "campaign/pool:b.txt").splitlines())
    assert seen == {"shared": "original", "status": "", "flags": "", "a": "A"}  # A's merge, and nothing else
    assert repo.git("show", "campaign/pool:shared.txt") == "original"


# A commits an evaluator that, run on its worktree after it was cleared for judging, rewrites f.py at the same
# size with other text in its `$Id: ... $` (git cleans it to the same blob); B writes down the f.py it finds.
PLANTING_WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  A) cat > plant.py <<'PY'
d = open("f.py").read()
i, j = d.index("$Id: ") + 5, d.rindex(" $")
open("f.py", "r+").write(d[:i] + '"; x = 2; "'.ljust(j - i) + d[j:])
PY
     git add plant.py && git commit -qm A ;;
  B) cp f.py b.txt && git add b.txt && git commit -qm B ;;
esac
"""
PLANTING_DAG = """\
topic: pool
workers: {{sh: "./work.sh"}}
defaults: {{sandbox: {mode}, max_attempts: 1}}
nodes:
  - {{id: A, depends_on: [], file_surface: [plant.py], discipline: sh, evaluators: [{{name: plant, run: "python3 plant.py"}}]}}
  - {{id: B, depends_on: [A], file_surface: [b.txt], discipline: sh}}
"""


@pytest.mark.parametrize("mode", ["none", pytest.param("bwrap", marks=pytest.mark.skipif(
    BWRAP is not None, reason=f"bubblewrap does not work here: {BWRAP}"))])
def test_what_a_nodes_evaluator_rewrote_behind_a_conversion_is_not_the_next_nodes_base(tmp_path, orch, mode):
    repo = campaign_repo(tmp_path, PLANTING_DAG.format(mode=mode), PLANTING_WORKER,
                         {".gitattributes": "f.py ident\n", "f.py": "x = 1  # $Id$\n"})
    seen = _what_b_saw(repo, orch)
    assert seen.startswith("x = 1  # $Id: ") and "x = 2" not in seen, seen


GITLINK_WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  A) echo A > a.txt && git add a.txt && git commit -qm A
     echo planted > sub/planted.txt && mkdir sub/.git && echo "ref: refs/heads/x" > sub/.git/HEAD ;;
  B) echo "sub: $(ls -A sub | tr '\n' ' ')" > b.txt && git add b.txt && git commit -qm B ;;
esac
"""


@pytest.mark.parametrize("mode", ["none", pytest.param("bwrap", marks=pytest.mark.skipif(
    BWRAP is not None, reason=f"bubblewrap does not work here: {BWRAP}"))])
def test_what_a_node_left_in_a_gitlinks_folder_is_gone_for_the_next(tmp_path, orch, mode):
    """No git listing shows what a gitlink's folder holds (a submodule checked out, files written there): the
    re-base empties it, as a fresh checkout leaves it."""
    repo = campaign_repo(tmp_path, DAG.format(mode=mode).replace("max_attempts: 2", "max_attempts: 1"),
                         GITLINK_WORKER, FILES)
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{repo.git('rev-parse', 'HEAD')},sub")
    repo.git("commit", "-qm", "a gitlink")
    assert _what_b_saw(repo, orch) == "sub:"


# A leaves a FIFO and a socket at the top and in a tracked folder; B writes down every one it finds.
ODD_WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  A) echo A > a.txt && git add a.txt && git commit -qm A
     mkfifo pipe src/pipe
     python3 -c 'import socket; [socket.socket(socket.AF_UNIX).bind(p) for p in ("sock", "src/sock")]' ;;
  B) echo "odd: $(find . -path ./.git -prune -o \( -type p -o -type s \) -print | sort | tr '\n' ' ')" > b.txt
     git add b.txt && git commit -qm B ;;
esac
"""


@pytest.mark.parametrize("mode", ["none", pytest.param("bwrap", marks=pytest.mark.skipif(
    BWRAP is not None, reason=f"bubblewrap does not work here: {BWRAP}"))])
def test_fifos_and_sockets_a_node_left_are_gone_for_the_next(tmp_path, orch, mode):
    """git lists neither a FIFO nor a socket as untracked, so the clearing of what git does not track left them
    for the next node (a FIFO it opens blocks it)."""
    repo = campaign_repo(tmp_path, DAG.format(mode=mode).replace("max_attempts: 2", "max_attempts: 1"),
                         ODD_WORKER, dict(FILES, **{"src/keep.txt": "k\n"}))
    assert _what_b_saw(repo, orch) == "odd:"


def _what_b_saw(repo, orch) -> str:
    """Run the campaign; the b.txt B merged, once B is known to have re-used A's worktree."""
    done = orch("run", "--no-interactive", cwd=repo)
    assert done.rc == 75, done.out + done.err
    adds = {e["context"]["node"]: e["context"] for e in journal(repo, "pool")
            if e["kind"] == "result" and e["context"].get("effect") == "worktree-add"}
    assert adds["B"].get("reused"), "B did not reuse A's working copy: this test would prove nothing"
    return repo.git("show", "campaign/pool:b.txt")


def test_nothing_is_pooled_after_close_and_no_worktree_is_left(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG.format(mode="none"), WORKER, FILES)
    assert orch("run", "--no-interactive", cwd=repo).rc == 75
    assert repo.git("worktree", "list", "--porcelain").count("worktree ") == 1
    assert not (repo / ".scratch" / "worktrees" / "pool" / ".pool").exists()


def test_a_spare_whose_git_file_was_rewritten_is_not_reused(tmp_path):
    """A worker that points its worktree's .git file at a repository of its own: the spare is removed and
    the caller makes a fresh working copy."""
    from orchestrate import git
    from orchestrate.workers import pool
    from tests.helpers import make_repo
    repo = make_repo(tmp_path / "repo", {"f.txt": "x\n"})
    home = tmp_path / "trees"
    first = home / "N1"
    git.worktree_add(repo, first, "node/t/N1", "HEAD")
    pool.record(first, home)
    assert pool.keep(repo, first, home)
    spare = pool.folder(home) / "spare-N1"
    (tmp_path / "evil").mkdir()
    git.init_repo(tmp_path / "evil")
    (spare / ".git").write_text(f"gitdir: {tmp_path / 'evil' / '.git'}\n")
    assert not pool.take(repo, home / "N2", home, "HEAD", "node/t/N2")
    assert not spare.exists() and not (home / "N2").exists()
    assert str(spare) not in repo.git("worktree", "list")


def test_a_spare_pooled_by_another_process_is_removed_not_reused(tmp_path):
    from orchestrate import git
    from orchestrate.workers import pool
    from tests.helpers import make_repo
    repo = make_repo(tmp_path / "repo", {"f.txt": "x\n"})
    home = tmp_path / "trees"
    spare = pool.folder(home) / "spare-N1"
    git.worktree_add(repo, spare, "node/t/N1", "HEAD")  # on disk, but this process never pooled it
    assert not pool.take(repo, home / "N2", home, "HEAD", "node/t/N2")
    assert not spare.exists()


def test_as_many_spares_are_kept_as_worktrees_were_held_at_once(tmp_path, monkeypatch):
    """A layered layer holds all its worktrees until it is judged, then lets them all go: the next layer
    re-bases them instead of checking all but SPARES out anew; never more than were held at once."""
    from orchestrate import git
    from orchestrate.workers import pool
    from tests.helpers import make_repo
    monkeypatch.setattr(pool, "_peak", 0)
    monkeypatch.setattr(pool, "_made", {})  # what earlier tests in this process left recorded
    monkeypatch.setattr(pool, "_spares", {})
    monkeypatch.setattr(pool, "SPARES", 2)
    repo = make_repo(tmp_path / "repo", {"f.txt": "x\n"})
    home = tmp_path / "trees"
    held = [home / f"N{i}" for i in range(4)]
    for path in held:
        git.worktree_add(repo, path, f"node/t/{path.name}", "HEAD")
        pool.record(path, home)
    assert [pool.keep(repo, path, home) for path in held] == [True] * 4
    fifth = home / "N4"
    git.worktree_add(repo, fifth, "node/t/N4", "HEAD")
    pool.record(fifth, home)
    assert not pool.keep(repo, fifth, home)  # four were held at once: a fifth spare is one too many
    assert all(pool.take(repo, home / f"M{i}", home, "HEAD", f"node/t/M{i}") for i in range(4))


def _pooled(tmp_path, monkeypatch, files=None):
    """A repository, and a worktree of it (N1 on node/t/N1) made and recorded as the engine does."""
    from orchestrate import git
    from orchestrate.workers import pool
    from tests.helpers import make_repo
    monkeypatch.setattr(pool, "_made", {})
    monkeypatch.setattr(pool, "_spares", {})
    repo = make_repo(tmp_path / "repo", files or {"f.txt": "x\n"})
    home = tmp_path / "trees"
    git.worktree_add(repo, home / "N1", "node/t/N1", "HEAD")
    pool.record(home / "N1", home)
    return repo, home


def _listed(repo) -> dict[str, str]:
    """git's own view of the worktrees: path -> its branch, or "detached"."""
    from orchestrate import git
    return {Path(w["worktree"]).name: w.get("branch", "detached").removeprefix("refs/heads/")
            for w in git.worktrees(repo)}


def test_a_spare_moved_without_git_is_one_git_agrees_with(tmp_path, monkeypatch):
    """keep and take move a worktree without a git process: git must then see it where it is, on the branch
    (or detached) as it would after its own `worktree move` and `update-ref --no-deref HEAD`."""
    from orchestrate import git
    from orchestrate.workers import pool
    repo, home = _pooled(tmp_path, monkeypatch)
    moves = []
    monkeypatch.setattr(git, "worktree_move", lambda *a: moves.append(a) or False)  # git's move is not used
    assert pool.keep(repo, home / "N1", home)
    assert _listed(repo)["spare-N1"] == "detached" and "N1" not in _listed(repo)
    assert git.out(pool.folder(home) / "spare-N1", "rev-parse", "--show-toplevel").endswith("spare-N1")
    git.worktree_add(repo, tmp_path / "elsewhere", "node/t/N1", "HEAD", new_branch=False)  # the branch let go of
    assert pool.take(repo, home / "N2", home, "HEAD", "node/t/N2")
    assert _listed(repo)["N2"] == "node/t/N2" and not moves
    assert git.out(home / "N2", "status", "--porcelain") == "" and "spare-N1" not in _listed(repo)


def test_what_the_move_by_hand_writes_keeps_the_permissions_git_gave(tmp_path, monkeypatch):
    """A shared repository's other users run `git worktree prune` (`git gc` does): a gitdir they cannot read
    would have their git delete a live worktree's admin dir."""
    import stat
    from orchestrate import git
    from orchestrate.workers import pool
    repo, home = _pooled(tmp_path, monkeypatch)
    repo.git("config", "core.sharedRepository", "group")
    admin = git.admin_dir(home / "N1")
    modes = lambda: {n: stat.S_IMODE((admin / n).stat().st_mode) for n in ("HEAD", "gitdir", "index")}  # noqa: E731
    (admin / "HEAD").chmod(0o664)
    before = modes()
    assert pool.keep(repo, home / "N1", home)
    assert modes() == before
    assert pool.take(repo, home / "N2", home, "HEAD", "node/t/N2")
    assert modes()["gitdir"] == before["gitdir"]


@pytest.mark.parametrize("mark", ["locked", "modules", "gitlink"])
def test_a_worktree_git_must_judge_is_moved_by_git(tmp_path, monkeypatch, mark):
    """A lock mark, a submodule's git dir, a gitlink in the index: git refuses to move a worktree with a
    submodule checked out, and decides the rest; the move by hand steps aside for each."""
    from orchestrate import git, git_files
    repo, home = _pooled(tmp_path, monkeypatch)
    admin = git.admin_dir(home / "N1")
    if mark == "gitlink":
        git.git(home / "N1", "update-index", "--add", "--cacheinfo", f"160000,{git.rev_parse(repo, 'HEAD')},sub")
    else:
        (admin / mark).mkdir() if mark == "modules" else (admin / mark).write_text("reason\n")
    assert not git_files.move_worktree(home / "N1", home / "N9", admin)
    assert (home / "N1").is_dir() and not (home / "N9").exists()
    # git refuses the first two, and moves the third (its submodule is not checked out)
    assert git.worktree_move(repo, home / "N1", home / "N9") == (mark == "gitlink")


@pytest.mark.timeout(60)
def test_a_fifo_planted_at_a_spares_index_neither_hangs_nor_is_used(tmp_path, monkeypatch):
    """A worker without the sandbox can write a spare's admin dir; git's move would read a FIFO there for ever."""
    import os
    from orchestrate import git
    from orchestrate.workers import pool
    repo, home = _pooled(tmp_path, monkeypatch)
    assert pool.keep(repo, home / "N1", home)
    index = git.admin_dir(pool.folder(home) / "spare-N1") / "index"
    index.unlink()
    os.mkfifo(index)
    assert not pool.take(repo, home / "N2", home, "HEAD", "node/t/N2")
    assert not (home / "N2").exists() and not (pool.folder(home) / "spare-N1").exists()


# A leaves an ignored build cache, a `.gitignore` of its own that makes its planted file (and itself) look
# ignored, so that nothing of it is committed as a leftover, and a repository planted in a tracked folder (no
# git listing shows a `.git` below the top). B, reusing A's working copy, writes down what it finds.
CACHE_WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  A)
    echo A > a.txt && git add a.txt && git commit -qm A
    mkdir -p build && echo warm > build/cache.o
    printf '*\n' > sub/.gitignore && echo planted > sub/planted.txt
    mkdir sub/.git && echo "ref: refs/heads/evil" > sub/.git/HEAD ;;
  B)
    for f in build/cache.o sub/.gitignore sub/planted.txt sub/.git; do
      test -e "$f" && echo "$f" >> b.txt
    done
    echo end >> b.txt && git add b.txt && git commit -qm B ;;
esac
"""


@pytest.mark.parametrize("where", ["none", "dag", "config"])
def test_ignored_files_survive_only_with_keep_ignored(tmp_path, orch, where):
    dag = DAG.format(mode="none").replace("sandbox: none", "sandbox: none, keep_ignored: true" if where == "dag"
                                          else "sandbox: none")
    repo = campaign_repo(tmp_path, dag, CACHE_WORKER, {**FILES, "sub/kept.txt": "tracked\n"})
    if where == "config":
        (repo / ".ledger" / "config.yaml").write_text("sandbox: {keep_ignored: true}\n")
    seen = _what_b_saw(repo, orch).splitlines()
    assert seen == (["end"] if where == "none" else ["build/cache.o", "end"])


def test_a_bad_keep_ignored_setting_is_one_line_naming_it(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG.format(mode="none").replace("sandbox: none", "sandbox: none, keep_ignored: yes please"),
                         WORKER, FILES)
    r = orch("validate", cwd=repo)
    assert r.rc == 1
    assert r.out.splitlines() == [f"{repo / '.ledger' / 'state' / 'dag.yaml'}:3: defaults.keep_ignored: expected true "
                                  "or false, got text"]
    repo = campaign_repo(tmp_path / "c", DAG.format(mode="none"), WORKER, FILES)
    (repo / ".ledger" / "config.yaml").write_text("sandbox: {keep_ignored: sometimes}\n")
    r = orch("validate", cwd=repo)
    assert r.rc == 1
    assert r.out.splitlines() == [f"{repo / '.ledger' / 'config.yaml'}:1: sandbox.keep_ignored: `sometimes` is not "
                                  "true or false"]


def test_resume_after_a_runner_killed_as_it_pooled_a_worktree_still_on_its_branch(tmp_path):
    """`keep` moves the worktree into the pool, then lets go of its branch: a kill in between left a spare
    holding a landed node's branch, and resume could not check that branch out again (exit 2, every time)."""
    import os
    import subprocess
    import sys
    dag = ("topic: k\nworkers: {sh: ./work.sh}\ndefaults: {sandbox: none}\nschedule: layered\nnodes:\n"
           "  - {id: A, depends_on: [], file_surface: [a.txt], discipline: sh}\n"
           "  - {id: B, depends_on: [], file_surface: [b.txt], discipline: sh}\n"
           "  - {id: C, depends_on: [A, B], file_surface: [c.txt], discipline: sh}\n")
    repo = campaign_repo(tmp_path, dag, '#!/bin/sh\necho "$ORCH_NODE" > "$(echo $ORCH_NODE | tr A-Z a-z).txt"\n')

    def cli(*args, fault=None):
        env = {k: v for k, v in os.environ.items() if k != "ORCHESTRATE_FAULT"}
        env.update({"CI": "true", **({"ORCHESTRATE_FAULT": fault} if fault else {})})
        return subprocess.run([sys.executable, "-m", "orchestrate", *args, "--quiet"], cwd=repo, env=env,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    assert cli("run", fault="merge:1").returncode == -9  # A merged, not yet recorded; B landed, its worktree kept
    worktrees = repo / ".scratch" / "worktrees" / "k"
    (worktrees / ".pool").mkdir(exist_ok=True)
    repo.git("worktree", "move", str(worktrees / "B"), str(worktrees / ".pool" / "spare-B"))  # still on its branch
    done = cli("resume", "--topic", "k")
    assert done.returncode == 75, done.stdout + done.stderr
    assert sorted(e["context"]["node"] for e in journal(repo, "k") if e["kind"] == "merge") == ["A", "B", "C"]


def test_a_warning_about_an_ignore_file_git_will_not_follow_does_not_fail_the_look(tmp_path, monkeypatch):
    """git reads no rules from a committed .gitignore that is a link, and says so on every look: it then lists
    more, never less, so the look stands (a folder it cannot open would fail it: test_hostile_workers)."""
    import os
    from orchestrate import git
    from orchestrate.workers import pool
    repo, home = _pooled(tmp_path, monkeypatch)
    tree = home / "N1"
    base = git.out(tree, "rev-parse", "HEAD")
    (tree / "rules").write_text("ignored.txt\n")
    os.symlink("rules", tree / ".gitignore")
    git.git(tree, "add", "-A")
    git.git(tree, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a linked ignore file")
    (tree / "ignored.txt").write_text("listed: the rules are not read\n")
    head = git.out(tree, "rev-parse", "HEAD")
    assert "unable to access '.gitignore'" in git.git(tree, "status", "--porcelain").stderr
    assert pool.unseen(tree, base, head) == ["ignored.txt"]


# A worker without the sandbox may still run (a child left behind) while its worktree is re-based for the next
# node. Between git's listing of what to remove and the removal, it swaps a folder on the way for a link to a
# folder of the user's that holds an entry of the same name: the removal must not follow the link. Each test
# makes the swap at that moment, from a hook on what the re-base calls.
def _yours(tmp_path, name: str) -> Path:
    yours = tmp_path / "yours"
    (yours / name).mkdir(parents=True)
    (yours / name / "notes.txt").write_text("the user's own\n")
    return yours


def _swap(folder: Path, yours: Path) -> None:
    folder.rename(folder.with_name(folder.name + ".moved"))
    folder.symlink_to(yours)


def test_a_folder_swapped_for_a_link_after_git_listed_the_leftovers_is_not_followed(tmp_path, monkeypatch):
    from orchestrate import git
    from orchestrate.workers import pool
    repo, home = _pooled(tmp_path, monkeypatch, {"sub/f.txt": "x\n"})
    tree = home / "N1"
    (tree / "sub" / "junk").mkdir()
    (tree / "sub" / "junk" / "notes.txt").write_text("left by the worker\n")
    yours = _yours(tmp_path, "junk")
    real = git.git

    def listing_then_swap(where, *args, **kw):
        done = real(where, *args, **kw)
        if "--others" in args:
            _swap(tree / "sub", yours)
        return done
    monkeypatch.setattr(git, "git", listing_then_swap)
    rebased = pool.rebase(tree, "HEAD", None)
    assert (yours / "junk" / "notes.txt").read_text() == "the user's own\n"
    assert not rebased  # the spare is then removed


def test_a_folder_swapped_for_a_link_while_a_gitlinks_folder_is_emptied_is_not_followed(tmp_path, monkeypatch):
    import os
    from orchestrate import git
    from orchestrate.workers import pool
    from tests.helpers import make_repo
    monkeypatch.setattr(pool, "_made", {})
    repo = make_repo(tmp_path / "repo", {"f.txt": "x\n"})
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{repo.git('rev-parse', 'HEAD')},sub/mod")
    repo.git("commit", "-qm", "a gitlink")
    tree = tmp_path / "trees" / "N1"
    git.worktree_add(repo, tree, "node/t/N1", "HEAD")
    (tree / "sub" / "mod" / "notes.txt").write_text("left by the worker\n")
    yours = _yours(tmp_path, "mod")
    real = os.listdir

    def listing_then_swap(where=".", *args):
        listed = real(where, *args)
        named = os.readlink(f"/proc/self/fd/{where}") if isinstance(where, int) else str(where)
        if named.endswith("sub/mod") and not (tree / "sub").is_symlink():
            _swap(tree / "sub", yours)
        return listed
    monkeypatch.setattr(os, "listdir", listing_then_swap)
    pool.rebase(tree, "HEAD", None)
    assert (yours / "mod" / "notes.txt").read_text() == "the user's own\n"
    assert not (tree / "sub.moved" / "mod" / "notes.txt").exists()  # it went where it was


def test_removal_below_a_folder_never_goes_through_a_link(tmp_path):
    from orchestrate import removal
    yours = _yours(tmp_path, "junk")
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "sub").symlink_to(yours)
    with pytest.raises(OSError):
        removal.remove_below(tmp_path / "tree", "sub/junk")
    with pytest.raises(OSError):
        removal.empty_below(tmp_path / "tree", "sub/junk")
    with pytest.raises(OSError):
        removal.empty_below(tmp_path / "tree", "sub")
    removal.remove_below(tmp_path / "tree", "sub")  # the link itself, not what it names
    removal.remove_below(tmp_path / "tree", "gone/sub/x")  # nothing there: nothing to do
    assert not (tmp_path / "tree" / "sub").is_symlink()
    assert (yours / "junk" / "notes.txt").read_text() == "the user's own\n"
    with pytest.raises(ValueError):
        removal.remove_below(tmp_path / "tree", "../yours")


def test_removal_below_a_file_finds_nothing_to_remove(tmp_path):
    """The re-base looks for a planted `.git` in every folder the base tracks, or more (a folder since removed,
    which may be a file now): below a file there is nothing."""
    from orchestrate import removal
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "sub").write_text("a file where a folder was\n")
    removal.remove_below(tmp_path / "tree", "sub/.git")
    removal.empty_below(tmp_path / "tree", "sub/x")
    assert (tmp_path / "tree" / "sub").read_text() == "a file where a folder was\n"


def test_a_repository_planted_in_a_folder_a_later_base_added_is_removed_without_listing_the_tree(tmp_path,
                                                                                                  monkeypatch):
    """The tracked folders, where a planted `.git` is looked for, are listed once (`ls-tree`); for the next base
    they are derived from the paths that changed since (the kept differ), so a folder the new base adds counts."""
    from orchestrate import git
    from orchestrate.workers import pool, untracked
    monkeypatch.setattr(untracked, "_folders", ("", set()))
    repo, home = _pooled(tmp_path, monkeypatch, {"sub/f.txt": "x\n"})
    tree = home / "N1"
    first = repo.head()
    assert pool.rebase(tree, first, None)
    later = repo.commit("a folder", {"newdir/deeper/x.txt": "x\n"})
    (tree / "newdir" / "deeper" / ".git").mkdir(parents=True)
    (tree / "newdir" / "deeper" / ".git" / "HEAD").write_text("ref: refs/heads/planted\n")
    real, asked = git.git, []
    monkeypatch.setattr(git, "git", lambda where, *args, **kw: asked.append(args) or real(where, *args, **kw))
    assert pool.rebase(tree, later, None)
    assert not (tree / "newdir" / "deeper" / ".git").exists()
    assert (tree / "newdir" / "deeper" / "x.txt").read_text() == "x\n"
    assert not [args for args in asked if "ls-tree" in args]
    assert untracked._folders == (later, {"sub", "newdir", "newdir/deeper"})


def test_a_spare_that_cannot_be_removed_is_moved_aside_not_left_where_the_next_checkout_goes(tmp_path, monkeypatch):
    """A re-base that fails removes the spare; when even that fails (a folder that cannot be removed), the
    spare must not stay at the place the caller then checks a fresh worktree out (`already exists`: exit 2)."""
    from orchestrate import git, git_files
    from orchestrate.workers import pool
    repo, home = _pooled(tmp_path, monkeypatch)
    assert pool.keep(repo, home / "N1", home)
    monkeypatch.setattr(pool, "rebase", lambda *args, **kw: False)
    remove = git_files.removal.remove
    monkeypatch.setattr(git_files.removal, "remove", lambda path: (_ for _ in ()).throw(OSError("cannot")))
    assert not pool.take(repo, home / "N2", home, git.rev_parse(repo, "HEAD"), "node/t/N2")
    assert not (home / "N2").exists()
    git.worktree_add(repo, home / "N2", "node/t/N2", "HEAD")
    from orchestrate import removal
    assert [t.name.startswith("trash-N2-") for t in removal.set_aside_in(home / ".pool")] == [True]
    monkeypatch.setattr(git_files.removal, "remove", remove)  # at resume it can be removed: it is, not left
    pool.drop_left(repo, home)
    assert removal.set_aside_in(home / ".pool") == [] and (home / "N2").is_dir()


def test_tracked_folders_derived_from_the_diff_follow_a_folder_that_became_a_link_and_names_not_utf8(tmp_path,
                                                                                                      monkeypatch):
    """rv24: a tracked folder that became a tracked link stayed among the folders (every re-base after it
    failed on the link), and a folder name that is not UTF-8 came back from the differ as another name (a
    `.git` planted in it stayed for the next node)."""
    import os
    from orchestrate.workers import pool, untracked
    monkeypatch.setattr(untracked, "_folders", ("", set()))
    repo, home = _pooled(tmp_path, monkeypatch, {"a/f.txt": "x\n", "t/g.txt": "y\n"})
    tree = home / "N1"
    assert pool.rebase(tree, repo.head(), None)
    repo.git("rm", "-rq", "a")
    os.symlink("t", repo / "a")
    odd = os.fsdecode(b"d\xff")
    (repo / odd).mkdir()
    (repo / odd / "h.txt").write_text("z\n")
    later = repo.commit("a is a link now, and a folder whose name is not UTF-8")
    (tree / odd / ".git").mkdir(parents=True)
    (tree / odd / ".git" / "HEAD").write_text("ref: refs/heads/planted\n")
    assert pool.rebase(tree, later, None)
    assert not (tree / odd / ".git").exists()
    assert pool.rebase(tree, repo.commit("one more", {"c.txt": "z\n"}), None)


def test_removing_a_worktree_a_link_took_the_place_of_leaves_the_worktree_it_names(tmp_path):
    """rv25 asked: a folder set aside (or a worktree) whose place a worker without the sandbox gave to a link to
    one of your worktrees. The link goes, before the admin dirs naming the place are looked for: yours stays."""
    import os
    from orchestrate import git_files
    from tests.helpers import make_repo
    repo = make_repo(tmp_path / "repo", {"f.txt": "x\n"})
    yours = tmp_path / "yours"
    repo.git("worktree", "add", "-q", "-b", "feature", str(yours))
    admin = Path(repo.git("-C", str(yours), "rev-parse", "--absolute-git-dir"))
    (tmp_path / "pool").mkdir()
    link = tmp_path / "pool" / "trash-N1-1-0"
    os.symlink(yours, link)
    git_files.remove_worktree(repo / ".git", link)
    assert not os.path.lexists(link) and (admin / "HEAD").is_file() and (yours / "f.txt").is_file()


def test_a_file_rewritten_in_the_second_its_entry_was_written_does_not_reach_the_next_node(tmp_path, monkeypatch):
    """git compares whole seconds of ctime and mtime: an entry refreshed in the second its index was written (the
    file's mode or times changed, its content did not: its mtime stays older, so git does not take it for racy)
    passes a rewrite at the same size in that second, its mtime put back, for unchanged. A re-base from that
    index would hand the rewritten file to the next node as part of its base."""
    import os
    from orchestrate import git
    from orchestrate.workers import index_file, pool
    from tests.helpers import make_repo
    monkeypatch.setattr(pool, "_made", {})
    monkeypatch.setattr(pool, "_spares", {})
    repo = make_repo(tmp_path / "repo", {"f.txt": "hello\n"})
    home = tmp_path / "trees"
    git.worktree_add(repo, home / "N1", "node/t/N1", "HEAD")
    tree, old = home / "N1", 946684800_500000000
    index = git.admin_dir(tree) / "index"
    for _ in range(50):  # until the refresh and the rewrite fall in one second, as a fast node's can
        (tree / "f.txt").write_text("hello\n")
        os.utime(tree / "f.txt", ns=(old, old))  # a new ctime, an old mtime: the entry is refreshed, not racy
        git.git(tree, "update-index", "-q", "--refresh")
        refreshed = os.lstat(tree / "f.txt").st_ctime_ns // 10**9
        os.utime(index, (refreshed, refreshed))  # the index written in that second
        pool.record(tree, home)
        with open(tree / "f.txt", "r+b") as fh:  # in place: the same inode
            fh.write(b"HELLO\n")
        os.utime(tree / "f.txt", ns=(old, old))
        if os.lstat(tree / "f.txt").st_ctime_ns // 10**9 == refreshed:
            break
    else:
        raise AssertionError("a refresh and a rewrite never fell in one second in 50 tries")
    assert git.out(tree, *index_file.STAT_CHECKS, "diff-files", "--name-only") == ""  # git's own check passes it over
    assert pool.keep(repo, tree, home)
    assert pool.take(repo, home / "N2", home, "HEAD", "node/t/N2")
    assert (home / "N2" / "f.txt").read_text() == "hello\n"


def test_a_file_its_conversion_cleans_to_the_same_blob_does_not_reach_the_next_node(tmp_path, monkeypatch):
    """What judged a node (its evaluators run the worker's code) rewrites a tracked `ident` file at the same size,
    other text inside its `$Id: ... $`: git cleans it to the same blob, so its checkout keeps it, and the next
    node would take it for part of its base (and its first look would record its stat as orchestrate's)."""
    from orchestrate.workers import pool
    repo, home = _pooled(tmp_path, monkeypatch, {".gitattributes": "f.py ident\n", "f.py": "x = 1  # $Id$\n"})
    tree = home / "N1"
    checked_out = (tree / "f.py").read_text()
    planted = checked_out.replace(checked_out[checked_out.index("$Id: ") + 5:checked_out.rindex(" $")],
                                  '"; import os; x = 2; "'.ljust(40))
    assert len(planted) == len(checked_out) and planted != checked_out
    (tree / "f.py").write_text(planted)
    assert repo.git("-C", str(tree), "status", "--porcelain") == ""  # git takes it for unchanged
    assert pool.keep(repo, tree, home)
    assert pool.take(repo, home / "N2", home, "HEAD", "node/t/N2")
    assert (home / "N2" / "f.py").read_text() == checked_out


def test_what_git_neither_compares_nor_tracks_is_not_handed_to_the_next_node(tmp_path, monkeypatch):
    """rv34, rv35: a file's mode bits (but the executable one) and hard links, a folder's mode, xattrs and default
    ACL (the worktree's own folder's too), a folder moved
    aside behind a link to it (read through the link, every file is the one recorded): git's checkout passes
    over each, so the next node got them."""
    import os
    import stat
    import struct
    from orchestrate.workers import pool
    repo, home = _pooled(tmp_path, monkeypatch, {"f.txt": "x\n", "d/g.txt": "g\n", "e/h.txt": "h\n"})
    tree = home / "N1"
    folder_mode = stat.S_IMODE(os.stat(tree / "d").st_mode)
    os.chmod(tree / "f.txt", 0o444)
    os.link(tree / "f.txt", tmp_path / "elsewhere")
    os.chmod(tree / "e", 0o1777)
    os.setxattr(tree / "e", "user.note", b"from the last node")
    acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, 7, 0xFFFFFFFF) for tag in (0x01, 0x04, 0x20))
    os.setxattr(tree / "e", "system.posix_acl_default", acl)  # rwx for all: what the next node makes there
    os.setxattr(tree, "user.note", b"from the last node")
    os.rename(tree / "d", tree / "moved")
    os.symlink("moved", tree / "d")
    assert pool.keep(repo, tree, home)
    assert pool.take(repo, home / "N2", home, "HEAD", "node/t/N2")
    tree = home / "N2"
    assert stat.S_IMODE(os.stat(tree / "f.txt").st_mode) != 0o444
    assert os.stat(tree / "f.txt").st_ino != os.stat(tmp_path / "elsewhere").st_ino
    assert stat.S_IMODE(os.stat(tree / "e").st_mode) == folder_mode and os.listxattr(tree / "e") == []
    assert os.listxattr(tree) == []
    assert not (tree / "d").is_symlink() and (tree / "d" / "g.txt").read_text() == "g\n"
    assert not (tree / "moved").exists()


def test_a_process_left_working_in_a_spare_is_ended_before_the_next_node_gets_it(tmp_path, monkeypatch):
    """rv34: without the sandbox, what an evaluator left (its environment wiped, in a session of its own: no tag
    or subreaper pass ends it before the next worker returns) works on in the folder it was in, which the pool
    moves, with the files in it, to the next node."""
    import subprocess
    from orchestrate import git
    from orchestrate.workers import pool
    repo, home = _pooled(tmp_path, monkeypatch)
    left = [subprocess.Popen(["sh", "-c", "echo started; read line"], cwd=where, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE) for where in (home / "N1", git.admin_dir(home / "N1"))]
    try:  # the second in the worktree's admin dir, which goes with it (its HEAD, its index)
        assert all(kid.stdout.readline() == b"started\n" for kid in left)
        assert pool.keep(repo, home / "N1", home)
        assert pool.take(repo, home / "N2", home, "HEAD", "node/t/N2")
        assert [kid.wait(timeout=10) for kid in left] == [-9, -9]
    finally:
        for kid in left:
            kid.communicate(b"\n" if kid.poll() is None else None)


def test_a_file_system_that_keeps_no_xattrs_still_pools(tmp_path, monkeypatch):
    """rv35: listing a folder's xattrs fails with ENOTSUP on NFSv3 and some FUSE mounts: every spare was thrown
    away, and every node checked the repository out anew."""
    import errno
    import os
    from orchestrate.workers import pool
    repo, home = _pooled(tmp_path, monkeypatch, {"d/f.txt": "x\n"})

    def unsupported(path, follow_symlinks=True):
        raise OSError(errno.ENOTSUP, "Operation not supported")
    monkeypatch.setattr(os, "listxattr", unsupported)
    assert pool.keep(repo, home / "N1", home)
    assert pool.take(repo, home / "N2", home, "HEAD", "node/t/N2")
