"""README claims about workers on a Dask cluster:
- "Only node branches are pushed, and a branch is only ever moved under a lease on the value last seen": on the
  worker's machine (remote.run_node pushes the node branch back) and on the engine's (DaskExecutor._publish
  puts the branch at its base), a branch that moved since it was read is left where it is and the push fails.
- "A custom ssh command for a Dask remote goes in `GIT_SSH_COMMAND`": a campaign on a real LocalCluster with an
  ssh:// remote reached only through a stand-in ssh named there.
- "a Dask worker fetches it into a cache under `$ORCHESTRATE_DASK_DIR` (default: `/tmp/orchestrate-dask-<uid>`)":
  the default is Python's temporary folder, so `$TMPDIR/orchestrate-dask-<uid>` when TMPDIR is set.
The task body runs in this process or a child of it; only the campaign test needs `distributed`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from orchestrate.errors import GitError
from tests.engine_helpers import campaign_repo
from tests.helpers import RepoDir, make_repo


# as in tests/test_dask_executor.py, which cannot be imported here: it skips itself without `distributed`
def bare_remote(tmp_path: Path) -> Path:
    path = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(path)], check=True)
    return path


def remote_refs(remote: Path) -> list[str]:
    return RepoDir(remote).git("for-each-ref", "--format=%(refname)").split()


def _published(tmp_path: Path, command: str) -> tuple[dict, RepoDir, RepoDir]:
    """A repository of two commits, the node branch published at its head (the base) on a bare remote, and the
    task spec the engine would submit for it."""
    repo = make_repo(tmp_path / "repo", {"README.md": "# r\n"})
    repo.commit("second", {"f.txt": "1\n"})
    remote = RepoDir(bare_remote(tmp_path))
    base = repo.head()
    repo.git("push", "--quiet", str(remote), f"{base}:refs/heads/node/t/N", "main:refs/heads/main-copy")
    spec = {"remote": str(remote), "topic": "t", "node": "N", "attempt": 1, "branch": "node/t/N", "base": base,
            "command": command, "env": {"ORCH_NODE": "N"}, "brief": "b", "timeout": 60, "identity": {},
            "cancel": None}
    return spec, repo, remote


def test_a_task_never_moves_a_node_branch_that_moved_since_it_was_fetched(tmp_path, monkeypatch):
    """While the worker runs, something else moves the node branch on the remote to the base's parent (the
    branch's own history, so a plain push would fast-forward it): the task's push is refused by its lease."""
    from orchestrate.workers.remote import run_node
    monkeypatch.setenv("ORCHESTRATE_DASK_DIR", str(tmp_path / "work"))
    spec, repo, remote = _published(tmp_path, "")
    parent = repo.git("rev-parse", "HEAD^")
    spec["command"] = f"echo work > w.txt; git push -q --force '{remote}' {parent}:refs/heads/node/t/N"
    with pytest.raises(GitError, match="failed to push"):
        run_node(spec)
    assert remote.git("rev-parse", "refs/heads/node/t/N") == parent  # left where the other writer put it

    # the same task with nobody else writing: the branch moves from the base to the worker's commit
    spec["command"] = "echo work > w.txt"
    remote.git("update-ref", "refs/heads/node/t/N", spec["base"])
    done = run_node(spec)
    assert remote.git("rev-parse", "refs/heads/node/t/N") == done["head"]
    assert remote.git("rev-parse", f"{done['head']}^") == spec["base"]


def test_the_engine_publishes_a_node_branch_only_under_a_lease_on_what_it_read(tmp_path, monkeypatch):
    from orchestrate import git
    from orchestrate.workers.dask_executor import DaskExecutor
    spec, repo, remote = _published(tmp_path, "")
    base, parent = spec["base"], repo.git("rev-parse", "HEAD^")
    stale = repo.commit("a stale attempt", {"g.txt": "stale\n"})  # a runner died after publishing this
    repo.git("push", "--quiet", "--force", str(remote), f"{stale}:refs/heads/node/t/N")
    executor = DaskExecutor("tcp://127.0.0.1:1", str(remote), repo)  # never connected: _publish needs no cluster
    request = SimpleNamespace(env={"ORCH_BRANCH": "node/t/N", "ORCH_BASE": base})

    real_push = git.push

    def racing_push(*args, **kw):  # between the engine's read and its push, another writer moves the branch
        remote.git("update-ref", "refs/heads/node/t/N", parent)
        return real_push(*args, **kw)
    monkeypatch.setattr(git, "push", racing_push)
    with pytest.raises(GitError, match="failed to push"):
        executor._publish(request)
    assert remote.git("rev-parse", "refs/heads/node/t/N") == parent

    monkeypatch.setattr(git, "push", real_push)  # nobody else writing: the stale branch goes back to the base
    remote.git("update-ref", "refs/heads/node/t/N", stale)
    assert executor._publish(request) == base
    assert remote.git("rev-parse", "refs/heads/node/t/N") == base
    assert remote_refs(remote) == ["refs/heads/main-copy", "refs/heads/node/t/N"]


TASK = """\
import json, sys
from orchestrate.workers.remote import run_node
print(json.dumps(run_node(json.loads(sys.argv[1]))))
"""


def test_a_dask_worker_caches_under_orchestrate_dask_dir_else_under_tmpdir(tmp_path):
    spec, _, _ = _published(tmp_path, "echo work > w.txt")
    uid = os.getuid()
    env = {k: v for k, v in os.environ.items() if k != "ORCHESTRATE_DASK_DIR"}
    for name, extra, where in (("named", {"ORCHESTRATE_DASK_DIR": str(tmp_path / "named")}, tmp_path / "named"),
                               ("default", {"TMPDIR": str(tmp_path / "tmpdir")},
                                tmp_path / "tmpdir" / f"orchestrate-dask-{uid}")):
        (tmp_path / "tmpdir").mkdir(exist_ok=True)
        spec["node"] = name
        done = subprocess.run([sys.executable, "-c", TASK, json.dumps(spec)], env={**env, **extra},
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["rc"] == 0
        caches = [p for p in (where / "repos").iterdir() if p.is_dir()]
        assert len(caches) == 1 and (caches[0] / ".git").is_dir()  # the cache repository of this remote
        assert (where / "tasks" / "t" / f"{name}+1" / "worker.log").is_file()  # the whole log stays there
    assert not (tmp_path / "tmpdir" / "repos").exists()


# A stand-in for ssh: logs how it was called and runs the git command it was handed, on this machine.
FAKE_SSH = """#!/bin/sh
echo "$PWD: $*" >> "$FAKE_SSH_LOG"
[ "$1" = -G ] && exit 1
for last; do :; done
exec sh -c "$(printf '%s' "$last" | sed 's/^git-/git /')"
"""
DAG = """\
topic: viassh
workers: {sh: "./work.sh"}
nodes:
  - {id: A, depends_on: [], file_surface: [a.txt], discipline: sh}
  - {id: B, depends_on: [A], file_surface: [b.txt], discipline: sh}
