"""The demo and transcripts: one command shows a whole campaign; transcripts re-check themselves."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.engine_helpers import journal_text
from tests.helpers import RepoDir

ROOT = Path(__file__).resolve().parent.parent
TRANSCRIPT = ROOT / "demo" / "TRANSCRIPT.t"


def test_the_demo_runs_to_the_final_acceptance_seam(tmp_path, orch):
    result = orch("demo", tmp_path / "d", "--quiet")
    assert result.rc == 0, result.out + result.err
    assert "paused at seam final-acceptance" in result.out
    assert "orchestrate decide final-acceptance accept" in result.out and "what to look at next" in result.out
    repo = tmp_path / "d"
    status = orch("status", "--json", cwd=repo).out
    assert '"state": "PAUSE"' in status and '"final-acceptance"' in status
    journal = journal_text(repo, "demo")
    for wanted in ('"outcome":"widen"', '"outcome":"serialize"', '"seam":"realignment"', '"source_type":"answers"'):
        assert wanted in journal, wanted


def test_the_red_demo_halts_at_its_boundary_naming_the_orphan(tmp_path, orch):
    result = orch("demo", tmp_path / "r", "--red", "--quiet")
    assert result.rc == 0, result.out + result.err
    assert "layer 0 is incoherent" in result.out
    assert "BROKEN     docs/guide.md:3: [the old notes](old.md)  <- no such file" in result.out


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_red_demo_ends_as_designed_whatever_the_jobs(tmp_path, orch, jobs):
    """R1 and R2 must branch from the same base, each fine alone: under the eager schedule one slot (the
    default on a one-CPU machine) ran R1 first, merged it, and R2 branched from a tree without docs/ and
    failed its two attempts ('the demo did not end as designed (exit 75)'). The red DAG says layered."""
    result = orch("demo", tmp_path / "r", "--red", "--quiet", "--jobs", jobs)
    assert result.rc == 0, result.out + result.err
    assert "BROKEN     docs/guide.md:3: [the old notes](old.md)  <- no such file" in result.out


def test_the_demos_closing_text_points_at_the_html_report(tmp_path, orch):
    result = orch("demo", tmp_path / "d", "--quiet")
    report = next((tmp_path / "d" / ".ledger" / "log").glob("*-demo.html"))  # written at CLOSE
    assert f"  open {report.relative_to(tmp_path / 'd')}   # the report" in result.out
    red = orch("demo", tmp_path / "r", "--red", "--quiet")
    assert "orchestrate report" in red.out and ".ledger/log/<date>-red.html" in red.out  # halted before CLOSE


def _printed_steps(out: str, repo: Path, prog: str) -> list[list[str]]:
    """The recovery the red demo prints, as argument lists, comments dropped."""
    import shlex
    start = out.index("# to repair it")
    steps = []
    for line in out[start:].splitlines()[1:]:
        words = shlex.split(line.split(" #")[0].strip())
        if words:
            steps.append([prog if w == words[0] and w.endswith("orchestrate") else w for w in words])
    return steps


def test_the_red_demos_printed_recovery_works_end_to_end(tmp_path, orch):
    repo = tmp_path / "r"
    red = orch("demo", repo, "--red", "--quiet")
    assert red.rc == 0 and "layer 0 is incoherent" in red.out
    steps = _printed_steps(red.out, repo, "orchestrate")
    assert [s[0] for s in steps] == ["cat", "orchestrate", "orchestrate", "orchestrate"]
    cat = steps[0]
    assert cat[1:3] == ["demo/red-fix.yaml", ">>"]
    with open(repo / cat[3], "a") as dag:  # `cat demo/red-fix.yaml >> .ledger/state/red/dag.yaml`
        dag.write((repo / cat[1]).read_text())
    rcs = [orch(*s[1:], "--no-interactive" if s[1] == "resume" else "--quiet", cwd=repo).rc for s in steps[1:]]
    assert rcs == [75, 0, 75]  # the amendment seam, its answer, then the final-acceptance seam
    import json
    status = json.loads(orch("status", "--json", cwd=repo).out)
    assert status["state"] == "PAUSE" and [s["seam"] for s in status["seams"]] == ["final-acceptance"]
    assert {n["id"]: n["status"] for n in status["nodes"]} == {"R1": "ACCEPTED", "R2": "ACCEPTED", "R3": "ACCEPTED"}
    assert "the old notes (removed by R1)" in RepoDir(repo).git("show", "campaign/red:docs/guide.md")
    assert orch("decide", "final-acceptance", "accept", "--note", "fixed", cwd=repo).rc == 0


def test_the_demo_refuses_a_folder_that_is_not_empty(tmp_path, orch):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "file").write_text("x")
    assert orch("demo", tmp_path / "busy").rc == 2


def test_the_demo_refuses_a_folder_it_cannot_make_without_a_traceback(tmp_path, orch):
    (tmp_path / "afile").write_text("x")
    on_a_file = orch("demo", tmp_path / "afile")
    assert on_a_file.rc == 2 and "is a file" in on_a_file.err  # click's own check of the argument
    under_a_file = orch("demo", tmp_path / "afile" / "sub")
    assert under_a_file.rc == 2 and "cannot make the demo folder" in under_a_file.err and "Not a directory" in under_a_file.err


def test_the_transcript_replays_twice_in_a_row(orch):
    for _ in range(2):
        result = orch("replay", TRANSCRIPT)
        assert result.rc == 0, result.out
        assert result.out == f"{TRANSCRIPT}: passed\n1 passed, 0 failed, 0 skipped\n"


def test_a_changed_expectation_fails_with_a_diff_and_update_fixes_it(tmp_path, orch):
    demo = tmp_path / "demo"
    shutil.copytree(ROOT / "demo", demo)
    t = demo / "TRANSCRIPT.t"
    t.write_text(t.read_text().replace("  DONE True", "  DONE False"))
    result = orch("replay", t)
    assert result.rc == 1
    assert "-  DONE False" in result.out and "+  DONE True" in result.out
    assert orch("replay", t, "--update").rc == 0
    assert orch("replay", t).rc == 0


def test_replay_of_a_missing_transcript_is_2(tmp_path, orch):
    assert orch("replay", tmp_path / "none.t").rc == 2


def test_a_run_replay_of_the_demo_matches(tmp_path, orch):
    assert orch("demo", tmp_path / "d", "--quiet").rc == 0
    result = orch("replay", "--campaign", "demo", cwd=tmp_path / "d")
    assert result.rc == 0, result.out + result.err
    assert "matches" in result.out and "4 merge(s)" in result.out


def test_a_changed_gate_rule_makes_the_run_replay_report_the_first_divergence(tmp_path, orch, monkeypatch):
    assert orch("demo", tmp_path / "d", "--quiet").rc == 0
    from gates import reconcile_node
    from gates.shared.verdict import Verdict

    def stricter(node_id, surface, changes, collide=None):  # a "new rule": nothing may touch more than nothing
        return Verdict("reconcile-node", 1, "FAIL: stricter rule") if changes else Verdict("reconcile-node", 0, "PASS")

    monkeypatch.setattr(reconcile_node, "check", stricter)
    result = orch("replay", "--campaign", "demo", cwd=tmp_path / "d")
    assert result.rc == 1
    assert "diverges at fact" in result.out and "('gate', 'D1', 'reconcile-node', 0)" in result.out


def test_a_run_replay_of_an_unknown_campaign_is_2(tmp_path, orch):
    assert orch("demo", tmp_path / "d", "--quiet").rc == 0
    assert orch("replay", "--campaign", "nope", cwd=tmp_path / "d").rc == 2
    assert orch("replay", cwd=tmp_path / "d").rc == 2
