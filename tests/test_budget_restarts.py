"""Every worker started under a budget is told what it may still spend (README, Budgets), also one started
again without DISPATCH: after its surface was widened, and a retry `resume` starts for an attempt a
killed runner cut off (rv79: both ran with ORCH_BUDGET_* unset)."""
from __future__ import annotations

import time

from tests.engine_helpers import campaign_repo, cli

DAG = """\
topic: rb
budget: {cost_usd: 20}
workers: {sh: "./work.sh"}
nodes:
  - {id: N1, file_surface: [n1.txt], discipline: sh}
"""

# each run notes what it was told, reports $5; the first run asks for extra.txt
WIDEN_WORKER = r"""#!/bin/sh
echo "told ${ORCH_BUDGET_COST_USD:-nothing}" >> "$(dirname "$ORCH_USAGE")/told.log"
printf '{"usage": {"input_tokens": 1, "output_tokens": 1, "cost_usd": 5}}' > "$ORCH_USAGE"
if [ ! -e "$(dirname "$ORCH_USAGE")/froze" ]; then
  touch "$(dirname "$ORCH_USAGE")/froze"
  printf '{"freeze": "surface-exceed", "paths": ["extra.txt"]}' > "$ORCH_RETURN"; exit 0
fi
echo 1 > n1.txt; echo 1 > extra.txt
"""


def _told(repo) -> list[str]:
    return (repo / ".scratch" / "runs" / "rb" / "N1" / "told.log").read_text().splitlines()


