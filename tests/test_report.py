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


MEASURE = """<script>
const boxes = sel => [...document.querySelectorAll(sel)].map(e => e.getBoundingClientRect());
const hit = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 0.5 &&
                      Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0.5;
const labels = boxes("#dag .edge-label"), nodes = boxes("#dag g.node rect");
let pairs = 0, covered = 0;
labels.forEach((a, i) => { labels.slice(i + 1).forEach(b => { pairs += hit(a, b); });
                           nodes.forEach(n => { covered += hit(a, n); }); });
document.body.dataset.labels = labels.length;
document.body.dataset.overlaps = pairs;
document.body.dataset.covered = covered;
</script>"""


def label_layout(page: Path, tmp_path: Path) -> dict:
    """How the DAG's edge labels fall as Chromium lays them out: counted by a script added to a copy of the
    report (the report itself has none)."""
    probe = page.with_name("probe-" + page.name)
    probe.write_text(page.read_text().replace("</body>", MEASURE + "</body>"))
    dom, console = browse(probe, tmp_path / "probe.png", tmp_path / "profile")
    assert console == []
    return next(a for t, a in dom.elements if t == "body")


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
    assert '<p class="muted">paused at seam final-acceptance · report written' in text  # refreshed at the pause
    assert "Open seam final-acceptance" in text  # the committed file already names the decide commands
    check_in_browser(repo, "demo", pages[0], tmp_path, {f"D{i}": "ACCEPTED" for i in range(1, 5)})

    assert orch("report", cwd=repo).out.strip() == str(pages[0])  # asked for later: the same file, rewritten
    text = pages[0].read_text()
    assert "Open seam final-acceptance" in text and "orchestrate decide final-acceptance accept --topic demo" in text


@needs_browser
def test_a_report_of_every_edge_kind_and_status_renders(tmp_path, site, orch):
    repo = rich_campaign(tmp_path, site, orch)
    out = tmp_path / "out" / "rich.html"
    out.parent.mkdir()  # -o writes into a folder that exists; it creates none

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

    dom = Dom(text)
    guard = dom.having("g", "guardrail")  # the warn guardrail on Q -> W, violated when crossed
    assert [(g["data-edge"], g["data-action"], g["data-violated"]) for g in guard] == [("e7", "warn", "true")]
    assert {a["data-phase"] for a in dom.having("rect", "phase")} == {"queued", "running", "landed", "judging",
                                                                        "merging"}
    seam = [a for a in dom.having("g", "seam")]
    assert [(a["data-seam"], a["data-open"]) for a in seam] == [("realignment", "true")]
    band = dom.having("rect", "seam-band")
    assert len(band) == 1 and float(band[0]["width"]) >= 80  # the open seam is a band, not a hairline
    b = text[text.index('<section id="node-B"'):]
    b = b[:b.index("</section>")]
    assert re.findall(r'<tr class="gate" data-attempt="(\d)"><td>\d</td><td>evaluators</td>', b) == ["1", "2"]
    placed = label_layout(out, tmp_path)
    assert int(placed["data-labels"]) >= 7  # not taken, taken, EXTENDS, PRODUCES, COMPOSES, LOOPS_WITH, guard
    assert placed["data-overlaps"] == "0" and placed["data-covered"] == "0"


def test_report_of_an_unknown_campaign_is_a_usage_error(tmp_path, orch):
    repo = campaign_repo(tmp_path, RICH_DAG, RICH_WORKER)
    result = orch("report", "--topic", "nope", cwd=repo)
    assert result.rc == 2
    assert "no campaign `nope`" in result.err


USAGE_DAG = """\
topic: spend
workers: {sh: "./work.sh"}
defaults: {max_attempts: 2}
nodes:
  - {id: N1, file_surface: [N1.txt], discipline: sh, evaluators: [{name: second, run: "grep -q 2 N1.txt"}]}
  - {id: N2, depends_on: [N1], file_surface: [N2.txt], discipline: sh}
"""
USAGE_WORKER = r"""#!/bin/sh
echo "$ORCH_ATTEMPT" > "$ORCH_NODE.txt"
case "$ORCH_NODE" in
  N1) printf '{"usage": {"input_tokens": %d, "output_tokens": 300, "cost_usd": 0.042, "model": "m-1"}}' \
        "$((ORCH_ATTEMPT * 1000))" > "$ORCH_USAGE" ;;
esac
"""


