"""A worker frozen for surface-exceed is resumed after its surface is widened without a new attempt, so
DISPATCH's budget check never sees it: the widening must not resume a worker whose node's spend already
reached its `budget:` (README, Budgets: the attempt that brings the spend to the budget ends there)."""
from __future__ import annotations

from tests.engine_helpers import campaign_repo, journal

DAG = """\
topic: wb
workers: {sh: "./work.sh"}
nodes:
  - {id: N1, file_surface: [n1.txt], discipline: sh, max_attempts: 5, budget: {cost_usd: 5}}
"""

# every run reports $5 and notes it ran; the first run asks for extra.txt
WORKER = r"""#!/bin/sh
echo ran >> "$(dirname "$ORCH_USAGE")/ran.log"
printf '{"usage": {"input_tokens": 1, "output_tokens": 1, "cost_usd": 5}}' > "$ORCH_USAGE"
if [ ! -e "$(dirname "$ORCH_USAGE")/froze" ]; then
  touch "$(dirname "$ORCH_USAGE")/froze"
  printf '{"freeze": "surface-exceed", "paths": ["extra.txt"]}' > "$ORCH_RETURN"; exit 0
fi
echo 1 > n1.txt; echo 1 > extra.txt
"""


def test_a_widening_does_not_resume_a_worker_whose_node_spent_its_budget(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    result = orch("run", cwd=repo)
    assert result.rc == 75, result.out + result.err
    ran = (repo / ".scratch" / "runs" / "wb" / "N1" / "ran.log").read_text().splitlines()
    assert ran == ["ran"], result.out  # the frozen run was the last: its $5 reached the budget
    assert "worker resumed" not in result.out
    assert "reaching its budget of $5.0000 (nodes.N1.budget)" in result.out, result.out
    seam = [e["context"] for e in journal(repo, "wb") if e["kind"] == "seam"][-1]
    assert (seam["seam"], seam["case"], seam["node"]) == ("realignment", "attempts-spent", "N1")
    assert "extra.txt" not in (repo / ".ledger" / "state" / "wb" / "dag.yaml").read_text()  # nothing widened


# the first run reports $5 and asks for extra.txt; the resumed run reports nothing
ONCE_WORKER = r"""#!/bin/sh
if [ ! -e "$(dirname "$ORCH_USAGE")/froze" ]; then
  touch "$(dirname "$ORCH_USAGE")/froze"
  printf '{"usage": {"input_tokens": 1, "output_tokens": 1, "cost_usd": 5}}' > "$ORCH_USAGE"
  printf '{"freeze": "surface-exceed", "paths": ["extra.txt"]}' > "$ORCH_RETURN"; exit 0
fi
echo 1 > n1.txt; echo 1 > extra.txt
"""


def test_what_a_worker_reported_before_it_froze_counts_once_after_it_is_resumed(tmp_path, orch):
    """The resumed run of the same attempt writes the same $ORCH_USAGE file: one that writes nothing left the
    frozen run's report there, read again when it returned ($10 counted for $5 spent)."""
    import json
    repo = campaign_repo(tmp_path, DAG.replace("budget: {cost_usd: 5}", "budget: {cost_usd: 50}"), ONCE_WORKER)
    result = orch("run", cwd=repo)
    assert result.rc == 75 and "worker resumed" in result.out, result.out + result.err
    total = json.loads(orch("status", "--json", "--topic", "wb", cwd=repo).out)["usage"]["total"]
    assert total["cost_usd"] == 5, total
