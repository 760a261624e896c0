"""A worker's words in ORCH_MESSAGE (rv67): README (Notifications) promises one readable line, and a worker's
reserved-halt reason went into it verbatim, line breaks and terminal escapes included. (The README's webhook
example builds its payload with a JSON encoder: test_notify.py runs it with such words.)"""
from __future__ import annotations

from tests.engine_helpers import campaign_repo, cli

DAG = """\
topic: t
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1}
nodes:
  - {id: N1, title: one, depends_on: [], file_surface: [n1.txt], discipline: sh}
"""


def _worker(reason: str) -> str:
    return ("#!/bin/sh\npython3 - <<'PY'\nimport json, os\n"
            f"json.dump({{'freeze': 'reserved-halt', 'reason': {reason!r}}}, open(os.environ['ORCH_RETURN'], 'w'))\nPY\n")


def test_orch_message_is_one_readable_line(tmp_path):
    repo = campaign_repo(tmp_path, DAG, _worker("halt\n\x1b]52;c;cHduZWQ=\x1b\\\x1b[2Kfake second line"))
    got = tmp_path / "msg.txt"
    (repo / ".ledger" / "config.yaml").write_text(
        f"notify:\n  - run: printf '%s' \"$ORCH_MESSAGE\" > {got}\n    events: [seam]\n")
    assert cli(repo, "run").returncode == 75
    message = got.read_text()
    assert "\n" not in message and "\x1b" not in message, f"ORCH_MESSAGE is not one readable line: {message!r}"
