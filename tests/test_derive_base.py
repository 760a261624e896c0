"""`base:` deleted under a campaign: before DERIVE looks it up, the refusal names the DAG's `base:` line as
`run`'s own check does; after the campaign opened, resume goes on from the recorded baseline."""
from __future__ import annotations

import subprocess
import sys

from tests.engine_helpers import campaign_repo, journal

# the first attempt writes what the evaluator refuses, so the campaign pauses at realignment before its end
WORKER = '#!/bin/sh\nif [ "$ORCH_ATTEMPT" = 1 ]; then echo a; else echo b; fi > a.txt\n'


def _dag(check: str = "true") -> str:
    return ("topic: rb\nbase: release\nworkers: {sh: \"./work.sh\"}\ndefaults: {max_attempts: 1}\nnodes:\n"
            f"  - {{id: A, title: alpha, file_surface: [a.txt], discipline: sh, evaluators: [{{name: ok, run: \"{check}\"}}]}}\n")


def _cli(repo, *args, program=("-m", "orchestrate")):
    return subprocess.run([sys.executable, *program, *map(str, args)], cwd=repo, capture_output=True, text=True,
                          timeout=120)


# `run` checks `base:` before taking the campaign's lock; the branch is deleted right after that check (as
# another process could), so DERIVE meets a base that no longer names a commit
RACE = """
import subprocess, sys
from orchestrate.engine import runner
checked = runner._topic_of
def then_deleted(*args, **kw):
    name = checked(*args, **kw)
    subprocess.run(["git", "branch", "-D", "-q", "release"], check=True)
    return name
runner._topic_of = then_deleted
from orchestrate.cli.main import main
sys.exit(main())
"""


def test_a_base_deleted_before_derive_is_refused_at_the_dag_s_base_line(tmp_path):
    repo = campaign_repo(tmp_path, _dag(), WORKER)
    repo.git("branch", "release")
    dag = repo / ".ledger" / "state" / "dag.yaml"

    ran = _cli(repo, "run", "--no-interactive", program=("-c", RACE))

    assert ran.returncode == 2 and "Traceback" not in ran.stderr, ran.stderr
    assert ran.stderr.strip().splitlines() == [
        f"orchestrate: error: {dag}:2: base: `release` does not name a commit in {repo}; name a branch, tag or "
        "commit there (`git log` lists them)"]
    assert not (repo / ".ledger" / "state" / "rb").exists() and "campaign/rb" not in repo.git("branch")


def test_resume_after_the_base_was_deleted_goes_on_from_the_recorded_baseline(tmp_path):
    """DERIVE never runs again on resume (its `open` entry, holding the baseline, is recorded with its
    transition), so a deleted base ref is never looked up again."""
    repo = campaign_repo(tmp_path, _dag("grep -qx b a.txt"), WORKER)
    repo.git("branch", "release")
    baseline = repo.git("rev-parse", "release")
    assert _cli(repo, "run", "--no-interactive").returncode == 75  # A failed its one attempt: realignment
    repo.git("branch", "-D", "release")
    assert _cli(repo, "decide", "realignment", "rework", "--note", "again").returncode == 0

    resumed = _cli(repo, "resume", "--no-interactive")

    assert resumed.returncode == 75 and "Traceback" not in resumed.stderr, resumed.stdout + resumed.stderr
    assert "final-acceptance" in resumed.stdout
    opened = [e["context"] for e in journal(repo, "rb") if e["kind"] == "open"]
    assert [o["baseline"] for o in opened] == [baseline]
    assert repo.git("merge-base", "--is-ancestor", baseline, "campaign/rb") == ""
