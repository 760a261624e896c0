"""The README's walkthrough, followed line by line from a fresh `init` in a new repository: the starter
plan, validate, layers, run to the final-acceptance seam, status, decide, merge, clean."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.helpers import make_repo

README = Path(__file__).resolve().parent.parent / "README.md"
EXPECTED_RC = {"init": 0, "validate": 0, "layers": 0, "run": 75, "status": 0, "decide": 0, "merge": 0, "clean": 0}


def walkthrough() -> list[str]:
    """The command lines of the README's block under "Using it on your project", comments dropped."""
    section = README.read_text().split("## Using it on your project", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def test_the_readme_walkthrough_runs_from_a_fresh_init(tmp_path):
    repo = make_repo(tmp_path / "your-project")
    env = dict(os.environ, CI="true", PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    lines = walkthrough()
    assert lines[0] == "cd your-project" and lines[-1].startswith("$EDITOR ")
    ran = {}
    for line in lines[1:-1]:  # the last line is where a person's own plan begins
        command = line.replace("<topic>", "starter")
        done = subprocess.run(command, shell=True, cwd=repo, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=300)
        verb = command.split()[1]
        ran[verb] = done
        assert done.returncode == EXPECTED_RC[verb], f"{command}: {done.returncode}\n{done.stdout}{done.stderr}"
        assert "Traceback" not in done.stderr, command
    assert list(ran) == list(EXPECTED_RC)
    assert "wrote a starter plan" in ran["init"].stdout
    assert "(2 nodes, 2 layers, topic starter)" in ran["validate"].stdout
    assert ran["layers"].stdout.splitlines()[:2] == ["layer 0: first", "layer 1: second"]
    assert "paused at seam final-acceptance" in ran["run"].stdout
    assert "orchestrate decide final-acceptance accept --topic starter" in ran["run"].stdout
    assert ran["status"].stdout.startswith("campaign starter: PAUSE")
    assert "open seam final-acceptance: campaign/starter is complete" in ran["status"].stdout
    assert "campaign starter accepted at " in ran["decide"].stdout + ran["decide"].stderr
    assert (repo / "starter" / "first.txt").read_text() == "written by first\n"  # merged by the person
    assert (repo / "starter" / "second.txt").read_text() == "written by second\n"
    assert "branch node/starter/first (merged at " in ran["clean"].stdout
    assert repo.git("for-each-ref", "--format=%(refname:short)", "refs/heads/node/") == ""
    assert repo.git("worktree", "list").count("\n") == 0  # the checkout alone
    after = json.loads(subprocess.run(["orchestrate", "status", "--json"], cwd=repo, env=env, capture_output=True,
                                      text=True, timeout=60).stdout)
    assert after["state"] == "DONE" and after["accepted"] and after["others"] == []
