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
    # Next to its return file: the one folder of the node's own a sandboxed worker may write.
    counter = Path(os.environ["ORCH_RETURN"]).parent / ("replay-" + key.replace("/", "-") + ".runs")
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
    # In the sandbox new objects go to the attempt's private store, named by these (which the git
    # module otherwise drops from a child's environment as leaks from a calling git).
    store = {k: os.environ[k] for k in ("GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES") if k in os.environ}
    git.git(here, "read-tree", "-u", "--reset", step["tree"], env=store)
    git.git(here, "commit", "-q", "--allow-empty", "--no-verify", "-m", f"replay of {key}", env=store)
    return int(run.get("rc") or 0)


if __name__ == "__main__":
    raise SystemExit(main())
