"""A retry that `resume` starts for an attempt its dead runner cut off is an attempt once its worker began,
even when that resume is killed before its first commit (rv81: the retry's DISPATCHED entry, held for that
commit, was dropped as a torn batch while its worker had run: the next resume took the first attempt for
the one cut off, and what the retry spent was never counted)."""
from __future__ import annotations

import json
import time

from tests.engine_helpers import cli, campaign_repo

DAG = """\
topic: rc
defaults: {sandbox: none}
workers: {sh: "./work.sh"}
nodes:
  - {id: N1, file_surface: [n1.txt], discipline: sh, budget: {cost_usd: 20}}
"""

# attempt 1 waits to be cut off; attempt 2 reports $5 and waits to be cut off; a later one reports $5 and returns
WORKER = r"""#!/bin/sh
echo "attempt $ORCH_ATTEMPT told ${ORCH_BUDGET_COST_USD:-nothing}" >> "$(dirname "$ORCH_USAGE")/told.log"
[ "$ORCH_ATTEMPT" != 1 ] || exec sleep 300
printf '{"usage": {"input_tokens": 1, "output_tokens": 1, "cost_usd": 5}}' > "$ORCH_USAGE"
[ "$ORCH_ATTEMPT" != 2 ] || exec sleep 300
echo 1 > n1.txt
"""


def _until(path, holds) -> None:
    for _ in range(1800):  # an orphaned worker got that far (an event, not a delay)
        if path.exists() and holds(path.read_text()):
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} never held what was awaited")


def test_a_retry_started_by_a_resume_killed_before_its_commit_counts_as_an_attempt(tmp_path):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    runs = repo / ".scratch" / "runs" / "rc" / "N1"
    assert cli(repo, "run", fault="poll:1").returncode == -9  # killed while attempt 1 runs
    _until(runs / "told.log", lambda text: "attempt 1" in text)
    assert cli(repo, "resume", fault="flush:1").returncode == -9  # killed as it commits the retry it started
    _until(runs / "usage-2.json", lambda text: text.endswith("}}"))  # the retry ran and spent $5
    resumed = cli(repo, "resume")
    assert resumed.returncode == 75, resumed.stdout + resumed.stderr
    assert "attempt 2 was cut off" in resumed.stdout, resumed.stdout
    told = (runs / "told.log").read_text().splitlines()
    assert told == ["attempt 1 told 20.000000", "attempt 2 told 20.000000", "attempt 3 told 15.000000"], told
    total = json.loads(cli(repo, "status", "--json").stdout)["usage"]["total"]
    assert total["cost_usd"] == 10, total
