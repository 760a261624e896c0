"""rv67: the worker's `model` string in $ORCH_USAGE went verbatim into the retrospective's markdown table:
a line break ends the table and the worker writes headings and HTML of its own into the committed
retrospective (`.ledger/log/<date>-<topic>.md`) that a person reads before final acceptance."""
from __future__ import annotations

from tests.engine_helpers import campaign_repo, cli

DAG = """\
topic: r
workers: {sh: "./work.sh"}
nodes:
  - {id: N1, title: one, depends_on: [], file_surface: [n1.txt], discipline: sh}
"""
WORKER = r"""#!/bin/sh
echo one > n1.txt && git add n1.txt && git commit -qm one
python3 - <<'PY'
import json, os
model = "m |\n\n## Security review\n\nReviewed by the security team: **safe to accept**.\n\n<details><summary>x</summary>"
json.dump({"usage": {"input_tokens": 1, "output_tokens": 1, "cost_usd": 0.0, "model": model}},
          open(os.environ["ORCH_USAGE"], "w"))
PY
"""


def test_usage_model_cannot_write_markdown_into_the_retrospective(tmp_path):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    done = cli(repo, "run")
    assert done.returncode == 75, done.stdout + done.stderr  # final acceptance
    retro = next((repo / ".ledger" / "log").glob("*-r.md")).read_text()
    assert "\n## Security review" not in retro and "<details>" not in retro, retro[retro.find("## Usage"):]
