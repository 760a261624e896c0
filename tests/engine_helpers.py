"""Building campaign repositories for engine tests, and reading back what the engine did."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import RepoDir, make_repo


def campaign_repo(tmp_path: Path, dag: str, worker: str, files: dict[str, str] | None = None) -> RepoDir:
    """A repository whose baseline holds `work.sh` and `files`, with an initialised recorder and the DAG."""
    repo = make_repo(tmp_path / "repo", {"README.md": "# project\n", "work.sh": worker, **(files or {})})
    subprocess.run(["chmod", "+x", str(repo / "work.sh")], check=True)
    repo.commit("worker script executable")
    from orchestrate.recorder.init import init_project
    init_project(repo)
    (repo / ".ledger" / "state" / "dag.yaml").write_text(dag)
    return repo


def checkout_state(repo: RepoDir) -> dict:
    return {"head": repo.git("rev-parse", "HEAD"), "branch": repo.git("symbolic-ref", "HEAD"),
            "index": repo.git("ls-files", "-s"), "status": repo.git("status", "--porcelain", "--untracked-files=all")}


def refs(repo: RepoDir) -> dict[str, str]:
    out = repo.git("for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split() for line in out.splitlines())


def only_moved_forward(repo: RepoDir, ref: str) -> bool:
    """Every step in the ref's reflog goes from a commit to one of its descendants."""
    shas = repo.git("reflog", "show", "--format=%H", ref).split()
    for newer, older in zip(shas, shas[1:]):
        if subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", older, newer]).returncode:
            return False
    return True


def recorder_subjects(repo: RepoDir) -> list[str]:
    return RepoDir(repo / ".ledger").git("log", "--reverse", "--format=%s").splitlines()


def first_parent_chain(repo: RepoDir, base: str, branch: str) -> list[tuple[str, str]]:
    out = repo.git("log", "--first-parent", "--format=%P%x09%s", f"{base}..{branch}")
    return [(line.split("\t")[0], line.split("\t")[1]) for line in out.splitlines()]


def journal(repo: RepoDir, topic: str) -> list[dict]:
    """Every entry of the campaign's journal, in order (its sealed segments first)."""
    import json

    from orchestrate.recorder import segments
    path = repo / ".ledger" / "state" / topic / "journal.jsonl"
    return [json.loads(line) for line in segments.read_bytes(path).splitlines()]


def journal_text(repo: RepoDir, topic: str) -> str:
    """The campaign's journal as one text (its sealed segments first, then the live file)."""
    from orchestrate.recorder import segments
    return segments.read_bytes(repo / ".ledger" / "state" / topic / "journal.jsonl").decode()


def statuses(repo: RepoDir, orch, topic: str) -> dict[str, str]:
    """node -> status, as `orchestrate status --json` reports it."""
    import json
    out = orch("status", "--json", "--topic", topic, cwd=repo).out
    return {n["id"]: n["status"] for n in json.loads(out)["nodes"]}


def racing_seal(real, when: str, line: bytes):
    """A stand-in for recorder/segments.py's write_atomic (`real`) that appends `line` to the journal as it is
    sealed: "into the segment" (the live path still names the file that is now the segment) or "into the new
    live file" (before the runner stamps it)."""
    def racing(path, data):
        if when == "into the segment":
            with path.open("ab") as fh:
                fh.write(line)
        real(path, data)
        if when == "into the new live file":
            with path.open("ab") as fh:
                fh.write(line)
    return racing


def cli(repo, *args: str, fault: str | None = None, quiet: bool = False, timeout: float = 180,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`orchestrate ARGS` in its own process, as in CI (`CI=true`), stdin closed; `fault`: an
    ORCHESTRATE_FAULT kill point (orchestrate/faults.py), none otherwise, whatever the test's environment."""
    full = dict(os.environ, CI="true", **(env or {}))
    full.pop("ORCHESTRATE_FAULT", None)
    if fault:
        full["ORCHESTRATE_FAULT"] = fault
    return subprocess.run([sys.executable, "-m", "orchestrate", *args, *(["--quiet"] if quiet else [])], cwd=repo,
                          env=full, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=timeout)


def until(holds, runner, what: str) -> None:
    """Until `holds()` (an event, not a delay); a runner that ends first fails, and so does a minute and a half."""
    for _ in range(1800):
        if holds():
            return
        assert runner.poll() is None, f"the runner ended before {what}"
        time.sleep(0.05)
    pytest.fail(f"never {what}")
