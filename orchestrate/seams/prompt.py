"""The one place that asks a person anything; it never blocks without a terminal."""
from __future__ import annotations

import os
import sys

import click

from orchestrate.seams import choices as seams


_forced: bool | None = None  # --interactive / --no-interactive: the person's word beats detection


def force(flag: bool | None) -> None:
    global _forced
    _forced = flag


def interactive() -> bool:
    """A person can answer: --interactive, or stdin is a terminal and CI is not true (stdin may be None
    under CI); never with --no-interactive."""
    if _forced is not None:
        return _forced and sys.stdin is not None
    return sys.stdin is not None and sys.stdin.isatty() and not ci()


def ci() -> bool:
    """CI counts only when it says so: `CI=false` or `CI=0` is someone's terminal, not a CI job."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def resolve(answer: str, choices: list[str]) -> str:
    """The choice an answer names: any case, or a prefix only one choice starts with."""
    typed = answer.strip().lower()
    if typed in choices:
        return typed
    matches = [c for c in choices if c.startswith(typed)] if typed else []
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise click.BadParameter(f"`{answer.strip()}` could be {' or '.join(matches)}: type more of it")
    raise click.BadParameter(f"`{answer.strip()}` is not one of {', '.join(choices)}")


def ask(seam: dict) -> tuple[str, str] | None:
    """(choice, note), or None to pause; the default never accepts, and EOF or Ctrl-C pause."""
    from orchestrate.printable import printable
    for line in seams.details(seam):  # the reason may be a worker's words
        click.echo(printable(line), err=True)
    choices = list(seam["choices"]) + ["pause"]
    try:
        choice = click.prompt(f"decide ({', '.join(choices)})", default="pause", err=True,
                              value_proc=lambda answer: resolve(answer, choices))
        if choice == "pause":
            return None
        note = click.prompt("note (optional)", default="", show_default=False, err=True)
    except (click.Abort, EOFError, KeyboardInterrupt):
        click.echo("", err=True)
        return None
    return choice, note
