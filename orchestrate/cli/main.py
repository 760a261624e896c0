"""The one error boundary: every command runs inside `main()`, which turns our errors into one line and
an exit code of DESIGN §10, and anything else into a traceback and exit 70. A reader of stdout that
goes away (`| head`) is a normal end of output, never an error: the command goes on with the log only.
"""
from __future__ import annotations

import errno
import sys

import click

from orchestrate import __version__
from orchestrate.cli import (  # noqa: F401  (each registers its commands)
    audit,
    campaign,
    pipe,
    plan,
    report,  # noqa: F401  (`report` and `graph`)
    tools,
)
from orchestrate.cli.app import cli
from orchestrate.errors import ExitCode, OrchestrateError, ProcError, UsageError


def _report_bug(exc: BaseException) -> None:
    import traceback
    traceback.print_exception(exc)
    click.echo(f"orchestrate {__version__}: internal error ({type(exc).__name__}). This is a bug; "
               "please report it with the traceback above.", err=True)


def main(argv: list[str] | None = None) -> int:
    """The one error boundary: expected failures print one line; a bug prints a traceback (70)."""
    if (journal := sys.modules.get("orchestrate.recorder.journal")) is not None:
        journal.WROTE.clear()  # an earlier command's in this process (tests call main() many times)
    with pipe.guarded() as output:
        rc = _run(argv)
    return pipe.settled(output, rc)


def _run(argv: list[str] | None) -> int:
    args = sys.argv[1:] if argv is None else argv
    as_json = "--json" in args[:args.index("--") if "--" in args else len(args)]
    try:
        rc = cli.main(args=argv, prog_name="orchestrate", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:  # a word of the command line: one line, as every other error
        ctx = getattr(exc, "ctx", None)
        hint = f"`{ctx.command_path} --help` lists what it takes" if ctx is not None else None
        _print_error(UsageError(exc.format_message().rstrip("."), hint=hint), as_json)
        return ExitCode.USAGE
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("orchestrate: interrupted", err=True)
        _json_error(as_json, "interrupted", None, ExitCode.INTERRUPTED)
        return ExitCode.INTERRUPTED
    except OrchestrateError as exc:
        if exc.exit_code == ExitCode.USAGE and isinstance(exc, ProcError):  # a git or a tool that failed
            _midway(exc, exc.hint or "fix that")
        _print_error(exc, as_json)
        return exc.exit_code
    except BrokenPipeError:  # a reader gone before `_Stdout` could see it (stderr, a child's pipe): not a bug
        return ExitCode.OK
    except OSError as exc:  # a place orchestrate writes that cannot be written: the environment's, not a bug
        if exc.errno not in _UNWRITABLE or not exc.filename:
            _report_bug(exc)
            return ExitCode.INTERNAL
        refused = _unwritable(exc)
        _print_error(refused, as_json)
        return refused.exit_code
    except Exception as exc:  # noqa: BLE001 - the boundary: anything else is a bug
        _report_bug(exc)
        return ExitCode.INTERNAL
    finally:
        upkeep = sys.modules.get("orchestrate.recorder.upkeep")  # loaded only by commands that record
        if upkeep is not None:
            upkeep.finish()
        try:
            sys.stdout.flush()
        except (BrokenPipeError, ValueError):
            pass
    return int(rc or 0)


# What the file system refuses: a place made read-only or someone else's, or full.
_UNWRITABLE = {errno.EROFS: "make it writable by you", errno.EACCES: "make it writable by you",
               errno.EPERM: "make it writable by you", errno.ENOSPC: "free space there",
               errno.EDQUOT: "free space there (a quota)"}


def _midway(exc: OrchestrateError, fix: str) -> None:
    """An environment's failure (exit 2: nothing was changed) once this command appended to a campaign's journal
    is a campaign stopped at its last recorded state: exit 1, and `resume` goes on after `fix`."""
    journal = sys.modules.get("orchestrate.recorder.journal")
    if journal is not None and journal.WROTE:
        exc.exit_code = ExitCode.FAILED
        exc.hint = f"{fix}, then `orchestrate resume` continues from the last recorded state"


def _unwritable(exc: OSError) -> OrchestrateError:
    """One line for a write the file system refused (exit 2, or 1 midway: `_midway`)."""
    fix = _UNWRITABLE[exc.errno]
    refused = OrchestrateError(f"{exc.filename}: {exc.strerror}", hint=f"{fix} (orchestrate writes in the "
                               "repository's .git, .ledger/ and .scratch/), then run it again; nothing was changed")
    refused.exit_code = ExitCode.USAGE
    _midway(refused, fix)
    return refused


def _print_error(exc: OrchestrateError, as_json: bool = False) -> None:
    from orchestrate.printable import printable
    from orchestrate.errors import DagInvalid
    problems = exc.problems if isinstance(exc, DagInvalid) else []
    for p in problems:
        click.echo(printable(str(p)), err=True)
    click.echo(printable(f"orchestrate: error: {exc}"), err=True)
    _json_error(as_json, exc.message, exc.hint, exc.exit_code, [p.as_dict() for p in problems])


def _json_error(as_json: bool, message: str, hint: str | None, code: int, problems: list | None = None) -> None:
    """With --json, the error as JSON on stdout too, when it is the whole of it: a script reading stdout reads
    why it got nothing else ({"error", "hint", "exit_code"}, and a DAG's "problems")."""
    if not as_json or getattr(sys.stdout, "written", True):
        return
    import json
    said = {"error": message, "hint": hint, "exit_code": int(code)}
    click.echo(json.dumps({**said, "problems": problems} if problems else said))


__all__ = ["cli", "main"]
