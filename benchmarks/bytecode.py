"""Byte-compile the code a benchmark starts as `orchestrate`, before anything is timed.

An installed orchestrate starts from cached bytecode: pip compiles a package when it installs it, and an
editable install writes `__pycache__` the first time it runs. These machines set PYTHONDONTWRITEBYTECODE=1,
under which nothing is ever cached and every start compiles the ~210 modules of `orchestrate run` from
source again: 0.11 s of a 0.21 s import, measured with cProfile (`builtins.compile`, 109 calls), which
every benchmark that starts the CLI counted as engine overhead. compileall writes the caches whatever the
variable says, and Python reads existing caches under it, so timed runs start as a user's would.
"""
from __future__ import annotations

import compileall
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def compiled(*roots: Path) -> None:
    """Write the bytecode caches of the `orchestrate` and `gates` packages under each root (default: this
    checkout); quiet, and a no-op for caches already fresh."""
    for root in roots or (HERE,):
        for package in ("orchestrate", "gates"):
            if (Path(root) / package).is_dir():
                compileall.compile_dir(str(Path(root) / package), quiet=1, workers=os.cpu_count() or 1)
