"""A widened surface-exceed freeze resumes the same attempt; in the sandbox its commits live in a private
object store and the engine moves the node branch to the returned head. rv75 found the second return never
moved it (the branch still held the freeze's head, not the base), so MERGE refused the judged head as
"moved" and the node escalated, every time a sandboxed worker was widened."""
from __future__ import annotations

import pytest

from orchestrate.workers import sandbox
from tests.engine_helpers import campaign_repo, journal, statuses

REASON = sandbox.probe()
needs_bwrap = pytest.mark.skipif(REASON is not None, reason=f"bubblewrap does not work here: {REASON}")

# the first run writes w/x and asks for ww/x; the resumed run, its surface widened, writes ww/x too
WORKER = r"""#!/bin/sh
mkdir -p w && echo W > w/x
if printf '%s\n' "$ORCH_SURFACE" | grep -q '^ww/x$'; then
  mkdir -p ww && echo ww > ww/x
else
  echo '{"freeze": "surface-exceed", "paths": ["ww/x"]}' > "$ORCH_RETURN"
fi
"""

DAG = """\
topic: widen
workers: {sh: "./work.sh"}
defaults: {timeout: 60, max_attempts: 1, sandbox: bwrap}
nodes:
  - {id: W, title: w, file_surface: [w/], discipline: sh}
"""


@needs_bwrap
def test_a_sandboxed_worker_resumed_after_a_widening_is_merged_at_the_head_it_returned(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    result = orch("run", "--no-interactive", cwd=repo)
    assert result.rc == 75, result.out + result.err
    entries = journal(repo, "widen")
    assert any(e["kind"] == "transition" and e["context"]["outcome"] == "widen" for e in entries)
    assert "merge refused" not in result.out, result.out
    assert statuses(repo, orch, "widen") == {"W": "ACCEPTED"}
    judged = [e["context"]["at"] for e in entries if e["kind"] == "verdict" and e["context"]["node"] == "W"]
    assert repo.git("rev-parse", "node/widen/W") == judged[-1]
    assert repo.git("show", "campaign/widen:ww/x") == "ww"
