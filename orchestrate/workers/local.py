"""Running workers: requests, outcomes, freeze files and the local executor.

A worker is a shell command run in its node's worktree, stdin closed, output to one log per
attempt, in its own process group so a timeout or Ctrl-C kills everything it started.
"""
from __future__ import annotations

import json
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from orchestrate import atomic, proc, reaping
from orchestrate.errors import ProcError
from orchestrate.workers import exits

FREEZE_KINDS = {
    "surface-exceed": {"paths"},
    "refuted-premise": {"premise", "evidence"},
    "reserved-halt": {"reason"},
}
# Surface-exceed requests granted to one node (widened or serialized; engine/handlers/surface_exceed.py): a
# grant spends no attempt, so only a bound of its own stops a worker that freezes on every run.
WIDEN_LIMIT = 3


@dataclass(frozen=True)
class WorkRequest:
    node: str
    attempt: int
    command: str
    worktree: Path
    env: dict[str, str]
    log: Path
    return_file: Path
    timeout: float
    sandbox: tuple[str, ...] | None = None  # the writable paths when the attempt runs in the sandbox
    readable: tuple[str, ...] = ()  # read-only there (the project, when it lives under the private /tmp)
    alone: bool = False  # no other worker may run while this one does (an unsandboxed one: workers/siblings.py)


@dataclass(frozen=True)
class WorkOutcome:
    node: str
    attempt: int
    rc: int
    seconds: float
    timed_out: bool = False
    log: str = ""
    freeze: dict | None = None
    freeze_error: str = ""

    def __bool__(self) -> bool:
        return self.rc == 0 and not self.timed_out and not self.freeze_error


FREEZE_MOST = 1 << 20  # bytes of a freeze file read; a longer one is cut, and so is not JSON


def read_freeze(path: Path) -> tuple[dict | None, str]:
    """(freeze, error): a valid freeze object, or why the file is not one. No file: (None, '')."""
    from orchestrate import git_files
    try:  # never a link followed or a FIFO waited on: the worker made this file
        text = git_files.small(path, FREEZE_MOST).decode("utf-8", errors="replace").strip()
    except FileNotFoundError:
        return None, ""
    except OSError as exc:
        return None, f"{path.name}: {exc.strerror or exc}"
    if not text:
        return None, ""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"{path.name} is not JSON ({exc.msg} at line {exc.lineno})"
    if not isinstance(data, dict) or data.get("freeze") not in FREEZE_KINDS:
        kinds = ", ".join(FREEZE_KINDS)
        return None, f"{path.name} must be an object with \"freeze\" one of {kinds}"
    missing = FREEZE_KINDS[data["freeze"]] - set(data)
    if missing:
        return None, f"{path.name}: a {data['freeze']} freeze needs {', '.join(sorted(missing))}"
    if data["freeze"] == "surface-exceed":
        paths = data["paths"]
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and p for p in paths):
            return None, f"{path.name}: \"paths\" must be a non-empty list of paths"
        bad = [f"{p} ({why})" for p in paths if (why := request_problem(p))]
        if bad:
            return None, f"{path.name}: surface-exceed asks for paths no node may have: {'; '.join(bad)}"
    return data, ""


# What no surface may ever cover: git's own folders, the recorder, orchestrate's scratch space.
def request_problem(path: str) -> str | None:
    """Why a surface-exceed request may not be granted, or None: what no surface token may name (paths
    outside the project, the recorder, the scratch space, anything of git's) no request may ask for."""
    from orchestrate.dag import surface
    if why := surface.token_problem(path):
        return why.replace("surface tokens are", "requests are")
    return None


class Executor(Protocol):
    def start(self, request: WorkRequest) -> None: ...
    def poll(self) -> list[WorkOutcome]: ...
    def running(self) -> list[tuple[str, float]]: ...
    def cancel_all(self) -> None: ...
    def close(self) -> None: ...


