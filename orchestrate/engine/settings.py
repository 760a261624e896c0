"""Every problem of `.ledger/config.yaml`, found by the readers a run uses: `validate` lists them, and `run`
and `resume` refuse to start on them, so a bad setting is never met halfway (a sandbox mode read at the
first dispatch, a coherence timeout read when the first node is judged and counted against its attempts)."""
from __future__ import annotations

from types import SimpleNamespace


def problems(layout) -> list:
    """config.yaml's problems as `Problem`s (file, line, field, message); none when there is no file."""
    if not layout.config.exists():
        return []
    from gates.shared.project_checks import load_config
    from orchestrate import config
    from orchestrate.workers import containment, executors
    readers = {"coherence": load_config, "notify": config.notify,
               "executor": lambda _ledger: executors.choose(layout, kind=None, scheduler=None, remote=None),
               "sandbox": lambda _ledger: containment.mode(SimpleNamespace(layout=layout), None)}
    return config.problems(layout.ledger, readers)
