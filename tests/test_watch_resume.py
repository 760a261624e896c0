"""The watch holds after a crash: the attempt `resume` starts again is watched like any other. A runner killed
while its worker ran (ORCHESTRATE_FAULT=poll:1) left no fingerprint; resume takes one before it restarts
the attempt, so a hook the new attempt plants is put back and the attempt fails naming it."""
from __future__ import annotations

from tests.engine_helpers import campaign_repo, cli, statuses

DAG = """\
topic: six
mode: autonomous
defaults: {max_attempts: 1}
workers: {sh: "./work.sh"}
nodes:
  - {id: A, file_surface: [a.txt], discipline: sh}
"""
WORKER = """#!/bin/sh
echo A > a.txt
git add -A && git commit -qm A
if [ "$ORCH_ATTEMPT" = 1 ]; then sleep 3; exit 0; fi
printf '#!/bin/sh\\necho planted\\n' > "$(git rev-parse --path-format=absolute --git-common-dir)/hooks/post-checkout"
"""



def test_a_hook_planted_by_the_attempt_resume_restarts_is_put_back_and_fails_it(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    config = repo / ".ledger" / "config.yaml"
    config.write_text(config.read_text() + "\nsandbox: none\n")
    crashed = cli(repo, "run", fault="poll:1")  # dies while attempt 1 runs; resume starts attempt 2
    assert crashed.returncode != 0 and crashed.returncode != 75, crashed.stdout + crashed.stderr
    resumed = cli(repo, "resume", "--topic", "six")
    text = resumed.stdout + resumed.stderr
    assert not (repo / ".git" / "hooks" / "post-checkout").exists(), text
    assert "A: changed what no worker may change: .git/hooks/post-checkout was created" in text
    assert statuses(repo, orch, "six")["A"] != "ACCEPTED"
