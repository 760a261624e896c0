"""`status` shows an answer `decide` left for a runner (seams/inbox.py) until it is applied. rv75 found the
seam still shown as open, its node waiting on it, and nothing saying an answer waits: a person reading it
answered again and was refused (exit 4)."""
from __future__ import annotations

import json

from orchestrate.recorder.lock import CampaignLock
from tests.test_seams_eager import _paused_at_f, needs_bwrap


@needs_bwrap
def test_status_shows_the_answer_left_for_a_runner_that_stopped_before_applying_it(tmp_path, orch):
    repo = _paused_at_f(tmp_path, orch, "auto")
    with CampaignLock(repo / ".scratch" / "locks", "live"):  # as a running runner holds it
        left = orch("decide", "realignment", "rework", "--note", "NOTE-FIX", cwd=repo)
        assert left.rc == 0 and "left for the running campaign" in left.out, left.out + left.err
    text = orch("status", cwd=repo).out
    assert ("answer left by `orchestrate decide`, waiting to be applied: realignment rework for node F by "
            "test@example.com; `orchestrate resume --topic live` applies it") in text, text
    row = next(line for line in text.splitlines() if line.strip().startswith("L0 F "))
    assert "answered realignment rework (orchestrate decide): waiting to be applied" in row, row
    data = json.loads(orch("status", "--json", cwd=repo).out)
    assert (data["left_answer"]["node"], data["left_answer"]["choice"]) == ("F", "rework")
    assert data["left_answer"]["seam_id"] == data["seams"][0]["id"]

    assert orch("resume", "--topic", "live", cwd=repo).rc == 75  # applied: nothing is left to show
    assert json.loads(orch("status", "--json", cwd=repo).out)["left_answer"] is None
