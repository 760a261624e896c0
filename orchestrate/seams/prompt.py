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
    """A person can answer: --interactive, or stdin is a terminal and CI is not set (stdin may be None
    under CI); never with --no-interactive."""
    if _forced is not None:
        return _forced and sys.stdin is not None
    return sys.stdin is not None and sys.stdin.isatty() and not os.environ.get("CI")


def ask(seam: dict) -> tuple[str, str] | None:
    """(choice, note), or None to pause; the default never accepts, and EOF or Ctrl-C pause."""
    for line in seams.details(seam):
        click.echo(line, err=True)
    choices = list(seam["choices"]) + ["pause"]
    try:
        choice = click.prompt("decide", type=click.Choice(choices), default="pause", err=True)
        if choice == "pause":
            return None
        note = click.prompt("note (optional)", default="", show_default=False, err=True)
    except (click.Abort, EOFError, KeyboardInterrupt):
        click.echo("", err=True)
        return None
    return choice, note
