"""Three `orchestrate run` processes of three topics, started together in one repository, repeatedly: each
reaches final acceptance as it would alone (each runner watches its own branches, not the others')."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.engine_helpers import campaign_repo, journal

WORKER = r"""#!/bin/sh
set -eu
mkdir -p "$ORCH_NODE" && echo x > "$ORCH_NODE/f.txt" && git add -A && git commit -qm "$ORCH_NODE"
"""
ORCH = [sys.executable, "-c", "import sys; from orchestrate.cli.main import main; sys.exit(main())"]
TOPICS = ("ta", "tb", "tc")


def _dag(t: str) -> str:
    return (f"topic: {t}\nworkers: {{sh: \"./work.sh\"}}\nnodes:\n"
            f"  - {{id: {t}1, title: one, depends_on: [], file_surface: [{t}1/], discipline: sh}}\n"
            f"  - {{id: {t}2, title: two, depends_on: [{t}1], file_surface: [{t}2/], discipline: sh}}\n")


@pytest.mark.parametrize("round_", range(5))
def test_three_topics_run_at_once_and_each_stops_at_a_recorded_state(tmp_path, round_):
    repo = campaign_repo(tmp_path, "nodes: []\n", WORKER, {f"{t}.yaml": _dag(t) for t in TOPICS})
    procs = {t: subprocess.Popen(ORCH + ["run", "--no-interactive", "-q", "--dag", f"{t}.yaml"], cwd=repo,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for t in TOPICS}
    done = {t: (p.wait(), *p.communicate()) for t, p in procs.items()}
    for t, (rc, out, err) in done.items():
        # each reaches final acceptance as it would alone: another topic's branches moving is not its doing
        assert rc == 75, (t, rc, out, err)
        assert "paused at seam final-acceptance" in out + err, (t, out, err)
        assert "Traceback" not in err and "moved under this runner" not in err and "moved" not in out + err
    ledger = repo / ".ledger"
    subjects = subprocess.run(["git", "-C", str(ledger), "log", "--format=%s"], capture_output=True, text=True,
                              check=True).stdout
    for t in TOPICS:
        assert f"log: open {t} (2 nodes, 2 layers)" in subjects
        committed = subprocess.run(["git", "-C", str(ledger), "show", f"HEAD:state/{t}/journal.jsonl"],
                                   capture_output=True, text=True, check=True).stdout
        assert committed == (ledger / "state" / t / "journal.jsonl").read_text()
        assert journal(repo, t)[-1]["kind"] in ("transition", "seam", "checkpoint", "halt")
        again = subprocess.run(ORCH + ["resume", "--no-interactive", "-q", "--topic", t], cwd=repo,
                               capture_output=True, text=True)
        assert again.returncode == 75, (t, again.stdout, again.stderr)  # still at final acceptance
        assert "Traceback" not in again.stderr
