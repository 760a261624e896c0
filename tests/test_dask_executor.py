"""The Dask executor against a real LocalCluster (two worker processes on 127.0.0.1) and a bare remote."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="the Dask executor needs the extra: pip install -e '.[dev,distributed]'")

from tests.engine_helpers import campaign_repo, first_parent_chain  # noqa: E402
from tests.helpers import RepoDir  # noqa: E402
from tests.test_engine_e2e import DAG as SIX_DAG  # noqa: E402
from tests.test_engine_e2e import WORKER as SIX_WORKER

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Two worker processes, everything bound to 127.0.0.1, no dashboard; workers keep tasks under tmp."""
    from distributed import Client, LocalCluster
    home = tmp_path_factory.mktemp("dask-home")
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(home))
        mp.setenv("ORCHESTRATE_DASK_DIR", str(tmp_path_factory.mktemp("dask-work")))
        mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
        cl = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None, worker_dashboard_address=None)
    client = Client(cl, set_as_default=False)
    yield cl, client
    client.close()
    cl.close()


def bare_remote(tmp_path: Path) -> Path:
    path = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(path)], check=True)
    return path


def orchestrate(repo: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orchestrate", *args], cwd=repo, capture_output=True, text=True,
                          timeout=240, **kw)


def dask_args(cluster, remote: Path) -> list[str]:
    return ["--executor", "dask", "--scheduler", cluster[0].scheduler_address, "--remote", str(remote)]


def statuses(repo: Path, topic: str) -> dict:
    done = orchestrate(repo, "status", "--json", "--topic", topic)
    return {n["id"]: (n["status"], n["attempt"]) for n in json.loads(done.stdout)["nodes"]}


def remote_refs(remote: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(remote), "for-each-ref", "--format=%(refname)"], capture_output=True,
                         text=True, check=True).stdout
    return out.split()


def test_the_e2e_campaign_ends_the_same_on_dask_as_locally(tmp_path, cluster):
    local = campaign_repo(tmp_path / "local", SIX_DAG, SIX_WORKER)
    remote_run = campaign_repo(tmp_path / "dask", SIX_DAG, SIX_WORKER)
    remote = bare_remote(tmp_path)

    by_hand = orchestrate(local, "run", "--jobs", "2", "--quiet")
    on_dask = orchestrate(remote_run, "run", "--quiet", *dask_args(cluster, remote))

    assert by_hand.returncode == on_dask.returncode == 75, on_dask.stdout + on_dask.stderr
    assert statuses(remote_run, "six") == statuses(local, "six")
    assert set(statuses(remote_run, "six").values()) >= {("ACCEPTED", 1), ("ACCEPTED", 2)}
    tree = ["rev-parse", "campaign/six^{tree}"]
    assert RepoDir(remote_run).git(*tree) == RepoDir(local).git(*tree)
    # only node branches ever reach the remote, and the local checkout has no remote configured
    pushed = remote_refs(remote)
    assert pushed and all(ref.startswith("refs/heads/node/six/") for ref in pushed)
    assert RepoDir(remote_run).git("remote") == ""
    # the work done remotely is the node branch's history, fetched and fast-forwarded locally
    log = RepoDir(remote_run).git("log", "--format=%s", "node/six/A")
    assert "node A: changes left uncommitted by the worker" in log
    assert "could not run" not in (remote_run / ".scratch" / "runs" / "six" / "A" / "attempt-1.log").read_text()


