"""recorder/snapshot.py: the tree a recorder commit holds, built from the last commit's tree and the files'
stat data, is the tree `git add -A` (other campaigns' files excluded) and `git write-tree` make; where it
cannot tell as git would, it says so and git stages."""
from __future__ import annotations

import os
import random
import subprocess
import time

import pytest

from orchestrate import git_files, git_pipe, stamps
from orchestrate.recorder.snapshot import Snapshot, others_pathspec
from tests.helpers import make_repo

FILES = {"config.yaml": "coherence: {}\n", "state/t/journal.jsonl": "{}\n", "state/t/dag.yaml": "nodes: []\n",
         "state/o/journal.jsonl": "{}\n", "log/2026-01-01-t.md": "# t\n", "log/2026-01-01-o.md": "# o\n",
         "gates/README.md": "gates\n", "state/README.md": "state\n"}


@pytest.fixture
def ledger(tmp_path):
    repo = make_repo(tmp_path / "ledger", FILES)
    yield repo
    git_pipe.close_all()


def staged(repo, base: str) -> str:
    """What git's own staging writes on `base`, in an index of its own (the repository's is not touched)."""
    env = dict(os.environ, GIT_INDEX_FILE=str(repo.parent / "scratch-index"))
    others = sorted(p.name for p in (repo / "state").iterdir() if p.is_dir() and p.name != "t")

    def run(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True,
                              text=True).stdout.strip()
    run("read-tree", base)
    run("add", "-A", "--", ".", *others_pathspec(others))
    return run("write-tree")


def base_of(repo) -> str:
    return repo.git("rev-parse", "HEAD^{tree}")


def test_changed_and_removed_files_make_the_tree_git_would(ledger):
    snap = Snapshot(ledger, "t")
    base = base_of(ledger)
    snap.learn(base)  # as after the first commit of a process, which git stages
    assert snap.tree(base) == base  # nothing changed: the same tree, nothing written
    (ledger / "state/t/journal.jsonl").write_text("{}\n{}\n")
    (ledger / "config.yaml").unlink()
    (ledger / "gates/README.md").unlink()  # its folder goes with it
    tree = snap.tree(base)
    assert subprocess.run(["git", "-C", str(ledger), "cat-file", "-e", tree]).returncode != 0  # not written yet
    sha = snap.commit(tree, [ledger.head()], "step", {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x",
                                                      "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@x"})
    # written with the commit, every new tree and blob of it (in one round trip, ids worked out before git's)
    assert ledger.git("rev-parse", f"{sha}^{{tree}}") == tree
    assert ledger.git("show", f"{sha}:state/t/journal.jsonl") == "{}\n{}"
    assert tree == staged(ledger, base)


def test_other_campaigns_files_stay_as_the_last_commit_holds_them(ledger):
    snap = Snapshot(ledger, "t")
    base = base_of(ledger)
    snap.learn(base)  # as after the first commit of a process, which git stages
    (ledger / "state/o/journal.jsonl").write_text("theirs, not yet committed\n")
    (ledger / "log/2026-01-01-o.md").write_text("# o, edited\n")
    (ledger / "log/2026-01-01-t.md").write_text("# t, edited\n")
    tree = snap.tree(base)
    assert tree == staged(ledger, base)
    assert snap.blob_at(tree, "state/o/journal.jsonl") == snap.blob_at(base, "state/o/journal.jsonl")
    assert snap.blob_at(tree, "log/2026-01-01-t.md") != snap.blob_at(base, "log/2026-01-01-t.md")


