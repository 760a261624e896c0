"""What the report and the retrospective say of an eager campaign agrees with its journal (rv87): a worker
resumed in its attempt after its surface was widened is one attempt, and evaluators run ahead of a node's
turn are judging time in the retrospective as in the report's timeline."""
from __future__ import annotations

import re

from tests.engine_helpers import campaign_repo, journal

WIDENING = r"""#!/bin/sh
set -eu
printf '{"usage": {"input_tokens": 10, "output_tokens": 2, "cost_usd": 0.01}}' > "$ORCH_USAGE"
case "$ORCH_NODE" in
  W) if ! printf '%s\n' "$ORCH_SURFACE" | grep -qx w2.txt; then
       printf '{"freeze": "surface-exceed", "paths": ["w2.txt"]}' > "$ORCH_RETURN"; exit 0
     fi
     echo W > w.txt; echo W > w2.txt ;;
  V) echo V > v.txt ;;
esac
"""

WIDENING_DAG = """\
topic: widened
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1}
nodes:
  - {id: W, title: w, file_surface: [w.txt], discipline: sh}
  - {id: V, title: v, file_surface: [v.txt], discipline: sh}
"""


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_a_widened_attempt_is_one_attempt_in_the_report_and_the_retrospective(tmp_path, orch):
    repo = campaign_repo(tmp_path, WIDENING_DAG, WIDENING)
    result = orch("run", "--no-interactive", "--jobs", "2", cwd=repo)
    assert result.rc == 75, result.out + result.err  # final acceptance
    assert "W: surface widened with w2.txt; worker resumed" in result.out
    entries = journal(repo, "widened")
    runs = [e["context"] for e in entries if e["kind"] == "result" and e["context"].get("effect") == "worker-start"
            and e["context"].get("node") == "W"]
    assert [(r["attempt"], "usage" in r) for r in runs] == [(1, True), (1, True)]  # two runs, one attempt

    page = next((repo / ".ledger" / "log").glob("*-widened.html")).read_text()
    section = re.search(r'<section id="node-W".*?</section>', page, re.S).group(0)
    w = _text(section)
    assert "attempts 1 " in w
    assert "20 in / 4 out tokens, $0.0200 over 1 attempt(s)" in w  # the node's two runs, one attempt
    # its attempt's row holds both runs, as the node's total does
    assert re.findall(r'data-usage-attempt="(\d+)">([^<]*)<', section) == [("1", "20 in / 4 out tokens, $0.0200")]
    assert "30 in / 6 out tokens, $0.0300</span> over 2 attempt(s) that reported it" in page

    sketch = next((repo / ".ledger" / "log").glob("*-widened.md")).read_text()
    usage = sketch[sketch.index("## Usage"):]
    assert "| W | 1 | 20 in / 4 out tokens, $0.0200 |" in usage
    assert usage.count("| W | 1 |") == 1


AHEAD_DAG = """\
topic: ahead
workers: {sh: "./work.sh"}
nodes:
  - {id: A, title: a, file_surface: [a.txt], discipline: sh, evaluators: [{name: slow, run: "sleep 1; test -f a.txt"}]}
"""


def _cell_seconds(sketch: str, node: str) -> tuple[float, float]:
    """(judging s, merge s) of `node`'s row in the retrospective's table."""
    cells = next(line for line in sketch.splitlines() if line.startswith(f"| {node} | ")).split("|")
    return float(cells[5]), float(cells[6])


def test_evaluators_run_ahead_are_judging_time_in_the_retrospective_as_in_the_report(tmp_path, orch):
    repo = campaign_repo(tmp_path, AHEAD_DAG, "#!/bin/sh\necho A > a.txt\n")
    result = orch("run", "--no-interactive", cwd=repo)
    assert result.rc == 75, result.out + result.err
    entries = journal(repo, "ahead")
    assert any(e["kind"] == "result" and e["context"].get("effect") == "evaluators-start" for e in entries), \
        "the evaluators did not run ahead (no sandbox here?)"
    from orchestrate.recorder.locate import project
    from orchestrate.report import html
    history = html.collect(project(repo), "ahead").history
    judged = sum(s.length(history.end) for a in history.of("A") for s in a.spans if s.phase == "judging")
    merged = sum(s.length(history.end) for a in history.of("A") for s in a.spans if s.phase == "merging")
    assert judged >= 1.0  # its evaluator sleeps a second
    sketch = next((repo / ".ledger" / "log").glob("*-ahead.md")).read_text()
    assert _cell_seconds(sketch, "A") == (round(judged, 1), round(merged, 1))


def test_a_node_whose_evaluators_run_ahead_is_judging_in_the_report_of_a_campaign_in_flight(tmp_path, orch):
    repo = campaign_repo(tmp_path, AHEAD_DAG, "#!/bin/sh\necho A > a.txt\n")
    assert orch("run", "--no-interactive", cwd=repo).rc == 75
    entries = journal(repo, "ahead")
    began = next(i for i, e in enumerate(entries)
                 if e["kind"] == "result" and e["context"].get("effect") == "evaluators-start")
    landed = next(i for i, e in enumerate(entries) if e["kind"] == "node" and e["context"].get("status") == "LANDED")
    # the journal as a report asked for while the evaluators ran read it (status: "being judged")
    from orchestrate.report import history
    so_far = history.read("ahead", entries[:max(began, landed) + 1])
    (attempt,) = so_far.of("A")
    assert [(s.phase, s.end is None) for s in attempt.spans][-2:] == [("landed", False), ("judging", True)]
    whole = history.read("ahead", entries)  # and once judged, the judging began where the evaluators started
    assert [s.phase for s in whole.of("A")[0].spans] == ["queued", "running", "landed", "judging", "merging"]
    assert whole.of("A")[0].spans[3].start == attempt.spans[-1].start