def test_links_in_the_run_folder_are_replaced_not_written_through_when_a_task_returns(tmp_path, cluster):
    """The engine writes each returned task's log, return and outputs files into the node's run folder, where a
    process on this host (a worker without the sandbox) can plant links: a planted link is replaced."""
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file\n")
    dag = "topic: links\nworkers: {sh: ./work.sh}\nnodes:\n  - {id: A, file_surface: [a.txt], discipline: sh}\n"
    repo = campaign_repo(tmp_path / "dask", dag, "#!/bin/sh\necho A > a.txt\n")
    run_dir = repo / ".scratch" / "runs" / "links" / "A"
    run_dir.mkdir(parents=True)
    (run_dir / "attempt-1.log").symlink_to(victim)
    done = orchestrate(repo, "run", "--quiet", *dask_args(cluster, bare_remote(tmp_path)))
    assert done.returncode == 75, done.stdout + done.stderr
    assert victim.read_text() == "the user's own file\n"
    log = run_dir / "attempt-1.log"
    assert not log.is_symlink() and "node A attempt 1" in log.read_text()


SLOW_WORKER = """#!/bin/sh
set -eu
marks={marks}
case "$ORCH_NODE" in
  A) echo A > a.txt ;;
  B) if [ ! -e "$marks/B-started" ]; then echo $$ > "$marks/B-started"; exec sleep 120; fi
     echo B > b.txt ;;
  C) echo C > c.txt ;;
esac
"""

SMALL_DAG = """\
topic: small
workers: {sh: "./work.sh"}
defaults: {timeout: 200}
nodes:
  - {id: A, depends_on: [], file_surface: [a.txt], discipline: sh}
  - {id: B, depends_on: [], file_surface: [b.txt], discipline: sh}
  - {id: C, depends_on: [A, B], file_surface: [c.txt], discipline: sh}
"""


def wait_for(path: Path, proc: subprocess.Popen, limit: float = 120) -> None:
    end = time.monotonic() + limit
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.1)


def task_worker(client, node: str) -> str:
    """The address of the Dask worker processing `node`'s task (the keys name the node)."""
    for _ in range(200):
        for addr, keys in client.processing().items():
            if any(f"-{node}+" in str(k) for k in keys):
                return addr
        time.sleep(0.05)
    raise AssertionError(f"no worker is processing {node}")


