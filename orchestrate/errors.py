"""One exception tree and the one exit-code table of DESIGN §10."""
from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1  # a check failed, an invalid DAG, or a campaign halted and needs a fix
    USAGE = 2  # bad usage or input that cannot be used at all; nothing was changed
    ALTERNATIVE = 3  # SERIALIZE (collision-check) or CONFLICT (trial-merge)
    CONCURRENCY = 4  # another runner holds the campaign, or the recorder moved under us
    INTERNAL = 70  # a bug
    PAUSED = 75  # waiting at a human seam
    INTERRUPTED = 130  # Ctrl-C, or SIGTERM to a runner (engine/terminate.py); state is saved


class OrchestrateError(Exception):
    """An expected failure: printed as one line, mapped to an exit code, never a traceback."""

    exit_code: ExitCode = ExitCode.FAILED

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class UsageError(OrchestrateError):
    """Wrong arguments, or input that cannot be used at all (missing file, not a repository)."""

    exit_code = ExitCode.USAGE


class ProcError(OrchestrateError):
    """A subprocess could not be started or failed where failure was not expected."""

    exit_code = ExitCode.USAGE

    def __init__(self, cmd: list[str], rc: int | None, stdout: str = "", stderr: str = "", *, message: str | None = None) -> None:
        self.cmd, self.rc, self.stdout, self.stderr = cmd, rc, stdout, stderr
        detail = (stderr or stdout).strip().splitlines()
        tail = detail[-1] if detail else ""
        super().__init__(message or f"`{' '.join(cmd)}` exited {rc}" + (f": {tail}" if tail else ""))

    def said(self) -> str:
        """The command's last line about the failure (its stderr, else the message), for a one-line reason."""
        lines = (self.stderr or self.message).strip().splitlines()
        return lines[-1] if lines else "no reason given"


class GitError(ProcError):
    """A git command failed; the message names the command and git's last line."""


class DagInvalid(OrchestrateError):
    """The DAG breaks its contract; carries every problem found."""

    exit_code = ExitCode.FAILED

    def __init__(self, problems: list, path: str) -> None:  # list[Problem]; no import cycle
        self.problems = problems
        super().__init__(f"{path}: {len(problems)} problem(s) in the DAG")


class Halted(OrchestrateError):
    """The campaign stopped and needs a fix; the message says which."""

    exit_code = ExitCode.FAILED


class ForeignWrite(Halted):
    """Something other than the engine wrote where only the engine writes (the recorder's journal)."""


class Concurrency(OrchestrateError):
    exit_code = ExitCode.CONCURRENCY


class Paused(OrchestrateError):
    exit_code = ExitCode.PAUSED


class Interrupted(OrchestrateError):
    exit_code = ExitCode.INTERRUPTED