@needs_browser
def test_the_report_shows_usage_per_attempt_per_node_and_in_total(tmp_path, orch):
    repo = campaign_repo(tmp_path, USAGE_DAG, USAGE_WORKER)
    assert orch("run", "--quiet", "--jobs", "3", cwd=repo).rc == 75  # N1 reworked once (its evaluator wants attempt 2)
    page = next((repo / ".ledger" / "log").glob("*-spend.html"))  # written at CLOSE

    dom, console = browse(page, tmp_path / "spend.png", tmp_path / "profile")

    assert console == []
    per_attempt = [a["data-usage-attempt"] for a in dom.having("span", "usage") if "data-usage-attempt" in a]
    assert per_attempt == ["1", "2"]  # N2 reported nothing: no usage of its own
    node = [a["data-usage-node"] for a in dom.having("span", "usage") if "data-usage-node" in a]
    assert node == ["N1"]
    total = [a["data-usage-total"] for a in dom.having("span", "usage") if "data-usage-total" in a]
    assert total == ["3000 in / 600 out tokens, $0.0840"]
    text = page.read_text()
    assert "1000 in / 300 out tokens, $0.0420 (m-1)" in text and "2000 in / 300 out tokens, $0.0420 (m-1)" in text
    assert "over 2 attempt(s) that reported it" in text
    assert "spread over 3 slot(s), the run's --jobs" in text  # as the journal's open entry recorded it

    from orchestrate.recorder.locate import project
    from orchestrate.report import html, timeline
    told = html.write(project(repo), "spend", tmp_path / "jobs.html", jobs=4).read_text()
    assert "spread over 4 slot(s), the run's --jobs" in told
    unknown = html.collect(project(repo), "spend")
    unknown.jobs = None  # a journal without --jobs (a Dask cluster's run): the most workers that ran at once
    peak = timeline.peak_running(unknown.history)
    assert peak >= 1 and f"spread over {peak} slot(s), the most workers that ran at once" in html.render(unknown, tmp_path)


def test_refresh_rewrites_the_closed_report_after_final_acceptance(tmp_path, orch):
    from orchestrate.recorder.locate import project
    from orchestrate.report import html
    repo = campaign_repo(tmp_path, USAGE_DAG, USAGE_WORKER)
    assert orch("run", "--quiet", cwd=repo).rc == 75
    page = next((repo / ".ledger" / "log").glob("????-??-??-spend.html"))
    assert '<p class="muted">paused at seam final-acceptance · report written' in page.read_text()
    assert orch("decide", "final-acceptance", "accept", "--note", "looks right", cwd=repo).rc == 0

    text = page.read_text()  # the engine rewrote it on the way to DONE, and the recorder holds that version
    assert repo.git("-C", ".ledger", "show", f"HEAD:log/{page.name}") == text.strip()
    assert html.refresh(project(repo), "spend") == page and page.read_text() == text
    assert '<p class="muted">accepted by ' in text and "Open seam" not in text
    assert re.search(r"seam final-acceptance at \+[\d.]+s: .* decided <b>accept</b> by .*: looks right", text)


def test_refresh_leaves_a_campaign_that_has_not_closed_alone(tmp_path, orch):
    from orchestrate.recorder.locate import project
    from orchestrate.report import html
    repo = campaign_repo(tmp_path, USAGE_DAG.replace("max_attempts: 2", "max_attempts: 1"), USAGE_WORKER)
    assert orch("run", "--quiet", cwd=repo).rc == 75  # N1's one attempt fails: paused at realignment

    assert html.refresh(project(repo), "spend") is None
    assert not list((repo / ".ledger" / "log").glob("*.html"))
