"""rv68: `pool._new_folders` read the diff's paths decoded with errors="replace": a folder the last node
committed whose name is not UTF-8 (b"n\\xff") was looked for, and removed, as "n\\ufffd", a name that is not
there, and the next node found the real one with the mode, `user.` xattr and default ACL the last node gave it.
A re-base that cannot name what it would remove is not made: the spare goes, the node gets a fresh checkout."""
from __future__ import annotations

import os

from tests.test_pool import _pooled
from tests.test_pool_folders_handed_on import _mark


def test_a_non_utf8_folder_the_last_node_committed_is_made_anew_for_the_next(tmp_path, monkeypatch):
    from orchestrate import git
    from orchestrate.workers import pool
    repo, home = _pooled(tmp_path, monkeypatch, {"f.txt": "x\n", "old/f.txt": "y\n"})
    tree = home / "N1"
    odd = os.fsencode(tree) + b"/n\xff"
    os.mkdir(odd)
    with open(odd + b"/g.txt", "w") as fh:
        fh.write("g\n")
    git.git(tree, "add", "-A")
    git.git(tree, "-c", "user.name=w", "-c", "user.email=w@x", "commit", "-qm", "N1")
    os.chmod(odd, 0o2777)
    _mark(odd)
    head = git.out(tree, "rev-parse", "HEAD")
    assert pool.keep(repo, tree, home)
    assert not pool.take(repo, home / "N2", home, head, "node/t/N2")  # the caller checks out anew
    assert not (home / "N2").exists() and not pool._spares_in(pool.folder(home))


WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  A)
    python3 - <<'PY'
import os
os.mkdir(b"n\xff")
open(b"n\xff/g.txt", "w").write("g\n")
PY
    echo A > a.txt && git add -A && git commit -qm A
    python3 -c 'import os; os.chmod(b"n\xff", 0o2777); os.setxattr(b"n\xff", "user.note", b"from A")' ;;
  B)
    python3 - <<'PY' > b.txt
import os, stat
mode = lambda p: oct(stat.S_IMODE(os.lstat(p).st_mode))
print("new", mode(b"n\xff"), sorted(os.listxattr(b"n\xff")))
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
  - {id: A, title: makes a folder, file_surface: [a.txt, "n*/**"], discipline: sh}
  - {id: B, title: looks around, depends_on: [A], file_surface: [b.txt], discipline: sh}
"""


def test_in_a_run_the_next_node_finds_a_non_utf8_folder_the_last_one_made_as_a_checkout_makes_it(tmp_path, orch):
    from tests.engine_helpers import campaign_repo, journal
    repo = campaign_repo(tmp_path, DAG, WORKER, files={"old/f.txt": "y\n"})
    done = orch("run", "--no-interactive", cwd=repo)
    text = done.out + done.err
    adds = {e["context"]["node"]: e["context"] for e in journal(repo, "nf")
            if e["kind"] == "result" and e["context"].get("effect") == "worktree-add"}
    assert not adds["B"].get("reused"), text  # A's working copy went: a fresh checkout for B
    seen = dict(line.split(" ", 1) for line in repo.git("show", "campaign/nf:b.txt").splitlines())
    assert seen["new"] == seen["old"], seen
