"""What the user sees: one line per transition, and on a terminal a live view of the whole run.

On a terminal the live view sits under the scrolling transitions: a header with overall progress and one
line per active node (its phase, how long, the last line of its log). Off a terminal (CI, pipes, logs)
only plain lines are written, never cursor codes, plus a progress summary every 30 s while workers run.
`--quiet` keeps what a person must see: seams, halts, warnings, the final line and that summary. The
recorder, not the screen, is the source of truth.
"""
from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Callable, Iterable, TextIO

from orchestrate.recorder.campaign import Campaign
from orchestrate.printable import printable
from orchestrate.report.progress import Progress

SUMMARY_EVERY = 30.0  # seconds between progress summaries off a terminal
PHASE_STYLE = {"running": "bold cyan", "queued": "dim", "landed": "magenta", "judging": "yellow",
               "merging": "green"}
_PHASE_WORD = re.compile(r"\s+\S+\s+(\w+)")  # a node line: "  <node>  <phase> ..."


class Reporter:
    def __init__(self, *, quiet: bool = False, live: bool | None = None, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic, summary_every: float = SUMMARY_EVERY) -> None:
        self.stream = stream or sys.stdout
        self.quiet = quiet
        isatty = getattr(self.stream, "isatty", lambda: False)()
        self.live_enabled = (isatty if live is None else live) and not quiet
        self.progress = Progress(clock)
        self.notifier = None  # report.notify.Notifier, set by the loop from `notify:` in the config
        self._clock, self._every = clock, summary_every
        self._summary_at: float | None = None  # when the last summary was printed (or the first poll)
        self._live = None

    def line(self, text: str) -> None:
        if not self.quiet:
            self._print(f"{time.strftime('%H:%M:%S')} {text}")

    def always(self, text: str) -> None:
        """Lines the user must see even with --quiet (results, seams, halts)."""
        self._print(text)

    def _print(self, text: str) -> None:
        text = printable(text)  # a line may quote what a worker wrote (evaluator output, a reason, a file name)
        if self._live is not None:  # above the live view, which redraws itself below
            self._live.console.print(text, markup=False, highlight=False, soft_wrap=True)
        else:
            print(text, file=self.stream, flush=True)

    def state(self, state: str, campaign: Campaign, runs: Path | None, focus: Iterable[str] = ()) -> None:
        """The loop enters `state`."""
        self.progress.state(state, campaign, runs, focus)
        # The summary's clock is not restarted here: in a run of short transitions it would never reach 30 s.
        self._warn_failed_notifiers()
        if state == "SEAM":  # a seam may ask a person: the prompt needs the terminal to itself
            self.stop_live()
        elif self.live_enabled:
            self._show()
            self._live.refresh()  # at once: lines printed above it would otherwise sit over the last state's view

    def running(self, nodes: list[tuple[str, float]], queued: Iterable[str] = ()) -> None:
        """AWAIT polled the executor: `nodes` as it reports them, `queued` those still waiting for a slot."""
        self.progress.workers(nodes, queued)
        if self.live_enabled:
            self._show()
            return
        now = self._clock()
        if self._summary_at is None:
            self._summary_at = now
        elif now - self._summary_at >= self._every:
            self._summary_at = now
            self._print(f"{time.strftime('%H:%M:%S')} {self.progress.summary()}")

    def notify(self, event: str, topic: str, **fields) -> None:
        if self.notifier is not None:
            self.notifier.send(event, topic, **fields)

    def wait_notifiers(self) -> None:
        """At the end of a run: let the notifiers still running finish (each within its timeout)."""
        if self.notifier is not None:
            self.notifier.wait()
            self._warn_failed_notifiers()

    def _warn_failed_notifiers(self) -> None:
        if self.notifier is not None:
            for failure in self.notifier.failures():
                self.always(f"warning: {failure}")

    def _show(self) -> None:
        if self._live is None:
            from rich.console import Console  # rich is imported only on a terminal
            from rich.live import Live
            console = Console(file=self.stream, force_terminal=True) if self.stream is not sys.stdout else None
            self._live = Live(console=console, get_renderable=self._render, refresh_per_second=4, transient=True)
            self._live.start()  # it redraws itself four times a second, reading the progress afresh

    def _render(self):
        from rich.text import Text
        body = Text(no_wrap=True, overflow="ellipsis")
        body.append(self.progress.header(), style="bold")
        for line in self.progress.node_lines():
            text = Text("\n" + line)
            phase = _PHASE_WORD.match(line)
            if phase and phase.group(1) in PHASE_STYLE:  # the word is there too: colour only helps the eye
                text.stylize(PHASE_STYLE[phase.group(1)], phase.start(1) + 1, phase.end(1) + 1)
            body.append_text(text)
        return body

    def stop_live(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
