"""README, Budgets: once a node's attempts have spent its budget, "A rework answer starts nothing until the
budget in the DAG is raised". Real shell-script workers report their spend to $ORCH_USAGE."""
from __future__ import annotations

from tests.engine_helpers import campaign_repo, journal, statuses
from tests.test_budget import NODE_DAG, WORKER


def _attempts(repo, node: str) -> list[int]:
    return [e["context"]["attempt"] for e in journal(repo, "nodebud") if e["kind"] == "result"
            and e["context"].get("effect") == "worker-start" and e["context"]["node"] == node]


def test_a_rework_answer_starts_nothing_until_the_budget_in_the_dag_is_raised(tmp_path, orch, monkeypatch):
    repo = campaign_repo(tmp_path, NODE_DAG, WORKER)  # N1 fails every attempt and spends $0.04 each; budget $0.05
    first = orch("run", cwd=repo)
    assert first.rc == 75 and "reaching its budget of $0.0500" in first.out, first.out + first.err
    assert _attempts(repo, "N1") == [1, 2]

    # rework, as a person answers it: still over budget, so nothing starts and the seam opens again
    assert orch("decide", "realignment", "rework", "--note", "try again", "--topic", "nodebud", "--as", "t@x",
                cwd=repo).rc == 0
    again = orch("resume", "--topic", "nodebud", cwd=repo)
    assert again.rc == 75, again.out + again.err
    assert "reaching its budget of $0.0500 (nodes.N1.budget); no further attempt is started" in again.out
    assert _attempts(repo, "N1") == [1, 2]  # max_attempts 5 and a rework would otherwise have started attempt 3
    seam = [e["context"] for e in journal(repo, "nodebud") if e["kind"] == "seam"][-1]
    assert (seam["seam"], seam["case"], seam["node"]) == ("realignment", "attempts-spent", "N1")
    assert any("only once the budget in the DAG is raised" in line for line in seam["show"])
    assert statuses(repo, orch, "nodebud")["N1"] != "DISPATCHED"

    # the budget raised in the campaign's DAG copy, then rework again: the edit is an amendment a person accepts
    # first (it is looked at once the seam's answer is applied), and then the rework runs
    copy = repo / ".ledger" / "state" / "nodebud" / "dag.yaml"
    copy.write_text(copy.read_text().replace("cost_usd: 0.05", "cost_usd: 1.0"))
    assert orch("decide", "realignment", "rework", "--note", "budget raised", "--topic", "nodebud", "--as", "t@x",
                cwd=repo).rc == 0
    amended = orch("resume", "--topic", "nodebud", cwd=repo)
    assert amended.rc == 75 and "paused at seam dag-amendment" in amended.out, amended.out + amended.err
    assert 'node N1: budget {"cost_usd": 0.05} -> {"cost_usd": 1.0}' in amended.out
    assert _attempts(repo, "N1") == [1, 2]
    assert orch("decide", "dag-amendment", "accept", "--topic", "nodebud", "--as", "t@x", cwd=repo).rc == 0
    monkeypatch.setenv("N1_PASSES", "1")
    resumed = orch("resume", "--topic", "nodebud", cwd=repo)
    assert resumed.rc == 75 and "final-acceptance" in resumed.out, resumed.out + resumed.err
    assert _attempts(repo, "N1") == [1, 2, 3]
    assert statuses(repo, orch, "nodebud")["N1"] == "ACCEPTED"
