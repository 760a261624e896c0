"""The shared `main()` of every gate: argparse (usage errors exit 2), `--json`, one line per item.

Each gate module defines `check(...) -> Verdict` and a `main(argv=None, prog=None)` that calls
`run_gate` with its parser and a function turning parsed arguments into a Verdict.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Callable, Sequence

from gates.shared.verdict import USAGE, Verdict
from orchestrate.errors import OrchestrateError

EXIT_CODES = {0: "pass", 1: "fail", 2: "usage or environment error (a gate that cannot run never passes)"}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one usage line, then the reason, exit 2
        self.print_usage(sys.stderr)
        self.exit(USAGE, f"{self.prog}: error: {message}\n")


def parser(name: str, description: str, codes: dict[int, str], prog: str | None) -> argparse.ArgumentParser:
    """A parser whose --help states the gate's exit codes."""
    table = "\n".join(f"  {c}  {what}" for c, what in sorted({**EXIT_CODES, **codes}.items()))
    p = _Parser(prog=prog or f"orchestrate gate {name}", description=description,
                epilog=f"exit codes:\n{table}", formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    return p


def run_gate(p: argparse.ArgumentParser, argv: Sequence[str] | None,
             decide: Callable[[argparse.Namespace], Verdict]) -> int:
    """Parse, decide, print; every expected failure is exit 2 with one line, never a traceback."""
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:  # argparse already printed the usage line
        return int(exc.code or 0)
    try:
        verdict = decide(args)
    except OrchestrateError as exc:
        verdict = Verdict(p.prog.split()[-1], USAGE, f"ERROR: {exc}")
    emit(verdict, as_json=args.json)
    return verdict.code


def emit(verdict: Verdict, *, as_json: bool = False) -> None:
    if as_json:
        print(json.dumps(verdict.as_dict(), indent=2))
        return
    for line in verdict.lines():
        print(line, file=sys.stderr if verdict.code == USAGE and line == verdict.summary else sys.stdout)


def read_paths(paths: Sequence[str] | None) -> list[str]:
    """Paths given with --path, else one per line on stdin (blank lines dropped)."""
    if paths:
        return list(paths)
    if sys.stdin is None or sys.stdin.isatty():
        return []
    return [ln.strip() for ln in sys.stdin.read().splitlines() if ln.strip()]
