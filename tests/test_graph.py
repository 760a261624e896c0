"""Graph algorithms: layers, cycles, and concurrent surface conflicts without pairwise searches."""
from __future__ import annotations

from orchestrate.dag.graph import cycles, kahn_layers, natural_sorted, surface_conflicts


def test_natural_order():
    assert natural_sorted(["N10", "N2", "N1", "M3"]) == ["M3", "N1", "N2", "N10"]


def test_layers_settle_complete_nodes_and_keep_natural_order():
    deps = {"A": [], "B": ["A"], "C": ["A"], "D": ["B", "C"], "Z": []}
    assert kahn_layers(deps) == [["A", "Z"], ["B", "C"], ["D"]]
    assert kahn_layers(deps, settled=["A", "Z"]) == [["B", "C"], ["D"]]


def test_every_disjoint_cycle_is_reported_as_a_path():
    deps = {"A": ["B"], "B": ["A"], "C": ["D"], "D": ["E"], "E": ["C"], "F": ["F"], "G": []}
    found = cycles(deps)
    assert ["A", "B", "A"] in found and ["F", "F"] in found
    assert any(c[0] == "C" and len(c) == 4 for c in found) and len(found) == 3


def test_a_deep_chain_does_not_hit_the_recursion_limit():
    deps = {f"N{i}": [f"N{i - 1}"] if i else [] for i in range(5000)}
    deps["N0"] = ["N4999"]
    assert len(cycles(deps)[0]) == 5001
    del deps["N0"]
    deps["N0"] = []
    assert len(kahn_layers(deps)) == 5000


def test_ordered_nodes_sharing_a_file_do_not_conflict():
    deps = {f"N{i}": [f"N{i - 1}"] if i else [] for i in range(200)}
    assert surface_conflicts({n: ("CHANGELOG.md",) for n in deps}, deps) == []


def test_a_diamond_orders_every_pair_through_its_edges():
    deps = {"A": [], "B": ["A"], "C": ["A"], "D": ["B", "C"]}
    surfaces = {"A": ("x",), "B": ("y",), "C": ("z",), "D": ("x", "y", "z")}
    assert surface_conflicts(surfaces, deps) == []


def test_three_unrelated_nodes_sharing_a_token_report_all_pairs():
    deps = {"A": [], "B": [], "C": []}
    found = surface_conflicts({n: ("shared/",) for n in deps}, deps)
    assert [(a, b) for a, b, _ in found] == [("A", "B"), ("A", "C"), ("B", "C")]
    assert found[0][2] == [("shared/", "shared/")]


def test_prefix_and_glob_conflicts_name_the_tokens_as_written():
    deps = {"A": [], "B": [], "C": [], "D": []}
    found = surface_conflicts({"A": ("docs/",), "B": ("docs/x.md",), "C": ("t/*.md",), "D": ("t/IBC.md",)}, deps)
    assert found == [("A", "B", [("docs/", "docs/x.md")]), ("C", "D", [("t/*.md", "t/IBC.md")])]
