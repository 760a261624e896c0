"""The shared `main()` of every gate: argparse (usage errors exit 2), `--json`, one line per item.

Each gate module defines `check(...) -> Verdict` and a `main(argv=None, prog=None)` that calls
`run_gate` with its parser and a function turning parsed arguments into a Verdict.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Callable, NoReturn, Sequence

from gates.shared.verdict import USAGE, Item, Verdict
from orchestrate.errors import OrchestrateError, UsageError

EXIT_CODES = {0: "pass", 1: "fail", 2: "usage or environment error (a gate that cannot run never passes)"}


class _Parser(argparse.ArgumentParser):
    def format_usage(self) -> str:  # the usage line of an error keeps argparse's form, as scripts expect
        return "usage: " + super().format_usage().removeprefix("Usage: ")

    refusal = ""  # the last usage error: with --json it is the verdict too

    def error(self, message: str):  # one usage line, then the reason, exit 2
        self.refusal = message
        self.print_usage(sys.stderr)
        self.exit(USAGE, f"{self.prog}: error: {message}\n")


class _ClickLike(argparse.HelpFormatter):
    """--help laid out as click lays out every other command's: `Usage:`, the description indented by two,
    `Options:` with capitalised help, then the exit codes; hand-aligned tables in a description stay."""

    def __init__(self, prog: str) -> None:
        import shutil
        super().__init__(prog, max_help_position=30, width=min(shutil.get_terminal_size().columns, 100) - 2)

    def add_usage(self, usage, actions, groups, prefix=None):
        super().add_usage(usage, _help_last(actions), groups, prefix="Usage: ")

    def add_arguments(self, actions) -> None:
        super().add_arguments(_help_last(actions))

    def start_section(self, heading):
        super().start_section(heading[:1].upper() + heading[1:] if heading else heading)

    def _expand_help(self, action) -> str:
        text = super()._expand_help(action)
        return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap
        out: list[str] = []
        for block in text.strip("\n").split("\n\n"):
            lines = block.splitlines()
            if block.startswith("\b\n") or any(ln.startswith(" ") for ln in lines[1:] + lines[:1]):
                out.append("\n".join("  " + ln if ln.strip() and ln != "\b" else "" for ln in lines
                                     if ln != "\b"))
            else:  # prose: wrapped to the terminal like click's
                out.append(textwrap.fill(" ".join(ln.strip() for ln in lines), width, initial_indent="  ",
                                         subsequent_indent="  "))
        return "\n\n".join(out)


def _help_last(actions) -> list:
    return sorted(actions, key=lambda a: isinstance(a, argparse._HelpAction))  # stable: the rest keep their order


def parser(name: str, description: str, codes: dict[int, str], prog: str | None,
           examples: Sequence[str] = ()) -> argparse.ArgumentParser:
    """A parser whose --help ends with examples and the gate's exit codes, laid out as the other commands' help."""
    table = "\n".join(f"  {c}  {what}" for c, what in sorted({**EXIT_CODES, **codes}.items()))
    shown = "".join(f"  {line}\n" for line in examples)
    p = _Parser(prog=prog or f"orchestrate gate {name}", description=description,
                epilog=(f"\b\nExamples:\n{shown}\n" if shown else "") + f"\b\nExit codes:\n{table}",
                formatter_class=_ClickLike, add_help=False, allow_abbrev=False)  # as click: options whole
    p.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    p.add_argument("-h", "--help", action="help", help="show this message and exit")
    return p


def run_gate(p: argparse.ArgumentParser, argv: Sequence[str] | None,
             decide: Callable[[argparse.Namespace], Verdict]) -> int:
    """Parse, decide, print; every expected failure is exit 2 with one line, never a traceback."""
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:  # argparse already printed the usage line
        words = sys.argv[1:] if argv is None else list(argv)
        options = words[:words.index("--")] if "--" in words else words
        if exc.code == USAGE and getattr(p, "refusal", "") and "--json" in options:  # a script reads why
            emit(Verdict(p.prog.split()[-1], USAGE, f"ERROR: {p.refusal}"), as_json=True)
        return int(exc.code or 0)
    try:
        verdict = decide(args)
    except OrchestrateError as exc:  # an invalid DAG: each of its problems, with its line, as an item
        problems = tuple(Item("INVALID", str(problem)) for problem in getattr(exc, "problems", ()))
        verdict = Verdict(p.prog.split()[-1], USAGE, f"ERROR: {exc}", problems)
    emit(verdict, as_json=args.json)
    return verdict.code


def seconds(text: str) -> float:
    """An argparse type for --timeout: a positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{text}` is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"`{text}` must be a positive number of seconds")
    return value


def usage(p: argparse.ArgumentParser, message: str) -> NoReturn:
    """Arguments that parse but do not go together: the usage line, then `message` as the gate's error."""
    p.print_usage(sys.stderr)
    raise UsageError(message)


def emit(verdict: Verdict, *, as_json: bool = False) -> None:
    if as_json:
        print(json.dumps(verdict.as_dict(), indent=2))
        return
    from orchestrate.printable import printable
    for line in verdict.lines():  # an item may name a file a worker named (rv68)
        print(printable(line), file=sys.stderr if verdict.code == USAGE and line == verdict.summary else sys.stdout)


def read_paths(paths: Sequence[str] | None) -> list[str]:
    """Paths given with --path, else one per line on stdin (blank lines dropped)."""
    if paths:
        return list(paths)
    if sys.stdin is None or sys.stdin.isatty():
        return []
    return [ln.strip() for ln in sys.stdin.read().splitlines() if ln.strip()]
