"""The recorder is the engine's alone (DESIGN §14.2): a journal rewritten in place, a config.yaml edited by
a worker, and lines in the middle of a journal that orchestrate did not write. Nothing of it reaches the
recorder's history; `status`, `doctor` and `resume` name the damage without a traceback, and `resume`
stops before it repairs or dispatches anything."""
from __future__ import annotations

import re

import pytest

from orchestrate.recorder import damage
from tests.test_hostile_workers import campaign_tree, dag, ledger_history, mode, run, settled  # noqa: F401

TO_LEDGER = '"$(git rev-parse --show-toplevel)/../../../../.ledger'


def test_a_journal_rewritten_in_place_at_the_same_size_is_never_committed(tmp_path, orch, mode):
    journal = TO_LEDGER + '/state/hostile/journal.jsonl"'
    worker = f'echo a > a.txt\nsed -i "s/orchestrate@/orchestratX@/" {journal}\n'
    repo, _, result = run(tmp_path, orch, worker, mode)
    text = result.out + result.err
    if mode == "none":
        assert result.rc == 1, text
        assert "changed behind the engine's back (rewritten in place, same size) while A ran" in text
    else:
        assert result.rc == 75, text
        assert "read-only" in (repo / ".scratch/runs/hostile/A/attempt-1.log").read_text().lower()
    assert "orchestratX@" not in ledger_history(repo)
    assert "a.txt" not in campaign_tree(repo)


def test_a_config_edited_by_a_worker_is_put_back_and_never_committed(tmp_path, orch, mode):
    worker = f'echo a > a.txt\necho "sandbox: none  # widened" >> {TO_LEDGER}/config.yaml"\n'
    repo, _, result = run(tmp_path, orch, worker, mode)
    text = result.out + result.err
    assert result.rc == 75, text
    if mode == "none":
        assert "A: changed what no worker may change: .ledger/config.yaml was changed" in text
        assert "widened" in (repo / ".scratch/rejected/hostile/config.yaml").read_text()
    assert "widened" not in (repo / ".ledger/config.yaml").read_text()
    assert "widened" not in ledger_history(repo, "config.yaml")
    assert "a.txt" not in campaign_tree(repo)


def test_the_campaigns_plan_swapped_for_a_link_to_the_same_text_is_not_taken_for_the_engines(tmp_path, orch):
    """rv25: a copy of the campaign's DAG that hashes to what the engine recorded is the engine's own amendment,
    and was learnt as such even as a link to a file of the worker's (which it could then rewrite at will)."""
    worker = (f'echo a > a.txt\nrun=$(dirname "$ORCH_RETURN")\ncp {TO_LEDGER}/state/hostile/dag.yaml" "$run/plan"\n'
              f'ln -sf "$run/plan" {TO_LEDGER}/state/hostile/dag.yaml"\n')
    repo, _, result = run(tmp_path, orch, worker, "none")
    assert "A: changed what no worker may change: .ledger/state/hostile/dag.yaml was changed" in result.out + result.err
    assert not (repo / ".ledger/state/hostile/dag.yaml").is_symlink()


FOREIGN = [b'{"kind": "forged"}', b"garbage", b'{"id": 7, "kind": "node"}']


@pytest.fixture(params=FOREIGN, ids=["no-id", "not-json", "odd-id"])
def damaged(request, tmp_path, orch):
    """A finished campaign whose journal holds a foreign line 3; put back before the after-run check."""
    repo, _, result = run(tmp_path, orch, "echo a > a.txt\n", "none")
    assert result.rc == 75, result.err  # final acceptance
    path = repo / ".ledger/state/hostile/journal.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2] + [request.param + b"\n"] + lines[2:]))
    yield repo, path, request.param
    path.write_bytes(b"".join(lines))


