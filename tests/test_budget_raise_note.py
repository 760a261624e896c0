"""A `budget raise` records the limit the person gave on the command line; words of its `--note` that
mention another `cost_usd=`/`tokens=` never override it (rv79)."""
from __future__ import annotations

from tests.engine_helpers import campaign_repo, journal

DAG = """\
topic: note
budget: {cost_usd: 1}
workers: {sh: "./work.sh"}
nodes:
  - {id: N1, file_surface: [N1.txt], discipline: sh}
  - {id: N2, depends_on: [N1], file_surface: [N2.txt], discipline: sh}
"""

WORKER = r"""#!/bin/sh
echo "$ORCH_NODE" > "$ORCH_NODE.txt"
printf '{"usage": {"input_tokens": 1, "output_tokens": 1, "cost_usd": 5}}' > "$ORCH_USAGE"
"""


def test_a_raise_note_mentioning_another_limit_does_not_override_the_command_line(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert orch("run", cwd=repo).rc == 75
    assert orch("decide", "budget", "raise", "--limit-usd", "6", "--note", "the hard cap is cost_usd=1000",
                "--topic", "note", "--as", "t@x", cwd=repo).rc == 0
    decision = [e["context"] for e in journal(repo, "note") if e["kind"] == "decision"][-1]
    assert decision["limit"] == {"cost_usd": 6.0}
    again = orch("resume", "--topic", "note", cwd=repo)
    assert again.rc == 75 and "campaign budget raised to $6.0000 by t@x" in again.out, again.out + again.err
