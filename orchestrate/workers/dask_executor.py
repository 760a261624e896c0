"""The Dask executor: the local executor's interface, with each attempt run as a task on a Dask cluster.

Before submitting, the engine publishes the node branch at the recorded base on the remote (the only
refs it ever pushes are node branches it created, and only while unmerged). The task
(`orchestrate.remote.run_node`) works and pushes the branch back; when it returns, the engine fetches
the head into its own repository and fast-forwards the node's local worktree to it, so everything after
(leftover commit, freeze file, gates, merge) is exactly what a local attempt gets.

Stopping: `Future.cancel` does not stop a running task, so every task watches a `distributed.Event`
named for this runner; `cancel_all` sets it and waits for the tasks to kill their workers and return.
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from orchestrate import atomic, git
from orchestrate.errors import UsageError
from orchestrate.workers.local import WorkOutcome, WorkRequest, read_freeze

CONNECT_TIMEOUT = 20
STOP_GRACE = 30  # seconds cancel_all waits for tasks to report their worker gone


def require_distributed():
    try:
        import distributed
    except ImportError:
        raise UsageError("the Dask executor needs the `distributed` package",
                         hint="pip install 'orchestrate[distributed]'") from None
    return distributed


@dataclass
class _Submitted:
    request: WorkRequest
    future: object
    started: float
    published: str


@dataclass
class DaskExecutor:
    scheduler: str
    remote: str
    repo: Path
    jobs: int | None = None
    on_spawn: object = None  # the local executor's pid hook; a remote worker has no local pid
    queue: list[WorkRequest] = field(default_factory=list)
    live: dict[str, _Submitted] = field(default_factory=dict)
    _client: object = None
    _cancel: object = None
    _identity: dict | None = None

    def connect(self) -> "DaskExecutor":
        distributed = require_distributed()
        from distributed.comm.addressing import parse_address, parse_host_port
        try:  # before a Client exists: a half-built one hangs for 40 s at exit trying to close itself
            scheme, location = parse_address(self.scheduler)
            if scheme in ("tcp", "tls", "ws", "wss"):
                parse_host_port(location)
        except ValueError as exc:
            raise UsageError(f"{self.scheduler} is not a Dask scheduler address: {exc}",
                             hint="write it as tcp://HOST:PORT, e.g. tcp://10.0.0.5:8786") from None
        try:
            self._client = distributed.Client(self.scheduler, timeout=CONNECT_TIMEOUT, set_as_default=False)
        except OSError as exc:  # refused, unreachable, or timed out (TimeoutError is an OSError)
            raise UsageError(f"cannot reach the Dask scheduler at {self.scheduler}: {exc}",
                             hint="start one with `dask scheduler`, or pass --scheduler ADDRESS") from None
        self._cancel = distributed.Event(f"orchestrate-cancel-{uuid.uuid4().hex}", client=self._client)
        return self

    def start(self, request: WorkRequest) -> None:
        self.queue.append(request)
        self._fill()

    def _fill(self) -> None:
        while self.queue and (self.jobs is None or len(self.live) < self.jobs):
            req = self.queue.pop(0)
            req.return_file.unlink(missing_ok=True)
            published = self._publish(req)
            spec = {"remote": self.remote, "topic": req.env["ORCH_TOPIC"], "node": req.node, "attempt": req.attempt,
                    "branch": req.env["ORCH_BRANCH"], "base": req.env["ORCH_BASE"], "command": req.command,
                    "env": req.env, "brief": Path(req.env["ORCH_BRIEF"]).read_text(encoding="utf-8"),
                    "timeout": req.timeout, "identity": self._identity_env(), "cancel": self._cancel.name}
            from orchestrate.workers.remote import run_node
            key = f"orchestrate-{spec['topic']}-{req.node}+{req.attempt}-{uuid.uuid4().hex[:8]}"
            future = self._client.submit(run_node, spec, key=key, pure=False)
            self.live[req.node] = _Submitted(req, future, time.monotonic(), published)
            if self.on_spawn is not None:  # handed to the cluster: the attempt has begun (no local pid to record)
                self.on_spawn(req, None)

    def _publish(self, req: WorkRequest) -> str:
        """Put the node branch, at its base, on the remote; a stale copy of this same unmerged attempt
        (a runner died after publishing) is moved back to the base under a lease."""
        branch, base = req.env["ORCH_BRANCH"], req.env["ORCH_BASE"]
        ref = f"refs/heads/{branch}"
        there = git.remote_head(self.repo, self.remote, ref)
        if there != base:
            git.push(self.repo, self.remote, base, ref, lease=there or "")
        return base

    def _identity_env(self) -> dict:
        """The campaign owner's identity, so commits made remotely read as they would locally."""
        if self._identity is None:
            who = {k: git.config_get(self.repo, f"user.{k}") for k in ("name", "email")}
            self._identity = {}
            if who["name"]:
                self._identity.update(GIT_AUTHOR_NAME=who["name"], GIT_COMMITTER_NAME=who["name"])
            if who["email"]:
                self._identity.update(GIT_AUTHOR_EMAIL=who["email"], GIT_COMMITTER_EMAIL=who["email"])
        return self._identity

    def poll(self) -> list[WorkOutcome]:
        done = []
        for node, sub in list(self.live.items()):
            if not sub.future.done():
                continue
            del self.live[node]
            done.append(self._settle(sub))
        self._fill()
        return done

    def _settle(self, sub: _Submitted) -> WorkOutcome:
        req = sub.request
        req.log.parent.mkdir(parents=True, exist_ok=True)
        try:
            result = sub.future.result()
        except Exception as exc:  # noqa: BLE001 - a task that could not run is a failed attempt, reported
            why = f"{type(exc).__name__}: {exc}"
            _write(req.log, f"# orchestrate: node {req.node} attempt {req.attempt} could not run on the Dask "
                   f"cluster: {why}\n")
            return WorkOutcome(req.node, req.attempt, 2, time.monotonic() - sub.started, log=str(req.log))
        _write(req.log, result["log"])
        if result["returned"] is not None:
            _write(req.return_file, result["returned"])
        if result.get("outputs") is not None and req.env.get("ORCH_OUTPUTS"):
            _write(Path(req.env["ORCH_OUTPUTS"]), result["outputs"])
        self._bring_back(req, result["head"])
        freeze, error = read_freeze(req.return_file)
        return WorkOutcome(req.node, req.attempt, result["rc"], result["seconds"], result["timed_out"],
                           str(req.log), freeze, error)

    def _bring_back(self, req: WorkRequest, head: str) -> None:
        """Fetch the pushed node branch and fast-forward the local worktree to the head the task reported."""
        git.fetch(self.repo, self.remote, f"refs/heads/{req.env['ORCH_BRANCH']}")
        git.git(req.worktree, "merge", "--quiet", "--ff-only", head)

    def running(self) -> list[tuple[str, float]]:
        now = time.monotonic()
        return [(n, now - s.started) for n, s in self.live.items()] + [(q.node, 0.0) for q in self.queue]

    def cancel_all(self) -> None:
        self.queue.clear()
        if self._client is None:
            return
        futures = [s.future for s in self.live.values()]
        if futures:
            self._cancel.set()
            deadline = time.monotonic() + STOP_GRACE
            while not all(f.done() for f in futures) and time.monotonic() < deadline:
                time.sleep(0.05)
            self._client.cancel(futures)
        self.live.clear()
        self.close()

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _write(path: Path, text: str) -> None:
    """A file of the run folder, which a process on this host without the sandbox can write too: a link, FIFO
    or hard link planted at the name is replaced, never written through (atomic.open_log)."""
    with atomic.open_log(path) as fh:
        fh.write(text.encode("utf-8"))