def test_resume_and_doctor_name_a_foreign_line_in_the_middle_of_the_journal(damaged, orch):
    repo, path, foreign = damaged
    before = path.read_bytes()
    assert damage.damaged(path) == [("journal.jsonl:3", damage._problem(foreign))]
    again = orch("resume", cwd=repo)
    assert again.rc == 1, again.out + again.err
    assert again.err.startswith("orchestrate: error: journal.jsonl:3: ") and again.err.count("\n") == 1, again.err
    assert "nothing was resumed or repaired" in again.err and "repair:" not in again.out
    assert path.read_bytes() == before  # nothing settled, repaired, dispatched or journalled
    doctor = orch("doctor", "--topic", "hostile", cwd=repo)
    assert doctor.rc == 1 and "journal.jsonl:3:" in doctor.out, doctor.out + doctor.err


def test_status_names_a_foreign_line_in_the_middle_of_the_journal(damaged, orch):
    repo, path, _ = damaged
    status = orch("status", cwd=repo)
    assert "Traceback" not in status.out + status.err and status.rc != 70, status.out + status.err
    assert "damaged journal: journal.jsonl:3 (" in status.out


def test_why_and_report_refuse_a_foreign_line_as_resume_does(damaged, orch):
    """rv45: both read the campaign whole; a line that is not JSON ended them in a traceback (exit 70)."""
    repo, path, _ = damaged
    written = {p: p.stat().st_mtime_ns for p in (repo / ".ledger/log").glob("*.html")}  # CLOSE's
    for args, undone in ((("why", "A", "--json"), "nothing was traced"), (("report",), "no report was written")):
        said = orch(*args, cwd=repo)
        assert said.rc == 1, said.out + said.err
        assert said.err.startswith("orchestrate: error: journal.jsonl:3: ") and said.err.count("\n") == 1, said.err
        assert undone in said.err and "Traceback" not in said.err
    assert '"exit_code": 1' in orch("why", "A", "--json", cwd=repo).out  # a script reading stdout reads why
    assert {p: p.stat().st_mtime_ns for p in (repo / ".ledger/log").glob("*.html")} == written


def test_graph_refuses_a_foreign_line_as_report_does(damaged, orch):
    """rv84: `graph` folds the campaign's journal whole as `report` does, and a line that is not JSON ended
    it in a traceback (exit 70), with or without --topic."""
    repo, _, _ = damaged
    for args in (("graph", "--topic", "hostile"), ("graph", "--format", "mermaid")):
        said = orch(*args, cwd=repo)
        assert said.rc == 1 and said.out == "", said.out + said.err
        assert said.err.startswith("orchestrate: error: journal.jsonl:3: ") and said.err.count("\n") == 1, said.err
        assert "no graph was drawn" in said.err


def test_replay_of_a_campaign_refuses_a_foreign_line_as_resume_does(damaged, orch):
    """rv84: `replay --campaign` parsed every line of the journal as an entry of its own: a line that is not
    JSON (or has no context) ended it in a traceback (exit 70)."""
    repo, _, _ = damaged
    said = orch("replay", "--campaign", "hostile", cwd=repo)
    assert said.rc == 1, said.out + said.err
    assert said.err.startswith("orchestrate: error: journal.jsonl:3: ") and said.err.count("\n") == 1, said.err
    assert "nothing was replayed" in said.err


def test_each_command_refusing_a_foreign_line_lists_that_exit_in_its_help(damaged, orch):
    """rv84: decide, approve, skip, realign and abandon refuse such a journal with exit 1, which their help
    did not list (nor resume's, which named only a halt)."""
    repo, _, _ = damaged
    for args in (("decide", "final-acceptance", "accept"), ("approve", "--edge", "e1"), ("skip", "--edge", "e1"),
                 ("realign", "--rediscover", "A"), ("abandon", "--note", "x"), ("resume",)):
        said = orch(*args, "--topic", "hostile", cwd=repo)
        assert said.rc == 1 and "a line orchestrate did not write" in said.err, (args, said.out + said.err)
        codes = orch(args[0], "--help").out.split("Exit codes:\n", 1)[1]
        one = re.search(r"^    1 (.*?)^    2 ", codes, re.M | re.S)
        assert one and "a line orchestrate did not write" in " ".join(one.group(1).split()), (args[0], codes)
