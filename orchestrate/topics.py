"""Which campaigns the recorder knows, read from its log: `log: open T` with no later `log: close T`."""
from __future__ import annotations

import re
from pathlib import Path

from gates.core import git

_MARK = re.compile(r"^log: (open|close) ([a-z0-9][a-z0-9._-]*)(\s|$)")


def lifecycle(ledger: Path) -> dict[str, str]:
    """{topic: 'open' | 'close'}, the newest marker of each topic on the recorder's branch."""
    if not (ledger / ".git").exists():
        return {}
    done = git.git(ledger, "log", "--format=%s", "-E", "--grep=^log: (open|close) ", "HEAD", check=False)
    latest: dict[str, str] = {}
    for subject in done.stdout.splitlines() if done else []:  # a recorder with no commit has no campaign
        m = _MARK.match(subject)
        if m and m.group(2) not in latest:
            latest[m.group(2)] = m.group(1)
    return latest


def in_flight(ledger: Path) -> list[str]:
    return sorted(t for t, mark in lifecycle(ledger).items() if mark == "open")