def test_a_worker_resumed_after_a_widening_is_told_what_it_may_still_spend(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WIDEN_WORKER)
    result = orch("run", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert "surface widened with extra.txt; worker resumed" in result.out
    assert _told(repo) == ["told 20.000000", "told 15.000000"], result.out


# Without the sandbox: a worker in bubblewrap dies with the killed runner (--die-with-parent), before or after it
# wrote its line as the machine's load decides; without it, it runs on until the resume stops it.
UNBOXED = DAG.replace("nodes:", "defaults: {sandbox: none}\nnodes:")

# the first attempt waits to be cut off (resume stops it); the retry returns at once
CUT_WORKER = r"""#!/bin/sh
echo "told ${ORCH_BUDGET_COST_USD:-nothing}" >> "$(dirname "$ORCH_USAGE")/told.log"
[ "$ORCH_ATTEMPT" != 1 ] || exec sleep 300
echo 1 > n1.txt
"""


def test_a_retry_resume_starts_for_a_cut_off_attempt_is_told_what_it_may_still_spend(tmp_path):
    repo = campaign_repo(tmp_path, UNBOXED, CUT_WORKER)
    assert cli(repo, "run", fault="poll:1").returncode == -9  # killed while its worker runs
    told = repo / ".scratch" / "runs" / "rb" / "N1" / "told.log"
    for _ in range(1800):  # the orphaned first attempt has started (an event, not a delay)
        if told.exists() and told.read_text().strip():
            break
        time.sleep(0.05)
    resumed = cli(repo, "resume")
    assert resumed.returncode == 75, resumed.stdout + resumed.stderr
    assert "it runs again as a new attempt" in resumed.stdout
    assert _told(repo) == ["told 20.000000", "told 20.000000"]


# the first attempt reports $5, then waits to be cut off; the retry reports $5 and returns
SPENT_WORKER = r"""#!/bin/sh
echo "told ${ORCH_BUDGET_COST_USD:-nothing}" >> "$(dirname "$ORCH_USAGE")/told.log"
printf '{"usage": {"input_tokens": 1, "output_tokens": 1, "cost_usd": 5}}' > "$ORCH_USAGE"
[ "$ORCH_ATTEMPT" != 1 ] || exec sleep 300
echo 1 > n1.txt
"""


def test_what_a_cut_off_attempt_spent_counts_before_its_retry_starts(tmp_path):
    """rv79: resume stopped the cut-off attempt and started the retry without reading what the first had
    reported: $5 spent went uncounted, the retry was told $20 was left, and the budget could be passed."""
    import json
    repo = campaign_repo(tmp_path, UNBOXED, SPENT_WORKER)
    assert cli(repo, "run", fault="poll:1").returncode == -9  # killed while its worker runs
    spent = repo / ".scratch" / "runs" / "rb" / "N1" / "usage-1.json"
    for _ in range(1800):  # the orphaned first attempt has reported (an event, not a delay)
        if spent.exists() and spent.read_text().endswith("}}"):
            break
        time.sleep(0.05)
    resumed = cli(repo, "resume")
    assert resumed.returncode == 75, resumed.stdout + resumed.stderr
    assert _told(repo) == ["told 20.000000", "told 15.000000"], resumed.stdout + resumed.stderr
    total = json.loads(cli(repo, "status", "--json").stdout)["usage"]["total"]
    assert total["cost_usd"] == 10, total


def test_a_cut_off_attempt_a_killed_resume_journalled_counts_once(tmp_path):
    """rv80: a resume killed after it journalled the cut-off attempt's row, before the retry it started was
    committed, left the attempt as cut off again: the next resume journalled its row a second time. Each
    attempt's row is journalled once: the first's, the retry's that killed resume started (rv81: it ran and
    spent, but was dropped with that resume's commit and never counted), and the last one's."""
    import json

    from tests.engine_helpers import journal
    repo = campaign_repo(tmp_path, UNBOXED, SPENT_WORKER)
    assert cli(repo, "run", fault="poll:1").returncode == -9  # killed while its worker runs
    runs = repo / ".scratch" / "runs" / "rb" / "N1"
    for attempt in (1, 2):
        spent = runs / f"usage-{attempt}.json"
        for _ in range(1800):  # the orphaned attempt has reported (an event, not a delay)
            if spent.exists() and spent.read_text().endswith("}}"):
                break
            time.sleep(0.05)
        if attempt == 1:
            assert cli(repo, "resume", fault="flush:1").returncode == -9  # the resume killed at its first commit
    resumed = cli(repo, "resume")
    assert resumed.returncode == 75, resumed.stdout + resumed.stderr
    rows = [(e["context"]["effect"], e["context"]["attempt"]) for e in journal(repo, "rb") if e["kind"] == "result"
            and e["context"].get("effect") in ("worker-start", "worker-cut-off") and "usage" in e["context"]]
    assert rows == [("worker-cut-off", 1), ("worker-cut-off", 2), ("worker-start", 3)], rows
    total = json.loads(cli(repo, "status", "--json").stdout)["usage"]["total"]
    assert total["cost_usd"] == 15, total


def test_an_attempt_whose_worker_began_before_a_crash_lost_its_entry_counts(tmp_path):
    """rv81: the runner killed after a worker's start was journalled (written ahead), before the node's entry for
    that attempt was (held for the state's commit): resume ran DISPATCH again and what that worker spent was never
    counted; the next attempt was told $20 were left."""
    import json
    repo = campaign_repo(tmp_path, UNBOXED, SPENT_WORKER)
    assert cli(repo, "run", fault="spawned:1").returncode == -9
    spent = repo / ".scratch" / "runs" / "rb" / "N1" / "usage-1.json"
    for _ in range(1800):  # the orphaned first attempt has reported (an event, not a delay)
        if spent.exists() and spent.read_text().endswith("}}"):
            break
        time.sleep(0.05)
    resumed = cli(repo, "resume")
    assert resumed.returncode == 75, resumed.stdout + resumed.stderr
    assert _told(repo) == ["told 20.000000", "told 15.000000"], resumed.stdout + resumed.stderr
    total = json.loads(cli(repo, "status", "--json").stdout)["usage"]["total"]
    assert total["cost_usd"] == 10, total
