"""One runner per campaign: an flock (released by the kernel when its holder dies) plus holder details;
and one recorder commit at a time, whatever the campaign."""
from __future__ import annotations

import json
import os
import socket
from datetime import datetime, timezone
from pathlib import Path

from orchestrate.atomic import write_atomic
from orchestrate.errors import Concurrency
from orchestrate.flock import Busy, FileLock, in_the_way


# The folders in .scratch a campaign's commands make as they go: a file (or a link to nothing) in the way of one
# is refused before anything is written; met later it ended a campaign under way with a traceback (exit 70)
SCRATCH = ("worktrees/{}", "integration/{}", "runs/{}", "answers", "rejected/{}", "groups/{}", "probe/{}",
           "guardrails/{}")
RUNNERS = ("run", "resume")  # the commands that hold a campaign while its workers run
STOPS_LEFT = ("resume", "abandon")  # those that stop what a dead holder left (by its record: runner.stop_leftovers)


def runs_workers(holder: dict | None) -> bool:
    """Is the holder a runner (a lock written before commands were named was one), not a decide or an abandon?"""
    return (holder or {}).get("command", "run") in RUNNERS


class CampaignLock:
    def __init__(self, folder: Path, topic: str, command: str = "run") -> None:
        self.path = folder / f"{topic}.lock"
        self.info = folder / f"{topic}.json"
        self.topic = topic
        self.command = command  # which `orchestrate` command holds it, for whoever finds it held
        self._lock = None
        self.took_over: dict | None = None
        self.busy: dict | None = None  # what the holder had written when acquire found the lock taken

    def acquire(self) -> "CampaignLock":
        scratch = self.path.parent.parent
        for folder in SCRATCH:
            if (wrong := in_the_way(scratch / folder.format(self.topic))) is not None:
                raise wrong
        lock = FileLock(self.path, timeout=0)
        try:
            lock.acquire()
        except Busy:
            holder = self.busy = self.holder()
            if holder is None:  # the holder is between taking the flock and saying who it is, or leaving (rv75)
                raise Concurrency(f"campaign {self.topic} is held by an orchestrate command starting or ending",
                                  hint="try again in a moment") from None
            who = f"pid {holder.get('pid', '?')} on {holder.get('host', '?')} since {holder.get('started', '?')}"
            if runs_workers(holder):
                raise Concurrency(f"campaign {self.topic} is being run by {who}",
                                  hint="wait for it, or stop it first") from None
            raise Concurrency(f"campaign {self.topic} is held by `orchestrate {holder['command']}` ({who})",
                              hint="it takes a moment: try again") from None
        previous = self.holder()
        if previous and not holder_alive(previous):
            self.took_over = previous  # its holder died: the kernel released the flock
        self._lock = lock
        from orchestrate.proc import ORIGIN  # (not at import: `status` reads holders, and starts fast)
        write_atomic(self.info, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "command": self.command,
                                            "started": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                                            "origin": ORIGIN}))
        return self

    def release(self) -> None:
        if self._lock is not None:
            if self.took_over is not None and self.command not in STOPS_LEFT:  # a dead holder's record stays for
                write_atomic(self.info, json.dumps(self.took_over))  # the resume, which stops what it left (rv81)
            else:
                self.info.unlink(missing_ok=True)
            self._lock.release()
            self._lock = None

    def __enter__(self) -> "CampaignLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()

    def holder(self) -> dict | None:
        """What the holder wrote: pid, host, started, command (absent: written before commands were named), origin
        (the value in the environment of everything it started: proc.ORIGIN)."""
        try:
            found = json.loads(self.info.read_text())
        except (OSError, ValueError):
            return None
        return found if isinstance(found, dict) else None


def holder_alive(holder: dict) -> bool:
    """Is the process that wrote `holder` (pid, host) still running? Another machine's is trusted."""
    if holder.get("host") != socket.gethostname():
        return True  # cannot tell for another machine; the flock already said it is free
    try:
        os.kill(int(holder["pid"]), 0)
    except (ProcessLookupError, ValueError, KeyError, TypeError):
        return False
    except PermissionError:
        return True
    return True


class RecorderLock:
    """Every runner's recorder commits, whatever its topic, one at a time: they share one index and one
    branch. Held only around a commit (milliseconds), never while workers run."""

    WAIT = 300.0  # seconds; a commit takes milliseconds, so this is only reached when a holder is wedged

    def __init__(self, ledger: Path) -> None:
        self.path = ledger.parent / ".scratch" / "locks" / "recorder.lock"
        self._lock = None

    def __enter__(self) -> "RecorderLock":
        lock = FileLock(self.path, timeout=self.WAIT)
        try:
            lock.acquire()
        except Busy:
            raise Concurrency(f"the recorder lock {self.path} was held for more than {self.WAIT:.0f}s",
                              hint="a runner is wedged in a recorder commit: stop it, then resume") from None
        self._lock = lock
        return self

    def __exit__(self, *exc) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None
