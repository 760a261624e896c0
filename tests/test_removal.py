"""Removing what a worker may have put where orchestrate writes (orchestrate/removal.py): any depth, never
through a link, never waiting on a FIFO."""
from __future__ import annotations

import os

import pytest

from orchestrate import removal
from tests.helpers import as_nobody


def _chain(top, depth: int) -> None:
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for level in range(depth):
        os.mkdir("a", dir_fd=fd)
        inner = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
        if level % 100 == 0:
            os.close(os.open("f", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    os.close(fd)


def test_folders_nested_thousands_deep_are_removed_with_few_descriptors(tmp_path):
    """Python's shutil.rmtree recurses (RecursionError past about a thousand); a descriptor per level would
    run out: what is deeper than MAX_DEPTH is moved up and removed from there."""
    _chain(tmp_path, 3 * removal.MAX_DEPTH + 7)
    before = len(os.listdir("/proc/self/fd"))
    removal.remove_below(tmp_path, "a")
    assert os.listdir(tmp_path) == []
    assert len(os.listdir("/proc/self/fd")) == before


@pytest.mark.timeout(20)
def test_a_fifo_where_a_folder_was_listed_is_removed_not_waited_on(tmp_path):
    """A worker still running swaps a folder it listed for a FIFO: opening it to list it must not block."""
    os.mkfifo(tmp_path / "was-a-folder")
    opened: list = []
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        removal._descend(opened, fd, "was-a-folder")
    finally:
        os.close(fd)
    assert opened == [] and not (tmp_path / "was-a-folder").exists()


def test_a_link_is_removed_itself_never_what_it_names(tmp_path):
    yours = tmp_path / "yours"
    (yours / "keep").mkdir(parents=True)
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "link").symlink_to(yours)
    removal.remove(tmp_path / "tree" / "link")
    removal.remove(tmp_path / "gone" / "x")  # nothing there: nothing to do
    assert (yours / "keep").is_dir() and not os.path.lexists(tmp_path / "tree" / "link")


_AS_NOBODY = """
import os, sys
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from orchestrate import removal
from tests.helpers import as_nobody
top = Path(sys.argv[1])
for folder in ("tree/ro/deeper", "tree/none"):
    (top / folder).mkdir(parents=True)
(top / "tree/ro/deeper/f").write_text("x")
(top / "tree/none/g").write_text("x")
os.chmod(top / "tree/ro/deeper", 0o500)
os.chmod(top / "tree/ro", 0o555)
os.chmod(top / "tree/none", 0)
removal.remove(top / "tree")
print(sorted(os.listdir(top)))
"""


def test_folders_a_worker_made_read_only_are_removed_as_an_ordinary_user(tmp_path):
    """As root nothing is read-only; as the user orchestrate runs as, a folder a worker left `chmod 0500` (or a
    tool's read-only cache) would keep its files, and the worktree, from being removed."""
    done = as_nobody(_AS_NOBODY)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


def test_a_worktree_a_worker_made_unreadable_is_not_linked_and_raises_nothing():
    """rv24: a worker's `chmod 000 "$ORCH_WORKTREE"` crashed `run` and `resume` (PermissionError, exit 70):
    git_files.linked read its `.git` file unguarded."""
    done = as_nobody("""
import os, sys
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from orchestrate import git_files
tree = Path(sys.argv[1]) / "wt"
tree.mkdir()
(tree / ".git").write_text("gitdir: /nowhere\\n")
os.chmod(tree, 0)
print(git_files.linked(tree, Path(sys.argv[1]) / ".git"))
os.chmod(tree, 0o700)
""")
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stdout + done.stderr


def test_what_was_set_aside_is_listed_only_in_a_real_folder_and_only_its_folders(tmp_path):
    """rv26: a pool folder a worker made a link to a folder of yours had your `trash-*` folders listed there (and
    removed by resume and clean); a link named trash-* is no folder set aside."""
    pool, yours = tmp_path / "pool", tmp_path / "yours"
    pool.mkdir()
    (yours / "trash-2024").mkdir(parents=True)
    spare = pool / "spare-A"
    spare.mkdir()
    removal.set_aside(spare, pool)
    (pool / "trash-link").symlink_to(yours / "trash-2024")
    assert [p.name.startswith("trash-spare-A-") for p in removal.set_aside_in(pool)] == [True]
    (tmp_path / "linked-pool").symlink_to(yours)
    assert removal.set_aside_in(tmp_path / "linked-pool") == []
