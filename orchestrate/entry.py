"""The console script: answers `--version` without loading the CLI framework, else runs the CLI."""
from __future__ import annotations

import sys


def main() -> int:
    if sys.argv[1:] in (["--version"], ["-V"]):
        from orchestrate import __version__
        print(f"orchestrate, version {__version__}")
        return 0
    from orchestrate.cli import main as cli_main
    return cli_main()
