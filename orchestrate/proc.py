"""The only module that starts processes. Short commands (`run`) capture their output; long ones (`spawn`)
get their own process group (a timeout or Ctrl-C kills the whole tree), stdin closed, output to a file."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import IO, Callable, Mapping, Sequence

from orchestrate.errors import ProcError

# Variables git sets for hooks; inherited, they would point our git calls at the wrong repository.
_GIT_LEAKS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX",
              "GIT_COMMON_DIR", "GIT_ALTERNATE_OBJECT_DIRECTORIES")


# A value of this process's own in the environment of everything it starts, git included, and in the campaign
# lock it holds (recorder/lock.py): a resume after this process died stops by it what it left running. Only a
# worker's processes carried the runner's tags: a killed runner's `git worktree add` went on after the resume,
# and when it failed git removed, by name, the admin dir the resume had just made (rv76).
ORIGIN = os.urandom(8).hex()


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LEAKS}
    env["GIT_TERMINAL_PROMPT"] = "0"  # never hang on a credential prompt
    env["ORCH_ORIGIN"] = ORIGIN
    if extra:
        env.update(extra)
    return env


# Processes started outside git and the sandbox (a worker without the sandbox, an evaluator, a check, a
# tripwire, a notifier): what may have written anywhere the user can. The watch (engine/watch.py) looks at
# the user's checkout before the first of them starts and after; a caller that says `confined` (git, run
# inert; a command in the sandbox) does not count.
_unconfined = 0
_count_lock = threading.Lock()
_before_unconfined: Callable[[], None] | None = None


def unconfined() -> int:
    """How many processes this process has started outside git and the sandbox so far."""
    return _unconfined


def before_unconfined(hook: Callable[[], None] | None) -> None:
    """Call `hook` before each such process starts (the watch's look at the checkout), or no longer."""
    global _before_unconfined
    _before_unconfined = hook


_confining = threading.local()  # .wrap: puts this thread's commands in the sandbox; .tags: tags them


@contextmanager
def confining(wrap: Callable[[list[str], str | Path | None], list[str]]):
    """Within it, every command this thread starts with `run` (not git: it says `confined`) runs as
    `wrap(argv, cwd)` returns it: evaluators, checks and tripwires run code a worker may have written."""
    before, _confining.wrap = getattr(_confining, "wrap", None), wrap
    try:
        yield
    finally:
        _confining.wrap = before


@contextmanager
def tagged(tags: Mapping[str, str]):
    """Within it, every command this thread starts with `run` (not git) carries `tags` in its environment,
    and so does whatever it leaves behind: judging outside the sandbox ends its leftovers by them."""
    before, _confining.tags = getattr(_confining, "tags", None), tags
    try:
        yield
    finally:
        _confining.tags = before


def _starting() -> None:
    global _unconfined
    hook = _before_unconfined
    if hook is not None:
        hook()
    with _count_lock:
        _unconfined += 1


@dataclass(frozen=True)
class Completed:
    cmd: tuple[str, ...]
    rc: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    def __bool__(self) -> bool:
        return self.rc == 0 and not self.timed_out


_found: dict[tuple[str, str], str] = {}


def program(name: str) -> str:
    """Where the program `name` is, looked up on PATH once (for this PATH): a file a worker makes later in a
    folder ahead on PATH (a `~/.local/bin` it creates) is not what the runner starts then (rv37)."""
    key = (name, os.environ.get("PATH", ""))
    if key not in _found:
        _found[key] = shutil.which(name) or name
    return _found[key]


def _pinned(argv: list[str]) -> list[str]:
    return argv if "/" in argv[0] else [program(argv[0]), *argv[1:]]


def run(cmd: Sequence[str], *, cwd: str | Path | None = None, env: Mapping[str, str] | None = None,
        timeout: float | None = None, check: bool = False, input: str | None = None,
        confined: bool = False) -> Completed:
    """Run a short command to completion and capture its output.

    A command that cannot start raises ProcError (never a pass); with `check`, so does a non-zero exit.
    On timeout the whole process group is killed and `timed_out` is set (rc 124, like timeout(1)).
    `confined`: the caller knows what it writes (git, run inert), so it is not counted in `unconfined`."""
    argv = [str(c) for c in cmd]
    if not confined and (tags := getattr(_confining, "tags", None)):
        env = {**(env or {}), **tags}
    if not confined and (wrap := getattr(_confining, "wrap", None)) is not None:
        argv, confined = [str(c) for c in wrap(argv, cwd)], True
    if not confined:
        _starting()
    started = time.monotonic()
    try:
        with _spawning:
            proc = subprocess.Popen(_pinned(argv), cwd=cwd, env=clean_env(env), text=True, start_new_session=True,
                                    stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, errors="replace")
            _ours.add(proc.pid)
    except OSError as exc:
        raise ProcError(argv, None, message=f"cannot start `{argv[0]}`: {exc.strerror or exc}") from exc
    timed_out = False
    try:
        out, err, timed_out = _outcome(proc, input, timeout, started)
    except BaseException:  # Ctrl-C: SIGTERM and a moment to exit first, so git drops its lock files (a
        _ended(proc, signal.SIGTERM)  # SIGKILLed `git add` leaves index.lock, and the interrupt's own commit fails)
        kill_group(proc.pid)  # whatever is left of its group
        proc.wait()
        for pipe in (p for p in (proc.stdin, proc.stdout, proc.stderr) if p is not None):
            pipe.close()
        raise
    finally:
        _ours.discard(proc.pid)
    done = Completed(tuple(argv), 124 if timed_out else proc.returncode, out, err,
                     time.monotonic() - started, timed_out)
    if check and not done:
        raise ProcError(argv, done.rc, out, err)
    return done


_HELD = 0.5  # how often a command that has not finished is asked whether it has exited, its output held open


def _outcome(proc: subprocess.Popen, input: str | None, timeout: float | None,
             started: float) -> tuple[str, str, bool]:
    """Its output and whether it timed out. A command that exits while something it left in a session of its
    own (`setsid cmd &`) keeps its output open has ended: its rc stands, and its output is read for a moment
    only (`_rest`). A job still running in its own group (`cmd &`) is part of it, waited for to the timeout."""
    deadline = None if timeout is None else started + timeout
    while True:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            out, err = proc.communicate(input, timeout=_HELD if left is None else min(_HELD, left))
            return out, err, False
        except subprocess.TimeoutExpired:
            input = None  # sent already: communicate refuses it a second time
            if left is not None and left <= _HELD:
                kill_group(proc.pid)
                return (*_rest(proc), True)
            if _exited(proc.pid) and not _group_lives(proc.pid):  # what holds it is reaping's to end
                return (*_rest(proc), False)


def _group_lives(pgid: int) -> bool:
    """Does a process other than the (exited, unreaped) leader remain in process group `pgid`?"""
    try:
        names = [name for name in os.listdir("/proc") if name.isdigit() and int(name) != pgid]
    except OSError:
        return True  # cannot tell: wait, as for any command still running
    return any(stat_field(name, 2) == pgid for name in names)


def stat_field(pid: int | str, index: int) -> int | None:
    """A numeric field of /proc/PID/stat after the command's name (0 state, 1 parent, 2 process group);
    None when the process is gone or the field is not a number."""
    try:
        return int(stat_fields(pid)[index])
    except (TypeError, ValueError, IndexError):
        return None


def stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the command's name (0 is the state); None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()  # the name may hold spaces and ")"
    except (OSError, IndexError):
        return None


def _exited(pid: int) -> bool:
    """Whether the child has exited, leaving it unreaped: its pid, and so its group's id, cannot be reused yet."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # reaped already
        return True


def _rest(proc: subprocess.Popen) -> tuple[str, str]:
    """What an ended command wrote, read for a moment more: a `setsid` child can hold its output open for ever.
    What arrived before the cut is kept (communicate hands it over, undecoded, with its timeout)."""
    try:
        return proc.communicate(timeout=2)
    except subprocess.TimeoutExpired as cut:
        for pipe in (proc.stdout, proc.stderr):
            pipe.close()
        proc.wait()
        out, err = (b.decode(errors="replace") if b else "" for b in (cut.stdout, cut.stderr))
        return out, (err + "\n" if err and not err.endswith("\n") else err) + (
            "(output cut: a process the command left running in a session of its own held it open)")


def run_shell(script: str, *, cwd: str | Path, env: Mapping[str, str] | None = None,
              timeout: float | None = None) -> Completed:
    """A check's command line, with pipefail where bash is there to give it (dash, Debian's sh, has none)."""
    bash = _bash()
    argv = [bash, "-o", "pipefail", "-c", script] if bash else ["/bin/sh", "-c", script]
    return run(argv, cwd=cwd, env=env, timeout=timeout)


@lru_cache(maxsize=1)
def _bash() -> str | None:
    return shutil.which("bash")


def spawn(cmd: Sequence[str], *, cwd: str | Path, env: Mapping[str, str], log: IO[bytes],
          confined: bool = False) -> subprocess.Popen:
    """Start a long-running command in its own process group, stdin closed, output to `log`. The first spawn
    makes this process a child subreaper (Linux): what a worker leaves in a session of its own, even with its
    environment wiped (`env -i setsid ...`), is re-parented here, where `reaping.kill_orphans` finds it, not to init.
    `confined`: it runs in the sandbox, writing only what it was given (not counted in `unconfined`)."""
    argv = [str(c) for c in cmd]
    become_subreaper()
    if not confined:
        _starting()
    try:
        with _spawning:
            child = subprocess.Popen(_pinned(argv), cwd=cwd, env=clean_env(env), stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            _ours.add(child.pid)
        return child
    except OSError as exc:
        raise ProcError(argv, None, message=f"cannot start `{argv[0]}`: {exc.strerror or exc}") from exc


def start_pipe(cmd: Sequence[str], *, env: Mapping[str, str] | None = None) -> subprocess.Popen:
    """Start a long-running helper that answers on stdout (bytes) what it is sent on stdin, stderr discarded,
    in a session of its own (a Ctrl-C at the terminal is the caller's to handle, not the helper's).
    `end_pipe` stops it; until then it is ours, never taken for an orphan. Only git's readers and writers
    are started so (orchestrate.git_batch, orchestrate.git_pipe): not counted in `unconfined`."""
    argv = [str(c) for c in cmd]
    try:
        with _spawning:
            child = subprocess.Popen(_pinned(argv), env=clean_env(env), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
            _ours.add(child.pid)
    except OSError as exc:
        raise ProcError(argv, None, message=f"cannot start `{argv[0]}`: {exc.strerror or exc}") from exc
    return child


def end_pipe(child: subprocess.Popen, within: float = 2.0) -> None:
    """Close a helper's input (it exits at its end) and reap it; one still running after `within` is killed."""
    for pipe in (child.stdin, child.stdout):
        try:
            pipe.close()
        except OSError:  # a dead helper: its unread input cannot be flushed
            pass
    try:
        child.wait(timeout=within)
    except subprocess.TimeoutExpired:
        kill_group(child.pid)
        child.wait()
    finally:
        _ours.discard(child.pid)


