"""Ending what a command left behind: processes in a session of their own, which no process-group kill
reaches. proc starts every process; this module finds the leftovers among this process's children (it is a
child subreaper: orphans are re-parented here) and by the tags a worker's environment carries."""
from __future__ import annotations

import errno
import os
import signal
import time
from typing import Mapping

# proc's record of what it started, and its readers of /proc/PID/stat
from orchestrate.proc import _ours, _spawning, become_subreaper, stat_field, stat_fields

# In the environment of a notify command: what it sends in the background may finish. A value of this process's
# own, which no worker is given: `ORCH_NOTIFIER=1` was a mark any leftover could wear (rv34).
NOTIFIER = os.urandom(16).hex()
SPARED = f"ORCH_NOTIFIER={NOTIFIER}".encode()
_KERNEL_THREAD = 0x00200000  # PF_KTHREAD in /proc/PID/stat's flags: no environment, ever
_SETTLING = 500  # reads, a millisecond apart, of an environment caught in the middle of an exec


def _environ(pid: int) -> set[bytes]:
    """The process's environment strings; empty when it is gone, not ours to read, or has none. A process in
    the middle of an exec reads as empty for a moment (the new memory holds no environment yet, or the old
    was let go between the open and the read, or the open says ESRCH: measured, 1 read in 20 of a chain of
    execs), which would spare a leftover or end a notifier's delivery, so an empty read is read again until the
    exec is done and the kernel's bounds of the environment meet (`env -i`: none at all) or the process is gone."""
    done = None  # the exec (its code start and environment bounds) whose memory read empty once it was done
    for _ in range(_SETTLING):
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                data = fh.read()
        except OSError as exc:  # not ours to read, or gone (an exec can say so too: ESRCH)
            if exc.errno != errno.ESRCH:
                return set()
            data = b""
        if data:
            return set(data.split(b"\0"))
        fields = stat_fields(pid)
        if fields is None or len(fields) < 49 or fields[0] in (b"Z", b"X") or int(fields[6]) & _KERNEL_THREAD:
            return set()
        if fields[48] != b"0" and fields[23] != b"0":  # the exec done (code start set after the environment's
            this = (fields[23], fields[47], fields[48])  # bounds, which meet while it is laid out): none (`env -i`),
            if fields[47] == fields[48] or done == this:  # or empty though opened after this very exec was done:
                return set()  # its pages unmapped (rv34), for good
            done = this  # read once more: the last open may have caught the memory the exec let go, or the next
            continue  # exec of a chain (`exec env sh -c 'exec ...'`) may have begun: a new `this`, read again
        done = None
        time.sleep(0.001)
    return set()


def kill_orphans() -> list[int]:
    """SIGKILL every orphan re-parented to this process (a subreaper) and reap it; returns their pids. An orphan
    is a child of ours proc did not start, in a session other than ours (what a returned worker left:
    a worker is a session of its own, and so is whatever ran `setsid`), and not a notifier's (`SPARED`)."""
    if not become_subreaper.cache_info().currsize or not become_subreaper():
        return []
    me, killed = os.getpid(), []
    session = os.getsid(0)
    for _ in range(20):  # an orphan's own children are orphaned in turn when it dies
        with _spawning:
            children = _children(me)
            _ours.intersection_update(children)  # the rest were waited for: their pids may come back
            found = [pid for pid in children if pid not in _ours and _session(pid) not in (None, session)
                     and SPARED not in _environ(pid)]
            for pid in found:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    continue
                killed.append(pid)
        for pid in found:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        if not found:
            break
    return killed


def _session(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


def _children(me: int) -> list[int]:
    """Our direct children, read from /proc."""
    return [int(name) for name in os.listdir("/proc") if name.isdigit() and stat_field(name, 1) == me]


def kill_tagged(tags: Mapping[str, str], *, orphans: bool = True) -> list[int]:
    """SIGKILL every process whose environment carries all of `tags` (a worker's ORCH_TOPIC, ORCH_NODE,
    ORCH_ATTEMPT: what it left in a session or group of its own still inherits them) and, with `orphans`,
    every orphan re-parented here (`kill_orphans`: those that wiped their environment; not while other
    judging may still run, whose orphans they may be). The pids killed; Linux only."""
    killed = kill_orphans() if orphans else []
    wanted = {f"{k}={v}".encode() for k, v in tags.items()}
    if not wanted:  # no tag: every process would match
        return killed
    return killed + _kill_every(lambda pid: wanted <= (env := _environ(pid)) and SPARED not in env)


def kill_inside(*folders: str | os.PathLike) -> list[int]:
    """SIGKILL every process this runner left behind (a descendant of it, orphans re-parented here included, that
    proc does not hold as one it started) whose working folder or root is in one of `folders` (a link among them
    is passed over), or that holds a file or folder there open: what a worker or its judging left in a pooled
    worktree or its admin dir without the sandbox (in a session of its own, its environment wiped) would go on
    writing them when the next node is handed them (rv34). A person's shell or editor there is no descendant,
    and the runner's kept git readers are proc's (rv35). The pids killed."""
    wanted = [os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(f))), os.path.basename(f))
              for f in folders if not os.path.islink(f)]
    if not wanted:
        return []
    return _kill(pid for pid in _left_here()
                 if any(where == w or where.startswith(os.path.join(w, "")) for where in _places(pid) for w in wanted))


def _left_here() -> list[int]:
    """This process's descendants, below none that proc holds as one it started: read down from here through
    each thread's `children` list, a pass over this process's tree alone (0.04 ms; every process's descriptors
    read were 1.7 ms on a machine of 65 processes, more on a workstation's hundreds)."""
    me = os.getpid()
    tracked, found, todo = set(_ours), [], [me]
    if not os.path.exists(f"/proc/{me}/task/{me}/children"):  # a kernel without it: every process's parent
        parents = {pid: stat_field(pid, 1) for pid in (int(p) for p in os.listdir("/proc") if p.isdigit())}
        below = {}
        for pid, parent in parents.items():
            below.setdefault(parent, []).append(pid)
        while todo:
            found += (children := [c for c in below.get(todo.pop(), []) if c not in tracked])
            todo += children
        return found
    while todo:
        pid = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children", "rb") as fh:
                    children = [int(c) for c in fh.read().split()]
            except (OSError, ValueError):
                continue
            for child in children:
                if child not in tracked:
                    found.append(child)
                    todo.append(child)
    return found


def _kill_every(chosen) -> list[int]:
    """SIGKILL every process but this one that `chosen(pid)` picks; the pids killed."""
    me = os.getpid()
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []
    return _kill(pid for pid in pids if pid != me and chosen(pid))


def _kill(pids) -> list[int]:
    """SIGKILL each of `pids`; those it reached."""
    killed = []
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        except (ProcessLookupError, PermissionError):
            pass
    return killed


def _places(pid: int):
    """The paths a process is in or holds open: its working folder, its root, its open files and folders."""
    for link in ("cwd", "root"):
        try:
            yield os.readlink(f"/proc/{pid}/{link}")
        except OSError:
            pass
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return
    for fd in fds:
        try:
            yield os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            pass
