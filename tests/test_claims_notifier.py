"""README, Notifications: "Each command runs with `bash -o pipefail -c` in the project's root". The notifiers
write down their shell's options and folder, and one whose pipeline fails only under pipefail is a warning.
orchestrate/proc.py's `run_shell` falls back to `/bin/sh -c` (no pipefail) when no bash is on PATH; the README
does not say so: the second test shows what a notifier gets then."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.test_notify import _cli, _setup

NOTIFY = """\
notify:
  - echo "$SHELLOPTS" > STAMP/opts
  - echo "${BASH_VERSION:-no bash}" > STAMP/bash
  - pwd -P > STAMP/cwd
  - false | true
"""


def test_a_notifier_runs_under_bash_with_pipefail_in_the_project_root(tmp_path):
    repo, _, stamp = _setup(tmp_path, NOTIFY)
    run = _cli(repo, "run", stamp=stamp)
    assert run.returncode == 75 and "final-acceptance" in run.stdout, run.stdout + run.stderr
    assert "pipefail" in (stamp / "opts").read_text().strip().split(":")
    assert (stamp / "bash").read_text().strip() != "no bash"
    assert (stamp / "cwd").read_text().strip() == str(repo.resolve())
    log = repo / ".scratch" / "runs" / "t" / "notify.log"
    # `false | true` exits 0 in a shell without pipefail; under pipefail it is a failed notifier
    assert f"warning: notify command `false | true` exited 1 (on seam; the campaign goes on; log: {log})" in run.stdout
    assert "seam -: false | true: notify command `false | true` exited 1\n" in log.read_text()


def _path_without_bash(tmp_path: Path) -> str:
    """A PATH holding every program of ours but bash."""
    bindir = tmp_path / "nobash"
    bindir.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            target = bindir / entry.name
            if entry.name != "bash" and not target.exists() and os.access(entry.path, os.X_OK):
                target.symlink_to(entry.path)
    return str(bindir)


def test_without_bash_on_path_a_notifier_runs_under_bin_sh(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", _path_without_bash(tmp_path))
    assert shutil.which("bash") is None
    repo, _, stamp = _setup(tmp_path, NOTIFY)
    run = _cli(repo, "run", stamp=stamp)
    assert run.returncode == 75 and "final-acceptance" in run.stdout, run.stdout + run.stderr
    assert (stamp / "bash").read_text().strip() == "no bash"
    assert (stamp / "cwd").read_text().strip() == str(repo.resolve())
    log = (repo / ".scratch" / "runs" / "t" / "notify.log").read_text()
    assert "seam -: false | true: ok\n" in log  # no pipefail in /bin/sh: the same pipeline passes
    assert "warning: notify command" not in run.stdout
