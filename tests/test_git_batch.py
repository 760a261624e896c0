"""git_batch: the reader kept open answers what a git process would, sees every later change, is closed and
survives its process dying; what is remembered (commits by full id, the identity) is asked of git once."""
from __future__ import annotations

import os
import shutil
import threading

import pytest
from pathlib import Path

from orchestrate import git, git_batch, git_files, proc
from orchestrate.recorder.journal import Recorder
from tests.engine_helpers import campaign_repo
from tests.helpers import make_repo


@pytest.fixture
def repo(tmp_path):
    r = make_repo(tmp_path / "r", {"a.txt": "one\r\ntwo\n", "dir/b.md": "# b\n"})
    r.git("tag", "-a", "-m", "annotated", "v1")
    yield r
    git_batch.close_all()


@pytest.fixture
def started(monkeypatch):
    """The argv of every process proc.run starts from here on (the real process still runs)."""
    seen: list[list[str]] = []
    real = proc.run

    def counting(cmd, **kw):
        seen.append([str(c) for c in cmd])
        return real(cmd, **kw)
    monkeypatch.setattr(proc, "run", counting)
    return seen


def test_names_resolve_as_rev_parse_does(repo):
    head = repo.head()
    tag = repo.git("rev-parse", "v1")
    assert tag != head  # an annotated tag: peeled to its commit
    for name in ("HEAD", "main", "refs/heads/main", head, "v1", "refs/tags/v1", "HEAD~0", tag):
        assert git.rev_parse(repo, name) == head, name
    for name in ("nope", "refs/heads/nope", "0" * 40, "HEAD:a.txt", "HEAD~5", "has space", " HEAD"):
        assert git.rev_parse(repo, name) is None, name
    assert git_batch.read(repo, "HEAD:a.txt")[2] == b"one\r\ntwo\n"
    assert git_batch.read(repo, "HEAD:nope") is None


def test_files_read_as_git_show_prints_them(repo):
    for path in ("a.txt", "dir/b.md", "dir", "nope"):
        done = git.git(repo, "show", f"HEAD:{path}", check=False)
        assert git.show_file(repo, "HEAD", path) == (done.stdout if done else None), path


def test_abbreviated_ids_and_index_paths_are_asked_of_a_process(repo, started):
    head = repo.head()
    for name in (head[:10], ":a.txt", "-x"):
        with pytest.raises(git_batch.Unusable):
            git_batch.read(repo, name)
    assert git.rev_parse(repo, head[:10]) == head
    assert [c[3:5] for c in started] == [["rev-parse", "--verify"]]


def test_a_ref_moved_by_another_process_is_seen_at_once(repo):
    first = repo.head()
    assert git.rev_parse(repo, "refs/heads/main") == first
    second = repo.commit("more", {"c.txt": "c\n"})
    assert git.rev_parse(repo, "refs/heads/main") == second
    repo.git("pack-refs", "--all")
    repo.git("update-ref", "refs/heads/main", first)
    assert git.rev_parse(repo, "main") == first
    repo.git("update-ref", "-d", "refs/tags/v1")
    assert git.rev_parse(repo, "v1") is None


def test_a_full_id_found_once_is_not_asked_again(repo, started):
    head = repo.head()
    reads = []
    real = git_batch.Reader.read
    git_batch.Reader.read = lambda self, name: reads.append(name) or real(self, name)
    try:
        assert git.rev_parse(repo, head) == head
        assert git.rev_parse(repo, head) == head
        assert git.rev_parse(repo / "dir", head) == head  # the same object store, from a subfolder
    finally:
        git_batch.Reader.read = real
    assert reads == [f"{head}^{{commit}}"]
    assert started == []


def test_the_reader_is_closed_at_exit_and_replaced_when_it_dies(repo):
    git.rev_parse(repo, "HEAD")
    (one,) = git_batch._readers.values()
    first = one._child
    os.kill(first.pid, 9)
    first.wait()
    assert git.rev_parse(repo, "HEAD") == repo.head()  # a new process answered
    second = one._child
    assert second is not None and second.pid != first.pid
    git_batch.close_all()
    assert second.poll() is not None and git_batch._readers == {}
    assert second.pid not in proc._ours