"""


def test_a_campaign_reaches_an_ssh_remote_through_the_command_in_git_ssh_command(tmp_path, monkeypatch):
    pytest.importorskip("distributed", reason="the Dask executor needs the extra: pip install -e '.[distributed]'")
    from distributed import LocalCluster
    ssh, log = tmp_path / "fake-ssh", tmp_path / "ssh.log"
    ssh.write_text(FAKE_SSH)
    ssh.chmod(0o755)
    # what the user sets for the engine and on every worker machine (the cluster's processes inherit it)
    monkeypatch.setenv("GIT_SSH_COMMAND", str(ssh))
    monkeypatch.setenv("FAKE_SSH_LOG", str(log))
    monkeypatch.setenv("ORCHESTRATE_DASK_DIR", str(tmp_path / "dask-work"))
    remote = bare_remote(tmp_path)
    repo = campaign_repo(tmp_path, DAG, '#!/bin/sh\necho "$ORCH_NODE" > "$(echo $ORCH_NODE | tr AB ab).txt"\n')
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None, worker_dashboard_address=None) as cluster:
        done = subprocess.run([sys.executable, "-m", "orchestrate", "run", "--quiet", "--executor", "dask",
                               "--scheduler", cluster.scheduler_address, "--remote", f"ssh://fakehost{remote}"],
                              cwd=repo, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
                              env=dict(os.environ, CI="true"))
    assert done.returncode == 75, done.stdout + done.stderr
    assert repo.git("show", "campaign/viassh:b.txt") == "B"
    assert set(remote_refs(remote)) == {"refs/heads/node/viassh/A", "refs/heads/node/viassh/B"}
    calls = log.read_text().splitlines()
    work = str(tmp_path / "dask-work")
    for side in (lambda folder: folder.startswith(str(repo)), lambda folder: folder.startswith(work)):  # engine, task
        said = [line.partition(": ")[2] for line in calls if side(line.partition(": ")[0])]
        assert any("fakehost git-receive-pack" in c for c in said)  # a push
        assert any("fakehost git-upload-pack" in c for c in said)  # a fetch or ls-remote
    assert sorted(p.name for p in (tmp_path / "dask-work" / "tasks" / "viassh").iterdir()) == ["A+1", "B+1"]
