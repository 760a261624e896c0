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