def test_what_only_git_can_decide_is_left_to_git(ledger):
    snap = Snapshot(ledger, "t")
    base = base_of(ledger)
    assert snap.tree(base) is None  # before git has staged once, its ignore rules are unknown
    snap.learn(base)
    snap.learn(base)  # as after the first commit of a process, which git stages
    (ledger / "state/t/new.json").write_text("{}\n")  # a new path, which no ignore rule leaves out
    assert snap.tree(base) == staged(ledger, base) != base
    (ledger / "state/t/new.json").chmod(0o755)  # a new executable: git's core.fileMode decides
    assert snap.tree(base) is None
    (ledger / "state/t/new.json").unlink()
    for name in (".GIT", "git~1", "\u00e9.json", ".gitattributes"):  # names git's own checks may refuse, or
        (ledger / "state/t" / name).write_text("x\n")  # that bring rules
        assert snap.tree(base) is None, name
        (ledger / "state/t" / name).unlink()
    (ledger / "config.yaml").chmod(0o755)  # a mode: git's core.fileMode decides
    assert snap.tree(base) is None
    (ledger / "config.yaml").chmod(0o644)
    (ledger / "state/t/link").symlink_to("dag.yaml")
    assert snap.tree(base) is None
    (ledger / "state/t/link").unlink()
    assert snap.tree(base) == base
    weird = ledger / "log" / "two\nlines.md"  # tracked: a name git holds, which a line cannot carry
    weird.write_text("x\n")
    weird_base = staged(ledger, base)
    snap.learn(weird_base)
    weird.write_text("y\n")
    assert snap.tree(weird_base) is None


def test_files_git_left_out_are_learned_and_a_changed_ignore_file_asks_git_again(ledger):
    (ledger / ".gitignore").write_text("*.tmp\n")
    base = ledger.commit("ignore temp files")
    snap = Snapshot(ledger, "t")
    tree = base_of(ledger)
    snap.learn(tree)
    (ledger / "state/t/x.tmp").write_text("scratch\n")
    assert snap.tree(tree) == staged(ledger, tree) == tree  # x.tmp left out, as git leaves it out
    assert "state/t/x.tmp" in snap.ignored
    (ledger / "state/t/journal.jsonl").write_text("{}\n{}\n")
    assert snap.tree(tree) == staged(ledger, tree)  # x.tmp ignored, as git ignores it
    (ledger / ".gitignore").write_text("*.json\n")
    assert snap.tree(tree) is None  # the rules changed: x.tmp may belong in the commit now
    tree = staged(ledger, tree)
    snap.learn(tree)  # as after the commit git staged
    (ledger / "state/t/y.json").write_text("{}\n")
    (ledger / "state/t/z.tmp").write_text("now kept\n")
    got = snap.tree(tree)  # the kept check-ignore reads the new rules, not those it read first
    assert got == staged(ledger, tree) and "state/t/y.json" in snap.ignored and "state/t/z.tmp" not in snap.ignored
    assert base


def test_new_files_are_added_or_left_out_as_git_s_ignore_rules_say(ledger, tmp_path, monkeypatch):
    """Rules of a folder's .gitignore (a folder pattern, a negation), of info/exclude and of the user's own
    excludes file; files in new folders. The walk's tree is git's, and git was asked once for all of them."""
    user = tmp_path / "global-ignore"
    user.write_text("*.swp\n")
    ledger.git("config", "core.excludesFile", str(user))
    (ledger / "state" / ".gitignore").write_text("scratch/\n*.tmp\n!keep.tmp\n")
    (ledger / ".git/info/exclude").write_text("*.bak\n")
    base = ledger.commit("rules")
    snap = Snapshot(ledger, "t")
    tree = base_of(ledger)
    snap.learn(tree)
    asked = []
    real = git_pipe.Store.ignored
    monkeypatch.setattr(git_pipe.Store, "ignored", lambda self, paths: asked.append(paths) or real(self, paths))
    for rel in ("state/t/x.tmp", "state/t/keep.tmp", "state/t/scratch/deep/a.json", "state/t/c.bak",
                "state/t/.j.swp", "state/t/checkpoints/c1.json", "log/new/folder/n.md", "state/t/:foo"):
        (ledger / rel).parent.mkdir(parents=True, exist_ok=True)
        (ledger / rel).write_text(rel + "\n")
    got = snap.tree(tree)
    assert got == staged(ledger, tree) and got != tree
    assert len(asked) == 1
    assert {"state/t/x.tmp", "state/t/scratch/deep/a.json", "state/t/c.bak", "state/t/.j.swp"} <= snap.ignored
    assert base


