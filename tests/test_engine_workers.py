"""The worker contract: timeouts kill the whole process group, failed exits are retried, freezes validated."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.engine_helpers import campaign_repo

HANG = r"""#!/bin/sh
# starts a child that would outlive it, then hangs
sh -c "sleep 300; : orchestrate-hang-marker-$ORCH_TOPIC" &  # the marker in its command line, alive
sleep 300
"""

DAG_ONE = """\
topic: {topic}
workers: {{sh: "./work.sh"}}
nodes:
  - {{id: N1, title: one, depends_on: [], file_surface: [n1.txt], discipline: sh, timeout: {timeout},
      max_attempts: {attempts}}}
"""


def _alive(marker: str) -> list[str]:
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    return out.split()


def test_a_hanging_worker_is_killed_with_its_children_at_its_timeout(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG_ONE.format(topic="hang", timeout=1, attempts=1), HANG)
    result = orch("run", cwd=repo)
    assert result.rc == 75  # attempts spent: realignment seam
    assert "realignment" in result.out and "timed out" in result.out
    assert _alive("orchestrate-hang-marker-hang") == []
    log = (repo / ".scratch" / "runs" / "hang" / "N1" / "attempt-1.log").read_text()
    assert "killed after 1s" in log


RETRY = r"""#!/bin/sh
set -eu
if [ "$ORCH_ATTEMPT" = 1 ]; then echo "first try fails" >&2; exit 3; fi
echo done > n1.txt && git add -A && git commit -qm "N1 attempt $ORCH_ATTEMPT"
"""


def test_a_non_zero_exit_is_a_failed_attempt_and_is_retried(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG_ONE.format(topic="retry", timeout=60, attempts=2), RETRY)
    result = orch("run", cwd=repo)
    assert result.rc == 75 and "final-acceptance" in result.out
    status = json.loads(orch("status", "--json", cwd=repo).out)
    assert status["nodes"][0]["status"] == "ACCEPTED" and status["nodes"][0]["attempt"] == 2
    brief = (repo / ".scratch" / "runs" / "retry" / "N1" / "brief-2.md").read_text()
    assert "the worker exited 3" in brief  # the failure is summarised in the next brief


BAD_FREEZE = r"""#!/bin/sh
set -eu
if [ "$ORCH_ATTEMPT" = 1 ]; then printf '{"freeze": "bogus"}' > "$ORCH_RETURN"; exit 0; fi
echo done > n1.txt && git add -A && git commit -qm "N1"
"""


def test_a_malformed_freeze_file_is_an_error_naming_the_node(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG_ONE.format(topic="freeze", timeout=60, attempts=2), BAD_FREEZE)
    result = orch("run", cwd=repo)
    assert result.rc == 75
    assert "N1: malformed freeze file" in result.out
    status = json.loads(orch("status", "--json", cwd=repo).out)
    assert status["nodes"][0]["status"] == "ACCEPTED" and status["nodes"][0]["attempt"] == 2


ENV = r"""#!/bin/sh
set -eu
{ echo "topic=$ORCH_TOPIC node=$ORCH_NODE attempt=$ORCH_ATTEMPT branch=$ORCH_BRANCH"
  echo "worktree=$ORCH_WORKTREE pwd=$(pwd)"
  echo "base=$ORCH_BASE brief=$ORCH_BRIEF return=$ORCH_RETURN"
  echo "surface=$ORCH_SURFACE"
  echo "gc.auto=$(git config gc.auto) maintenance.auto=$(git config maintenance.auto) mine=$(git config orch.mine)"
  if [ -t 0 ]; then echo "stdin=tty"; else echo "stdin=closed"; fi
  head -c 1 || true; } > n1.txt
