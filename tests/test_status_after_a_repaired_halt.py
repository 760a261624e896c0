"""A halt is shown while the campaign rests in it, and not once a resume has moved the campaign on: status,
status --json and the report agreed with the journal's last halt forever, so the red demo's own way out
ended at final acceptance still saying "halted: layer 0 is incoherent"."""
from __future__ import annotations

import json

from orchestrate.recorder.campaign import Campaign, apply
from tests.engine_helpers import journal

FIX = "demo/red-fix.yaml"
DAG = ".ledger/state/red/dag.yaml"


def _red_demo(tmp_path, orch):
    repo = tmp_path / "red"
    made = orch("demo", repo, "--red", "--quiet")
    assert made.rc == 0 and "layer 0 is incoherent" in made.out, made.out + made.err
    return repo


def _shown(orch, repo) -> tuple[dict, str, str]:
    """What a person sees: status --json, status, and the report's page."""
    data = json.loads(orch("status", "--json", cwd=repo).out)
    text = orch("status", cwd=repo).out
    page = repo.parent / "report.html"  # outside the project: the campaign's own checks never see it
    assert orch("report", "-o", page, cwd=repo).rc == 0
    return data, text, page.read_text()


def _not_halted(data: dict, text: str, page: str) -> None:
    assert data["halt"] is None, data["halt"]
    assert "halted" not in text, text
    assert "halted:" not in page and "<b>Halted:</b>" not in page


def test_the_red_demos_way_out_leaves_no_halt_shown_at_final_acceptance(tmp_path, orch):
    repo = _red_demo(tmp_path, orch)
    data, text, page = _shown(orch, repo)  # while it rests halted, every reader says why
    assert data["state"] == "HALT" and data["halt"].startswith("layer 0 is incoherent")
    reason = data["halt"]
    assert "halted: layer 0 is incoherent" in text and "halted: layer 0 is incoherent" in page
    with open(repo / DAG, "a") as dag:
        dag.write((repo / FIX).read_text())
    assert orch("resume", "--no-interactive", cwd=repo).rc == 75  # the amendment seam
    _not_halted(*_shown(orch, repo))
    assert orch("decide", "dag-amendment", "accept", "--note", "R3 fixes the link", cwd=repo).rc == 0
    assert orch("resume", "--no-interactive", cwd=repo).rc == 75  # final acceptance
    data, text, page = _shown(orch, repo)
    assert data["state"] == "PAUSE" and [s["seam"] for s in data["seams"]] == ["final-acceptance"]
    _not_halted(data, text, page)
    assert "paused at seam final-acceptance" in page
    entries = journal(repo, "red")  # the halt is history, not forgotten: the journal still holds it
    assert [e["context"]["reason"] for e in entries if e["kind"] == "halt"] == [reason]
    folded = Campaign()  # the whole journal folded, as resume --from-log does, agrees with the checkpoints
    for e in entries:
        apply(folded, e)
    assert folded.state == "PAUSE" and folded.halt == ""
    # a checkpoint the fold wrote before it cleared a repaired halt carries the old reason: read, it is dropped
    newest = sorted((repo / ".ledger/state/red/checkpoints").glob("red_*.json"))[-1]
    body = json.loads(newest.read_text())
    assert body["state"]["state"] == "PAUSE" and body["state"]["halt"] == ""
    body["state"]["halt"] = reason
    newest.write_text(json.dumps(body, sort_keys=True))
    _not_halted(*_shown(orch, repo))


def test_an_invalid_amendment_fixed_and_accepted_leaves_no_halt_shown(tmp_path, orch):
    repo = _red_demo(tmp_path, orch)
    dag = repo / DAG
    before, fix = dag.read_text(), (repo / FIX).read_text()
    dag.write_text(before + fix.replace("depends_on: []", "depends_on: [NOPE]"))
    assert orch("resume", "--no-interactive", cwd=repo).rc == 75
    assert orch("decide", "dag-amendment", "accept", "--note", "oops", cwd=repo).rc == 0
    halted = orch("resume", "--no-interactive", cwd=repo)
    assert halted.rc == 1 and "the amended DAG is invalid" in halted.out + halted.err
    data = json.loads(orch("status", "--json", cwd=repo).out)  # the new halt is the current one
    text = orch("status", cwd=repo).out  # (`report` refuses a DAG that does not load: not asked here)
    assert data["halt"].startswith("the amended DAG is invalid") and "halted: the amended DAG is invalid" in text
    dag.write_text(before + fix)
    assert orch("resume", "--no-interactive", cwd=repo).rc == 75  # the fixed edit, asked again
    _not_halted(*_shown(orch, repo))
    assert orch("decide", "dag-amendment", "accept", "--note", "fixed", cwd=repo).rc == 0
    assert orch("resume", "--no-interactive", cwd=repo).rc == 75
    data, text, page = _shown(orch, repo)
    assert [s["seam"] for s in data["seams"]] == ["final-acceptance"]
    _not_halted(data, text, page)
