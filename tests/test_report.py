"""`orchestrate report`: the HTML report of the demo campaign and of a campaign with every edge kind and
most statuses, written at CLOSE and on demand, checked in headless Chromium (the DOM it builds, console
errors, a screenshot)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.engine_helpers import campaign_repo, journal
from tests.plugin_site import gate

ROOT = Path(__file__).resolve().parent.parent
BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
needs_browser = pytest.mark.skipif(BROWSER is None, reason="no headless Chromium here: `apt-get install chromium` "
                                                           "(.ci/run installs it) to check the report in a browser")

# Every predicate, a conditional edge taken and one untaken, a LOOPS_WITH group, an EXTENDS plugin; B is
# reworked once, a `warn` guardrail on Q -> W flags, X is abandoned, C is skipped, T's premise goes stale (INVALIDATED, the run pauses at
# its realignment seam) and U behind it stays PENDING.
RICH_DAG = """\
topic: rich
workers: {sh: "./work.sh"}
defaults: {max_attempts: 2, timeout: 60}
gates:
  smoke: {plugin: command, run: "echo smoke is red; exit 1"}
nodes:
  - {id: A, title: "the root", file_surface: [a.txt], discipline: sh, outputs: [go]}
  - {id: B, depends_on: [A], file_surface: [b.txt], discipline: sh, evaluators: [{name: second, run: "grep -q 2 b.txt"}]}
  - {id: C, file_surface: [c.txt], discipline: sh}
  - {id: D, file_surface: [d.txt], discipline: sh}
  - {id: P, file_surface: [p/], discipline: sh}
  - {id: Q, file_surface: [q.txt], discipline: sh}
  - {id: H, file_surface: [h.txt], discipline: sh}
  - {id: S, file_surface: [s.txt], discipline: sh}
  - {id: L1, file_surface: [l1.txt], discipline: sh}
  - {id: L2, file_surface: [l2.txt], discipline: sh}
  - {id: X, file_surface: [x.txt], discipline: sh, max_rework: 1, on_exhausted: continue,
     evaluators: [{name: never, run: "false"}]}
  - {id: T, depends_on: [D], file_surface: [t.txt], discipline: sh,
     tripwires: [{run: "test ! -e d.txt", why: "T was planned before d.txt existed"}]}
  - {id: U, depends_on: [T], file_surface: [u.txt], discipline: sh}
  - {id: W, file_surface: [w.txt], discipline: sh}
edges:
  - {id: e1, from: A, to: C, predicate: TRIGGERS, type: conditional, when: "src.outputs.go == false"}
  - {id: e2, from: A, to: D, predicate: TRIGGERS, type: conditional, when: "src.outputs.go == true"}
  - {id: e3, from: P, to: Q, predicate: PRODUCES, payload: [p/out.txt]}
  - {id: e4, from: H, to: S, predicate: COMPOSES}
  - {id: e5, from: L1, to: L2, predicate: LOOPS_WITH}
  - {id: e6, from: A, to: "plugin:reviewer", predicate: EXTENDS, actions: [{name: review, persona: strict}]}
  - {id: e7, from: Q, to: W, predicate: TRIGGERS, guardrails: {output: [smoke], on_violation: warn}}
"""
RICH_WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  A) printf '{"go": true}' > "$ORCH_OUTPUTS"; echo a > a.txt ;;
  B) echo "$ORCH_ATTEMPT" > b.txt ;;
  P) mkdir -p p; echo out > p/out.txt ;;
  *) echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr 'A-Z' 'a-z').txt" ;;
esac
"""
REVIEW = "def check(self, config, cwd, env):\n    return 0, 'reviewed as ' + config['persona']"


def rich_campaign(tmp_path, site, orch):
    site.add("orchestrate-review", "0.3.0", gate("reviewer", body=REVIEW, version="0.3.0"), call=False)
    repo = campaign_repo(tmp_path, RICH_DAG, RICH_WORKER)
    result = orch("run", "--quiet", "--mode", "autonomous", cwd=repo)
    assert result.rc == 75, result.out + result.err
    return repo


class Dom(HTMLParser):
    """Every element of the DOM Chromium built, as (tag, attributes)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict]] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def having(self, tag: str, cls: str) -> list[dict]:
        return [a for t, a in self.elements if t == tag and cls in (a.get("class") or "").split()]


def browse(page: Path, shot: Path, profile: Path) -> tuple[Dom, list[str]]:
    """Load `page` from file:// in headless Chromium: the DOM it built, its console lines; and a screenshot."""
    base = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={profile}",
            "--enable-logging=stderr", "--v=0", "--no-first-run", "--disable-extensions"]
    url = page.resolve().as_uri()
    dom = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True, timeout=180, check=False)
    assert dom.returncode == 0, dom.stderr[-2000:]
    picture = subprocess.run(base + ["--window-size=1100,1500", f"--screenshot={shot}", url], capture_output=True,
                             text=True, timeout=180, check=False)
    assert picture.returncode == 0 and shot.stat().st_size > 1000, picture.stderr[-2000:]
    console = [line for line in (dom.stderr + picture.stderr).splitlines() if ":CONSOLE" in line]
    return Dom(dom.stdout), console


