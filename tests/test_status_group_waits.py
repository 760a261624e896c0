"""`status` says what a landed LOOPS_WITH member waits for: its group is judged as one, so while a peer's seam
is open, or a peer has not landed, it is not "waiting to be judged" (rv75 found it said so)."""
from __future__ import annotations

import json

from tests.engine_helpers import campaign_repo

DAG = """\
topic: pair
workers: {sh: "./work.sh"}
defaults: {timeout: 60, max_attempts: 1}
nodes:
  - {id: G1, title: g1, file_surface: [g1/], discipline: sh}
  - {id: G2, title: g2, file_surface: [g2/], discipline: sh}
edges:
  - {id: e1, from: G1, to: G2, predicate: LOOPS_WITH}
"""
WORKER = r"""#!/bin/sh
case "$ORCH_NODE" in
  G1) echo '{"freeze": "reserved-halt", "reason": "ask"}' > "$ORCH_RETURN" ;;
  G2) mkdir -p g2 && echo G2 > g2/x ;;
esac
"""


def test_a_landed_member_waits_for_its_peers_seam_and_status_says_so(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert orch("run", "--no-interactive", cwd=repo).rc == 75
    rows = {n["id"]: n for n in json.loads(orch("status", "--json", cwd=repo).out)["nodes"]}
    assert rows["G2"]["status"] == "LANDED"
    assert rows["G2"]["waiting"] == "its LOOPS_WITH group waits for seam reserved-halt for G1", rows["G2"]