def test_a_worktree_made_again_at_the_same_path_gets_a_reader_of_its_own(repo, tmp_path):
    where = tmp_path / "wt"
    base = repo.head()
    repo.git("worktree", "add", "-q", "--detach", str(where), base)
    assert git.rev_parse(where, "HEAD") == base
    repo.git("worktree", "remove", "--force", str(where))
    other = make_repo(tmp_path / "other", {"x.txt": "x\n"})
    other_head = other.head()
    shutil.move(str(other), str(where))  # a different repository at the worktree's old path
    assert git.rev_parse(where, "HEAD") == other_head != base
    assert len([k for k in git_batch._readers if k[0] == str(where)]) == 1


def test_threads_share_a_reader_and_each_gets_its_own_answer(repo):
    shas = {f"refs/heads/b{i}": repo.commit(f"c{i}", {f"f{i}.txt": str(i)}) for i in range(6)}
    for name, sha in shas.items():
        repo.git("update-ref", name, sha)
    wrong: list[str] = []

    def ask():
        for _ in range(20):
            wrong.extend(n for n, sha in shas.items() if git.rev_parse(repo, n) != sha)
    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == [] and len(git_batch._readers) == 1


def test_the_identity_is_asked_once_and_stands_while_the_config_changes(repo, started, monkeypatch, tmp_path):
    """Asked once for where the config is (a worker may edit ~/.gitconfig while the run goes on: it must not
    decide the name orchestrate's commits carry); asked again for another $HOME."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = You\n\temail = you@example.com\n")
    monkeypatch.setenv("HOME", str(home))
    first = git.identity_env(repo)
    asked = len(started)
    assert first["GIT_AUTHOR_NAME"] == "You" and git.identity_env(repo) == first and len(started) == asked
    (home / ".gitconfig").write_text("")  # a worker's doing: orchestrate's commits keep your name
    assert git.identity_env(repo) == first and len(started) == asked
    monkeypatch.setenv("HOME", str(tmp_path))  # no identity there: orchestrate's own name
    assert git.identity_env(repo)["GIT_AUTHOR_NAME"] == "orchestrate" and len(started) > asked


def test_a_recorder_commit_starts_no_git_process_once_its_writers_run(tmp_path, started):
    repo = campaign_repo(tmp_path, "nodes: []\n", "#!/bin/sh\n")
    rec = Recorder(repo / ".ledger", "t").pin()
    rec.event("note", {"x": 1})
    rec.commit("t: one")
    rec.event("note", {"x": 2})
    del started[:]
    sha = rec.commit("t: two")
    assert [c for c in started if c[0] == "git"] == []
    assert git.rev_parse(repo / ".ledger", "HEAD") == sha
    assert git.show_file(repo / ".ledger", sha, "state/t/journal.jsonl") == rec.journal.read_text()


def test_a_first_parent_line_reads_as_git_log_lists_it(repo):
    base = repo.head()
    repo.git("checkout", "-q", "-b", "side")
    side = repo.commit("side work", {"s.txt": "s\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("on main\n\nwith a body\nof two lines", {"m.txt": "m\n"})
    repo.git("merge", "-q", "--no-ff", "-m", "merge side\nsecond line of the subject", "side")
    head = repo.head()
    logged = [(ln.split("\x1f")[0].split()[0], ln.split("\x1f")[0].split()[1:], ln.split("\x1f")[1])
              for ln in repo.git("log", "--first-parent", "--reverse", "--format=%H %P%x1f%s",
                                 f"{base}..{head}").splitlines()]
    assert git_batch.first_parents(repo, base, head) == logged
    assert git_batch.first_parents(repo, head, head) == []
    assert git_batch.first_parents(repo, side, head) is None  # not on the first-parent line: git answers
    assert git_batch.first_parents(repo, base, head, limit=1) is None


def test_a_branch_name_is_told_from_a_tag_of_the_same_name(repo):
    repo.git("branch", "campaign/x")
    assert git_batch.is_branch(repo, "campaign/x") is True
    assert git_batch.is_branch(repo, "campaign/none") is False
    repo.git("tag", "campaign/x")  # `campaign/x` now names the tag first: git says what it is
    assert git_batch.is_branch(repo, "campaign/x") is None
    assert git_batch.is_branch(repo, "refs/heads/main") is None


def test_a_worktree_s_head_and_who_holds_a_branch_are_read_as_git_reports_them(repo, tmp_path):
    wt = tmp_path / "wt"
    repo.git("worktree", "add", "-q", "-b", "node/t/A", str(wt))
    assert git_files.worktree_head(repo, wt) == repo.git("-C", str(wt), "rev-parse", "HEAD")
    repo.git("-C", str(wt), "commit", "-q", "--allow-empty", "-m", "moved")
    assert git_files.worktree_head(repo, wt) == repo.git("-C", str(wt), "rev-parse", "HEAD")
    repo.git("-C", str(wt), "checkout", "-q", "--detach")
    assert git_files.worktree_head(repo, wt) == repo.git("-C", str(wt), "rev-parse", "HEAD")
    with pytest.raises(git_batch.Unusable):
        git_files.worktree_head(repo, repo)  # the main checkout is not a linked worktree
    assert git_files.checked_out(repo, "refs/heads/main") == [repo]
    assert git_files.checked_out(repo, "refs/heads/node/t/A") == []  # detached above
    repo.git("-C", str(wt), "checkout", "-q", "node/t/A")
    assert [p.resolve() for p in git_files.checked_out(repo, "refs/heads/node/t/A")] == [wt.resolve()]
    listed = [b for b in repo.git("worktree", "list", "--porcelain").split("\n\n") if "branch refs/heads/node/t/A" in b]
    assert len(listed) == 1


def test_a_holder_counts_by_its_link_back_and_relative_links_are_read_as_git_writes_them(repo, tmp_path):
    """rv25: git 2.48 can write a worktree's two links relative (`worktree.useRelativePaths`): the admin dir's
    gitdir relative to the admin dir, the `.git` file relative to the worktree. Such a worktree of yours on the
    campaign branch was missed (orchestrate would have moved the branch under it). An admin dir that names a
    checkout whose .git does not name it back, or one orchestrate made (`mine`), holds nothing."""
    import os
    wt = tmp_path / "yours"
    repo.git("worktree", "add", "-q", "-b", "feature", str(wt))
    admin = Path(repo.git("-C", str(wt), "rev-parse", "--absolute-git-dir"))
    (admin / "gitdir").write_text(os.path.relpath(wt / ".git", admin) + "\n")
    (wt / ".git").write_text("gitdir: " + os.path.relpath(admin, wt) + "\n")
    assert [p.resolve() for p in git_files.checked_out(repo, "refs/heads/feature")] == [wt.resolve()]
    assert git_files.checked_out(repo, "refs/heads/feature", {os.path.realpath(admin)}) == []
    (admin / "commondir").write_text(str(tmp_path / "a-git-dir-of-a-workers") + "\n")  # rv26: whose hooks the
    assert git_files.checked_out(repo, "refs/heads/feature") == []  # halt's hint (`git -C ... switch`) would run
    (admin / "commondir").write_text("../..\n")
    (admin / "gitdir").write_text(f"{repo}/.git\n")  # your main checkout, claimed: its .git is a folder
    assert git_files.checked_out(repo, "refs/heads/feature") == []
    (admin / "HEAD").unlink()  # rv26: a link HEAD, which git reads as a symbolic ref, had orchestrate ask git
    (admin / "HEAD").symlink_to("refs/heads/feature")  # (which lists every claim) instead of passing it over
    assert git_files.checked_out(repo, "refs/heads/feature") == []
    (admin / "HEAD").unlink()
    (admin / "HEAD").write_text("ref: refs/heads/feature\n")
    (admin / "loop").symlink_to("loop")  # rv27: a commondir through a loop of links raised (exit 70)
    (admin / "commondir").write_text("loop/x\n")
    assert git_files.checked_out(repo, "refs/heads/feature") == []


def test_the_ref_files_read_as_for_each_ref_lists_them(repo):
    repo.git("branch", "b1")
    repo.git("update-ref", "refs/campaign/x", repo.head())
    repo.git("pack-refs", "--all")  # b1, main, the tag: packed
    repo.git("branch", "b2")  # loose
    second = repo.commit("second")
    repo.git("symbolic-ref", "refs/remotes/origin/HEAD", "refs/heads/main")
    listed = dict(ln.rsplit(" ", 1) for ln in repo.git("for-each-ref", "--format=%(refname) %(objectname)",
                                                       "refs").splitlines())
    assert git_files.ref_files(repo) == listed
    assert listed["refs/heads/main"] == second and listed["refs/remotes/origin/HEAD"] == second
    (repo / ".git" / "refs" / "heads" / "b3.lock").write_text("half-written\n")  # a lock is no ref
    assert git_files.ref_files(repo) == listed


def test_refs_under_a_skipped_prefix_are_not_read(repo):
    """The watch skips a campaign's own node branches (one per node): their files are not even opened."""
    import os
    repo.git("branch", "node/t/A")
    repo.git("branch", "node/u/A")
    os.mkfifo(repo / ".git" / "refs" / "heads" / "node" / "t" / "planted")  # opened, it would be "not a file"
    found = git_files.ref_files(repo, skip=("refs/heads/node/t/",))
    assert "refs/heads/node/t/A" not in found and "refs/heads/node/t/planted" not in found
    assert found["refs/heads/node/u/A"] == repo.head() and found["refs/heads/main"] == repo.head()
    assert git_files.ref_files(repo)["refs/heads/node/t/planted"].startswith("not a file")