@dataclass
class _Running:
    request: WorkRequest
    popen: object
    started: float
    log_handle: object
    exited: int | None = None  # exits.exit_fd: readable once the worker's process has ended
    # A thread of its own per worker sees the moment it exits (its `seconds`) and enforces its timeout: the
    # loop may be busy for minutes (evaluators it waits for, another node's campaign checks at its merge).
    watcher: threading.Thread | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)  # the watcher never signals a reaped pid
    done: threading.Event = field(default_factory=threading.Event)  # let go of: the watcher has nothing to do
    ended: float | None = None
    expired: bool = False
    reaped: bool = False

    def watch(self) -> None:
        self.watcher = threading.Thread(target=self._watch, name=f"worker-{self.request.node}", daemon=True)
        try:
            self.watcher.start()
        except RuntimeError:  # no thread to be had (a pids limit): the loop's polls keep its timeout, as before
            self.watcher = None

    def _watch(self) -> None:
        left = self.started + self.request.timeout - time.monotonic()
        if self.exited is not None and exits.wait_exit([self.exited], left):
            self.ended = time.monotonic()
            return
        if self.exited is None and self.done.wait(left):
            return
        with self.lock:  # without a pidfd, a worker may have exited in time: its status stands, not a timeout
            if not self.reaped and not exits.has_exited(self.popen.pid):
                self.expire()

    def expire(self) -> None:
        """Kill it at its timeout (the caller holds `lock`); its time ends here, and its log says so."""
        self.expired = True
        proc.kill_group(self.popen.pid, grace=0.2)
        self.ended = time.monotonic()
        self.log_handle.write(f"\n# orchestrate: killed after {self.request.timeout:g}s\n".encode())
        self.log_handle.flush()

    def seconds(self) -> float:
        return (self.ended or time.monotonic()) - self.started


