"""A halt while workers run (eager) stops them; what it then says about resuming must be what resume does
(rv47: after `halt` at a seam it promised "they start again on resume", and resume refused).
Both runs say `--jobs 2`: S must run beside the others. Left to the default (the machine's CPU count), a CI
machine with one CPU ran N1 alone, and the halt came with nothing running (rv54)."""
from __future__ import annotations

from tests.engine_helpers import campaign_repo

# S runs until it is stopped (far past anything the tests wait for); E fails its evaluator at once, and
# N1 reports an output that N4's condition cannot compare, once N1 has merged.
WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  S) sleep 600 ;;
  E) mkdir -p e && echo 1 > e/x ;;
  N1) printf '{"size": "big"}' > "$ORCH_OUTPUTS"; echo 1 > n1.txt ;;
  *) echo "$ORCH_NODE" > "$ORCH_NODE.txt" ;;
esac
"""

SEAM_DAG = """\
topic: hs
workers: {sh: "./work.sh"}
defaults: {timeout: 900, max_attempts: 1}
nodes:
  - {id: S, title: slow, file_surface: [s/], discipline: sh}
  - {id: E, title: fails, file_surface: [e/], discipline: sh, evaluators: [{name: two, run: "grep -q 2 e/x"}]}
"""

EDGE_DAG = """\
topic: he
workers: {sh: "./work.sh"}
defaults: {timeout: 900}
nodes:
  - {id: S, title: slow, file_surface: [s/], discipline: sh}
  - {id: N1, file_surface: [n1.txt], discipline: sh, outputs: [size]}
  - {id: N4, file_surface: [N4.txt], discipline: sh}
edges:
  - {id: e4, from: N1, to: N4, predicate: TRIGGERS, type: conditional, when: "src.outputs.size > 10"}
"""


def test_a_halt_chosen_at_a_seam_does_not_promise_a_resume(tmp_path, orch):
    repo = campaign_repo(tmp_path, SEAM_DAG, WORKER)
    answers = tmp_path / "answers.yaml"
    answers.write_text("realignment: {choice: halt, note: stop}\n")
    result = orch("run", "--jobs", "2", "--no-interactive", "--answers", answers, cwd=repo)
    out = result.out + result.err
    assert result.rc == 1, out
    assert "stopped S: their attempts do not count; a halt chosen at a seam is not resumed: " \
           "`orchestrate abandon --topic hs --note WHY` ends the campaign" in out
    assert "start again on resume" not in out
    resumed = orch("resume", "--no-interactive", "--topic", "hs", cwd=repo)
    assert resumed.rc == 1 and "which resume does not undo" in resumed.err  # what the message said


def test_a_halt_resume_continues_still_says_they_start_again(tmp_path, orch):
    repo = campaign_repo(tmp_path, EDGE_DAG, WORKER)
    result = orch("run", "--jobs", "2", "--no-interactive", cwd=repo)
    out = result.out + result.err
    assert result.rc == 1, out
    assert "edge e4 (N1 -> N4): cannot compare str 'big' with int 10" in out
    assert "stopped S: their attempts do not count; they start again on resume" in out
    resumed = orch("resume", "--no-interactive", "--topic", "he", cwd=repo)
    assert "which resume does not undo" not in resumed.out + resumed.err  # resume takes it up again
