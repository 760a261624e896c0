"""rv68: the live view's line per node shows the last line of the worker's own log. `progress.last_line`
strips 7-bit escapes (ESC ...) and C0 controls, but not the C1 controls a worker writes UTF-8-encoded
(U+009B CSI, U+009D OSC, U+009C ST) nor bidi overrides: they reach the terminal raw (xterm and VTE act on
UTF-8 C1 controls), though orchestrate/printable.py escapes exactly these everywhere else."""
from __future__ import annotations

import io
import time

from orchestrate.recorder.campaign import DISPATCHED, Campaign, NodeState
from orchestrate.report.live import Reporter

C1 = "\u009d0;PWNED\u009c\u009b2J\u009b1A\u202eevil"


def test_the_live_view_never_shows_c1_controls_from_a_workers_log(tmp_path):
    (tmp_path / "A").mkdir()
    (tmp_path / "A" / "attempt-1.log").write_text("started\n" + C1 + " working\n")  # what the worker printed
    c = Campaign(topic="t", layers=[["A"]], k=0)
    c.nodes = {"A": NodeState("A", status=DISPATCHED, attempt=1)}
    said = io.StringIO()
    out = Reporter(live=True, stream=said)
    out.state("AWAIT", c, tmp_path)
    out.running([("A", 1.0)])
    out._show()
    time.sleep(0.6)  # the view redraws itself four times a second
    out.stop_live()
    shown = said.getvalue()
    assert "working" in shown, repr(shown)
    raw = [ch for ch in ("\u009b", "\u009c", "\u009d", "\u202e") if ch in shown]
    assert not raw, f"control characters from the worker's log reached the terminal raw: {raw!r} in {shown!r}"
