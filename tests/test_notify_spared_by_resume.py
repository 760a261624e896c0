"""A notify command's background delivery is spared (README): not only by the run's own reaping but by a resume
after the run died, which ends everything that carries the dead runner's origin (proc.ORIGIN, rv80: a notifier
carried it, so the delivery of a `halt` sent as the runner died was ended by the resume)."""
from __future__ import annotations

from orchestrate import config, proc
from orchestrate.report.notify import Notifier


def test_a_notify_command_does_not_carry_the_runner_origin(tmp_path):
    out = tmp_path / "origin.txt"
    notifier = Notifier([config.NotifyCommand(run=f'printf "[%s]" "$ORCH_ORIGIN" > "{out}"')], cwd=tmp_path,
                        log_dir=lambda topic: tmp_path / topic)
    notifier.send("halt", "t", message="stopped")
    notifier.wait()
    assert proc.ORIGIN and out.read_text() == "[]"
