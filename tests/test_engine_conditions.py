"""Conditional edges and `join` in a run (seeds-other §3.3, C1-C3, C9, C10, C13): decided once on the
source's recorded outputs, journalled with their inputs, skips propagating, never re-evaluated."""
from __future__ import annotations

import json

import pytest

from tests.engine_helpers import campaign_repo, journal_text

WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  N1) printf '{"needs_migration": %s, "size": %s}' "$(cat flag)" "$(cat size)" > "$ORCH_OUTPUTS"; echo 1 > n1.txt ;;
  *) echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr 'A-Z' 'a-z').txt" ;;
esac
"""

DAG = """\
topic: cond
workers: {sh: "./work.sh"}
nodes:
  - {id: N1, file_surface: [n1.txt], discipline: sh, outputs: [needs_migration, size]}
  - {id: N2, file_surface: [n2.txt], discipline: sh}
  - {id: N4, file_surface: [n4.txt], discipline: sh}
  - {id: N5, depends_on: [N4], file_surface: [n5.txt], discipline: sh}
  - {id: N6, join: any, depends_on: [N4, N2], file_surface: [n6.txt], discipline: sh}
edges:
  - {id: e4, from: N1, to: N4, predicate: TRIGGERS, type: conditional, when: "src.outputs.needs_migration == true"}
