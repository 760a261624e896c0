"""Recorder commits while its loose objects are packed behind them: how often the record ends damaged.

Run by hand: .venv/bin/python benchmarks/repack_race.py [--runs 30] [--commits 200] [--topics 1] [--against DIR]

Each run makes a campaign repository, then commits --commits transitions on one recorder from each of --topics
processes at once (one campaign each, as runners of several topics share a recorder), each with a background
`git repack -d` started after about every 2,000 bytes of journal (upkeep.PACK_AFTER; 64 MiB in a real run, so
the race below is that much rarer there, not absent), and ends with `git fsck` of the recorder. Printed per
code: the runs whose recorder git fsck found damaged (a commit naming an object git never stored), and the
object writes git itself reported failing (read from git's trace2 events: `unable to create temporary file`, a
fan-out folder that the repack's prune-packed removed between git making it and writing in it). A write that
fails must end its writer, which orchestrate asks again; a writer that answers an id anyway (`git mktree`,
before 393d557) leaves the damage counted in the first column. With --against, the same runs of the code in DIR
(e.g. `git archive 73b0af7 | tar -x -C DIR`), interleaved.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MAKE = r"""
import sys
from pathlib import Path
from tests.engine_helpers import campaign_repo
print(campaign_repo(Path(sys.argv[1]), "nodes: []\n", "#!/bin/sh\n") / ".ledger")
"""
COMMIT = r"""
import sys
from pathlib import Path
from orchestrate.recorder.journal import Recorder
from orchestrate.recorder import upkeep
upkeep.PACK_AFTER = 2000
rec = Recorder(Path(sys.argv[1]), sys.argv[2]).pin()
for i in range(int(sys.argv[3])):
    rec.event("note", {"i": i, "padding": "x" * 400})
    rec.commit(f"{sys.argv[2]}: step {i}")
"""


def one(code: Path, commits: int, topics: int) -> tuple[bool, int]:
    """(damaged, git's failed writes) of one run of `code`."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace2.json"
        env = dict(os.environ, PYTHONPATH=str(code))
        ledger = subprocess.run([sys.executable, "-c", MAKE, tmp], capture_output=True, text=True, env=env,
                                cwd=code, check=True).stdout.strip()
        env["GIT_TRACE2_EVENT"] = str(trace)
        runners = [subprocess.Popen([sys.executable, "-c", COMMIT, ledger, f"race{t}", str(commits)], env=env,
                                    cwd=code, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                   for t in range(topics)]
        for runner in runners:
            out, err = runner.communicate()
            if runner.returncode:  # a commit refused or failed: as much a finding as a damaged record
                raise SystemExit(f"a runner of {code} failed:\n{out}{err}")
        done = subprocess.run(["git", "-C", ledger, "fsck", "--no-progress", "--no-dangling"], capture_output=True)
        failed = 0
        if trace.exists():
            for line in trace.read_text(errors="replace").splitlines():
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                failed += event.get("event") == "error" and "temporary file" in event.get("msg", "")
        return bool(done.returncode or done.stdout.strip()), failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--topics", type=int, default=1, help="processes committing at once, one topic each")
    parser.add_argument("--against", type=Path, help="older code to run the same way, interleaved")
    a = parser.parse_args()
    codes = [HERE.parent] + ([a.against.resolve()] if a.against else [])
    found = {code: [0, 0] for code in codes}
    for i in range(a.runs):
        for code in codes:
            damaged, failed = one(code, a.commits, a.topics)
            found[code][0] += damaged
            found[code][1] += failed
        print(f"\r{i + 1}/{a.runs} runs", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    print(f"{a.runs} runs of {a.commits} recorder commits by each of {a.topics} topic(s) at once, a background "
          "repack after every ~2,000 bytes each")
    for code in codes:
        damaged, failed = found[code]
        print(f"  {str(code):40s} damaged {damaged:3d} of {a.runs}; object writes git failed: {failed}")


if __name__ == "__main__":
    main()
