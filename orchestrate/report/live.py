"""What the user sees: one line per transition, and on a terminal a live line per running node.

Off a terminal (CI, pipes, logs) only plain lines are written, never cursor codes. The recorder,
not the screen, is the source of truth.
"""
from __future__ import annotations

import sys
import time
from typing import TextIO


class Reporter:
    def __init__(self, *, quiet: bool = False, live: bool | None = None, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.quiet = quiet
        isatty = getattr(self.stream, "isatty", lambda: False)()
        self.live_enabled = (isatty if live is None else live) and not quiet
        self._live = None
        self._started = time.monotonic()

    def line(self, text: str) -> None:
        if self.quiet:
            return
        stamp = time.strftime("%H:%M:%S")
        if self._live is not None:
            self._live.console.print(f"{stamp} {text}", markup=False, highlight=False)
        else:
            print(f"{stamp} {text}", file=self.stream, flush=True)

    def always(self, text: str) -> None:
        """Lines the user must see even with --quiet (results, seams, halts)."""
        print(text, file=self.stream, flush=True)

    def running(self, nodes: list[tuple[str, float]]) -> None:
        if not self.live_enabled:
            return
        if self._live is None:
            from rich.live import Live  # rich is imported only on a terminal
            self._live = Live(refresh_per_second=4, transient=True)
            self._live.start()
        from rich.text import Text
        body = Text("\n".join(f"  running {n:<20} {s:6.1f}s" for n, s in nodes) or "")
        self._live.update(body)

    def stop_live(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
