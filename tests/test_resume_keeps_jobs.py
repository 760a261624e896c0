"""`resume` runs with the --jobs its campaign was run with, unless it is given one (rv77: a campaign run with
--jobs 1 resumed with one worker per CPU, and a resumed eager run could order its workers, and end, otherwise)."""
from __future__ import annotations

import pytest

from orchestrate.workers import sandbox
from tests.engine_helpers import campaign_repo, cli

REASON = sandbox.probe()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"bubblewrap does not work here: {REASON}")

DAG = """\
topic: jobs
workers: {sh: "./work.sh"}
defaults: {sandbox: bwrap}
nodes:
  - {id: A, title: a, file_surface: [a.txt], discipline: sh}
  - {id: B, title: b, file_surface: [b.txt], discipline: sh}
  - {id: C, title: c, file_surface: [c.txt], discipline: sh}
"""
WORKER = '#!/bin/sh\necho x > "$(echo "$ORCH_NODE" | tr ABC abc).txt"\n'


def _batches(text: str) -> list[int]:
    """How many nodes each dispatch started, as the run says (`DISPATCH -> AWAIT (dispatched: A B)`)."""
    import re
    return [len(found.split()) for found in re.findall(r"\(dispatched: ([^)]*)\)", text)]


def test_resume_keeps_the_runs_jobs_unless_told_otherwise(tmp_path):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert cli(repo, "run", "--jobs", "1", fault="commit:1").returncode == -9  # killed once the campaign opened
    resumed = cli(repo, "resume")
    assert resumed.returncode == 75, resumed.stdout + resumed.stderr
    assert _batches(resumed.stdout) == [1, 1, 1], resumed.stdout  # one at a time, as it was run


def test_a_resume_given_jobs_uses_them(tmp_path):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert cli(repo, "run", "--jobs", "1", fault="commit:1").returncode == -9
    resumed = cli(repo, "resume", "--jobs", "3")
    assert resumed.returncode == 75, resumed.stdout + resumed.stderr
    assert _batches(resumed.stdout) == [3], resumed.stdout


def test_only_a_jobs_the_person_gave_is_kept():
    """rv80: a run given no --jobs recorded its machine's CPU count, which a resume elsewhere then used."""
    from orchestrate.recorder.campaign import Campaign, apply
    opened = {"topic": "t", "dag_path": "d", "brief_dir": "b", "dag_hash": "h", "mode": "interactive",
              "baseline": "0" * 40, "branch": "campaign/t", "layers": [["A"]], "tip": "0" * 40, "jobs": 8}
    for given, kept in ((True, 8), (False, None)):
        c = Campaign()
        apply(c, {"kind": "open", "context": {**opened, "jobs_given": given}})
        assert c.jobs == kept
