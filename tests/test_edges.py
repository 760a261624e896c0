"""Typed edges at validation time (seeds-other.md §2, §3.1-§3.6, §4): one fixture per table row.

Each invalid fixture in tests/data/dags/edges ends with `# expect: <line> <field>: <message>` lines (the
rendered problem without its `file:` prefix; `{file}` stands for the path the DAG was loaded from) and
must produce exactly those problems, no more, no fewer.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrate.dag.edges import payload_gate
from orchestrate.dag.load import check_dag, load_dag
from orchestrate.dag.model import Check

DAGS = Path(__file__).parent / "data" / "dags" / "edges"
EXAMPLE = DAGS / "example.yaml"

# Table row -> fixture; every validation row of the tables has its own file.
ROWS = {
    "P2": "p2_unknown_predicate", "P3": "p3_lower_case", "P4": "p4_undeclared", "P5": "p5_twice",
    "P6": "p6_self", "P7": "p7_trigger_action", "P9": "p9_composes_cycle", "P10": "p10_no_actions",
    "P11": "p11_extends_node", "P12": "p12_action_collides", "P17": "p17_payload_outside", "P17b": "p17b_payload_pattern",
    "L3": "l3_group_ordered", "L3-contracted": "l3b_groups_cross", "L4": "l4_group_overlap", "L7": "l7_loops_twice",
    "C4": "c4_no_when", "C5": "c5_when_on_static", "C6": "c6_unknown_output", "C7": "c7_other_node",
    "C8": "c8_call", "C12": "c12_conditional_composes", "C14": "c14_never_abandoned",
    "D6": "d6_fallback_not_on_demand", "D6b": "d6b_fallback_too_early", "D8": "d8_discover_kind",
    "one-discovery": "d_two_discoveries", "G5": "g5_reroute_no_target", "G5b": "g5b_target_too_early",
    "G6": "g6_sanitize", "G7": "g7_unknown_gate", "personality": "personality",
    "edge-ids": "duplicate_edge_id", "top-level": "top_level",
}


def expected(path: Path) -> set[str]:
    return {line[len("# expect: "):].replace("{file}", str(path))
            for line in path.read_text().splitlines() if line.startswith("# expect: ")}


@pytest.mark.parametrize("row, name", ROWS.items(), ids=ROWS)
def test_validation_row(row, name):
    path = DAGS / f"{name}.yaml"
    want = expected(path)
    assert want, f"{name} states no expectation"
    dag, problems = check_dag(path)
    assert dag is None
    assert {f"{p.line} {p.field}: {p.message}" for p in problems} == want


def test_every_invalid_fixture_is_a_row():
    invalid = {p.stem for p in DAGS.glob("*.yaml") if expected(p)}
    assert invalid == set(ROWS.values())


def test_table_messages_verbatim():
    # The rows whose whole message the tables spell out, compared word for word (index and line aside).
    table = {
        "p2_unknown_predicate": "unknown predicate 'DEPENDS'; expected one of COMPOSES, EXTENDS, LOOPS_WITH, PRODUCES, TRIGGERS",
        "p6_self": "edge e2 connects N2 to itself",
        "p9_composes_cycle": ("cycle detected: N1 -> N2 -> N1 (N1 COMPOSES N2 orders N2 before N1; N2 COMPOSES N1 "
                              "orders N1 before N2); use LOOPS_WITH for mutual work"),
        "l3_group_ordered": ("LOOPS_WITH group {N2, N3} is also ordered by N2 -> N7 -> N3; members of a "
                             "co-reconciled group cannot depend on each other"),
        "g6_sanitize": ("'sanitize' is not supported (orchestrate never rewrites a node's commits); "
                        "use block, reroute or warn"),
        "c8_call": "function calls are not allowed in conditions (col 1)",
    }
    for name, message in table.items():
        _, problems = check_dag(DAGS / f"{name}.yaml")
        assert [p.message for p in problems] == [message]


# ---- the §4 example --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def example():
    return load_dag(EXAMPLE)


def test_example_groups_and_layers(example):
    assert example.groups() == [("N2", "N3")]
    assert example.group_of("N3") == ("N2", "N3")
    assert example.group_of("N5") == ("N5",)
    assert example.layers() == [["N1"], ["N2", "N3"], ["N4", "N4h"], ["N5"], ["N6", "N7"]]
    assert example.topic == "api-v2"  # campaign: is the alias of topic:
    assert example.params == {"allow_breaking": False}


def test_example_effective_gates(example):
    assert example.effective_gates("N1") == ["outputs-present", payload_gate("e1"), "schema-unit"]
    assert payload_gate("e1") == "payload-present(e1)"
    assert example.effective_gates("N2") == ["client-unit", "unit"]
    assert example.effective_gates("N3") == ["client-unit", "unit"]
    assert example.effective_gates("N5") == ["client-unit", "security-review", "unit"]


def test_example_model_for_the_engine(example):
    by_id = {e.id: e for e in example.edges}
    assert by_id["e5"].type == "discovery" and by_id["e5"].fallback == "N4h"
    assert by_id["e5"].discover == {"kind": "worker", "capabilities": ["python", "alembic"]}
    assert by_id["e8"].guardrails["reroute_target"] == "N7" and by_id["e8"].index == 8
    assert by_id["e9"].plugin == "llm-review" and by_id["e9"].actions[0]["persona"] == "strict-auditor"
    assert by_id["e4"].when == "src.outputs.needs_migration == true"
    assert by_id["e1"].payload == ("schema/v2.json",)
    assert by_id["N1->N2"].index is None  # depends_on sugar
    assert [e.id for e in example.incoming("N5")] == ["e1", "e3", "e6", "e6h"]
    assert example.deps()["N5"] == ("N1", "N2", "N4", "N4h")  # COMPOSES e3 orders the spoke N2 first
    n1, n4h, n5 = example.by_id["N1"], example.by_id["N4h"], example.by_id["N5"]
    assert n1.outputs == ("needs_migration",) and n1.worker_spec == {"capabilities": ["python"]}
    assert n1.worker is None and n4h.worker_spec == {"kind": "human"} and n4h.activation == "on_demand"
    assert n5.join == "any" and n5.evaluators == (Check("unit", "pytest -q tests/unit"),)
    assert example.gates["diff-budget"] == {"plugin": "diff-size", "max_lines": 800}


def test_plugin_gate_kept_by_name(tmp_path):
    dag = tmp_path / "dag.yaml"
    dag.write_text("gates: {scan: {plugin: secret-scan}, unit: {plugin: command, run: 'true'}}\n"
                   "nodes:\n  - {id: N1, file_surface: [a], worker: x, evaluators: [scan, unit]}\n")
    node = load_dag(dag).by_id["N1"]
    assert node.plugin_gates == ("scan",) and [c.name for c in node.evaluators] == ["unit"]


def test_example_surface_exemptions(tmp_path):
    text = EXAMPLE.read_text()
    # N4/N4h share migrations/ and N4h is e5's fallback; the same holds for a reroute target and its node.
    valid = tmp_path / "reroute.yaml"
    valid.write_text(text.replace('file_surface: ["docs/review/"]', 'file_surface: ["docs/release/"]'))
    assert check_dag(valid)[1] == []
    without = tmp_path / "no-fallback.yaml"
    without.write_text(text.replace(", fallback: N4h", ""))
    _, problems = check_dag(without)
    assert [(p.code, p.field) for p in problems] == [("surface-conflict", "nodes.N4h.file_surface")]


# ---- rows that derive something ----------------------------------------------------------------

def test_p1_depends_on_is_the_short_form():
    short, long = load_dag(DAGS / "p1_short.yaml"), load_dag(DAGS / "p1_long.yaml")
    assert short.layers() == long.layers() == [["N1"], ["N2"]]
    assert short.deps() == long.deps() == {"N1": (), "N2": ("N1",)}
    assert [(e.src, e.dst, e.predicate, e.type) for e in short.incoming("N2")] == \
           [(e.src, e.dst, e.predicate, e.type) for e in long.incoming("N2")]
    assert [e.id for e in short.incoming("N2")] == ["N1->N2"]


def test_p8_composes_orders_the_spoke_first():
    assert load_dag(DAGS / "p8_composes.yaml").layers() == [["N2"], ["N5"]]


def test_p14_transitive_composition_each_gate_once():
    dag = load_dag(DAGS / "p14_transitive.yaml")
    assert dag.effective_gates("N5") == ["lint", "unit"]
    assert dag.effective_gates("N8") == ["lint"]


def test_p15_diamond_terminates_and_counts_once():
    dag = load_dag(DAGS / "p15_diamond.yaml")
    assert dag.effective_gates("N5") == ["lint", "three", "two"]
    assert dag.layers() == [["N8"], ["N2", "N3"], ["N5"]]


def test_p16_triggers_never_contributes_gates():
    dag = load_dag(DAGS / "p16_triggers_no_gates.yaml")
    assert dag.effective_gates("N1") == ["schema-unit"]
    assert dag.effective_gates("N2") == []


def test_l1_group_shares_a_layer():
    dag = load_dag(DAGS / "l1_group.yaml")
    assert dag.layers() == [["N1"], ["N2", "N3"]]
    assert dag.group_of("N2") == ("N2", "N3") and dag.group_of("N1") == ("N1",)


def test_l2_groups_are_connected_components():
    dag = load_dag(DAGS / "l2_transitive_group.yaml")
    assert dag.groups() == [("N2", "N3", "N4")]
    assert dag.layers() == [["N1"], ["N2", "N3", "N4"]]  # contraction: N2, N3 wait for N4's N1
    assert dag.deps()["N2"] == ()  # deps() stays per node; only the layering contracts


def test_existing_dags_are_unchanged():
    demo = load_dag(Path(__file__).parent / "data" / "dags" / "demo.yaml")
    assert demo.groups() == [] and all(e.index is None for e in demo.edges)
    assert all(demo.effective_gates(n.id) == sorted(c.name for c in n.evaluators) for n in demo.nodes)


# ---- end to end, through the installed command -------------------------------------------------

def orchestrate(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orchestrate", *map(str, args)],
                          capture_output=True, text=True, timeout=60, env=env)


def test_cli_renders_p2_with_file_and_line():
    path = DAGS / "p2_unknown_predicate.yaml"
    run = orchestrate("validate", "--dag", path)
    assert run.returncode == 1
    assert run.stdout.splitlines() == [f"{path}:{e.replace(' ', ': ', 1)}" for e in expected(path)]
    assert f"{path}:7: edges[0].predicate: unknown predicate 'DEPENDS'; expected one of" in run.stdout


def test_cli_layers_of_the_example():
    run = orchestrate("layers", "--dag", EXAMPLE, "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == {"layer_count": 5,
                                      "layers": [["N1"], ["N2", "N3"], ["N4", "N4h"], ["N5"], ["N6", "N7"]]}
    missing = orchestrate("validate", "--dag", EXAMPLE)
    assert missing.returncode == 1  # the example names gate plugins: they must be installed
    assert "no gate plugin named 'diff-size' is installed" in missing.stdout


def test_the_example_validates_with_its_plugins_installed(tmp_path):
    import os
    import uuid

    from tests.plugin_site import Site, gate
    site = Site(tmp_path, uuid.uuid4().hex[:8])
    site.add("orchestrate-example-gates", "1.0.0", *(gate(n) for n in ("diff-size", "llm-review", "secret-scan")))
    run = orchestrate("validate", "--dag", EXAMPLE, env=dict(os.environ, PYTHONPATH=str(tmp_path)))
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"valid: {EXAMPLE} (8 nodes, 5 layers, topic api-v2)")


def test_edges_keep_the_plugin_config_untouched(example):
    assert [e.id for e in example.edges][:10] == ["e1", "e2", "e3", "e4", "e5", "e6", "e6h", "e7", "e8", "e9"]
    assert example.edges[9].actions == ({"name": "security-review", "persona": "strict-auditor"},)


def test_show_prints_the_derived_gates_and_group(orch):
    """P14 and L1 through the CLI: `show N --gates` and `show N --group`."""
    import json
    example = DAGS / "example.yaml"
    assert orch("show", "N5", "--gates", "--dag", example).out.split() == ["client-unit", "security-review", "unit"]
    assert orch("show", "N2", "--group", "--dag", example).out.split() == ["N2", "N3"]
    shown = json.loads(orch("show", "N5", "--json", "--dag", example).out)
    assert shown["layer"] == 3 and [e["id"] for e in shown["incoming"]] == ["e1", "e3", "e6", "e6h"]
    missing = orch("show", "N9", "--dag", example)
    assert missing.rc == 2 and "no node `N9`" in missing.err
