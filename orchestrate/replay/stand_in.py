"""The stand-in worker of a run replay: it reproduces what the recorded worker did, run by run.

`python -m orchestrate.replay.stand_in PLAN.json`: for this node and attempt, the n-th run writes the
recorded freeze, or puts the recorded tree in the worktree, commits it, and exits with the recorded code.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from orchestrate import git


def main() -> int:
    plan_file = Path(sys.argv[1])
    plan = json.loads(plan_file.read_text())
    key = f"{os.environ['ORCH_NODE']}/{os.environ['ORCH_ATTEMPT']}"
    step = plan.get(key)
    if step is None:
        print(f"replay: the recording has no attempt {key}", file=sys.stderr)
        return 2
    counter = plan_file.with_name(key.replace("/", "-") + ".runs")
    n = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(n + 1))
    runs = step["runs"]
    run = runs[min(n, len(runs) - 1)]
    if run.get("freeze"):
        Path(os.environ["ORCH_RETURN"]).write_text(json.dumps(run["freeze"]))
        return 0
    if run.get("freeze_error"):
        Path(os.environ["ORCH_RETURN"]).write_text(run["raw_freeze"] if "raw_freeze" in run else "{}")
        return 0
    here = Path.cwd()
    git.git(here, "read-tree", "-u", "--reset", step["tree"])
    git.git(here, "commit", "-q", "--allow-empty", "--no-verify", "-m", f"replay of {key}")
    return int(run.get("rc") or 0)


if __name__ == "__main__":
    raise SystemExit(main())
