"""The demo and transcripts: one command shows a whole campaign; transcripts re-check themselves."""
from __future__ import annotations

import shutil
from pathlib import Path

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
    journal = (repo / ".ledger/state/demo/journal.jsonl").read_text()
    for wanted in ('"outcome":"widen"', '"outcome":"serialize"', '"seam":"realignment"', '"source_type":"answers"'):
        assert wanted in journal, wanted


def test_the_red_demo_halts_at_its_boundary_naming_the_orphan(tmp_path, orch):
    result = orch("demo", tmp_path / "r", "--red", "--quiet")
    assert result.rc == 0, result.out + result.err
    assert "layer 0 is incoherent" in result.out
    assert "BROKEN     docs/guide.md:3: [the old notes](old.md)  <- no such file" in result.out


def test_the_demo_refuses_a_folder_that_is_not_empty(tmp_path, orch):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "file").write_text("x")
    assert orch("demo", tmp_path / "busy").rc == 2


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

    def stricter(node_id, surface, changes):  # a "new rule": nothing may touch more than nothing
        return Verdict("reconcile-node", 1, "FAIL: stricter rule") if changes else Verdict("reconcile-node", 0, "PASS")

    monkeypatch.setattr(reconcile_node, "check", stricter)
    result = orch("replay", "--campaign", "demo", cwd=tmp_path / "d")
    assert result.rc == 1
    assert "diverges at fact" in result.out and "('gate', 'D1', 'reconcile-node', 0)" in result.out


def test_a_run_replay_of_an_unknown_campaign_is_2(tmp_path, orch):
    assert orch("demo", tmp_path / "d", "--quiet").rc == 0
    assert orch("replay", "--campaign", "nope", cwd=tmp_path / "d").rc == 2
    assert orch("replay", cwd=tmp_path / "d").rc == 2
