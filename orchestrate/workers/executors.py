"""Choosing the executor: command-line flags over the `executor:` section of `.ledger/config.yaml`.

    executor:
      kind: dask                       # local (default) or dask
      scheduler: tcp://10.0.0.5:8786   # the Dask scheduler's address
      remote: ssh://git@host/repo.git  # a repository the engine and every Dask worker can fetch and push
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrate import git
from orchestrate.errors import UsageError
from orchestrate.recorder.paths import Layout
from orchestrate.workers.local import LocalExecutor, default_jobs

KINDS = ("local", "dask")
FIELDS = ("kind", "scheduler", "remote")


@dataclass(frozen=True)
class Choice:
    kind: str = "local"
    scheduler: str | None = None
    remote: str | None = None


def choose(layout: Layout, *, kind: str | None, scheduler: str | None, remote: str | None) -> Choice:
    conf = _config(layout.ledger)
    where = _absolute(remote, Path.cwd()) if remote else _absolute(conf.get("remote"), layout.root)
    chosen = Choice(kind or conf.get("kind") or "local", scheduler or conf.get("scheduler"), where)
    if chosen.kind not in KINDS:
        raise UsageError(f"{layout.config}: executor.kind `{chosen.kind}` is not one of {', '.join(KINDS)}")
    if chosen.kind == "dask":
        missing = [f"--{f}" for f in ("scheduler", "remote") if not getattr(chosen, f)]
        if missing:
            raise UsageError(f"the Dask executor needs {' and '.join(missing)}",
                             hint="pass them, or set executor.scheduler and executor.remote in .ledger/config.yaml")
    elif scheduler or remote:
        raise UsageError("--scheduler and --remote only apply to --executor dask")
    return chosen


def build(layout: Layout, choice: Choice, jobs: int | None):
    if choice.kind == "local":
        return LocalExecutor(jobs or default_jobs())
    from orchestrate.workers.dask_executor import DaskExecutor, require_distributed
    require_distributed()
    remote = choice.remote
    if not git.git(layout.root, "ls-remote", "--heads", remote, check=False):
        raise UsageError(f"cannot read the remote repository {remote}",
                         hint="--remote must be a repository both this machine and the Dask workers can push to")
    return DaskExecutor(choice.scheduler, remote, layout.root, jobs).connect()


def _absolute(remote: str | None, root: Path) -> str | None:
    """A local path is made absolute: Dask workers do not share our working directory."""
    if not remote or "://" in remote or ":" in remote.split("/")[0]:
        return remote
    return str((root / remote).resolve())


def _config(ledger: Path) -> dict:
    from orchestrate import config
    found = config.read(ledger, "executor")
    section = found.value
    if section is None:
        return {}
    if not isinstance(section, dict):
        found.refuse("executor", found.line, f"expected a mapping of {', '.join(FIELDS)}")
        return {}
    kept = {}
    for key, value in section.items():
        if key not in FIELDS:
            found.refuse(f"executor.{key}", section.key_line(key), f"unknown key; keys: {', '.join(FIELDS)}")
        elif not isinstance(value, str) or not value.strip():
            found.refuse(f"executor.{key}", section.key_line(key), "expected text")
        elif key == "kind" and value not in KINDS:  # here, where its line is known
            found.refuse("executor.kind", section.key_line(key), f"`{value}` is not one of {', '.join(KINDS)}")
        else:
            kept[key] = value
    return kept