"""


def setup(tmp_path, flag: str, size: str = "3", dag: str = DAG):
    return campaign_repo(tmp_path, dag, WORKER, {"flag": flag + "\n", "size": size + "\n"})


def journal(repo) -> list[dict]:
    lines = journal_text(repo, "cond").splitlines()
    return [json.loads(line) for line in lines]


def statuses(repo, orch) -> dict:
    return {n["id"]: n["status"] for n in json.loads(orch("status", "--json", "--topic", "cond", cwd=repo).out)["nodes"]}


def test_c1_a_true_condition_takes_the_edge_and_records_its_inputs(tmp_path, orch):
    repo = setup(tmp_path, "true")
    assert orch("run", "--quiet", cwd=repo).rc == 75
    evals = [e for e in journal(repo) if e["kind"] == "edge_eval"]
    assert [(e["context"]["edge"], e["context"]["taken"], e["context"]["inputs"]) for e in evals] == [
        ("e4", True, {"src.outputs.needs_migration": True})]
    assert set(statuses(repo, orch).values()) == {"ACCEPTED"}


def test_c2_c3_a_false_condition_skips_the_target_and_its_join_all_successors_only(tmp_path, orch):
    repo = setup(tmp_path, "false")
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert statuses(repo, orch) == {"N1": "ACCEPTED", "N2": "ACCEPTED", "N4": "SKIPPED", "N5": "SKIPPED",
                                    "N6": "ACCEPTED"}
    tree = repo.git("ls-tree", "--name-only", "campaign/cond").split()
    assert "n4.txt" not in tree and "n5.txt" not in tree and "n6.txt" in tree
    assert [e["context"]["taken"] for e in journal(repo) if e["kind"] == "edge_eval"] == [False]


def test_c9_a_type_error_halts_naming_the_edge(tmp_path, orch):
    repo = setup(tmp_path, "true", size='"big"', dag=DAG.replace("src.outputs.needs_migration == true",
                                                                 "src.outputs.size > 10"))
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 1
    out = result.out + result.err
    assert "edge e4 (N1 -> N4): cannot compare str 'big' with int 10; nothing was dispatched" in out
    assert not any(e["kind"] == "intent" and e["context"].get("node") == "N4" for e in journal(repo))


def test_c10_a_condition_that_is_not_a_boolean_halts(tmp_path, orch):
    repo = setup(tmp_path, "true", dag=DAG.replace("src.outputs.needs_migration == true", "src.outputs.size"))
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 1
    assert "edge e4 (N1 -> N4): condition must be true or false, got 3" in result.out + result.err


def test_c13_a_recorded_decision_stands_when_the_condition_is_edited(tmp_path, orch):
    import io

    from orchestrate.dag.load import load_dag
    from orchestrate.engine import routing
    from orchestrate.engine.context import Context
    from orchestrate.recorder.campaign import Campaign, apply
    from orchestrate.recorder.paths import Layout
    from orchestrate.report.live import Reporter
    from orchestrate.workers.local import LocalExecutor
    repo = setup(tmp_path, "false")
    assert orch("run", "--quiet", cwd=repo).rc == 75
    dag = repo / ".ledger" / "state" / "cond" / "dag.yaml"
    dag.write_text(dag.read_text().replace("needs_migration == true", "needs_migration == false"))
    campaign = Campaign()
    for entry in journal(repo):
        apply(campaign, entry)
    said = io.StringIO()
    ctx = Context(layout=Layout(repo), campaign=campaign, recorder=None, executor=LocalExecutor(1),
                  out=Reporter(quiet=True, stream=said), dag=load_dag(dag, topic="cond"))

    edge = next(e for e in ctx.dag.edges if e.id == "e4")
    assert routing._taken(ctx, edge) is False  # edited to be true now; the recorded false stands
    assert said.getvalue().startswith("warning: edge e4 condition changed since it was evaluated (entry cond:")
    assert "the recorded decision stands" in said.getvalue()


def test_a_missing_outputs_file_reworks_the_source(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, "#!/bin/sh\necho \"$ORCH_NODE\" > \"$(echo $ORCH_NODE | tr A-Z a-z).txt\"\n")
    orch("run", "--quiet", cwd=repo)
    gates = [e["context"] for e in journal(repo) if e["kind"] == "gate" and e["context"]["gate"] == "outputs-present"]
    assert gates and gates[0]["code"] == 1
    assert "N1 declares outputs needs_migration, size but wrote no $ORCH_OUTPUTS file" in gates[0]["summary"]


def test_outputs_are_judged_as_the_worker_left_them_not_as_a_later_worker_rewrote_them(tmp_path, orch):
    """N1's $ORCH_OUTPUTS is journalled when its worker returns (workers/returns.py): N2, without the sandbox
    and run after it in the same layer, rewrites N1's file before N1 is judged; the gate and the edge go by
    what N1 wrote."""
    forge = ('  N2) printf \'{"needs_migration": true, "size": 99}\' > '
             '"$(dirname "$(dirname "$ORCH_OUTPUTS")")/N1/outputs-1.json"; echo 2 > n2.txt ;;\n')
    worker = WORKER.replace("  *) echo", forge + "  *) echo")
    repo = setup(tmp_path, "false", dag=DAG.replace("workers:", "defaults: {sandbox: none}\nworkers:"))
    (repo / "work.sh").write_text(worker)
    repo.commit("worker forges N1's outputs as N2")
    result = orch("run", "--quiet", "--jobs", "1", "--schedule", "layered", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert json.loads((repo / ".scratch" / "runs" / "cond" / "N1" / "outputs-1.json").read_text())["size"] == 99
    gate = next(e["context"] for e in journal(repo) if e["kind"] == "gate" and e["context"]["gate"] == "outputs-present")
    assert gate["summary"] == "PASS: needs_migration=False, size=3", gate
    evals = [(e["context"]["edge"], e["context"]["taken"], e["context"]["inputs"]) for e in journal(repo)
             if e["kind"] == "edge_eval"]
    assert evals == [("e4", False, {"src.outputs.needs_migration": False})]


@pytest.mark.parametrize("content,summary", [
    (b'{"needs_migration": true, "size": "caf\xe9"}', "outputs-1.json is not UTF-8"),
    (b'{"needs_migration": true, "size": "' + b"x" * 70_000 + b'"}', "outputs-1.json holds more than 65536 bytes"),
    (b'[1, 2]', "outputs-1.json must hold a JSON object"),
])
def test_an_outputs_file_that_is_not_a_small_utf8_json_object_fails_outputs_present(tmp_path, orch, content, summary):
    repo = setup(tmp_path, "true")
    (repo / "outputs.bin").write_bytes(content)
    (repo / "work.sh").write_text(WORKER.replace("""printf '{"needs_migration": %s, "size": %s}' "$(cat flag)" "$(cat size)\"""",
                                                 'cat outputs.bin'))
    repo.commit("the worker reports outputs.bin")
    orch("run", "--quiet", cwd=repo)
    gates = [e["context"] for e in journal(repo) if e["kind"] == "gate" and e["context"]["gate"] == "outputs-present"]
    assert gates and gates[0]["code"] == 1 and summary in gates[0]["summary"], gates
    assert "x" * 1000 not in journal_text(repo, "cond")  # what failed is named, not journalled


