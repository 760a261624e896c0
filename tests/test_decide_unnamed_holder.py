"""`decide` finding the campaign's lock taken by a holder that has not written who it is (a `decide` or
`abandon` between taking the flock and naming itself, or leaving): rv75 found it taken for a runner, so the
answer was "left for the running campaign" though none ran, and the decide that held the lock was then
refused by it. Nothing is left now: exit 4, try again."""
from __future__ import annotations

from orchestrate.flock import FileLock
from tests.engine_helpers import journal
from tests.test_seams_eager import _paused_at_f, needs_bwrap


@needs_bwrap
def test_a_lock_held_by_an_unnamed_holder_is_not_taken_for_a_runner(tmp_path, orch):
    repo = _paused_at_f(tmp_path, orch, "auto")
    locks = repo / ".scratch" / "locks"
    with FileLock(locks / "live.lock"):  # held, and no live.json says by whom yet
        assert not (locks / "live.json").exists()
        answered = orch("decide", "realignment", "rework", "--note", "NOTE-FIX", cwd=repo)
    assert answered.rc == 4, answered.out + answered.err
    assert "starting or ending" in answered.err and "try again" in answered.err, answered.err
    assert not (repo / ".scratch" / "answers" / "live.json").exists()
    assert not any(e["kind"] == "decision" for e in journal(repo, "live"))
    again = orch("decide", "realignment", "rework", "--note", "NOTE-FIX", cwd=repo)  # the lock is free now
    assert again.rc == 0 and "recorded: realignment rework" in again.out, again.out + again.err
