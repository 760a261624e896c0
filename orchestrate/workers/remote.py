"""One node attempt on a machine of a Dask cluster: the task body of the Dask executor.

`run_node(spec)` runs wherever a Dask worker runs it, so it uses nothing of the engine's machine but
the remote repository both sides reach. It fetches the node branch the engine published at the
recorded base, checks it out in a worktree of a per-remote cache repository, runs the worker under
DESIGN §6's environment, commits what the worker left, pushes the node branch (and nothing else) and
returns the head sha, the exit code, the log and the freeze file.

Re-running a task (Dask re-runs it when the machine running it died) starts again from the base: an
old worker process of the same attempt on this machine is killed, its worktree replaced, and the
branch is pushed with a lease on the value fetched, so only a branch this campaign owns and has not
merged (the engine merges locally, never on the remote) is ever moved.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from pathlib import Path

from orchestrate import git, proc
from orchestrate.workers import brief
from orchestrate.flock import FileLock

# a task waits for another on the same machine to finish with the shared cache repository, however long its
# fetch or checkout takes
LOCK_WAIT = float("inf")

LOG_LIMIT = 1 << 20  # the tail of a log that travels back; the whole log stays on the worker's disk
CANCEL_POLL = 0.25


def workdir() -> Path:
    """Where a Dask worker keeps its repositories and task directories (ORCHESTRATE_DASK_DIR)."""
    env = os.environ.get("ORCHESTRATE_DASK_DIR")
    return Path(env) if env else Path(tempfile.gettempdir()) / f"orchestrate-dask-{os.getuid()}"


def run_node(spec: dict) -> dict:
    """spec: remote, topic, node, attempt, branch, base, command, env, brief, timeout, identity, cancel."""
    root = workdir()
    cache = root / "repos" / hashlib.sha1(spec["remote"].encode()).hexdigest()[:16]
    task = root / "tasks" / spec["topic"] / f"{spec['node']}+{spec['attempt']}"
    tree = task / "tree"
    with FileLock(str(cache) + ".lock", timeout=LOCK_WAIT):  # several tasks on one machine share the cache repository
        published = _checkout(spec, cache, task, tree)
    log_path, return_path, brief_path = task / "worker.log", task / "return.json", task / "brief.md"
    brief_path.write_text(spec["brief"], encoding="utf-8")
    return_path.unlink(missing_ok=True)
    outputs_path = task / "outputs.json"
    outputs_path.unlink(missing_ok=True)
    # the engine's git settings for the worker are made again after what this machine's environment sets
    env = {k: v for k, v in spec["env"].items() if not k.startswith("GIT_CONFIG_")}
    env.update(ORCH_WORKTREE=str(tree), ORCH_BRIEF=str(brief_path), ORCH_RETURN=str(return_path),
               ORCH_OUTPUTS=str(outputs_path), **brief.git_settings())
    env.update(spec["identity"])
    rc, seconds, timed_out, cancelled = _run(spec, tree, env, log_path, task / "pid")
    identity = spec["identity"] or git.identity_env(tree)
    if git.has_changes(tree):
        git.commit_all(tree, f"node {spec['node']}: changes left uncommitted by the worker", env=identity)
    head = git.out(tree, "rev-parse", "HEAD")
    if head != published:
        git.push(tree, spec["remote"], head, f"refs/heads/{spec['branch']}", lease=published)
    with FileLock(str(cache) + ".lock", timeout=LOCK_WAIT):
        git.worktree_remove(cache, tree)
    return {"head": head, "rc": rc, "seconds": seconds, "timed_out": timed_out, "cancelled": cancelled,
            "log": _tail(log_path), "returned": return_path.read_text(errors="replace") if return_path.exists() else None,
            "outputs": outputs_path.read_text(errors="replace") if outputs_path.exists() else None,
            "host": os.uname().nodename, "pid": os.getpid()}


def _checkout(spec: dict, cache: Path, task: Path, tree: Path) -> str:
    """A clean worktree of the node branch at its base; returns the sha the remote branch had."""
    if not (cache / ".git").exists():
        cache.mkdir(parents=True, exist_ok=True)
        git.init_repo(cache)
    _stop_previous(task / "pid")
    if tree.exists():
        git.worktree_remove(cache, tree)
        shutil.rmtree(tree, ignore_errors=True)
    git.worktree_prune(cache)
    branch = spec["branch"]
    published = git.remote_head(cache, spec["remote"], f"refs/heads/{branch}")
    if published is None:
        raise RuntimeError(f"{spec['remote']} has no branch {branch}; the engine publishes it before the task")
    git.fetch(cache, spec["remote"], f"+refs/heads/{branch}:refs/orchestrate/{branch}")
    if not git.is_ancestor(cache, spec["base"], published):
        raise RuntimeError(f"{branch} on {spec['remote']} is at {published[:12]}, which does not descend from "
                           f"the recorded base {spec['base'][:12]}")
    task.mkdir(parents=True, exist_ok=True)
    git.git(cache, "worktree", "add", "--quiet", "-B", branch, str(tree), spec["base"])
    return published


def _run(spec: dict, tree: Path, env: dict, log_path: Path, pid_file: Path) -> tuple[int, float, bool, bool]:
    cancel = _cancel_event(spec.get("cancel"))
    started = time.monotonic()
    with log_path.open("wb") as log:
        log.write(f"# orchestrate: node {spec['node']} attempt {spec['attempt']} on {os.uname().nodename}: "
                  f"{spec['command']}\n".encode())
        log.flush()
        popen = proc.spawn(["/bin/sh", "-c", spec["command"]], cwd=tree, env=env, log=log)
        pid_file.write_text(str(popen.pid))
        timed_out = cancelled = False
        while popen.poll() is None:
            if time.monotonic() - started > spec["timeout"]:
                timed_out = True
            elif cancel is not None and cancel():
                cancelled = True
            else:
                if cancel is None:
                    time.sleep(CANCEL_POLL)
                continue
            proc.kill_group(popen.pid, grace=0.2)
            popen.wait()
            log.write(f"\n# orchestrate: {'killed after %gs' % spec['timeout'] if timed_out else 'cancelled'}\n"
                      .encode())
            break
        proc.kill_group(popen.pid)  # stray children of a finished worker die with it
    pid_file.unlink(missing_ok=True)
    rc = 124 if timed_out else 130 if cancelled else popen.returncode
    return rc, time.monotonic() - started, timed_out, cancelled


def _cancel_event(name: str | None):
    """A callable that waits briefly on the campaign's cancel event; None outside a Dask worker."""
    if not name:
        return None
    try:
        from distributed import Event, get_worker
        get_worker()
    except (ImportError, ValueError):
        return None
    event = Event(name)
    return lambda: event.wait(timeout=CANCEL_POLL)


def _stop_previous(pid_file: Path) -> None:
    """A re-run of this attempt on this machine: the first run's worker must not outlive it."""
    try:
        pid = int(pid_file.read_text())
    except (OSError, ValueError):
        return
    proc.kill_group(pid, grace=0.2)
    pid_file.unlink(missing_ok=True)


def _tail(path: Path) -> str:
    with path.open("rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - LOG_LIMIT))
        data = fh.read()
    head = "" if size <= LOG_LIMIT else f"# orchestrate: first {size - LOG_LIMIT} bytes left on the worker\n"
    return head + data.decode(errors="replace")