def test_a_file_too_big_to_read_whole_is_left_to_git(ledger, monkeypatch):
    from orchestrate.recorder import snapshot
    monkeypatch.setattr(stamps, "settled", lambda st, now_ns=None: True)  # every file written long ago
    snap = Snapshot(ledger, "t")
    base = base_of(ledger)
    snap.learn(base)
    assert snap.tree(base) == base  # each file read once: trusted from now on by its stat
    monkeypatch.setattr(snapshot, "HELD", 100)
    (ledger / "state/t/big.bin").write_bytes(b"x" * 101)  # planted, say, by a worker without the sandbox
    assert snap.tree(base) is None
    (ledger / "state/t/big.bin").write_bytes(b"x" * 100)
    assert snap.tree(base) == staged(ledger, base)


def test_more_files_than_one_commit_reads_are_left_to_git(ledger, monkeypatch):
    from orchestrate.recorder import snapshot
    monkeypatch.setattr(stamps, "settled", lambda st, now_ns=None: True)
    snap = Snapshot(ledger, "t")
    base = base_of(ledger)
    snap.learn(base)
    assert snap.tree(base) == base  # each file read once: trusted from now on by its stat
    monkeypatch.setattr(snapshot, "MOST", 2)
    for rel in ("config.yaml", "state/t/dag.yaml"):
        (ledger / rel).write_text("changed\n")
    assert snap.tree(base) == staged(ledger, base)  # two: read here
    (ledger / "gates/README.md").write_text("changed\n")
    assert snap.tree(base) is None  # three: git's to stage


def test_a_stat_is_trusted_only_if_it_had_settled_when_the_file_was_read(ledger, monkeypatch):
    """A write in the same tick just after the read could leave the stat as it was: whether it had settled is
    told as the file is read, not once its blob is stored (rv41)."""
    snap = Snapshot(ledger, "t")
    base = base_of(ledger)
    snap.learn(base)
    (ledger / "state/t/journal.jsonl").write_text("{}\n{}\n")
    asked_at = []
    monkeypatch.setattr(stamps, "settled", lambda st, now_ns=None: asked_at.append(now_ns) and False)  # written
    before = time.time_ns()  # within the tick of the read
    tree = snap.tree(base)
    assert asked_at and all(t is not None and before <= t for t in asked_at)  # as each read began, not after
    monkeypatch.setattr(stamps, "settled", lambda st, now_ns=None: True)  # long ago by the time it is stored
    snap.commit(tree, [ledger.head()], "step", {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x",
                                                "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@x"})
    assert "state/t/journal.jsonl" not in snap.known


