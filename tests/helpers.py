"""Test helpers: real repositories in tmp_path, and the CLI called in-process through its error boundary."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


IDENTITY = "[user]\n\tname = Someone\n\temail = someone@example.com\n"  # a ~/.gitconfig of a test's own


class RepoDir(type(Path())):  # type: ignore[misc]
    """A path to a real git repository with small conveniences for building histories."""

    def git(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(["git", "-C", str(self), *args], capture_output=True, text=True)
        if check and done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
        return done.stdout.strip()

    def write(self, files: dict[str, str]) -> "RepoDir":
        for rel, text in files.items():
            p = self / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        return self

    def commit(self, message: str, files: dict[str, str] | None = None) -> str:
        if files:
            self.write(files)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")


def make_repo(path: Path, files: dict[str, str] | None = None) -> RepoDir:
    path.mkdir(parents=True, exist_ok=True)
    repo = RepoDir(path)
    repo.git("init", "-q", "--initial-branch=main")
    repo.commit("baseline", files or {"README.md": "# project\n"})
    return repo


@dataclass
class Result:
    rc: int
    out: str
    err: str


DEMO_DAG = """\
topic: demo
workers:
  core: "sh demo/workers/scripted.sh"
nodes:
  - {id: D1, title: "base file", depends_on: [], file_surface: ["demo/base.txt"], discipline: core, mitigates: []}
  - {id: D2, title: "file a", depends_on: [D1], file_surface: ["demo/a.txt"], discipline: core, mitigates: []}
  - {id: D3, title: "file b", depends_on: [D1], file_surface: ["demo/b.txt"], discipline: core, mitigates: []}
  - {id: D4, title: "file a, serialized", depends_on: [D1], file_surface: ["demo/a.txt"], discipline: core, serialize: true, mitigates: []}
"""


def as_nobody(script: str) -> subprocess.CompletedProcess:
    """`script` run by /usr/bin/python3 as an ordinary user (permissions bind it: they do not bind root), with a
    folder of its own (argv[1]) and this checkout's orchestrate importable (argv[2]); skips without setpriv."""
    import os
    import shutil
    import tempfile
    import pytest
    import orchestrate
    if os.geteuid() != 0 or not shutil.which("setpriv") or not os.path.exists("/usr/bin/python3"):
        pytest.skip("needs root to run a part as an ordinary user (setpriv) with /usr/bin/python3")
    top = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        os.chmod(top, 0o777)
        return subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3",
                               "-c", script, str(top), str(Path(orchestrate.__file__).parent.parent)],
                              capture_output=True, text=True, timeout=60, env={"PATH": os.environ["PATH"],
                                                                             "HOME": str(top)})
    finally:
        subprocess.run(["rm", "-rf", str(top)], check=False)


def object_folders_blocked_until_a_failure(git_dir: Path, monkeypatch, command: str) -> list[str]:
    """A file put at each of the object store's 256 fan-out folders (there must be none: pack first), so that
    every loose object git writes fails, as when a repack's prune-packed removes the folder git is writing in;
    they are taken away as soon as a `command` run through orchestrate.git fails. What git said then is
    appended to the list returned."""
    from orchestrate import git
    obstacles = [git_dir / "objects" / f"{i:02x}" for i in range(256)]
    assert not any(o.exists() for o in obstacles), "pack the repository first"
    for o in obstacles:
        o.write_text("not a folder\n")
    real, failed = git.git, []

    def watched(where, *args, **kw):
        done = real(where, *args, **kw)
        if command in args and done.rc not in (0, 1) and not failed:
            failed.append(done.stderr)
            for o in obstacles:
                o.unlink()
        return done
    monkeypatch.setattr(git, "git", watched)
    return failed
