"""Per-node cost of the two ways to give a worker its own checkout: a linked worktree (what orchestrate
does) and a clone sharing the objects through alternates (`git clone --shared`, a cleaner boundary:
its own config, hooks, refs and index). Per node: create it on a new branch, one commit, bring the
commit into the project's repository (nothing for a worktree; `git fetch` for a clone), remove it.
The two are interleaved, node by node, so drift on a shared machine hits both alike.

Run by hand: .venv/bin/python benchmarks/clone_vs_worktree.py [--nodes 16] [--files 500] [--dir /dev/shm]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

ENV = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@x",
           GIT_CONFIG_NOSYSTEM="1")


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True)


def project(root: Path, files: int) -> Path:
    repo = root / "repo"
    (repo / "src").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for i in range(files):
        (repo / "src" / f"f{i}.txt").write_text(f"{i}\n" * 20)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return repo


def worktree(repo: Path, where: Path, i: int) -> None:
    git(repo, "worktree", "add", "-q", "-b", f"wt/{i}", str(where), "main")
    (where / f"n{i}.txt").write_text("x\n")
    git(where, "add", "-A")
    git(where, "commit", "-qm", f"node {i}")
    git(repo, "worktree", "remove", "--force", str(where))


def clone(repo: Path, where: Path, i: int) -> None:
    git(repo.parent, "clone", "-q", "--shared", "-b", "main", str(repo), str(where))
    git(where, "switch", "-q", "-c", f"cl/{i}")
    (where / f"n{i}.txt").write_text("x\n")
    git(where, "add", "-A")
    git(where, "commit", "-qm", f"node {i}")
    git(repo, "fetch", "-q", str(where), f"cl/{i}:cl/{i}")
    shutil.rmtree(where)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--dir", default=None, help="where to build the repository (e.g. /dev/shm)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="orch-clone-bench-", dir=args.dir) as tmp:
        root = Path(tmp)
        repo = project(root, args.files)
        spent = {"worktree": 0.0, "clone --shared": 0.0}
        for i in range(args.nodes):
            for name, way in (("worktree", worktree), ("clone --shared", clone)):
                t0 = time.perf_counter()
                way(repo, root / f"{name.split()[0]}-{i}", i)
                spent[name] += time.perf_counter() - t0
        per = {name: s / args.nodes * 1000 for name, s in spent.items()}
        print(f"{args.nodes} nodes, {args.files} files: worktree {per['worktree']:.1f} ms/node, "
              f"clone --shared {per['clone --shared']:.1f} ms/node, ratio {per['clone --shared'] / per['worktree']:.2f}")


if __name__ == "__main__":
    main()
