"""rv67: on a real terminal (tmux), evaluator output from code the worker wrote retitled the window and
wrote the clipboard (OSC 2 / OSC 52, ST-terminated, survived rich's control-code stripping and the
plain `print` path alike)."""
from __future__ import annotations

import shutil
import subprocess
import sys
import time

import pytest

from tests.engine_helpers import campaign_repo

DAG = """\
topic: e
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1}
nodes:
  - id: N1
    title: one
    file_surface: [chk.sh]
    discipline: sh
    evaluators:
      - {name: chk, run: "sh chk.sh"}
"""
WORKER = r"""#!/bin/sh
printf '%s\n' 'printf "x\r\033]2;PWNED-TITLE\033\\\\\033]52;c;ZWNobyBjbGlwYm9hcmQtZnJvbS13b3JrZXI=\033\\\\ALL PASSED\n"; exit 1' > chk.sh
git add chk.sh && git commit -qm chk
"""


@pytest.mark.skipif(shutil.which("tmux") is None, reason="no tmux")
def test_worker_code_never_sets_the_title_or_clipboard_of_the_terminal(tmp_path):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    sock = f"rv67-{time.time_ns()}"
    tmux = ["tmux", "-L", sock, "-f", "/dev/null"]
    subprocess.run(tmux + ["start-server", ";", "set", "-g", "set-clipboard", "on", ";", "new-session", "-d", "-s",
                           "s", "-x", "200", "-y", "50",
                           f"cd {repo} && CI=true {sys.executable} -m orchestrate run; echo DONE-$?; sleep 60"], check=True)
    try:
        for _ in range(300):
            screen = subprocess.run(tmux + ["capture-pane", "-p", "-t", "s"], capture_output=True, text=True).stdout
            if "DONE-" in screen:
                break
            time.sleep(0.1)
        assert "DONE-75" in screen, screen
        title = subprocess.run(tmux + ["display", "-p", "-t", "s", "#{pane_title}"], capture_output=True,
                               text=True).stdout.strip()
        buffer = subprocess.run(tmux + ["show-buffer"], capture_output=True, text=True).stdout
        assert title != "PWNED-TITLE", "the worker's evaluator output retitled the terminal"
        assert "clipboard-from-worker" not in buffer, f"the worker wrote the clipboard: {buffer!r}"
    finally:
        subprocess.run(tmux + ["kill-server"], capture_output=True)
