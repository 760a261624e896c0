"""docs/live.png, the README's picture of the live view: a real run on a pseudo-terminal (tmux), its
screen captured with its colours, turned into HTML by a small ANSI converter and photographed by headless
Chromium. Refreshed with ORCH_UPDATE_SCREENSHOTS=1; otherwise the test checks the whole path still works
(the capture holds the live header and node lines, coloured), writing the picture under its tmp dir."""
from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_live_view import _held_repo
from tests.test_report import BROWSER, ROOT

COLS, ROWS = 120, 16
PALETTE = ["#1e1e1e", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#e5e5e5"]
BRIGHT = ["#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff"]
FG, BG = "#d4d4d4", "#1e1e1e"
SGR = re.compile(r"\x1b\[([0-9;]*)m")


def ansi_html(text: str) -> str:
    """Terminal text with SGR colour codes (what `tmux capture-pane -e` prints) as HTML spans."""
    out, style = [], {}

    def span(chunk: str) -> None:
        if not chunk:
            return
        css = []
        fg, bg = style.get("fg"), style.get("bg")
        if style.get("reverse"):
            fg, bg = bg or BG, fg or FG
        if fg:
            css.append(f"color:{fg}")
        if bg:
            css.append(f"background:{bg}")
        if style.get("bold"):
            css.append("font-weight:bold")
        if style.get("dim"):
            css.append("opacity:.6")
        if style.get("italic"):
            css.append("font-style:italic")
        if style.get("underline"):
            css.append("text-decoration:underline")
        body = html.escape(chunk)
        out.append(f'<span style="{";".join(css)}">{body}</span>' if css else body)

    pos = 0
    for m in SGR.finditer(text):
        span(text[pos:m.start()])
        pos = m.end()
        codes = [int(c) if c else 0 for c in m.group(1).split(";")]
        while codes:
            c = codes.pop(0)
            if c == 0:
                style = {}
            elif c in (1, 2, 3, 4, 7):
                style[{1: "bold", 2: "dim", 3: "italic", 4: "underline", 7: "reverse"}[c]] = True
            elif c == 22:
                style.pop("bold", None), style.pop("dim", None)
            elif c in (23, 24, 27):
                style.pop({23: "italic", 24: "underline", 27: "reverse"}[c], None)
            elif 30 <= c <= 37 or 90 <= c <= 97:
                style["fg"] = (PALETTE if c < 90 else BRIGHT)[c % 10]
            elif 40 <= c <= 47 or 100 <= c <= 107:
                style["bg"] = (PALETTE if c < 100 else BRIGHT)[c % 10]
            elif c in (39, 49):
                style.pop("fg" if c == 39 else "bg", None)
            elif c in (38, 48) and codes:
                kind = codes.pop(0)
                key = "fg" if c == 38 else "bg"
                if kind == 5 and codes:
                    n = codes.pop(0)
                    style[key] = (PALETTE + BRIGHT)[n] if n < 16 else _cube(n)
                elif kind == 2 and len(codes) >= 3:
                    r, g, b = codes[:3]
                    del codes[:3]
                    style[key] = f"#{r:02x}{g:02x}{b:02x}"
    span(text[pos:])
    return "".join(out)


def _cube(n: int) -> str:
    if n >= 232:
        level = 8 + (n - 232) * 10
        return f"#{level:02x}{level:02x}{level:02x}"
    n -= 16
    steps = [0, 95, 135, 175, 215, 255]
    return f"#{steps[n // 36]:02x}{steps[n // 6 % 6]:02x}{steps[n % 6]:02x}"


def page(screen: str) -> str:
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>orchestrate run</title><style>"
            f"body{{margin:0;background:{BG}}} pre{{margin:0;padding:10px 12px;color:{FG};background:{BG};"
            "font:14px/1.3 'DejaVu Sans Mono',monospace}</style></head><body><pre>"
            + ansi_html(screen) + "</pre></body></html>\n")


