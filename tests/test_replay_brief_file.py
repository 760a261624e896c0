"""A plan with `brief_file:` (rv59). Its paths are relative to the folder of the DAG the campaign was opened
from, which the `open` entry records; the campaign's own copy (`.ledger/state/<topic>/dag.yaml`, the file a
person edits) and the replay's DAG live elsewhere, and must still find the briefs. A replay that stops before
it opens says why, not that its own scratch campaign is missing."""
from __future__ import annotations

from tests.engine_helpers import cli
from tests.helpers import make_repo

PLAN = """\
topic: {topic}
mode: autonomous
nodes:
  - {{id: A, file_surface: [a.txt], worker: "echo a > a.txt", brief_file: prompts/{topic}.md}}
"""


def _project(tmp_path, topic: str, *, committed: bool):
    plan = {"plans/b.yaml": PLAN.format(topic=topic), f"plans/prompts/{topic}.md": "Write a.txt\n"}
    repo = make_repo(tmp_path / "repo", {"README.md": "# project\n", **(plan if committed else {})})
    if not committed:  # the plan and its brief never enter the baseline
        repo.write(plan)
    assert cli(repo, "init").returncode == 0
    ran = cli(repo, "run", "--dag", "plans/b.yaml")
    assert ran.returncode == 75 and "final-acceptance" in ran.stdout, ran.stdout + ran.stderr
    return repo


def test_a_campaign_whose_plan_has_brief_files_replays_the_same(tmp_path):
    repo = _project(tmp_path, "pl2", committed=True)
    replayed = cli(repo, "replay", "--campaign", "pl2")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "replay of campaign pl2 matches" in replayed.stdout


def test_the_campaigns_own_copy_finds_the_briefs_of_the_dag_it_was_opened_from(tmp_path):
    repo = _project(tmp_path, "pl2", committed=True)
    for args in (("validate",), ("layers",), ("show", "A")):
        done = cli(repo, *args, "--dag", ".ledger/state/pl2/dag.yaml")
        assert done.returncode == 0, (args, done.stdout + done.stderr)
    done = cli(repo / ".ledger" / "state" / "pl2", "validate", "--dag", "dag.yaml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_replay_that_cannot_open_says_why(tmp_path):
    repo = _project(tmp_path, "pl3", committed=False)
    (repo / "plans" / "prompts" / "pl3.md").unlink()  # neither the baseline nor the project has it now
    replayed = cli(repo, "replay", "--campaign", "pl3")
    assert replayed.returncode == 2, replayed.stdout + replayed.stderr
    assert "stopped before it opened" in replayed.stderr
    assert "prompts/pl3.md` does not exist" in replayed.stderr
    assert "no recorded campaign" not in replayed.stderr
