"""A person edits the campaign's DAG copy while the eager run goes on past a node's seam (the edit waits for
the dag-amendment seam), and another worker then asks for more surface. rv75 found the engine's widening
halt the run ("changed outside the engine ... cannot be amended now"), stopping the workers that ran, and
every `resume` halting again, whatever its hint said. The edit is set aside (with the widening) instead."""
from __future__ import annotations

import os
import subprocess
import sys

from tests.engine_helpers import campaign_repo, journal, statuses
from tests.test_seams_eager import _until, needs_bwrap

DAG = """\
topic: aside
workers: {sh: "./work.sh"}
defaults: {timeout: 120, max_attempts: 1, sandbox: auto}
nodes:
  - {id: F, title: fails, file_surface: [f/], discipline: sh, evaluators: [{name: never, run: "test -f f/never"}]}
  - {id: W, title: widens, file_surface: [w/], discipline: sh}
"""
# W waits for the test's release file, then asks for ww/x; resumed with it granted, it writes it
WORKER = r"""#!/bin/sh
case "$ORCH_NODE" in
  F) mkdir -p f && echo F > f/one.txt ;;
  W) n=0
     while [ ! -f "RELEASE" ] && [ "$n" -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done
     mkdir -p w && echo W > w/x
     if printf '%s\n' "$ORCH_SURFACE" | grep -q '^ww/x$'; then mkdir -p ww && echo ww > ww/x
     else echo '{"freeze": "surface-exceed", "paths": ["ww/x"]}' > "$ORCH_RETURN"; fi ;;
esac
"""


@needs_bwrap
def test_a_widening_while_a_persons_edit_waits_sets_the_edit_aside_and_the_run_goes_on(tmp_path, orch):
    release = tmp_path / "repo" / ".scratch" / "release"
    repo = campaign_repo(tmp_path, DAG, WORKER.replace("RELEASE", str(release)))
    runner = subprocess.Popen([sys.executable, "-m", "orchestrate", "run", "--jobs", "2", "--no-interactive"],
                              cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=os.environ.copy())
    copy = repo / ".ledger" / "state" / "aside" / "dag.yaml"
    try:
        _until(repo, "aside", lambda e: e["kind"] == "transition" and e["context"]["outcome"] == "deferred",
               runner, "the run going on past F's seam")
        copy.write_text(copy.read_text().replace("test -f f/never", "test -f f/one.txt"))  # the person's fix
    finally:
        release.parent.mkdir(parents=True, exist_ok=True)
        release.write_text("go\n")
        out, _ = runner.communicate(timeout=120)
    assert runner.returncode == 75, out
    assert statuses(repo, orch, "aside")["W"] == "ACCEPTED"
    assert any(e["kind"] == "transition" and e["context"]["outcome"] == "widen" for e in journal(repo, "aside"))
    kept = (repo / ".scratch" / "rejected" / "aside" / "dag.yaml").read_text()
    assert "test -f f/one.txt" in kept and "ww/x" in kept, kept  # the edit, with the widening
    assert "test -f f/never" in copy.read_text() and "ww/x" in copy.read_text()
