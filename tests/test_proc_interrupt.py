"""A Ctrl-C while orchestrate waits for a command: the command gets SIGTERM and a moment first, so a git
cut off mid-write drops its lock files (a SIGKILLed `git add` left `.ledger/index.lock` behind, and the
interrupt's own recorder commit then failed with exit 2 instead of 130)."""
from __future__ import annotations

import os
import signal
import threading

import pytest

from orchestrate import proc


def test_an_interrupted_command_is_asked_to_stop_before_it_is_killed(tmp_path):
    said = tmp_path / "said"
    started = tmp_path / "started"
    script = f"trap 'echo term > {said}; exit 143' TERM; touch {started}; sleep 30 & wait"

    def interrupt():  # a real SIGINT, as a terminal's Ctrl-C: it wakes the wait in communicate()
        while not started.exists():
            threading.Event().wait(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        proc.run(["/bin/sh", "-c", script], timeout=60)
    assert said.read_text().strip() == "term"
