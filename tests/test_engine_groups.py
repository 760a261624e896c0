"""LOOPS_WITH groups in a run (seeds-other §3.2, L5, L6): members are dispatched together, judged on one
combined tree by the union of their evaluators, and merged or reworked together."""
from __future__ import annotations

import json

import pytest

from tests.engine_helpers import campaign_repo, first_parent_chain, journal

# The API (N2) and its client (N3) only work together: each member's test needs the other's file.
WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  N1) echo base > n1.txt ;;
  N2) echo api > api.txt ;;
  N3) if [ "$(cat client-mode)" = broken ] && [ "$ORCH_ATTEMPT" = 1 ]; then echo wrong > client.txt
      else echo api > client.txt; fi ;;
esac
"""

DAG = """\
topic: pair
workers: {sh: "./work.sh"}
defaults: {max_attempts: 2, timeout: 60}
nodes:
  - {id: N1, file_surface: [n1.txt], discipline: sh}
  - {id: N2, depends_on: [N1], file_surface: [api.txt], discipline: sh,
     evaluators: [{name: server-unit, run: "test -f api.txt"}]}
  - {id: N3, depends_on: [N1], file_surface: [client.txt], discipline: sh,
     evaluators: [{name: client-unit, run: "test -f api.txt && cmp -s api.txt client.txt"}]}
edges:
  - {id: e2, from: N2, to: N3, predicate: LOOPS_WITH}
