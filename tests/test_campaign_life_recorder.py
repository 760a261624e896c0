"""Several campaigns on one recorder: commits of other topics are built on, a move of one's own is refused."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrate.errors import Concurrency
from orchestrate.recorder.journal import Recorder
from tests.engine_helpers import campaign_repo
from tests.helpers import object_folders_blocked_until_a_failure

COMMITTER = r"""
import sys
from pathlib import Path
from pathlib import Path
from orchestrate.recorder.journal import Recorder
ledger, topic, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
r = Recorder(ledger, topic).pin()
for i in range(n):
    r.event("note", {"i": i})
    r.commit(f"{topic}: step {i}")
"""


@pytest.fixture
def repo(tmp_path):
    return campaign_repo(tmp_path, "nodes: []\n", "#!/bin/sh\n")


def _ledger_git(ledger, *args: str) -> str:
    return subprocess.run(["git", "-C", str(ledger), *args], capture_output=True, text=True, check=True).stdout


def test_the_recorder_s_index_matches_its_branch_when_a_command_ends(repo, orch):
    """Commits go through git processes kept open, without the index (recorder/snapshot.py); the command's
    end sets the index to the branch, so `git status` in .ledger shows only what changed since."""
    (repo / ".ledger" / "state" / "dag.yaml").write_text(
        "topic: synced\nworkers: {sh: ./work.sh}\nnodes:\n  - {id: A, file_surface: [a.txt], discipline: sh}\n")
    (repo / "work.sh").write_text("#!/bin/sh\necho a > a.txt\n")
    assert orch("run", "--no-interactive", cwd=repo).rc == 75  # final acceptance
    ledger = repo / ".ledger"
    assert _ledger_git(ledger, "status", "--porcelain", "--untracked-files=all") == ""
    assert len(_ledger_git(ledger, "log", "--format=%H").split()) > 5  # many commits, one index sync
    rec = Recorder(ledger, "synced").pin()
    for i in range(2):  # the first commit of a process is staged by git (it learns what git ignores)
        rec.event("note", {"after": "the run", "i": i})
        rec.commit(f"synced: {i}, outside the CLI")
    assert "journal.jsonl" in _ledger_git(ledger, "diff", "--cached", "--name-only")  # left behind, until
    from orchestrate.recorder import upkeep
    upkeep.finish()  # the CLI's boundary (or this process's exit) sets it
    assert _ledger_git(ledger, "status", "--porcelain", "--untracked-files=all") == ""


@pytest.mark.parametrize("round_", range(5))
def test_three_runners_of_three_topics_commit_at_once_and_none_is_refused(repo, round_):
    ledger = repo / ".ledger"
    procs = [subprocess.Popen([sys.executable, "-c", COMMITTER, str(ledger), t, "8"], stderr=subprocess.PIPE,
                              text=True) for t in ("ta", "tb", "tc")]
    errors = [(p.wait(), p.communicate()[1]) for p in procs]
    assert [rc for rc, _ in errors] == [0, 0, 0], errors
    subjects = subprocess.run(["git", "-C", str(ledger), "log", "--format=%s"], capture_output=True,
                              text=True, check=True).stdout.splitlines()
    for t in ("ta", "tb", "tc"):
        assert [s for s in subjects if s.startswith(f"{t}:")] == [f"{t}: step {i}" for i in reversed(range(8))]
        committed = subprocess.run(["git", "-C", str(ledger), "show", f"HEAD:state/{t}/journal.jsonl"],
                                   capture_output=True, text=True, check=True).stdout
        assert committed == (ledger / "state" / t / "journal.jsonl").read_text()
    assert subprocess.run(["git", "-C", str(ledger), "status", "--porcelain"], capture_output=True,
                          text=True).stdout == ""


def test_a_commit_of_another_topic_is_built_on(repo):
    ledger = repo / ".ledger"
    a, b = Recorder(ledger, "ta").pin(), Recorder(ledger, "tb").pin()
    a.event("note", {"x": 1})
    first = a.commit("ta: one")
    b.event("note", {"y": 1})
    b_sha = b.commit("tb: one")  # b was pinned before a's commit: it follows it
    a.event("note", {"x": 2})
    second = a.commit("ta: two")
    parents = subprocess.run(["git", "-C", str(ledger), "rev-parse", f"{second}^", f"{b_sha}^"],
                             capture_output=True, text=True, check=True).stdout.split()
    assert parents == [b_sha, first]


def test_a_move_by_another_runner_of_the_same_topic_is_refused(repo):
    ledger = repo / ".ledger"
    one, two = Recorder(ledger, "ta").pin(), Recorder(ledger, "ta").pin()
    one.event("note", {"x": 1})
    one.commit("ta: one")
    two.resume_seq(one.read())
    two.event("note", {"x": 2})
    with pytest.raises(Concurrency, match="moved under this runner"):
        two.commit("ta: two")


def test_a_commit_made_by_hand_is_refused_too(repo):
    ledger = repo / ".ledger"
    r = Recorder(ledger, "ta").pin()
    subprocess.run(["git", "-C", str(ledger), "commit", "-q", "--allow-empty", "-m", "by hand"], check=True)
    r.event("note", {"x": 1})
    with pytest.raises(Concurrency, match="by hand"):
        r.commit("ta: one")


def test_a_long_campaign_s_recorder_is_packed_as_it_goes(repo, monkeypatch):
    """Every commit holds the whole journal again: its loose objects are packed in the background once
    enough was written, and the recorder reads back the same."""
    from orchestrate.recorder import upkeep
    monkeypatch.setattr(upkeep, "PACK_AFTER", 20_000)
    ledger = repo / ".ledger"
    rec = Recorder(ledger, "long").pin()
    for i in range(40):
        rec.event("note", {"i": i, "padding": "x" * 400})
        rec.commit(f"long: step {i}")
    upkeep.finish()
    counts = dict(line.split(": ") for line in _ledger_git(ledger, "count-objects", "-v").splitlines())
    assert int(counts["in-pack"]) > 100 and int(counts["count"]) < 100  # most objects packed, the rest loose
    assert _ledger_git(ledger, "show", f"{rec.head}:state/long/journal.jsonl") == rec.journal.read_text()
    assert len(_ledger_git(ledger, "log", "--format=%s").splitlines()) >= 40
    assert _ledger_git(ledger, "fsck", "--no-progress") == ""


def test_short_commands_leave_no_pile_of_loose_objects(repo, monkeypatch):
    """Each command counts only what it wrote itself; at its end the recorder's loose objects (stored
    uncompressed) are packed once they reach PACK_AFTER on disk, whoever wrote them."""
    from orchestrate.recorder import upkeep
    ledger = repo / ".ledger"
    rec = Recorder(ledger, "short").pin()
    for i in range(12):  # as a run of short commands would, none writing enough to pack on its own
        rec.event("note", {"i": i, "padding": "x" * 2000})
        rec.commit(f"short: step {i}")
    loose = upkeep._loose_bytes(ledger)
    assert loose > 0
    monkeypatch.setattr(upkeep, "PACK_AFTER", loose // 2)
    monkeypatch.setattr(upkeep, "_written", {str(ledger): 1})  # this command committed a little
    upkeep.finish()
    assert upkeep._loose_bytes(ledger) < loose // 2
    assert _ledger_git(ledger, "show", f"{rec.head}:state/short/journal.jsonl") == rec.journal.read_text()
    monkeypatch.setattr(upkeep, "_written", {str(ledger): 0})  # one that committed nothing: no look, no pack
    upkeep.finish()


def test_the_end_of_a_command_says_nothing_more_after_its_error(tmp_path, monkeypatch):
    """rv27: a worker padded ~/.gitconfig past what orchestrate reads, so every git call halts (git_config.read);
    the command said so and exited, then its end (packing the recorder's loose objects) ran git again, outside
    the error boundary: a traceback."""
    from orchestrate.errors import Halted
    from orchestrate.recorder import upkeep
    (tmp_path / ".git").mkdir()

    def halts(*args, **kw):
        raise Halted("a git config file too big to read")
    monkeypatch.setattr(upkeep, "_loose_bytes", halts)
    monkeypatch.setattr(upkeep, "_written", {str(tmp_path): 1})
    upkeep.finish()


def test_an_object_only_refreshed_in_a_pack_survives_the_consolidating_repack(tmp_path):
    """rv43: git does not write an object it finds in a pack; it touches the pack and answers the id. A
    consolidating repack (`-a -d`) drops what no ref reaches, so a tree packed once, no longer reached, and
    named by a commit being made as the repack ran, was gone once the commit landed."""
    from orchestrate import git_ids, git_pipe
    from orchestrate.recorder import upkeep
    from tests.helpers import make_repo
    repo = make_repo(tmp_path / "r", {"a.txt": "one\n"})
    blob = repo.git("rev-parse", "HEAD:a.txt")
    tree, content = git_ids.tree({"a.txt": ("100644", blob), "kept.txt": ("100644", blob)})
    (repo / "kept.txt").write_text("one\n")
    repo.git("add", "kept.txt")
    assert repo.git("write-tree") == tree  # (git's id for the same tree)
    repo.git("branch", "once", repo.git("commit-tree", tree, "-m", "once"))
    repo.git("rm", "-q", "--cached", "kept.txt")
    repo.git("repack", "-a", "-d", "-q")
    repo.git("branch", "-D", "once")
    repo.git("reflog", "expire", "--expire=now", "--all")
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@x"}
    store = git_pipe.store(repo)
    sha = store.objects([], [(tree, content)], (tree, [repo.head()], "names the packed tree", env))
    upkeep._repack(repo, whole=True)  # as it may run between a commit's objects and its swap
    assert store.swap("refs/heads/main", sha, repo.head())
    git_pipe.close_all()
    assert _ledger_git(repo, "fsck", "--no-progress", "--no-dangling") == ""


def _lose_head_tree(ledger, rec) -> Path:
    """The recorder's last commit's tree taken out of its store (as the mktree failure left it); where it was."""
    tree = _ledger_git(ledger, "rev-parse", f"{rec.head}^{{tree}}").strip()
    loose = ledger / ".git" / "objects" / tree[:2] / tree[2:]
    loose.rename(loose.with_name("aside"))
    return loose


def test_a_repack_that_fails_is_said_at_the_end_of_the_command(repo, monkeypatch, capsys):
    """A recorder whose history git cannot read whole (a tree lost: the mktree failure) cannot be packed: every
    journal then stays loose and uncompressed. The end of the command says so, once, and where to look."""
    from orchestrate.recorder import upkeep
    ledger = repo / ".ledger"
    rec = Recorder(ledger, "lost").pin()
    rec.event("note", {"i": 0})
    rec.commit("lost: step 0")
    _lose_head_tree(ledger, rec)
    monkeypatch.setattr(upkeep, "PACK_AFTER", 1)
    rec.event("note", {"i": 1})
    rec.commit("lost: step 1")  # built again by git's own staging: the last commit's tree cannot be read
    upkeep.finish()
    err = capsys.readouterr().err
    assert f"warning: {ledger}: the recorder's loose objects could not be packed (" in err
    assert "`orchestrate doctor` says whether its history is whole" in err
    upkeep.finish()
    assert capsys.readouterr().err == ""  # said once


def test_a_failed_repack_followed_by_one_that_succeeds_or_by_the_recorder_s_removal_is_not_said(repo, monkeypatch,
                                                                                                capsys):
    """rv44: the warning stayed after a later pack of the same recorder succeeded, and named a recorder removed
    since; and a stderr whose reader is gone made a command that did its work exit 1."""
    import shutil

    from orchestrate.recorder import upkeep
    ledger = repo / ".ledger"
    rec = Recorder(ledger, "healed").pin()
    rec.event("note", {"i": 0})
    rec.commit("healed: step 0")
    loose = _lose_head_tree(ledger, rec)
    upkeep._repack(ledger, whole=False)
    assert str(ledger) in upkeep._failed
    loose.with_name("aside").rename(loose)
    upkeep._repack(ledger, whole=True)
    upkeep.finish()
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(upkeep, "_failed", {str(ledger): "fatal: as git said it"})
    closed = open(os.devnull, "w")
    closed.close()
    monkeypatch.setattr(sys, "stderr", closed)
    upkeep.finish()  # nothing raised
    monkeypatch.undo()
    shutil.rmtree(ledger)
    monkeypatch.setattr(upkeep, "_failed", {str(ledger): "fatal: cannot change to it"})
    upkeep.finish()
    assert capsys.readouterr().err == ""


def test_a_repack_thread_that_cannot_run_git_leaves_it_to_the_command(repo, monkeypatch):
    """rv44: a config git cannot be run with (past what orchestrate reads: a worker can pad it) raised in the
    repack's thread: a traceback in the middle of the run. The command's own next git call says it."""
    import threading

    from orchestrate.errors import Halted
    from orchestrate.recorder import upkeep
    ledger = repo / ".ledger"
    raised = []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_value))
    with open(ledger / ".git" / "config", "ab") as fh:
        fh.truncate(16 * 2**20 + 10)
    monkeypatch.setattr(upkeep, "PACK_AFTER", 1)
    upkeep.committed(ledger, 10)
    upkeep.finish()
    assert raised == [] and upkeep._failed == {}
    with pytest.raises(Halted):
        Recorder(ledger, "padded").pin().commit("padded: the command's own git call")


def test_a_tree_git_failed_to_write_while_staging_is_written_on_the_second_try(repo, monkeypatch):
    """What the walk leaves to git's staging (a new .gitignore here) ends in `git write-tree`; a background
    repack's prune-packed removing a fan-out folder as git writes in it fails it once (git_pipe.py)."""
    ledger = repo / ".ledger"
    rec = Recorder(ledger, "staged").pin()
    rec.event("note", {"i": 0})
    rec.commit("staged: step 0")
    (ledger / ".gitignore").write_text("*.tmp\n")
    blob = _ledger_git(ledger, "hash-object", "-w", ".gitignore")  # stored: only trees are written below
    objects = ledger / ".git" / "objects"
    _ledger_git(ledger, "repack", "-a", "-d", "-q")
    subprocess.run(["git", "-C", str(ledger), "pack-objects", "-q", str(objects / "pack" / "pack")], input=blob,
                   text=True, check=True, capture_output=True)
    _ledger_git(ledger, "prune-packed")  # every object packed, every fan-out folder removed
    failed = object_folders_blocked_until_a_failure(ledger / ".git", monkeypatch, "write-tree")
    rec.commit("staged: a .gitignore")
    assert failed and "unable to create temporary file" in failed[0]
    assert _ledger_git(ledger, "show", f"{rec.head}:.gitignore") == "*.tmp\n"
    assert _ledger_git(ledger, "fsck", "--no-progress", "--no-dangling") == ""


def test_a_branch_git_will_not_move_that_nobody_moved_is_not_called_a_move(repo):
    """rv46: a ref lock (another git writing the recorder, or one killed mid-write) made the swap fail with the
    branch where the runner left it, and the message said another runner had moved it (expected X, found X)."""
    ledger = repo / ".ledger"
    rec = Recorder(ledger, "ta").pin()
    rec.event("note", {"x": 1})
    first = rec.commit("ta: one")
    lock = ledger / ".git" / f"{rec.ref}.lock"
    lock.write_text("")
    rec.event("note", {"x": 2})
    with pytest.raises(Concurrency, match=r"could not be moved to \w+: .*\.lock is there") as refused:
        rec.commit("ta: two")
    assert "moved under this runner" not in str(refused.value) and refused.value.exit_code == 4
    lock.unlink()
    assert rec.commit("ta: two") != first  # once the lock is gone, the same runner goes on