AMENDED = """\
topic: cond
schedule: {schedule}
workers: {{sh: "./work.sh"}}
nodes:
  - {{id: N1, file_surface: [n1.txt], discipline: sh, outputs: [needs_migration, size]}}
  - {{id: N4, file_surface: [n4.txt], discipline: sh}}
  - {{id: H, depends_on: [N1], file_surface: [h.txt], discipline: sh, worker: {{kind: human}}}}
  - {{id: Z, depends_on: [H], file_surface: [z.txt], discipline: sh}}
edges:
  - {{id: e4, from: N1, to: N4, predicate: TRIGGERS, type: conditional, when: "src.outputs.needs_migration == true"}}
"""


@pytest.mark.parametrize("schedule", ["eager", "layered"])
def test_c13_an_amendment_that_edits_a_decided_condition_is_warned_about_and_changes_nothing(tmp_path, orch, schedule):
    repo = setup(tmp_path, "false", dag=AMENDED.format(schedule=schedule))
    assert orch("run", "--quiet", cwd=repo).rc == 75  # N4 skipped; H waits for a person
    dag = repo / ".ledger" / "state" / "cond" / "dag.yaml"
    dag.write_text(dag.read_text().replace("needs_migration == true", "needs_migration == false"))
    work = repo / next(e["context"]["worktree"] for e in journal(repo) if e["kind"] == "node"
                       and e["context"].get("node") == "H" and e["context"].get("worktree"))
    (work / "h.txt").write_text("h\n")
    assert orch("decide", "handwork", "done", cwd=repo).rc == 0
    assert "seam dag-amendment" in orch("resume", "--quiet", "--topic", "cond", cwd=repo).out
    assert orch("decide", "dag-amendment", "accept", "--topic", "cond", cwd=repo).rc == 0

    resumed = orch("resume", "--quiet", "--topic", "cond", cwd=repo)

    said = resumed.out + resumed.err
    assert said.count("warning: edge e4 condition changed since it was evaluated (entry cond:") == 1, said
    assert "the recorded decision stands" in said
    assert statuses(repo, orch) == {"N1": "ACCEPTED", "N4": "SKIPPED", "H": "ACCEPTED", "Z": "ACCEPTED"}
    assert [e["context"]["taken"] for e in journal(repo) if e["kind"] == "edge_eval"] == [False]


def test_a_condition_reads_the_exit_code_of_one_of_the_sources_evaluators(tmp_path, orch):
    dag = DAG.replace("outputs: [needs_migration, size]}",
                      "outputs: [needs_migration, size], evaluators: [{name: tests, run: \"true\"},"
                      " {name: lint-ok, run: \"true\"}]}").replace(
        'when: "src.outputs.needs_migration == true"}', 'when: "src.gates.tests.rc == 0 and src.gates.lint_ok.rc == 0"}')
    repo = setup(tmp_path, "true", dag=dag)

    result = orch("run", "--quiet", cwd=repo)

    assert result.rc == 75, result.out + result.err  # not "no recorded value for src.gates.tests.rc"
    evals = [e["context"] for e in journal(repo) if e["kind"] == "edge_eval"]
    assert [(e["edge"], e["taken"], e["inputs"]) for e in evals] == [
        ("e4", True, {"src.gates.tests.rc": 0, "src.gates.lint_ok.rc": 0})]