@dataclass
class LocalExecutor:
    """At most `jobs` workers at once; the rest wait in order. A request marked `alone` starts only when
    nothing else runs, and nothing starts while it runs; when it finishes, the next one starts at the
    following poll, after the engine has settled its return (its sibling check, workers/siblings.py)."""

    jobs: int
    on_spawn: object = None  # called with (request, pid) so the pid is journalled before we wait on it
    queue: list[WorkRequest] = field(default_factory=list)
    live: dict[str, _Running] = field(default_factory=dict)
    unstarted: list[WorkOutcome] = field(default_factory=list)  # could not start: reported by the next poll
    held: bool = False  # `holding`

    def start(self, request: WorkRequest) -> None:
        self.queue.append(request)
        self._fill()

    @contextmanager
    def holding(self):
        """A request marked `alone` waits while a batch's working copies are made: a worker without the sandbox
        running then could write a checkout whose index the pool has not copied yet (the copy every later look
        compares with, pool.py), and what it wrote there would be the node's base, its edit then committing it.
        Once they are all made (not after an error) it starts."""
        self.held = True
        try:
            yield
        finally:
            self.held = False
        self._fill()

    def _fill(self) -> None:
        while self.queue and self._may_start(self.queue[0]):
            req = self.queue.pop(0)
            req.log.parent.mkdir(parents=True, exist_ok=True)
            req.return_file.unlink(missing_ok=True)
            handle = atomic.open_log(req.log, append=True)  # in the run folder the worker may write
            handle.write(f"# orchestrate: node {req.node} attempt {req.attempt}: {req.command}\n".encode())
            handle.flush()
            try:
                argv = ["/bin/sh", "-c", req.command]
                if req.sandbox is not None:
                    from orchestrate.workers import sandbox
                    argv = sandbox.wrap(argv, cwd=req.worktree, writable=req.sandbox, readable=req.readable)
                popen = proc.spawn(argv, cwd=req.worktree, env=req.env, log=handle, confined=req.sandbox is not None)
            except ProcError as exc:  # the environment's fault, never the worker's: the engine says so
                handle.write(f"orchestrate: {exc.message}\n".encode())
                handle.close()
                rc = 127 if isinstance(exc.__cause__, FileNotFoundError) else 126
                self.unstarted.append(WorkOutcome(req.node, req.attempt, rc, 0.0, log=str(req.log)))
                continue
            except Exception:
                handle.close()
                raise
            self.live[req.node] = run = _Running(req, popen, time.monotonic(), handle, exits.exit_fd(popen.pid))
            run.watch()
            if self.on_spawn is not None:
                self.on_spawn(req, popen.pid)

    def _may_start(self, request: WorkRequest) -> bool:
        """In order: the first waiting request blocks those behind it, so none of them waits forever."""
        if request.alone and self.held:
            return False
        if not self.live:
            return True
        return len(self.live) < self.jobs and not request.alone \
            and not any(run.request.alone for run in self.live.values())

    def poll(self) -> list[WorkOutcome]:
        done, self.unstarted = self.unstarted, []
        now = time.monotonic()
        held = False
        for node, run in list(self.live.items()):
            with run.lock:
                rc = run.popen.poll()
                timed_out = run.expired or (rc is None and now - run.started > run.request.timeout)
                if rc is None and not timed_out:
                    continue
                if timed_out and not run.expired:  # no watcher (no thread to be had), or the loop came first
                    run.expire()
                elif not timed_out:
                    proc.kill_group(run.popen.pid)  # stray children of a finished worker die with it
                if timed_out:
                    run.popen.wait()
                run.reaped = True
            reaping.kill_tagged(_tags(run.request))  # and those that left its process group (setsid)
            _let_go(run)
            freeze, error = read_freeze(run.request.return_file)
            done.append(WorkOutcome(node, run.request.attempt, 124 if timed_out else rc, run.seconds(), timed_out,
                                    str(run.request.log), freeze, error))
            del self.live[node]
            held = held or run.request.alone
        if not held:  # else its return is settled (and its siblings checked) before anything else starts
            self._fill()
        done += self.unstarted
        self.unstarted = []
        return done

    def wait(self, timeout: float) -> None:
        """Sleep until a running worker exits or `timeout` passes, whichever comes first."""
        fds = [run.exited for run in self.live.values() if run.exited is not None]
        exits.wait_exit(fds if len(fds) == len(self.live) else [], timeout)

    def running(self) -> list[tuple[str, float]]:
        now = time.monotonic()
        return ([(n, now - r.started) for n, r in self.live.items()] + [(q.node, 0.0) for q in self.queue]
                + [(u.node, 0.0) for u in self.unstarted])

    def cancel_all(self) -> None:
        self.queue.clear()
        self.unstarted.clear()
        for run in self.live.values():
            with run.lock:
                if not run.reaped:  # reaped by a poll a Ctrl-C cut short: its pid may be another's now
                    proc.kill_group(run.popen.pid)
                reaping.kill_tagged(_tags(run.request))
                try:
                    run.popen.wait(timeout=5)
                except Exception:  # noqa: BLE001 - best effort while stopping
                    pass
                run.reaped = True
            _let_go(run)
        self.live.clear()

    def close(self) -> None:
        """Nothing to let go of: the pool is this process's children, stopped by cancel_all."""


def _let_go(run: _Running) -> None:
    run.done.set()
    if run.watcher is not None:  # it has seen the exit (or ends now): only then is its descriptor closed
        run.watcher.join(timeout=5)
    try:
        run.log_handle.close()
    finally:
        if run.exited is not None and not (run.watcher and run.watcher.is_alive()):  # else left open: a
            os.close(run.exited)  # process that outlived SIGKILL (disk sleep) is still being watched
            run.exited = None


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def _tags(request: WorkRequest) -> dict[str, str]:
    """What every process of this attempt carries in its environment. Its worktree's path among them: another
    checkout's campaign of the same topic, on this machine, has workers of the same node and attempt."""
    return {k: request.env[k] for k in ("ORCH_TOPIC", "ORCH_NODE", "ORCH_ATTEMPT", "ORCH_WORKTREE")
            if k in request.env}
