"""`report`, `doctor` and `why` without --topic pick the campaign as `status` does (recorder/topics.py `pick`):
the single one that has not ended; several are listed to choose from; once every one has ended, the newest.
Never the alphabetically first campaign the recorder knows."""
from __future__ import annotations

import json

import pytest

from tests.engine_helpers import campaign_repo

WORKER = r"""#!/bin/sh
set -eu
mkdir -p "$ORCH_NODE" && echo x > "$ORCH_NODE/f.txt"
"""
TOPICS = ("alpha", "mid", "zeta")


def _dag(topic: str) -> str:
    return (f"topic: {topic}\nworkers: {{sh: \"./work.sh\"}}\nnodes:\n"
            f"  - {{id: {topic}1, title: one, depends_on: [], file_surface: [{topic}1/], discipline: sh}}\n")


@pytest.fixture
def repo(tmp_path):
    return campaign_repo(tmp_path, "nodes: []\n", WORKER, {f"{t}.yaml": _dag(t) for t in TOPICS})


def _open(repo, orch, topic: str, *, accept: bool) -> None:
    """Run `topic` to its final-acceptance seam; `accept`: answer it, which ends the campaign."""
    ran = orch("run", "--no-interactive", "-q", "--dag", f"{topic}.yaml", cwd=repo)
    assert ran.rc == 75, ran.err
    if accept:
        assert orch("decide", "final-acceptance", "accept", "--topic", topic, "--note", "ok", cwd=repo).rc == 0


def _report_topic(repo, orch) -> str:
    done = orch("report", "-o", repo / "r.html", cwd=repo)
    assert done.rc == 0, done.err
    return next(t for t in TOPICS if f"campaign/{t}" in (repo / "r.html").read_text())


def test_the_campaign_that_has_not_ended_is_picked_not_the_first_by_name(repo, orch):
    _open(repo, orch, "alpha", accept=True)  # ended, and first by name
    _open(repo, orch, "zeta", accept=False)  # waits at final acceptance: the one status shows
    assert json.loads(orch("status", "--json", cwd=repo).out)["topic"] == "zeta"
    doctor = orch("doctor", cwd=repo)
    assert doctor.rc == 0 and "state/zeta/journal.jsonl" in doctor.out, doctor.out + doctor.err
    why = orch("why", "zeta1", cwd=repo)
    assert why.rc == 0, why.err
    assert _report_topic(repo, orch) == "zeta"


def test_several_campaigns_not_ended_are_listed_and_none_is_picked(repo, orch):
    _open(repo, orch, "alpha", accept=False)
    _open(repo, orch, "zeta", accept=False)
    for command in (["doctor"], ["why", "alpha1"], ["report", "-o", repo / "r.html"]):
        refused = orch(*command, cwd=repo)
        assert refused.rc == 2, (command, refused.out, refused.err)
        assert "2 campaigns are in flight or paused; pass --topic" in refused.err
        assert "  zeta: PAUSE at seam final-acceptance" in refused.err and "  alpha: PAUSE" in refused.err
        assert "Traceback" not in refused.err
    assert not (repo / "r.html").exists()
    assert orch("doctor", "--topic", "alpha", cwd=repo).rc == 0  # --topic still chooses


def test_once_every_campaign_has_ended_the_newest_is_picked(repo, orch):
    for topic in ("alpha", "zeta", "mid"):  # opened in this order: mid is the newest, neither first nor last by name
        _open(repo, orch, topic, accept=True)
    assert orch("doctor", cwd=repo).out.startswith(str(repo / ".ledger" / "state" / "mid" / "journal.jsonl"))
    assert orch("why", "mid1", cwd=repo).rc == 0
    assert _report_topic(repo, orch) == "mid"
    assert json.loads(orch("status", "--json", cwd=repo).out)["topic"] == "mid"  # as status shows


def test_no_campaign_at_all_says_how_to_start_one(repo, orch):
    for command in (["doctor"], ["why", "x"], ["report"]):
        refused = orch(*command, cwd=repo)
        assert refused.rc == 2 and "no campaign has been started here" in refused.err, (command, refused.err)
