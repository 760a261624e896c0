"""Surface-exceed freezes are bounded: a request for what the surface already covers is no widening, and a
node's requests are granted at most WIDEN_LIMIT times (rv47 found a worker that froze on every run widened and
restarted forever, no attempt spent)."""
from __future__ import annotations

import pytest

from orchestrate.workers.local import WIDEN_LIMIT
from tests.engine_helpers import campaign_repo, journal, statuses

# C asks for what `asks` holds: "covered" a path under its own surface, every time; "fresh" a path it has not
# got yet, numbered by how many surface tokens it holds (each widening adds one); "collide" the same, but
# under D's surface, so each request serializes C. It never writes anything: it only freezes. Past 30 runs of
# the node it fails instead, so that an unbounded loop ends (and fails the assertions) rather than hanging.
ASKER = r"""#!/bin/sh
set -eu
runs="$(dirname "$ORCH_RETURN")/runs"
echo x >> "$runs"
if [ "$(wc -l < "$runs")" -gt 30 ]; then exit 1; fi
n=$(printf '%s\n' "$ORCH_SURFACE" | wc -l | tr -d ' ')
case "$(cat asks)" in
  covered) want=dC/x ;;
  fresh) want=more/$n.txt ;;
  collide) want=dD/$n.txt ;;
esac
printf '{"freeze": "surface-exceed", "paths": ["%s"]}' "$want" > "$ORCH_RETURN"
"""

DAG = """\
topic: ask
schedule: {schedule}
workers: {{sh: "./work.sh"}}
defaults: {{timeout: 60, max_attempts: 2}}
nodes:
  - {{id: C, title: c, file_surface: [dC], discipline: sh}}
  - {{id: D, title: d, file_surface: [dD], worker: "mkdir -p dD && echo d > dD/d.txt"}}
"""


def _run(tmp_path, orch, asks: str, schedule: str = "eager"):
    repo = campaign_repo(tmp_path, DAG.format(schedule=schedule), ASKER, files={"asks": asks + "\n"})
    result = orch("run", "--no-interactive", cwd=repo)
    return repo, result


def _granted(entries: list[dict]) -> list[str]:
    """The reasons of the DAG amendments a request made (WIDEN or SERIALIZE)."""
    return [e["context"]["reason"] for e in entries if e["kind"] == "dag" and e["context"].get("node") == "C"]


def _verdicts(entries: list[dict]) -> list[tuple[str, str]]:
    return [(e["context"]["verdict"], e["context"]["reasons"]) for e in entries
            if e["kind"] == "verdict" and e["context"]["node"] == "C"]


@pytest.mark.parametrize("schedule", ["eager", "layered"])
def test_a_request_for_a_path_the_surface_covers_fails_the_attempt(tmp_path, orch, schedule):
    repo, result = _run(tmp_path, orch, "covered", schedule)
    out = result.out + result.err
    assert result.rc == 75, out  # attempts spent: the realignment seam, not an endless loop
    assert "seam realignment for node C" in out
    entries = journal(repo, "ask")
    assert _granted(entries) == []  # never taken for a widening
    assert not any(e["kind"] == "gate" and e["context"].get("gate") == "collision-check" for e in entries)
    verdicts = _verdicts(entries)
    assert [v for v, _ in verdicts] == ["rework", "escalate"]  # each freeze is one failed attempt
    assert all("dC/x, already inside its surface (dC): nothing to widen" in why for _, why in verdicts)
    if schedule == "eager":  # the rest goes on (layered judges D after the seam is answered, as for any escalation)
        assert statuses(repo, orch, "ask")["D"] == "ACCEPTED"


@pytest.mark.parametrize("asks", ["fresh", "collide"])
def test_a_nodes_requests_are_granted_at_most_the_limit(tmp_path, orch, asks):
    repo, result = _run(tmp_path, orch, asks)
    out = result.out + result.err
    assert result.rc == 75, out
    assert "seam realignment for node C" in out
    entries = journal(repo, "ask")
    granted = _granted(entries)
    assert len(granted) == WIDEN_LIMIT, granted
    assert all(g.startswith("WIDEN C" if asks == "fresh" else "SERIALIZE C") for g in granted)
    verdicts = _verdicts(entries)
    assert [v for v, _ in verdicts] == ["rework", "escalate"]  # the limit holds across attempts
    assert all(f"widened {WIDEN_LIMIT} times already" in why for _, why in verdicts)


def test_a_persons_rework_grants_the_requests_again(tmp_path, orch):
    repo, result = _run(tmp_path, orch, "fresh")
    assert result.rc == 75, result.out + result.err
    assert orch("decide", "realignment", "rework", "--topic", "ask", "--note", "try again", cwd=repo).rc == 0
    result = orch("resume", "--no-interactive", "--topic", "ask", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert "seam realignment for node C" in result.out + result.err
    assert len(_granted(journal(repo, "ask"))) == 2 * WIDEN_LIMIT