def test_a_campaign_survives_a_dask_worker_dying_mid_node(tmp_path, cluster):
    marks = tmp_path / "marks"
    marks.mkdir()
    repo = campaign_repo(tmp_path, SMALL_DAG, SLOW_WORKER.format(marks=marks))
    remote = bare_remote(tmp_path)
    run = subprocess.Popen([sys.executable, "-m", "orchestrate", "run", "--quiet", *dask_args(cluster, remote)],
                           cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(marks / "B-started", run)
    _, client = cluster
    addr = task_worker(client, "B")
    pid = client.run(os.getpid, workers=[addr])[addr]
    os.kill(pid, signal.SIGKILL)
    out, err = run.communicate(timeout=240)

    assert run.returncode == 75, out + err  # the final-acceptance seam: everything merged
    assert statuses(repo, "small") == {"A": ("ACCEPTED", 1), "B": ("ACCEPTED", 1), "C": ("ACCEPTED", 1)}
    merges = [s for _, s in first_parent_chain(repo, RepoDir(repo).head(), "campaign/small")]
    assert sorted(merges) == ["merge node A: A", "merge node B: B", "merge node C: C"]
    assert RepoDir(repo).git("show", "campaign/small:b.txt") == "B"
    first = int((marks / "B-started").read_text())
    assert not alive(first), "the re-run must stop the first run's worker"
    _wait_workers(client, 2)


def alive(pid: int) -> bool:
    """Running, not merely a zombie waiting for its new parent to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_workers(client, n: int) -> None:
    client.wait_for_workers(n, timeout=60)  # the nanny restarts the killed worker for the next test


HANG_WORKER = """#!/bin/sh
if [ "$ORCH_ATTEMPT" = 1 ] && [ "$ORCH_NODE" != C ]; then echo $$ > {marks}/$ORCH_NODE.pid; exec sleep 120; fi
case "$ORCH_NODE" in A) f=a.txt ;; B) f=b.txt ;; C) f=c.txt ;; esac
echo "$ORCH_NODE" > "$f"
"""


def test_ctrl_c_during_a_remote_node_leaves_no_worker_process(tmp_path, cluster):
    marks = tmp_path / "marks"
    marks.mkdir()
    repo = campaign_repo(tmp_path, SMALL_DAG.replace("topic: small", "topic: hang"), HANG_WORKER.format(marks=marks))
    remote = bare_remote(tmp_path)
    run = subprocess.Popen([sys.executable, "-m", "orchestrate", "run", *dask_args(cluster, remote)],
                           cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(marks / "A.pid", run)
    wait_for(marks / "B.pid", run)
    run.send_signal(signal.SIGINT)
    out, err = run.communicate(timeout=120)

    assert run.returncode == 130, out + err
    assert "interrupted" in err
    pids = [int((marks / f"{n}.pid").read_text()) for n in "AB"]
    assert [p for p in pids if alive(p)] == []
    assert all(not keys for keys in cluster[1].processing().values())

    resumed = orchestrate(repo, "resume", "--quiet", *dask_args(cluster, remote))
    assert resumed.returncode == 75, resumed.stdout + resumed.stderr
    assert statuses(repo, "hang") == {"A": ("ACCEPTED", 2), "B": ("ACCEPTED", 2), "C": ("ACCEPTED", 1)}


def test_the_executor_can_be_chosen_in_config_yaml(tmp_path, cluster):
    repo = campaign_repo(tmp_path, SMALL_DAG, "#!/bin/sh\necho \"$ORCH_NODE\" > \"$(echo $ORCH_NODE | tr A-C a-c).txt\"\n")
    remote = bare_remote(tmp_path)
    (repo / ".ledger" / "config.yaml").write_text(
        f"executor:\n  kind: dask\n  scheduler: {cluster[0].scheduler_address}\n  remote: {remote}\n")
    done = orchestrate(repo, "run", "--quiet")
    assert done.returncode == 75, done.stdout + done.stderr
    assert set(remote_refs(remote)) == {f"refs/heads/node/small/{n}" for n in "ABC"}


def test_a_bad_executor_section_names_the_file_and_line(tmp_path):
    repo = campaign_repo(tmp_path, SMALL_DAG, "#!/bin/sh\n")
    (repo / ".ledger" / "config.yaml").write_text("executor:\n  kind: dask\n  sheduler: tcp://x:1\n")
    done = orchestrate(repo, "run")
    assert done.returncode == 1 and "nothing was written" in done.stdout  # refused as an invalid DAG is
    assert "config.yaml:3: executor.sheduler: unknown key" in done.stdout


def test_a_config_that_is_not_utf8_is_named_not_a_traceback(tmp_path):
    repo = campaign_repo(tmp_path, SMALL_DAG, "#!/bin/sh\n")
    (repo / ".ledger" / "config.yaml").write_bytes(b"executor:\n  kind: \xff\n")
    done = orchestrate(repo, "run")
    assert done.returncode == 1 and "Traceback" not in done.stderr + done.stdout
    assert "config.yaml:2: cannot read the config: not UTF-8 text (byte 18); save it as UTF-8" in done.stdout


def test_a_malformed_scheduler_address_is_a_usage_error(tmp_path):
    repo = campaign_repo(tmp_path, SMALL_DAG, "#!/bin/sh\n")
    remote = bare_remote(tmp_path)
    done = orchestrate(repo, "run", "--executor", "dask", "--scheduler", "nonsense", "--remote", str(remote))
    assert done.returncode == 2
    assert "nonsense is not a Dask scheduler address: missing port number" in done.stderr
    assert "internal error" not in done.stderr and "Exception ignored" not in done.stderr


def test_dask_needs_a_scheduler_and_a_remote(tmp_path):
    repo = campaign_repo(tmp_path, SMALL_DAG, "#!/bin/sh\n")
    done = orchestrate(repo, "run", "--executor", "dask")
    assert done.returncode == 2
    assert "the Dask executor needs --scheduler and --remote" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_remote_that_cannot_be_read_is_refused_before_anything_runs(tmp_path, cluster):
    repo = campaign_repo(tmp_path, SMALL_DAG, "#!/bin/sh\n")
    done = orchestrate(repo, "run", *dask_args(cluster, tmp_path / "nowhere.git"))
    assert done.returncode == 2, done.stderr
    assert "cannot read the remote repository" in done.stderr
    assert not RepoDir(repo).git("branch", "--list", "campaign/*")


def published_spec(tmp_path, monkeypatch, command: str, timeout: float) -> tuple[dict, Path, str]:
    """A task spec as the engine would submit it: node branch published at the base on a bare remote."""
    from tests.helpers import make_repo
    monkeypatch.setenv("ORCHESTRATE_DASK_DIR", str(tmp_path / "work"))
    repo = make_repo(tmp_path / "repo", {"README.md": "# r\n"})
    remote = bare_remote(tmp_path)
    base = repo.head()
    repo.git("push", "--quiet", str(remote), f"{base}:refs/heads/node/t/N")
    spec = {"remote": str(remote), "topic": "t", "node": "N", "attempt": 1, "branch": "node/t/N", "base": base,
            "command": command, "env": {"ORCH_NODE": "N"}, "brief": "b", "timeout": timeout,
            "identity": {}, "cancel": None}
    return spec, remote, base


def test_a_task_run_twice_yields_one_branch_from_the_base(tmp_path, monkeypatch):
    """What Dask does after a worker died: the same spec again. The branch restarts at the base."""
    from orchestrate.workers.remote import run_node
    spec, remote, base = published_spec(tmp_path, monkeypatch, "echo work > f.txt", 60)

    first = run_node(spec)
    second = run_node(spec)

    on_remote = RepoDir(remote).git("rev-parse", "refs/heads/node/t/N")
    assert on_remote == second["head"]
    assert RepoDir(remote).git("rev-parse", f"{second['head']}^") == base  # not stacked on the first run
    assert RepoDir(remote).git("rev-parse", f"{first['head']}^{{tree}}") == RepoDir(remote).git(
        "rev-parse", f"{second['head']}^{{tree}}")
    assert first["rc"] == second["rc"] == 0
    assert remote_refs(remote) == ["refs/heads/node/t/N"]


def test_a_remote_worker_past_its_timeout_is_killed_and_its_work_kept(tmp_path, monkeypatch):
    from orchestrate.workers.remote import run_node
    pid_file = tmp_path / "worker.pid"
    spec, remote, _ = published_spec(tmp_path, monkeypatch, f"echo half > f.txt; echo $$ > {pid_file}; exec sleep 60",
                                     0.5)

    result = run_node(spec)

    assert (result["rc"], result["timed_out"]) == (124, True)
    assert "killed after 0.5s" in result["log"]
    assert not alive(int(pid_file.read_text()))
    assert RepoDir(remote).git("show", f"{result['head']}:f.txt") == "half"


def test_a_remote_worker_gets_the_engine_s_git_settings_after_its_machine_s_own(tmp_path, monkeypatch):
    """The settings that keep a worker's commits from starting `git gc --auto` (workers/brief.py) are counted
    from the engine's environment; the machine a task runs on may set some of its own, which are kept."""
    from orchestrate.workers import brief
    from orchestrate.workers.remote import run_node
    spec, remote, _ = published_spec(tmp_path, monkeypatch, "echo \"$(git config orch.mine) $(git config gc.auto) "
                                     "$(git config maintenance.auto)\" > f.txt", 60)
    spec["env"].update(brief.git_settings())  # as the engine's launch put them, counted from its own environment
    for name, value in (("COUNT", "1"), ("KEY_0", "orch.mine"), ("VALUE_0", "kept")):  # the task machine's
        monkeypatch.setenv(f"GIT_CONFIG_{name}", value)
    done = run_node(spec)
    assert RepoDir(remote).git("show", f"{done['head']}:f.txt") == "kept 0 false"