git add -A && git commit -qm "N1"
"""


def test_the_worker_gets_the_documented_environment(tmp_path, orch, monkeypatch):
    repo = campaign_repo(tmp_path, DAG_ONE.format(topic="env", timeout=60, attempts=1), ENV)
    for name, value in (("COUNT", "1"), ("KEY_0", "orch.mine"), ("VALUE_0", "kept")):  # the user's own setting
        monkeypatch.setenv(f"GIT_CONFIG_{name}", value)
    assert orch("run", cwd=repo).rc == 75
    text = repo.git("show", "campaign/env:n1.txt")
    wt = repo / ".scratch" / "worktrees" / "env" / "N1"
    assert "topic=env node=N1 attempt=1 branch=node/env/N1" in text
    assert f"worktree={wt} pwd={wt}" in text
    assert "surface=n1.txt" in text and "stdin=closed" in text
    assert "gc.auto=0 maintenance.auto=false mine=kept" in text  # its commits start no gc in the user's repository
    brief_line = next(ln for ln in text.splitlines() if ln.startswith("base="))
    brief_path = brief_line.split("brief=")[1].split(" ")[0]
    brief = Path(brief_path).read_text()
    assert "Dispatch header" in brief and "n1.txt" in brief and "How to freeze" in brief


SLEEPY = r"""#!/bin/sh
sleep 1.5
echo done > n1.txt && git add -A && git commit -qm "N1"
"""


def test_a_terminal_gets_a_live_line_per_running_node_and_a_pipe_gets_no_cursor_codes(tmp_path):
    import os
    import sys

    pexpect = __import__("pytest").importorskip("pexpect")
    repo = campaign_repo(tmp_path, DAG_ONE.format(topic="live", timeout=60, attempts=1), SLEEPY)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    child = pexpect.spawn(sys.executable, ["-m", "orchestrate", "run"], cwd=str(repo), env=env, encoding="utf-8",
                          timeout=60)
    child.expect(r"N1\s+(?:\x1b\[[0-9;]*m)*running(?:\x1b\[[0-9;]*m)*\s+\d+\.\ds")  # the phase word is coloured
    child.expect(r"decide \(accept, reject, pause\)")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 75
    piped = subprocess.run([sys.executable, "-m", "orchestrate", "status"], cwd=repo, capture_output=True, text=True)
    assert "\x1b" not in piped.stdout


def test_runs_off_a_terminal_write_plain_lines(tmp_path):
    import os
    import sys
    repo = campaign_repo(tmp_path, DAG_ONE.format(topic="plain", timeout=60, attempts=1), SLEEPY)
    done = subprocess.run([sys.executable, "-m", "orchestrate", "run"], cwd=repo, capture_output=True, text=True,
                          env=dict(os.environ, CI="true"), stdin=subprocess.DEVNULL)
    assert done.returncode == 75
    assert "\x1b" not in done.stdout and "\r" not in done.stdout
    assert "DISPATCH -> AWAIT" in done.stdout


RED_CHECK = r"""#!/bin/sh
set -eu
mkdir -p a
if [ "$ORCH_ATTEMPT" = 1 ]; then echo oops > a/bad.txt; fi
echo ok > a/good.txt && git add -A && git commit -qm "A attempt $ORCH_ATTEMPT"
"""


def test_a_campaign_check_red_on_the_merged_tree_reworks_the_node(tmp_path, orch):
    dag = ('topic: red\nworkers: {sh: "./work.sh"}\nchecks: [{name: clean, run: "test ! -e a/bad.txt"}]\n'
           'nodes:\n  - {id: A, title: a, depends_on: [], file_surface: [a/], discipline: sh}\n')
    repo = campaign_repo(tmp_path, dag, RED_CHECK)
    result = orch("run", cwd=repo)
    assert result.rc == 75 and "merge refused" in result.out
    status = json.loads(orch("status", "--json", cwd=repo).out)
    assert status["nodes"][0]["status"] == "ACCEPTED" and status["nodes"][0]["attempt"] == 2
    assert "a/bad.txt" not in repo.git("ls-tree", "-r", "--name-only", "campaign/red")
    assert repo.git("log", "--first-parent", "--format=%s", "campaign/red").splitlines()[0] == "merge node A: a"
