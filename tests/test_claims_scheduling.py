"""README, What happens in a run: DISPATCH starts workers "`--jobs N`, default one per CPU". The runner is started
with its CPU affinity set to one CPU, then to two: the run's recorded --jobs follows, and so do the workers
that run at once (sandboxed workers, which may run side by side, meeting at a barrier in $HOME)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from orchestrate.workers import sandbox
from tests.engine_helpers import campaign_repo, journal

BWRAP = sandbox.probe()
CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []

# Each worker says it is present and has arrived, writes how many are present (P), waits (at most 60 s) until
# $WANT have arrived, writes how many have (A), and is no longer present. With one slot the other worker is
# never present; with two, the second to arrive finds the first waiting at the barrier.
WORKER = """#!/bin/sh
set -eu
mkdir -p "$HOME/present" "$HOME/arrived"
: > "$HOME/present/$ORCH_NODE"
: > "$HOME/arrived/$ORCH_NODE"
present=$(ls "$HOME/present" | wc -l | tr -d ' ')
n=0
while [ "$(ls "$HOME/arrived" | wc -l)" -lt "$WANT" ] && [ "$n" -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
echo "$present $(ls "$HOME/arrived" | wc -l | tr -d ' ')" > "$ORCH_NODE.txt"
rm "$HOME/present/$ORCH_NODE"
"""
DAG = """\
topic: cpus
workers: {sh: "./work.sh"}
defaults: {sandbox: bwrap}
nodes:
  - {id: A, depends_on: [], file_surface: [A.txt], discipline: sh}
  - {id: B, depends_on: [], file_surface: [B.txt], discipline: sh}
"""


@pytest.mark.skipif(BWRAP is not None, reason=f"workers without the sandbox run one at a time: {BWRAP}")
@pytest.mark.parametrize("ncpu", [1, 2])
def test_jobs_default_to_one_per_cpu_the_runner_may_use(tmp_path, ncpu):
    if len(CPUS) < ncpu:
        pytest.skip(f"this machine lets the tests use {len(CPUS)} CPU(s)")
    repo = campaign_repo(tmp_path, DAG, WORKER)
    cpus = set(CPUS[:ncpu])
    done = subprocess.run([sys.executable, "-m", "orchestrate", "run", "--quiet"], cwd=repo,  # no --jobs
                          env=dict(os.environ, CI="true", WANT=str(ncpu)), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=240,
                          preexec_fn=lambda: os.sched_setaffinity(0, cpus))
    assert done.returncode == 75, done.stdout + done.stderr
    opened = next(e["context"] for e in journal(repo, "cpus") if e["kind"] == "open")
    assert opened["jobs"] == ncpu
    seen = [repo.git("show", f"campaign/cpus:{n}.txt").split() for n in "AB"]
    assert sorted(int(present) for present, _ in seen) == [1, ncpu]  # one CPU: never both at once; two: both
    if ncpu == 2:
        assert [arrived for _, arrived in seen] == ["2", "2"]  # each waited for the other: they ran side by side