"""


def statuses(repo, orch) -> dict:
    out = orch("status", "--json", "--topic", "pair", cwd=repo).out
    return {n["id"]: (n["status"], n["attempt"]) for n in json.loads(out)["nodes"]}


def test_L6_a_passing_group_is_judged_on_the_combined_tree_and_merged_as_one(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER, {"client-mode": "good\n"})
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert statuses(repo, orch) == {"N1": ("ACCEPTED", 1), "N2": ("ACCEPTED", 1), "N3": ("ACCEPTED", 1)}
    # client-unit needs N2's file: it can only pass on the members merged together
    entries = journal(repo, "pair")
    verdicts = [e["context"] for e in entries if e["kind"] == "verdict" and e["context"]["node"] in ("N2", "N3")]
    assert [(v["node"], v["verdict"], v.get("group_id")) for v in verdicts] == [
        ("N2", "accept", "N2+N3"), ("N3", "accept", "N2+N3")]
    log = (repo / ".scratch" / "runs" / "pair" / "N2" / "group-1.log").read_text()
    assert "client-unit" in log and "server-unit" in log
    base = entries[0]["context"]["baseline"] if "baseline" in entries[0]["context"] else \
        next(e["context"]["baseline"] for e in entries if e["kind"] == "open")
    chain = first_parent_chain(repo, base, "campaign/pair")
    assert [subject for _, subject in chain][0].startswith("merge group N2+N3: ")
    octopus_parents = chain[0][0].split()
    assert len(octopus_parents) == 3  # the tip and both members: one commit, all or nothing
    merges = {e["context"]["node"]: e["context"]["sha"] for e in entries if e["kind"] == "merge"}
    assert merges["N2"] == merges["N3"]
    assert orch("doctor", "--topic", "pair", cwd=repo).rc == 0  # every entry's provenance holds


def test_L5_a_failure_on_the_combined_tree_reworks_every_member_and_leaves_the_branch_alone(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER, {"client-mode": "broken\n"})
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 75, result.out + result.err
    entries = journal(repo, "pair")
    first = [e["context"] for e in entries if e["kind"] == "verdict" and e["context"]["node"] in ("N2", "N3")][:2]
    assert [(v["node"], v["verdict"], v["group_id"]) for v in first] == [("N2", "rework", "N2+N3"),
                                                                         ("N3", "rework", "N2+N3")]
    # N2's own change was fine, yet it goes back with its peer: attribution on a combined tree is unreliable
    assert all("client-unit" in v["reasons"] for v in first)
    reworked = [e["context"]["node"] for e in entries if e["kind"] == "node" and e["context"].get("status") == "REWORK"]
    assert sorted(reworked) == ["N2", "N3"]
    merges_before_rework = [e for e in entries if e["kind"] == "merge"
                            and e["seq"] < next(x["seq"] for x in entries if x["kind"] == "verdict"
                                                 and x["context"]["node"] == "N3")]
    assert [m["context"]["node"] for m in merges_before_rework] == ["N1"]  # the integration branch is unchanged
    assert statuses(repo, orch) == {"N1": ("ACCEPTED", 1), "N2": ("ACCEPTED", 2), "N3": ("ACCEPTED", 2)}


def test_each_member_reads_its_peers_brief_once(tmp_path, orch):
    dag = DAG.replace("discipline: sh,\n     evaluators: [{name: server-unit",
                      "discipline: sh, brief: 'serve the v2 API',\n     evaluators: [{name: server-unit'")
    dag = dag.replace("'serve the v2 API',\n     evaluators: [{name: server-unit'", "'serve the v2 API',\n     evaluators: [{name: server-unit")
    repo = campaign_repo(tmp_path, dag, WORKER, {"client-mode": "good\n"})
    orch("run", "--quiet", cwd=repo)
    text = (repo / ".scratch" / "runs" / "pair" / "N3" / "brief-1.md").read_text()
    assert text.count("## Brief of N2 (LOOPS_WITH peer") == 1 and "serve the v2 API" in text
    assert "## Brief of N3" not in text


def test_a_group_moves_as_one_when_a_member_serializes(tmp_path, orch):
    dag = DAG.replace("file_surface: [api.txt], discipline: sh,", "file_surface: [api.txt], discipline: sh, serialize: true,")
    repo = campaign_repo(tmp_path, dag, WORKER, {"client-mode": "good\n"})
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert statuses(repo, orch) == {"N1": ("ACCEPTED", 1), "N2": ("ACCEPTED", 1), "N3": ("ACCEPTED", 1)}


def test_a_member_worked_by_a_person_joins_its_landed_peer(tmp_path, orch):
    dag = DAG.replace("file_surface: [client.txt], discipline: sh,", "file_surface: [client.txt], discipline: sh, worker: {kind: human},")
    repo = campaign_repo(tmp_path, dag, WORKER, {"client-mode": "good\n"})
    first = orch("run", "--quiet", cwd=repo)
    assert first.rc == 75 and "seam handwork for node N3" in first.out, first.out + first.err
    work = repo / next(e["context"]["worktree"] for e in journal(repo, "pair")
                       if e["kind"] == "node" and e["context"].get("node") == "N3" and e["context"].get("worktree"))
    (work / "client.txt").write_text("api\n")
    assert orch("decide", "handwork", "done", cwd=repo).rc == 0
    second = orch("resume", "--quiet", "--topic", "pair", cwd=repo)
    assert second.rc == 75, second.out + second.err
    assert statuses(repo, orch) == {"N1": ("ACCEPTED", 1), "N2": ("ACCEPTED", 1), "N3": ("ACCEPTED", 1)}


# P asks, once, for a path its concurrent neighbour Z owns: SERIALIZE sends P back while its peer Q has landed.
ASKING = r"""#!/bin/sh
set -eu
n=$(echo "$ORCH_NODE" | tr 'A-Z' 'a-z')
if [ "$ORCH_NODE" != P ] || printf '%s\n' "$ORCH_SURFACE" | grep -qx z.txt; then
  echo "$ORCH_NODE" > "$n.txt"
  if [ "$ORCH_NODE" = P ]; then echo P >> z.txt; fi
else
  printf '{"freeze": "surface-exceed", "paths": ["z.txt"]}' > "$ORCH_RETURN"
fi
"""


@pytest.mark.parametrize("schedule", ["eager", "layered"])
def test_a_member_serialized_after_its_peer_landed_runs_and_the_group_lands(tmp_path, orch, schedule):
    dag = f"""\
topic: pair
schedule: {schedule}
workers: {{sh: "./work.sh"}}
defaults: {{max_attempts: 2, timeout: 60}}
nodes:
  - {{id: P, file_surface: [p.txt], discipline: sh}}
  - {{id: Q, file_surface: [q.txt], discipline: sh}}
  - {{id: Z, file_surface: [z.txt], discipline: sh}}
edges:
  - {{id: e1, from: P, to: Q, predicate: LOOPS_WITH}}
"""
    repo = campaign_repo(tmp_path, dag, ASKING)
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 75, result.out + result.err  # not "layer 0 cannot progress" (an internal error)
    assert statuses(repo, orch) == {"P": ("ACCEPTED", 2), "Q": ("ACCEPTED", 1), "Z": ("ACCEPTED", 1)}
    assert repo.git("show", "campaign/pair:z.txt").split() == ["Z", "P"]
