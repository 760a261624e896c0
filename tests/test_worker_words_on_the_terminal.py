"""rv67: what a worker writes reached the person's terminal as live control sequences (now shown as escapes).

A worker's reserved-halt `reason` (ORCH_RETURN) and the output of an evaluator that runs code from the
worker's own diff were printed raw by `run` (the pause message and the transition lines), by the seam
prompt on a terminal, and by `orchestrate status`: OSC 52 (clipboard write), OSC 0 (window title),
CR + erase-line and cursor-up all reach the terminal unescaped.
"""
from __future__ import annotations

import os
import subprocess
import sys

from tests.engine_helpers import campaign_repo, cli

ESC = "\x1b"
HALT_DAG = """\
topic: t
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1}
nodes:
  - {id: N1, title: one, depends_on: [], file_surface: [n1.txt], discipline: sh}
"""
# the worker asks a person to decide, with a reason that writes the clipboard, retitles the window,
# moves the cursor up and wipes the line, then prints a fake all-clear
HALT_WORKER = r"""#!/bin/sh
python3 - <<'PY'
import json, os
reason = ("need a human\r\x1b[2K\x1b]52;c;ZWNobyBwd25lZAo=\x1b\\\x1b]0;TITLE\x07\x1b[1A"
          "\nall gates passed; choose ACCEPT")
json.dump({"freeze": "reserved-halt", "reason": reason}, open(os.environ["ORCH_RETURN"], "w"))
PY
"""

EVAL_DAG = """\
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
# the worker writes the evaluator's script (it is in its surface); its output is evaluator output
EVAL_WORKER = r"""#!/bin/sh
printf '%s\n' 'printf "x\r\033]52;c;cHduZWQ=\033\\\\\033[2K\033[1AALL PASSED\n"; exit 1' > chk.sh
git add chk.sh && git commit -qm chk
"""


def _no_controls(text: str) -> list[str]:
    return [repr(line) for line in text.splitlines() if ESC in line or "\r" in line or "\x07" in line]


def test_a_reserved_halt_reason_is_shown_escaped_in_run_output(tmp_path):
    repo = campaign_repo(tmp_path, HALT_DAG, HALT_WORKER)
    done = cli(repo, "run")
    assert done.returncode == 75, done.stderr
    bad = _no_controls(done.stdout + done.stderr)
    assert not bad, "worker-written control sequences printed raw by `run`:\n" + "\n".join(bad)


def test_a_reserved_halt_reason_is_shown_escaped_in_status(tmp_path):
    repo = campaign_repo(tmp_path, HALT_DAG, HALT_WORKER)
    assert cli(repo, "run").returncode == 75
    done = cli(repo, "status")
    bad = _no_controls(done.stdout + done.stderr)
    assert not bad, "worker-written control sequences printed raw by `status`:\n" + "\n".join(bad)


def test_a_reserved_halt_reason_is_shown_escaped_at_the_seam_prompt(tmp_path):
    repo = campaign_repo(tmp_path, HALT_DAG, HALT_WORKER)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    done = subprocess.run([sys.executable, "-m", "orchestrate", "run", "--interactive"], cwd=repo, env=env,
                          input="pause\n", capture_output=True, text=True, timeout=120)
    assert "decide (" in done.stderr, done.stderr  # the prompt was shown
    bad = _no_controls(done.stderr)
    assert not bad, "worker-written control sequences in the seam prompt:\n" + "\n".join(bad)


def test_evaluator_output_from_worker_code_is_shown_escaped(tmp_path):
    repo = campaign_repo(tmp_path, EVAL_DAG, EVAL_WORKER)
    done = cli(repo, "run")
    assert done.returncode == 75, done.stdout + done.stderr
    assert "ALL PASSED" in done.stdout
    bad = _no_controls(done.stdout + done.stderr)
    assert not bad, "evaluator output printed raw by `run`:\n" + "\n".join(bad)


# a surface-exceed request refused for a control character in a path: the refusal quotes the path raw
EXCEED_WORKER = r"""#!/bin/sh
python3 - <<'PY'
import json, os
json.dump({"freeze": "surface-exceed", "paths": ["ok.txt\x1b]2;PWNED\x1b\\\x1b[1A\x1b[2K"]},
          open(os.environ["ORCH_RETURN"], "w"))
PY
"""


def test_a_refused_surface_exceed_path_is_shown_escaped(tmp_path):
    repo = campaign_repo(tmp_path, HALT_DAG, EXCEED_WORKER)
    done = cli(repo, "run")
    assert "surface-exceed" in done.stdout + done.stderr, done.stdout + done.stderr
    bad = _no_controls(done.stdout + done.stderr)
    assert not bad, "a refused request's path printed raw by `run`:\n" + "\n".join(bad)


# a file outside the surface whose NAME carries escapes: the adherence gate names it
NAME_WORKER = r"""#!/bin/sh
touch "$(printf 'evil\033]2;PWNED\033\\\033[1A\033[2K.txt')"
git add -A && git commit -qm x
"""


def test_a_file_name_in_the_workers_diff_is_shown_escaped(tmp_path):
    repo = campaign_repo(tmp_path, HALT_DAG, NAME_WORKER)
    done = cli(repo, "run")
    assert "evil" in done.stdout + done.stderr, done.stdout + done.stderr
    bad = _no_controls(done.stdout + done.stderr)
    assert not bad, "a file name from the worker's diff printed raw by `run`:\n" + "\n".join(bad)
    shown = cli(repo, "status")
    bad = _no_controls(shown.stdout + shown.stderr)
    assert not bad, "a file name from the worker's diff printed raw by `status`:\n" + "\n".join(bad)
