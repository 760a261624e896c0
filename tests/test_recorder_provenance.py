"""Provenance enforced when an entry is appended (seeds-other §3.8, R1-R4): the recorder refuses to write
an entry that breaks a rule, so a bug in the engine cannot leave an ungrounded journal behind."""
from __future__ import annotations

import json
import re

import pytest

from orchestrate.errors import ExitCode
from orchestrate.recorder.journal import Recorder
from orchestrate.recorder.provenance import FIELDS, ProvenanceError


@pytest.fixture
def rec(tmp_path):
    return Recorder(tmp_path / "ledger", "api-v2")


def _lines(rec: Recorder) -> list[dict]:
    return [json.loads(line) for line in rec.journal.read_text().splitlines()]


def test_R1_every_append_has_the_eight_fields_utc_time_and_the_next_seq(rec):
    rec.event("transition", {"from": "DERIVE"})
    rec.event("gate", {"node": "N2", "gate": "unit", "code": 0}, source_type="gate", hold=True)
    rec.flush()
    first, second = _lines(rec)
    for entry in (first, second):
        assert sorted(entry) == sorted(FIELDS)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", entry["created_at"])
    assert (first["seq"], second["seq"]) == (1, 2)
    assert first["id"] != second["id"]


def test_R2_an_unknown_source_type_is_a_bug_and_nothing_is_written(rec):
    with pytest.raises(ProvenanceError) as err:
        rec.event("verdict", {"node": "N2", "verdict": "rework"}, source_type="guess")
    assert str(err.value) == ("unknown source_type 'guess' on verdict; valid values: answers, decision, engine, "
                              "gate, human, policy, repair, worker")
    assert err.value.exit_code == ExitCode.INTERNAL
    assert not rec.journal.exists() and rec.counter == 0


def test_R3_an_accept_verdict_must_cite_a_passing_gate_of_its_node(rec):
    failing = rec.event("gate", {"node": "N2", "gate": "unit", "code": 1}, source_type="gate")
    other = rec.event("gate", {"node": "N3", "gate": "unit", "code": 0}, source_type="gate")
    message = ("cannot record verdict accept for N2 without provenance: derived_from must cite at least one "
               "passing gate entry of N2")
    for cited in ([], [failing["id"]], [other["id"]]):
        with pytest.raises(ProvenanceError, match=re.escape(message)):
            rec.event("verdict", {"node": "N2", "verdict": "accept"}, derived_from=cited)
    passing = rec.event("gate", {"node": "N2", "gate": "unit", "code": 0}, source_type="gate")
    rec.event("verdict", {"node": "N2", "verdict": "accept"}, derived_from=[failing["id"], passing["id"]])
    assert [e["kind"] for e in _lines(rec)] == ["gate", "gate", "gate", "verdict"]


def test_R3_holds_after_a_resume_for_gates_read_back_from_the_journal(rec):
    passing = rec.event("gate", {"node": "N2", "gate": "unit", "code": 0}, source_type="gate")
    again = Recorder(rec.ledger, rec.topic)
    again.resume_seq(again.read())
    again.event("verdict", {"node": "N2", "verdict": "accept"}, derived_from=[passing["id"]])
    assert _lines(again)[-1]["seq"] == 2


def test_R4_a_reference_to_an_entry_that_does_not_exist_is_refused(rec):
    rec.event("transition", {})
    for ref in ("gate:0197-missing", "api-v2:2", "api-v2:0", "other:1"):
        with pytest.raises(ProvenanceError, match=f"referenced {re.escape(ref)} does not exist in campaign api-v2"):
            rec.event("merge", {"node": "N2"}, derived_from=[ref])
    rec.event("merge", {"node": "N2"}, derived_from=["api-v2:1"])
    assert len(_lines(rec)) == 2