# The children this module started and has not yet waited for (their pids), and a lock held while one
# starts, so that `reaping.kill_orphans` never takes a child being started for an orphan.
_ours: set[int] = set()
_spawning = threading.Lock()
_PR_SET_CHILD_SUBREAPER = 36


@lru_cache(maxsize=1)
def become_subreaper() -> bool:
    """prctl(PR_SET_CHILD_SUBREAPER): True when this process now adopts its descendants' orphans."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux, or no prctl: orphans go to init, found by their tags only
        return False


def _ended(proc: subprocess.Popen, sig: int, within: float = 2.0) -> bool:
    """Send `sig` to the process's group and wait up to `within` seconds for the process to exit."""
    try:
        os.killpg(proc.pid, sig)
        proc.wait(timeout=within)
    except (ProcessLookupError, PermissionError):
        return True
    except subprocess.TimeoutExpired:
        return False
    return True


def kill_group(pid: int, grace: float = 0.0) -> None:
    """SIGTERM then SIGKILL a whole process group; a group already gone is fine."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        if wait:
            time.sleep(wait)


def group_alive(pid: int) -> bool:
    try:
        return os.killpg(pid, 0) is None
    except (ProcessLookupError, PermissionError):
        return False


@dataclass(frozen=True)
class Merged:
    rc: int
    output: bytes  # stdout and stderr interleaved, as the bytes arrived
    timed_out: bool = False


def run_merged(cmd: Sequence[str], *, stdin: bytes, cwd: str | Path, env: Mapping[str, str] | None = None,
               timeout: float | None = None) -> Merged:
    """Feed `stdin` to a command and capture stdout and stderr as one stream of bytes, undecoded:
    a transcript's shell reads its script this way, and its output must survive byte for byte."""
    argv = [str(c) for c in cmd]
    _starting()
    try:
        with _spawning:
            child = subprocess.Popen(_pinned(argv), cwd=cwd, env=clean_env(env), start_new_session=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            _ours.add(child.pid)
    except OSError as exc:
        raise ProcError(argv, None, message=f"cannot start `{argv[0]}`: {exc.strerror or exc}") from exc
    try:
        out, _ = child.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(child.pid)
        out, _ = child.communicate()
        return Merged(124, out, True)
    except BaseException:
        kill_group(child.pid)
        child.wait()
        raise
    finally:
        _ours.discard(child.pid)
    return Merged(child.returncode, out)