def test_the_converter_keeps_text_and_maps_colours():
    got = ansi_html("\x1b[1mtop | 1 running\x1b[0m\n  A  \x1b[1;36mrunning\x1b[0m <x> \x1b[38;5;196mred\x1b[39m")
    assert re.sub(r"<[^>]+>", "", got) == "top | 1 running\n  A  running &lt;x&gt; red"
    assert '<span style="font-weight:bold">top | 1 running</span>' in got
    assert f'<span style="color:{PALETTE[6]};font-weight:bold">running</span>' in got
    assert '<span style="color:#ff0000">red</span>' in got


class Tmux:
    """A private tmux server (its own socket) running one command in a COLS x ROWS window."""

    def __init__(self, name: str) -> None:
        self.base = ["tmux", "-L", name]

    def __call__(self, *args: str) -> str:
        return subprocess.run(self.base + list(args), capture_output=True, text=True, check=False).stdout

    def start(self, cwd: Path, command: str) -> None:
        subprocess.run(self.base + ["-f", "/dev/null", "new-session", "-d", "-s", "run", "-x", str(COLS), "-y",
                                    str(ROWS), "-c", str(cwd), command], check=True)

    def screen(self) -> str:
        return self("capture-pane", "-e", "-p", "-t", "run")

    def wait_for(self, pattern: str, timeout: float = 60) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            shown = self.screen()
            if re.search(pattern, re.sub(r"\x1b\[[0-9;]*m", "", shown)):
                return shown
            time.sleep(0.1)
        raise AssertionError(f"never shown: {pattern}\n{self.screen()}")

    def running(self) -> bool:
        return subprocess.run(self.base + ["has-session", "-t", "run"], capture_output=True).returncode == 0


@pytest.mark.skipif(shutil.which("tmux") is None, reason="no tmux here: `apt-get install tmux` to capture the "
                                                         "live view")
def test_the_live_view_is_captured_with_its_colours_and_photographed(tmp_path):
    repo, release = _held_repo(tmp_path)
    tmux = Tmux(f"orch-live-{os.getpid()}")
    env = f"env -u CI -u COLUMNS -u LINES TERM=tmux-256color PYTHONPATH={ROOT}"
    tmux.start(repo, f"{env} {sys.executable} -m orchestrate run --jobs 2")
    try:
        tmux.wait_for(r"live \| layer 0 \(layers 0-1\) \| 0/4 done \| 2 running \| 1 queued")
        (release / "B").touch()  # B lands and waits to be judged; C takes its slot
        tmux.wait_for(r"(?s)0/4 done \| 2 running \| 0 queued.*C\s+running\s+[1-9]\.\ds.*B\s+landed")
        screen = tmux.screen()
    finally:
        for name in ("A", "B", "C", "D", "judge-A", "merge"):
            (release / name).touch()
        end = time.monotonic() + 60
        while tmux.running() and time.monotonic() < end:  # at the final-acceptance prompt: Ctrl-D pauses
            tmux("send-keys", "-t", "run", "C-d")
            time.sleep(0.3)
        tmux("kill-server")
    plain = re.sub(r"\x1b\[[0-9;]*m", "", screen)
    assert re.search(r"C\s+running\s+\d+\.\ds\s+C is waiting for its release", plain)
    assert "B: worker exited 0" in plain  # transitions scroll above the view
    shown = page(screen.rstrip("\n") + "\n")
    assert re.search(r'<span style="[^"]*font-weight:bold[^"]*">live \| layer 0 \(layers 0-1\)', shown)
    assert re.search(r'<span style="color:[^"]+;font-weight:bold">running</span>', shown)
    assert re.search(r'<span style="color:[^"]+">landed</span>', shown)
    if BROWSER is None:
        pytest.skip("no headless Chromium here to photograph the capture (`apt-get install chromium`)")
    doc = tmp_path / "live.html"
    doc.write_text(shown)
    shot = tmp_path / "live.png"
    lines = screen.rstrip("\n").count("\n") + 1
    size = f"--window-size={int(COLS * 8.45) + 24},{int(lines * 18.2) + 20}"
    subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--user-data-dir={tmp_path / 'profile'}", size, f"--screenshot={shot}", doc.as_uri()],
                   capture_output=True, timeout=180, check=True)
    assert 1000 < shot.stat().st_size < 150_000
    if os.environ.get("ORCH_UPDATE_SCREENSHOTS"):  # the picture in the README; refreshed on request only
        shutil.copyfile(shot, ROOT / "docs" / "live.png")
