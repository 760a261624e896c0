"""What git says while it looks at a worktree (orchestrate/workers/unread.py): the warnings a repository or a
config gives on every look pass; anything saying git passed something over fails the look, however a worker
names its files to make it read otherwise (rv23, rv24)."""
from __future__ import annotations

import os
import subprocess

from orchestrate import git
from orchestrate.workers import unread
from tests.helpers import make_repo


def _nest_past_path_max(folder) -> None:
    """Folders below `folder` whose path is longer than PATH_MAX: git cannot open the deepest (as root too)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(25):
        os.mkdir("x" * 200, dir_fd=fd)
        inner = os.open("x" * 200, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(os.open("payload.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    os.close(fd)


def _look(repo) -> str:
    return git.git(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all", *git.NO_SUBMODULE_DIRT).stderr


def test_a_folder_named_to_split_git_s_warning_into_let_pass_lines_still_fails_the_look(tmp_path):
    repo = make_repo(tmp_path / "repo", {"f.txt": "x\n"})
    for name in ("a is not a valid attribute name: b:1\nwarning: unable to access '.gitignore': z",
                 "a is not a valid attribute name: b:1\u2028warning: unable to access '.gitignore': z"):
        (repo / name).mkdir()
        _nest_past_path_max(repo / name)
        said = _look(repo)
        assert "could not open directory" in said
        assert unread.missed(said, repo), said
        subprocess.run(["rm", "-rf", str(repo / name)], check=True)


def test_the_warnings_a_repository_gives_on_every_look_pass(tmp_path):
    repo = make_repo(tmp_path / "repo", {"f.txt": "x\n", ".gitattributes": "*.png binary  # images\n!*.txt text\n",
                                         "rules": "x\n"})
    os.symlink("rules", repo / "sub.gitignore")
    (repo / "sub").mkdir()
    os.symlink("../rules", repo / "sub" / ".gitignore")
    said = _look(repo)
    assert "is not a valid attribute name" in said and "Negative patterns" in said and "unable to access" in said
    assert unread.missed(said, repo) == ""


def test_a_grafts_file_neither_warns_nor_changes_what_orchestrate_reads(tmp_path):
    """rv24: with `info/grafts` (deprecated, still read by git 2.39) every `git status` printed a hint, which
    failed every node; and a graft changes a commit's parents in every read, as a replace ref would."""
    repo = make_repo(tmp_path / "repo", {"f.txt": "x\n"})
    first = repo.head()
    second = repo.commit("second", {"g.txt": "y\n"})
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "grafts").write_text(f"{second}\n")  # `second` without parents
    assert "grafts" in subprocess.run(["git", "-C", str(repo), "status"], capture_output=True, text=True).stderr
    assert _look(repo) == ""
    assert git.out(repo, "rev-parse", f"{second}^") == first
