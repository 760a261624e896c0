"""The README's Commands table and the CLI agree: every option a row names exists, and every option a
command takes is named in its row (a new option is documented or this fails)."""
from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from orchestrate.cli.main import cli

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()
TABLE = README.split("## Commands", 1)[1].split("\n\n", 2)[1]
ROWS = [line for line in TABLE.splitlines() if line.startswith("| `orchestrate ")]


def documented() -> dict[str, set[str]]:
    """command -> the long options its row (or rows) name."""
    found: dict[str, set[str]] = {}
    for row in ROWS:
        cell = row.split(" | ")[0]
        for usage in re.findall(r"`orchestrate ([a-z-]+)[^`]*`", cell):
            found.setdefault(usage, set())
        for command in re.findall(r"`orchestrate ([a-z-]+)", cell):
            found[command] |= set(re.findall(r"--(?:\[no-\])?[a-z][a-z-]*", cell))
    return found


def taken(command: click.Command) -> set[str]:
    names = set()
    for param in command.params:
        for opt in getattr(param, "opts", []) + getattr(param, "secondary_opts", []):
            if opt.startswith("--") and opt != "--help":
                names.add(opt)
    return names


def expanded(options: set[str]) -> set[str]:
    return {o for opt in options for o in ([opt.replace("[no-]", ""), opt.replace("[no-]", "no-")]
                                           if "[no-]" in opt else [opt])}


def test_every_command_has_a_row():
    assert set(cli.commands) - {"gate"} <= set(documented()), "a command the README's table lacks"


@pytest.mark.parametrize("name", sorted(set(cli.commands) - {"gate"}))
def test_a_row_names_exactly_the_options_its_command_takes(name):
    said, real = expanded(documented()[name]), taken(cli.commands[name])
    # `...` in a row stands for the executor options, written out in `run`'s row
    if name == "resume":
        said |= {"--scheduler", "--remote"}
    assert said - real == set(), f"`orchestrate {name}`: the README names options it does not take"
    assert real - said == set(), f"`orchestrate {name}`: options the README's table does not name"
