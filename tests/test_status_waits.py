"""Why `status` says a node waits under the eager schedule: a PENDING node names the inputs it waits for,
or, its inputs settled, the --jobs slot; a skipped node says who skipped it, not the failure before.
The runner is a real process; waits are on journal entries, with a deadline that only bounds a failure."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.engine_helpers import campaign_repo
from tests.test_seams_eager import _until

# A holds the only slot until the test's release file appears; B waits for the slot; C waits for A
SLOT_DAG = """\
topic: slot
schedule: eager
workers: {sh: "./work.sh"}
defaults: {timeout: 120, max_attempts: 1}
nodes:
  - {id: A, title: a, file_surface: [a/], discipline: sh}
  - {id: B, title: b, file_surface: [b/], discipline: sh}
  - {id: C, title: c, depends_on: [A], file_surface: [c/], discipline: sh}
"""
SLOT = r"""#!/bin/sh
if [ "$ORCH_NODE" = A ]; then
  n=0; while [ ! -f "RELEASE" ] && [ "$n" -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done
fi
d=$(echo "$ORCH_NODE" | tr ABC abc); mkdir -p "$d" && echo "$ORCH_NODE" > "$d/x.txt"
"""


def test_eager_status_says_a_pending_node_waits_for_its_inputs_or_for_a_slot(tmp_path, orch):
    release = tmp_path / "repo" / ".scratch" / "release"  # where a sandboxed worker can see it
    repo = campaign_repo(tmp_path, SLOT_DAG, SLOT.replace("RELEASE", str(release)))
    runner = subprocess.Popen([sys.executable, "-m", "orchestrate", "run", "--jobs", "1", "--no-interactive"],
                              cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=os.environ.copy())
    try:
        _until(repo, "slot", lambda e: e["kind"] == "result" and e["context"].get("effect") == "worker-spawn"
               and e["context"]["node"] == "A", runner, "A's worker starting")
        text = orch("status", cwd=repo).out
        rows = {n["id"]: n["waiting"] for n in json.loads(orch("status", "--json", cwd=repo).out)["nodes"]}
    finally:
        release.parent.mkdir(parents=True, exist_ok=True)
        release.write_text("go\n")
        out, _ = runner.communicate(timeout=120)
    assert rows == {"A": "worker running", "B": "its inputs have settled: waiting for a --jobs slot",
                    "C": "starts once A has merged"}, text
    assert "L0 B            PENDING     attempt 0  <- its inputs have settled: waiting for a --jobs slot" in text
    assert runner.returncode == 75 and "final-acceptance" in out, out


SKIP_DAG = """\
topic: skip
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1}
nodes:
  - {id: E, title: e, file_surface: [e/], discipline: sh, evaluators: [{name: never, run: "false"}]}
  - {id: F, title: f, depends_on: [E], file_surface: [f/], discipline: sh}
"""
MAKE = "#!/bin/sh\nd=$(echo \"$ORCH_NODE\" | tr EF ef); mkdir -p \"$d\" && echo x > \"$d/x.txt\"\n"


def test_a_skipped_node_says_who_skipped_it_before_the_failure_that_asked(tmp_path, orch):
    repo = campaign_repo(tmp_path, SKIP_DAG, MAKE)
    assert orch("run", "--quiet", "--no-interactive", cwd=repo).rc == 75
    assert orch("decide", "realignment", "skip", "--note", "not needed now", cwd=repo).rc == 0
    done = orch("resume", "--no-interactive", cwd=repo)
    assert done.rc == 75 and "final-acceptance" in done.out, done.out + done.err
    rows = {n["id"]: n["waiting"] for n in json.loads(orch("status", "--json", cwd=repo).out)["nodes"]}
    assert rows["E"].startswith("skipped by test@example.com at the realignment seam: not needed now; "
                                "its last attempt: - evaluators: FAIL: 1 of 1 evaluator(s) failed"), rows
    assert rows["F"] == "skipped by test@example.com at the realignment seam, along with E, which it needs: " \
                        "not needed now"
