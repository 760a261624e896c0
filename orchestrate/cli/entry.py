"""The console script: answers `--version` and plain `status` without loading the CLI framework.

Both are what people and scripts call most often; click's import alone costs more than their work.
Anything else (including `status --help`) goes through the CLI; errors are printed by its functions.
"""
from __future__ import annotations

import sys


def main() -> int:
    args = sys.argv[1:]
    if args in (["--version"], ["-V"]):
        from orchestrate import __version__
        from orchestrate.cli.pipe import guarded, settled
        with guarded() as output:  # `orchestrate --version > /dev/full`: one line, not a traceback
            print(f"orchestrate, version {__version__}")
        return settled(output, 0)
    if args[:1] == ["status"] and (quick := _status_args(args[1:])) is not None:
        return _status(*quick)
    from orchestrate.cli.main import main as cli_main
    return cli_main()


def _status_args(rest: list[str]) -> tuple[str | None, bool] | None:
    """(topic, as_json) for the plain forms `status [--topic T] [--json]`; None for anything else."""
    topic, as_json = None, False
    while rest:
        if rest[0] == "--json":
            as_json, rest = True, rest[1:]
        elif rest[0] == "--topic" and len(rest) > 1 and not rest[1].startswith("-"):
            topic, rest = rest[1], rest[2:]
        elif rest[0].startswith("--topic=") and len(rest[0]) > len("--topic="):
            topic, rest = rest[0][len("--topic="):], rest[1:]
        else:
            return None
    return topic, as_json


def _status(topic: str | None, as_json: bool) -> int:
    from orchestrate.cli.pipe import guarded, settled
    with guarded() as output:  # `orchestrate status | head -1`: a reader gone is a normal end, as in the CLI
        rc = _status_inside(topic, as_json)
    return settled(output, rc)


def _status_inside(topic: str | None, as_json: bool) -> int:
    from pathlib import Path

    from orchestrate.errors import ExitCode, OrchestrateError
    from orchestrate.report.status import show
    try:
        print(show(Path.cwd(), topic, as_json))
    except OrchestrateError as exc:  # printed exactly as the CLI's error boundary prints it
        from orchestrate.cli.main import _print_error
        _print_error(exc, as_json)
        return exc.exit_code
    except Exception as exc:  # noqa: BLE001 - a bug, reported as the boundary reports one
        from orchestrate.cli.main import _report_bug
        _report_bug(exc)
        return ExitCode.INTERNAL
    return 0
