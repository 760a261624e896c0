"""Pin the environment so tests never read or write the real home, and offer repo and CLI fixtures."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import IDENTITY, RepoDir, Result, make_repo


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test Person\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "0")
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "ORCH_TOPIC", "ORCH_NODE"):
        monkeypatch.delenv(var, raising=False)
    yield


@pytest.fixture
def repo(tmp_path) -> RepoDir:
    return make_repo(tmp_path / "repo")


@pytest.fixture
def orch(capsys, monkeypatch):
    """Run the CLI in-process through its error boundary: orch("validate", "--dag", p, cwd=dir)."""
    from orchestrate.cli.main import main

    def call(*args: str, cwd: Path | None = None) -> Result:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        capsys.readouterr()
        rc = main([str(a) for a in args])
        captured = capsys.readouterr()
        return Result(int(rc), captured.out, captured.err)

    return call


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A private folder of throwaway plugin distributions on sys.path (tests/plugin_site.py)."""
    from tests.plugin_site import throwaway_site
    yield from throwaway_site(tmp_path, monkeypatch)


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A $HOME of the test's own, with only a git identity in its ~/.gitconfig, and git's other config
    places pointed at it."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(IDENTITY)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    return home
