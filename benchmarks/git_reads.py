"""Reading git's objects and refs: a git process per read against the reader orchestrate keeps open
(orchestrate/git_batch.py, one `git cat-file --batch`) and, when it is installed, GitPython.

Run by hand: .venv/bin/python benchmarks/git_reads.py [--reads 300] [--rounds 5]
GitPython is not a dependency of orchestrate: install it in the venv to measure it (`pip install gitpython`).
Each round times every way on the same names, interleaved; the median round is printed, per read, with
its ratio to a process per read. What is read, in a repository of 50 commits on 3 branches:
- resolve: a branch, a full id and `HEAD~3` to the commit they name (`rev-parse --verify name^{commit}`);
- file: a file's content at a commit (`git show rev:path`).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from orchestrate import git, git_batch  # noqa: E402

ENV = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@x")


def build(root: Path) -> tuple[Path, list[str], list[tuple[str, str]]]:
    repo = root / "r"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=ENV)
    shas = []
    for i in range(50):
        (repo / f"f{i % 7}.txt").write_text(f"line {i}\n" * (i + 1))
        subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, env=ENV)
        subprocess.run(["git", "-C", str(repo), "commit", "-qm", f"c{i}"], check=True, env=ENV)
        shas.append(subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                                   check=True).stdout.strip())
        if i in (10, 30):
            subprocess.run(["git", "-C", str(repo), "branch", f"b{i}"], check=True, env=ENV)
    names = ["main", "b10", "refs/heads/b30", "HEAD~3", *shas[::7]]
    files = [(shas[i], f"f{i % 7}.txt") for i in range(7, 50, 6)]
    return repo, names, files


def by_process(repo: Path, names, files) -> tuple[list, list]:
    resolved = [git.out(repo, "rev-parse", "--verify", "--quiet", f"{n}^{{commit}}") for n in names]
    texts = [git.out(repo, "show", f"{rev}:{path}") for rev, path in files]
    return resolved, texts


def by_reader(repo: Path, names, files) -> tuple[list, list]:
    resolved = [git_batch.read(repo, f"{n}^{{commit}}")[0] for n in names]
    texts = [git_batch.read(repo, f"{rev}:{path}")[2].decode().strip() for rev, path in files]
    return resolved, texts


def gitpython(repo: Path):
    import git as gitpython_module  # GitPython's package is named `git`
    handle = gitpython_module.Repo(repo)

    def read(_repo: Path, names, files) -> tuple[list, list]:
        resolved = [handle.commit(n).hexsha for n in names]
        texts = [(handle.commit(rev).tree / path).data_stream.read().decode().strip() for rev, path in files]
        return resolved, texts
    return read, handle


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reads", type=int, default=300, help="reads per way and round (names and files alike)")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo, names, files = build(Path(tmp))
        reps = max(1, a.reads // (len(names) + len(files)))
        ways = {"process per read": by_process, "kept reader": by_reader}
        try:
            ways["GitPython"], handle = gitpython(repo)
        except ImportError:
            handle = None
            print("GitPython is not installed here: only the first two are measured")
        expected = by_process(repo, names, files)
        times: dict[str, list[float]] = {w: [] for w in ways}
        for _ in range(a.rounds):
            for way, read in ways.items():
                t0 = time.perf_counter()
                for _ in range(reps):
                    got = read(repo, names, files)
                times[way].append((time.perf_counter() - t0) / (reps * (len(names) + len(files))))
                assert got == expected, f"{way} read something else than git"
        base = statistics.median(times["process per read"])
        for way, runs in times.items():
            per = statistics.median(runs)
            print(f"{way:>18}: {1e6 * per:8.0f} us per read  ratio {per / base:6.3f}")
        git_batch.close_all()
        if handle is not None:
            handle.close()


if __name__ == "__main__":
    main()
