"""Where the files shipped with the program live: inside the wheel, or at the top of a source checkout."""
from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def shipped(name: str) -> Path:
    """`ledger-template` or `demo`: the installed copy if there is one, else the checkout's."""
    installed = _PACKAGE / "_data" / name
    if installed.is_dir():
        return installed
    checkout = _PACKAGE.parent / ("." + name if name == "ledger-template" else name)
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"{name} is missing from this installation ({installed})")
