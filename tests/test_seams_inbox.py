"""An answer `decide` left for a running campaign (seams/inbox.py) stays while the seam it answers is open or
queued behind another; only one for a seam that is neither is stale and dropped."""
from __future__ import annotations

from orchestrate.recorder.paths import Layout
from orchestrate.seams import inbox

NODE_SEAM = {"id": "t:7", "seam": "realignment", "node": "X", "choices": ["rework", "skip", "halt"]}
BUDGET = {"id": "t:9", "seam": "budget", "choices": ["raise", "halt"]}


def test_an_answer_for_a_seam_queued_behind_a_campaign_wide_one_is_kept(tmp_path):
    """rv52: X's realignment seam was open, an answer was left for it, then the campaign's budget seam opened
    first and put X's in the queue: reading answers for the budget seam deleted X's unread, and X was asked
    again after the budget was raised."""
    layout = Layout(tmp_path)
    inbox.leave(layout, "t", NODE_SEAM, "skip", "not needed", "p@x")
    assert inbox.waiting(layout, "t", BUDGET, [NODE_SEAM]) is None  # not the budget seam's
    assert inbox.path(layout, "t").exists()
    assert inbox.waiting(layout, "t", NODE_SEAM, [])["choice"] == "skip"  # once X's seam is open again


def test_an_answer_for_a_seam_neither_open_nor_queued_is_dropped(tmp_path):
    layout = Layout(tmp_path)
    inbox.leave(layout, "t", NODE_SEAM, "skip", "not needed", "p@x")
    assert inbox.waiting(layout, "t", BUDGET, []) is None
    assert not inbox.path(layout, "t").exists()
