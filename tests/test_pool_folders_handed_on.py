"""What a pooled working copy hands on besides files (rv57): a folder the last node committed (absent from the
base its worktree was checked out at, present in the next base once the node merged), and the worktree's admin
dir and `.git` file. The worker could give each a mode, `user.` xattrs and a default ACL (which decides the modes
of what is made there next); the next node must find them as a fresh checkout makes them."""
from __future__ import annotations

import errno
import os
import stat
import struct

import pytest

from tests.engine_helpers import campaign_repo, journal
from tests.test_pool import _pooled

# a default ACL granting everyone everything (user::rwx, group::rwx, other::rwx), as setfacl -d writes it
_ACL = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, 7, 0xFFFFFFFF) for tag in (0x01, 0x04, 0x20))


def _mark(place) -> None:
    """A note and a default ACL on folder `place`; the test skips where the file system keeps neither."""
    try:
        os.setxattr(place, "user.note", b"from the last node")
        os.setxattr(place, "system.posix_acl_default", _ACL)
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            pytest.skip(f"this file system keeps no user xattrs or ACLs ({exc.strerror})")
        raise


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_folder_the_last_node_committed_is_made_anew_for_the_next(tmp_path, monkeypatch):
    from orchestrate import git
    from orchestrate.workers import pool
    repo, home = _pooled(tmp_path, monkeypatch, {"f.txt": "x\n", "old/f.txt": "y\n"})
    tree = home / "N1"
    (tree / "new" / "deep").mkdir(parents=True)
    (tree / "new" / "deep" / "g.txt").write_text("g\n")
    git.git(tree, "add", "-A")
    git.git(tree, "-c", "user.name=w", "-c", "user.email=w@x", "commit", "-qm", "N1")
    os.chmod(tree / "new", 0o2777)
    os.chmod(tree / "new" / "deep", 0o2777)
    _mark(tree / "new")
    _mark(tree / "new" / "deep")
    head = git.out(tree, "rev-parse", "HEAD")
    assert pool.keep(repo, tree, home)
    assert pool.take(repo, home / "N2", home, head, "node/t/N2")
    tree = home / "N2"
    assert (tree / "new" / "deep" / "g.txt").read_text() == "g\n"
    for folder in (tree / "new", tree / "new" / "deep"):
        assert os.listxattr(folder) == [], folder
        assert _mode(folder) == _mode(tree / "old"), oct(_mode(folder))
    (tree / "new" / "made").write_text("")
    assert _mode(tree / "new" / "made") == _mode(tree / "old" / "f.txt")


def test_the_admin_dir_and_the_git_file_are_handed_on_as_git_makes_them(tmp_path, monkeypatch):
    from orchestrate import git
    from orchestrate.workers import pool
    repo, home = _pooled(tmp_path, monkeypatch)
    tree = home / "N1"
    admin = git.admin_dir(tree)
    made = _mode(admin)
    os.chmod(admin, 0o777)
    _mark(admin)
    os.setxattr(tree / ".git", "user.note", b"from the last node")
    os.setxattr(admin / "HEAD", "user.note", b"from the last node")
    assert pool.keep(repo, tree, home)
    assert pool.take(repo, home / "N2", home, "HEAD", "node/t/N2")
    tree = home / "N2"
    admin = git.admin_dir(tree)
    assert os.listxattr(admin) == [] and _mode(admin) == made
    assert os.listxattr(tree / ".git") == [] and os.listxattr(admin / "HEAD") == []
    assert os.listxattr(admin / "index") == [] and not _mode(admin / "index") & 0o022


WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  A)
    mkdir new && echo g > new/g.txt && echo A > a.txt && git add -A && git commit -qm A
    chmod 2777 new
    python3 -c 'import os, sys; os.setxattr("new", "user.note", b"from A")' ;;
  B)
    python3 - <<'PY' > b.txt
import os, stat
mode = lambda p: oct(stat.S_IMODE(os.lstat(p).st_mode))
print("new", mode("new"), sorted(os.listxattr("new")))
print("old", mode("old"), sorted(os.listxattr("old")))
PY
    git add b.txt && git commit -qm B ;;
esac
"""
DAG = """\
topic: nf
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1}
nodes:
  - {id: A, title: makes a folder, file_surface: [a.txt, new/**], discipline: sh}
  - {id: B, title: looks around, depends_on: [A], file_surface: [b.txt], discipline: sh}
"""


def test_the_next_node_finds_a_folder_the_last_one_made_as_a_checkout_makes_it(tmp_path, orch):
    probe = tmp_path / "probe"
    probe.mkdir()
    try:
        os.setxattr(probe, "user.note", b"x")
    except OSError as exc:
        pytest.skip(f"this file system keeps no user xattrs ({exc.strerror})")
    repo = campaign_repo(tmp_path, DAG, WORKER, files={"old/f.txt": "y\n"})
    done = orch("run", "--no-interactive", cwd=repo)
    text = done.out + done.err
    adds = {e["context"]["node"]: e["context"] for e in journal(repo, "nf")
            if e["kind"] == "result" and e["context"].get("effect") == "worktree-add"}
    assert adds["B"].get("reused"), text  # B had A's working copy, re-based
    seen = dict(line.split(" ", 1) for line in repo.git("show", "campaign/nf:b.txt").splitlines())
    assert seen["new"] == seen["old"], seen