def attempts_in(repo, topic: str) -> set[tuple[str, int]]:
    """(node, attempt) of every worker the journal says was started: what the timeline must show."""
    return {(e["context"]["node"], e["context"]["attempt"]) for e in journal(repo, topic)
            if e["kind"] == "intent" and e["context"].get("effect") == "worker-start"}


def check_in_browser(repo, topic: str, page: Path, tmp_path: Path, statuses: dict[str, str]) -> Path:
    shot = tmp_path / f"{topic}-report.png"
    dom, console = browse(page, shot, tmp_path / "profile")
    assert console == []
    drawn = {a["data-node"]: a["data-status"] for a in dom.having("g", "node")}
    assert drawn == statuses
    bars = [(a["data-node"], int(a["data-attempt"])) for a in dom.having("g", "attempt")]
    assert len(bars) == len(set(bars)) and set(bars) == attempts_in(repo, topic)
    sections = {a["data-node"]: a["data-status"] for a in dom.having("section", "node")} or \
        {a["data-node"]: a["data-status"] for t, a in dom.elements if t == "section" and "data-node" in a}
    assert sections == statuses
    return shot


def self_contained(text: str) -> None:
    """Nothing is fetched: no script source, stylesheet link, image or URL other than the SVG namespace."""
    assert not re.search(r"<(script|link|img|iframe)\b", text)
    assert set(re.findall(r"https?://[^\s\"'<>]+", text)) <= {"http://www.w3.org/2000/svg"}


@needs_browser
def test_the_browser_check_sees_console_errors(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><body><script>console.error("broken report")</script></body></html>')
    _, console = browse(page, tmp_path / "bad.png", tmp_path / "profile")
    assert any("broken report" in line for line in console)


@needs_browser
def test_the_demo_report_is_written_at_close_and_renders(tmp_path, orch):
    assert orch("demo", tmp_path / "demo").rc == 0  # it stops at final acceptance and says what to look at
    repo = tmp_path / "demo"
    pages = sorted((repo / ".ledger" / "log").glob("????-??-??-demo.html"))
    assert len(pages) == 1
    committed = subprocess.run(["git", "-C", str(repo / ".ledger"), "ls-files", "--error-unmatch",
                                f"log/{pages[0].name}"], capture_output=True, check=False)
    assert committed.returncode == 0, "CLOSE's report is committed in the recorder"
    text = pages[0].read_text()
    self_contained(text)
    assert '<p class="muted">closed · report written' in text
    check_in_browser(repo, "demo", pages[0], tmp_path, {f"D{i}": "ACCEPTED" for i in range(1, 5)})

    assert orch("report", cwd=repo).out.strip() == str(pages[0])  # asked for later: the same file, rewritten
    text = pages[0].read_text()
    assert "Open seam final-acceptance" in text and "orchestrate decide final-acceptance accept --topic demo" in text


@needs_browser
def test_a_report_of_every_edge_kind_and_status_renders(tmp_path, site, orch):
    repo = rich_campaign(tmp_path, site, orch)
    out = tmp_path / "out" / "rich.html"

    result = orch("report", "--topic", "rich", "-o", out, cwd=repo)

    assert result.rc == 0, result.err
    assert result.out.strip() == str(out)
    status = json.loads(orch("status", "--json", "--topic", "rich", cwd=repo).out)
    expected = {n["id"]: n["status"] for n in status["nodes"]}
    assert {"ACCEPTED", "SKIPPED", "ABANDONED", "INVALIDATED", "PENDING"} <= set(expected.values())
    text = out.read_text()
    self_contained(text)
    shot = check_in_browser(repo, "rich", out, tmp_path, expected)
    if os.environ.get("ORCH_UPDATE_SCREENSHOTS"):  # the picture in the README; refreshed on request only
        shutil.copyfile(shot, ROOT / "docs" / "report.png")
    edges = {m.group(1): (m.group(2), m.group(3)) for m in re.finditer(
        r'data-edge="([^"]+)" data-predicate="([A-Z_]+)" data-kind="([a-z]+)"', text)}
    assert edges["e1"] == ("TRIGGERS", "untaken") and edges["e2"] == ("TRIGGERS", "taken")
    assert {p for p, _ in edges.values()} == {"TRIGGERS", "PRODUCES", "COMPOSES", "EXTENDS", "LOOPS_WITH"}
    assert 'data-group="L1 L2"' in text and 'data-plugin="plugin:reviewer"' in text
    assert "orchestrate decide realignment rework --topic rich" in text
    assert re.search(r"<b>Flags</b>.*guardrail smoke on edge e7 \(Q -&gt; W\).*\(node W\)", text)
    assert 'data-outcome="rework"' in text  # B's first attempt
    assert '<a href="../repo/.scratch/runs/rich/B/attempt-1.log">' in text  # relative to the report's folder


def test_report_of_an_unknown_campaign_is_a_usage_error(tmp_path, orch):
    repo = campaign_repo(tmp_path, RICH_DAG, RICH_WORKER)
    result = orch("report", "--topic", "nope", cwd=repo)
    assert result.rc == 2
    assert "no campaign `nope`" in result.err