def test_git_s_files_are_read_only_when_they_are_regular_files(repo, tmp_path):
    """A worker without the sandbox can plant a FIFO or a link where git keeps a ref or a HEAD: the readers
    neither block on it nor read through it."""
    import os
    from orchestrate.workers import siblings
    os.mkfifo(repo / ".git" / "refs" / "heads" / "fifo")
    (repo / ".git" / "refs" / "heads" / "link").symlink_to("/dev/zero")
    found = git_files.ref_files(repo)  # the link sends it to git, which lists what it makes of it
    assert found is None or found["refs/heads/fifo"].startswith("not a file")
    (repo / ".git" / "refs" / "heads" / "link").unlink()
    assert git_files.ref_files(repo)["refs/heads/fifo"].startswith("not a file")
    wt = tmp_path / "wt"
    repo.git("worktree", "add", "-q", "-b", "w", str(wt))
    admin = git.admin_dir(wt)
    (admin / "HEAD").unlink()
    os.mkfifo(admin / "HEAD")
    with pytest.raises(git_files.Unusable):
        git_files.worktree_head(repo, wt)
    (admin / "index").unlink()
    os.mkfifo(admin / "index")
    assert siblings._entries(admin / "index") > siblings.STAMPED


def test_an_identity_set_in_the_environment_or_as_author_wins_as_in_git(repo, monkeypatch):
    """rv29: the identity was built from user.* alone, overriding GIT_AUTHOR_NAME in the environment and
    author.*/committer.* settings, which git ranks above user.*."""
    home = repo.parent / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Personal\n\temail = me@home\n")
    monkeypatch.setenv("HOME", str(home))  # a new place: asked anew
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Work Name")
    repo.git("config", "committer.email", "me@work")
    said = git.identity_env(repo)
    assert (said["GIT_AUTHOR_NAME"], said["GIT_AUTHOR_EMAIL"]) == ("Work Name", "me@home"), said
    assert (said["GIT_COMMITTER_NAME"], said["GIT_COMMITTER_EMAIL"]) == ("Personal", "me@work"), said


def test_the_runs_identity_is_never_dropped_for_room(repo, monkeypatch, tmp_path):
    """rv29: the answers were dropped once 64 places had been asked (a worktree each), and the run's own was then
    asked again, mid-run, of a config a worker may have edited."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = You\n\temail = you@example.com\n")
    monkeypatch.setenv("HOME", str(home))
    assert git.identity_env(repo)["GIT_AUTHOR_NAME"] == "You"
    (home / ".gitconfig").write_text("[user]\n\tname = A Worker\n\temail = w@evil\n")
    for i in range(70):
        (tmp_path / f"w{i}").mkdir()
        git.identity_env(tmp_path / f"w{i}")
    assert git.identity_env(repo)["GIT_AUTHOR_NAME"] == "You"
