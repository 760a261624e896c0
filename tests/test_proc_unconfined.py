"""proc counts the processes it starts outside git and the sandbox, and calls the watch's hook before each
(engine/watch.py looks at the user's checkout then): real processes, real git."""
from __future__ import annotations

from orchestrate import git, proc
from tests.helpers import make_repo


def test_a_shell_command_is_counted_and_the_hook_runs_first(tmp_path, monkeypatch):
    seen: list[int] = []
    monkeypatch.setattr(proc, "_before_unconfined", None)
    proc.before_unconfined(lambda: seen.append(proc.unconfined()))
    try:
        before = proc.unconfined()
        proc.run_shell("true", cwd=tmp_path)
        assert proc.unconfined() == before + 1 and seen == [before]  # the hook ran before it started
    finally:
        proc.before_unconfined(None)


def test_git_through_orchestrate_git_and_its_kept_readers_are_not_counted(tmp_path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    before = proc.unconfined()
    git.git(repo, "status", "--porcelain")
    from orchestrate import git_batch
    assert git_batch.read(repo, "HEAD:a.txt") is not None
    assert proc.unconfined() == before


def test_a_command_in_the_sandbox_is_not_counted_and_one_outside_it_is(tmp_path):
    from orchestrate.workers import sandbox
    if sandbox.probe() is not None:
        import pytest
        pytest.skip(f"no sandbox here: {sandbox.probe()}")
    before = proc.unconfined()
    with open(tmp_path / "log", "wb") as log:
        child = proc.spawn(sandbox.wrap(["true"], cwd=tmp_path, writable=[tmp_path]), cwd=tmp_path, env={}, log=log,
                           confined=True)  # as the local executor says of a worker in the sandbox
        child.wait()
        assert proc.unconfined() == before
        proc.spawn(["true"], cwd=tmp_path, env={}, log=log).wait()
    assert proc.unconfined() == before + 1
