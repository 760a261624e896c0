"""The kept differ (orchestrate/git_diffs.py) answers what a `git diff --name-status --no-renames` process
answers, for every kind of change and for names that could be taken for its end mark."""
from __future__ import annotations

import os
import subprocess

import pytest

from tests.helpers import make_repo


def _by_process(repo, base: str, head: str) -> list[tuple[str, str]]:
    out = subprocess.run(["git", "-C", str(repo), "diff", "--name-status", "--no-renames", "--ignore-submodules=none",
                          "-z", base, head], capture_output=True, text=True, errors="replace", check=True).stdout
    fields = out.split("\0")
    return [(fields[i][0], fields[i + 1]) for i in range(0, len(fields) - 1, 2) if fields[i]]


@pytest.fixture
def history(tmp_path):
    """A base and a head that differ by an addition, a deletion, a change, a rename, a type change, a
    gitlink's move, and names holding newlines, a NUL-free `#end` and bytes that are not UTF-8."""
    repo = make_repo(tmp_path / "repo", {"keep.txt": "k\n", "gone.txt": "g\n", "edit.txt": "1\n", "old.txt": "o\n",
                                         "kind.txt": "t\n"})
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{repo.head()},mod")
    repo.git("commit", "-qm", "a gitlink")
    base = repo.head()
    (repo / "gone.txt").unlink()
    (repo / "edit.txt").write_text("2\n")
    (repo / "old.txt").rename(repo / "new.txt")
    (repo / "kind.txt").unlink()
    (repo / "kind.txt").symlink_to("keep.txt")
    (repo / "#end\n").write_text("a name that reads as the end mark\n")
    (repo / "dir").mkdir()
    (repo / "dir" / "#end").write_text("x\n")
    with open(os.path.join(os.fsencode(repo), b"caf\xe9.txt"), "w") as fh:
        fh.write("latin-1 name\n")
    (repo / ".gitmodules").write_text('[submodule "mod"]\n\tpath = mod\n\turl = ./x\n\tignore = all\n')
    repo.git("add", "-A")
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{base},mod")
    repo.git("commit", "-qm", "every kind of change")
    return repo, base, repo.head()


def test_the_kept_differ_answers_what_a_git_diff_process_answers(history):
    from orchestrate import git_diffs
    repo, base, head = history
    expected = _by_process(repo, base, head)
    assert ("M", "mod") in expected and ("T", "kind.txt") in expected and ("A", "#end\n") in expected
    assert git_diffs.changed(repo, base, head) == expected
    assert git_diffs.changed(repo, head, base) == _by_process(repo, head, base)  # each way round
    assert git_diffs.changed(repo, base, base) == []
    assert git_diffs.changed(repo, base, head) == expected  # asked again (answered from what it kept)


def test_a_name_that_is_not_a_commit_here_is_left_to_a_git_process(history):
    from orchestrate import git, git_diffs
    repo, base, head = history
    assert git_diffs.changed(repo, "HEAD~1", head) is None
    assert git_diffs.changed(repo, "0" * 40, head) is None  # no such object: diff-tree would answer nothing
    tree = repo.git("rev-parse", f"{head}^{{tree}}")
    assert git_diffs.changed(repo, base, tree) is None
    assert git.changed_paths(repo, "HEAD~1", "HEAD") == _by_process(repo, base, head)


def test_a_differ_that_died_is_started_again(history):
    import signal
    from orchestrate import git_diffs
    repo, base, head = history
    first = git_diffs.changed(repo, base, head)
    differ = next(iter(git_diffs._kept.kept.values()))
    os.kill(differ._child.pid, signal.SIGKILL)
    differ._child.wait()
    git_diffs._answers.clear()
    assert git_diffs.changed(repo, base, head) == first


def test_the_links_a_range_made_are_read_from_the_same_answer_or_from_a_process(history):
    """coherence asks which changed paths are links at head: the kept differ's answer holds each path's mode,
    and a range it cannot be asked about (names, not full ids) gets the same from a `git diff --raw`."""
    from orchestrate import git_diffs
    repo, base, head = history
    (repo / "more").symlink_to("/etc/hostname")
    repo.git("add", "more")
    repo.git("commit", "-qm", "one more link")
    later = repo.head()
    assert git_diffs.links(repo, base, later) == ["kind.txt", "more"]
    assert git_diffs.links(repo, "HEAD~2", "HEAD") == ["kind.txt", "more"]
    assert git_diffs.links(repo, head, base) == [] and git_diffs.links(repo, later, head) == []