def test_a_rewrite_of_the_same_size_is_seen_however_soon_it_comes(ledger, monkeypatch):
    snap = Snapshot(ledger, "t")
    base = base_of(ledger)
    snap.learn(base)  # as after the first commit of a process, which git stages
    journal = ledger / "state/t/journal.jsonl"
    journal.write_text("aaaa\n")
    first = snap.tree(base)
    st = journal.stat()
    journal.write_text("bbbb\n")  # same size; mtime put back: only the content (and ctime) differ
    os.utime(journal, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert snap.tree(base) != first
    assert snap.tree(base) == staged(ledger, base)
    monkeypatch.setattr(stamps, "settled", lambda st, now_ns=None: True)  # its stat is trusted from now on
    trusted = snap.tree(base)
    st = journal.stat()
    journal.write_text("cccc\n")
    os.utime(journal, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert snap.tree(base) != trusted  # its ctime moved, which no one can set back


def test_a_settled_file_is_hashed_once(ledger, monkeypatch):
    monkeypatch.setattr(stamps, "settled", lambda st, now_ns=None: True)  # every file written long ago
    snap = Snapshot(ledger, "t")
    base = base_of(ledger)
    snap.learn(base)  # as after the first commit of a process, which git stages
    snap.tree(base)
    asked = []
    real = git_files.open_regular
    monkeypatch.setattr(git_files, "open_regular", lambda path: asked.append(path) or real(path))
    (ledger / "state/t/journal.jsonl").write_text("{}\n{}\n")
    tree = snap.tree(base)
    assert asked == [ledger / "state/t/journal.jsonl"]  # the journal alone (through a descriptor: see _hash)
    assert snap.blob_at(tree, "state/t/journal.jsonl") == ledger.git("hash-object", "state/t/journal.jsonl")
    snap.tree(base)  # its blob not stored yet: its stat cannot stand for it
    assert len(asked) == 2
    snap.commit(snap.tree(base), [ledger.head()], "step", {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x",
                                                           "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@x"})
    snap.tree(base)
    assert len(asked) == 3  # stored with the commit: its stat stands for it from then on


@pytest.mark.parametrize("seed", range(3))
def test_random_edits_give_git_s_tree_or_leave_it_to_git(ledger, seed):
    rng = random.Random(seed)
    snap = Snapshot(ledger, "t")
    snap.learn(base_of(ledger))
    paths = [p for p in FILES if not p.startswith(("state/o/", "log/2026-01-01-o"))]
    for _ in range(25):
        base = base_of(ledger)
        rel = rng.choice(paths + ["state/t/checkpoints/c1.json", "log/extra.md"])
        target = ledger / rel
        if rng.random() < 0.3 and target.exists():
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(rng.choice(["x\n", "y\n", "xy\n", f"{rng.random()}\n"]))
        tree = snap.tree(base)
        expected = staged(ledger, base)
        if tree is None:  # git stages it: as the recorder then does, and commits it
            snap.learn(expected)
        else:
            assert tree == expected, rel
        ledger.git("add", "-A")
        ledger.git("commit", "-q", "--allow-empty", "-m", "step")


def test_the_commit_stores_the_files_as_the_walk_read_them(ledger):
    """A line appended between the walk and the commit is not in the commit, whose tree names the blob read."""
    snap = Snapshot(ledger, "t")
    base = base_of(ledger)
    snap.learn(base)
    journal = ledger / "state/t/journal.jsonl"
    journal.write_text("{}\n{}\n")
    tree = snap.tree(base)
    journal.write_text("{}\n{}\n{\"late\": 1}\n")
    sha = snap.commit(tree, [ledger.head()], "step", {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x",
                                                      "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@x"})
    assert ledger.git("show", f"{sha}:state/t/journal.jsonl") == "{}\n{}"
    assert snap.tree(base) != tree  # and the late line is seen at the next look


def test_a_file_swapped_for_a_link_after_its_stat_is_left_to_git_never_read_through(ledger, tmp_path):
    """A worker without the sandbox racing the walk: the journal's name made a link to a file outside after
    the walk stat'ed it. hash-object must not store what the link names (`git add` stores a link as a link)."""
    from orchestrate.recorder.snapshot import _Due, _GitMustLook
    snap = Snapshot(ledger, "t")
    snap.learn(base_of(ledger))
    journal = ledger / "state/t/journal.jsonl"
    st = journal.stat()
    secret = tmp_path / "secret.txt"
    secret.write_text("not the recorder's to keep\n")
    journal.unlink()
    journal.symlink_to(secret)
    with pytest.raises(_GitMustLook):
        snap._hash([_Due("state/t/journal.jsonl", st)], 40)
    stored = subprocess.run(["git", "-C", str(ledger), "cat-file", "-e", ledger.git("hash-object", str(secret))])
    assert stored.returncode != 0  # hashed by the test, never written to the recorder
    journal.unlink()  # a FIFO in its place is not waited on
    os.mkfifo(journal)
    with pytest.raises(_GitMustLook):
        snap._hash([_Due("state/t/journal.jsonl", journal.stat())], 40)
