"""`orchestrate graph`: Mermaid that parses (a grammar check of the flowchart subset, no network), DOT that
Graphviz accepts, and the terminal rendering; statuses written as words in the labels."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.engine_helpers import campaign_repo
from tests.test_report import RICH_DAG, RICH_WORKER, rich_campaign

# Mermaid's flowchart grammar, for the statements `graph` writes (and a few it does not, so a valid
# alternative is not refused): ids are words; labels are quoted; link text sits between pipes.
ID = r"[A-Za-z_][A-Za-z0-9_-]*"
LABEL = r'"[^"\n]*"'
LINK = r"(?:-->|---|-\.->|-\.-|==>|===)"
STATEMENTS = {
    "node": re.compile(rf"^({ID})\[{LABEL}\]$"),
    "link": re.compile(rf"^({ID})\s*{LINK}\s*(?:\|([^|\"\n]+)\|\s*)?({ID})$"),
    "subgraph": re.compile(rf"^subgraph ({ID})(?: \[{LABEL}\])?$"),
    "end": re.compile(r"^end$"),
    "classDef": re.compile(r"^classDef ([A-Za-z_][A-Za-z0-9_]*) ([a-z-]+:[^,\s;]+(?:[ ]?[^,;]*)?(?:,[a-z-]+:[^,;]+)*)$"),
    "class": re.compile(rf"^class ({ID}(?:,{ID})*) ([A-Za-z_][A-Za-z0-9_]*)$"),
}
RESERVED = {"end", "subgraph", "graph", "flowchart", "class", "classDef", "style", "click", "linkStyle"}


def parse_mermaid(text: str) -> dict:
    """A recursive-descent check of the flowchart: header, statements, balanced subgraphs, every link and
    class naming a declared node, no reserved word as an id. Returns what it read; AssertionError otherwise."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("%%")]
    assert lines and re.fullmatch(r"flowchart (LR|RL|TB|TD|BT)", lines[0]), f"bad header: {lines[:1]}"
    nodes: dict[str, str] = {}
    links, classes, depth, classdefs = [], {}, 0, set()
    for number, line in enumerate(lines[1:], start=2):
        kind = next((k for k, rx in STATEMENTS.items() if rx.match(line)), None)
        assert kind, f"line {number} is not a flowchart statement: {line!r}"
        m = STATEMENTS[kind].match(line)
        if kind == "node":
            assert m.group(1) not in RESERVED and m.group(1) not in nodes, line
            nodes[m.group(1)] = line[line.index('"') + 1:-2]
        elif kind == "link":
            links.append((m.group(1), m.group(3), m.group(2)))
        elif kind == "subgraph":
            depth += 1
        elif kind == "end":
            depth -= 1
            assert depth >= 0, f"line {number}: `end` without a subgraph"
        elif kind == "classDef":
            classdefs.add(m.group(1))
        else:
            assert m.group(2) in classdefs, f"line {number}: class {m.group(2)} used before its classDef"
            classes.update((n, m.group(2)) for n in m.group(1).split(","))
    assert depth == 0, "a subgraph is never closed"
    assert all(a in nodes and b in nodes for a, b, _ in links), "a link names an undeclared node"
    assert set(classes) <= set(nodes)
    return {"nodes": nodes, "links": links, "classes": classes}


def test_the_grammar_check_refuses_what_mermaid_would_refuse():
    parse_mermaid('flowchart LR\n    n0["a"]\n    n1["b"]\n    n0 --> n1\n')
    for bad in ('graph XY\n', 'flowchart LR\n    n0["a"]\n    n0 --> n9\n', 'flowchart LR\n    n0["a" ]x\n',
                'flowchart LR\n    subgraph g0 ["x"]\n    n0["a"]\n', 'flowchart LR\n    end["a"]\n',
                'flowchart LR\n    n0["a"]\n    n1["b"]\n    n0 -->|a|b| n1\n'):
        with pytest.raises(AssertionError):
            parse_mermaid(bad)


def test_mermaid_of_a_plan_draws_every_edge_kind(tmp_path, orch):
    repo = campaign_repo(tmp_path, RICH_DAG, RICH_WORKER)

    result = orch("graph", "--dag", repo / ".ledger" / "state" / "dag.yaml", "--format", "mermaid", cwd=repo)

    assert result.rc == 0, result.err
    assert result.out.startswith("flowchart")
    read = parse_mermaid(result.out)
    labels = sorted(read["nodes"].values())
    assert labels == sorted(["A", "B", "C", "D", "P", "Q", "H", "S", "L1", "L2", "X", "T", "U", "W", "plugin:reviewer"])
    texts = {t for _, _, t in read["links"] if t}
    assert {"PRODUCES p/out.txt", "COMPOSES", "EXTENDS", "LOOPS_WITH", "TRIGGERS undecided"} <= texts
    assert "subgraph g0 [\"LOOPS_WITH group\"]" in result.out
    assert read["classes"] == {}  # a plan alone has no statuses


def test_mermaid_of_a_campaign_writes_statuses_as_words(tmp_path, site, orch):
    repo = rich_campaign(tmp_path, site, orch)

    result = orch("graph", "--topic", "rich", "--format", "mermaid", cwd=repo)

    read = parse_mermaid(result.out)
    labels = set(read["nodes"].values())
    assert {"A accepted", "C skipped", "X abandoned", "T invalidated", "U pending"} <= labels
    texts = {t for _, _, t in read["links"] if t}
    assert {"TRIGGERS taken", "TRIGGERS untaken"} <= texts
    assert set(read["classes"].values()) == {"accepted", "skipped", "abandoned", "invalidated", "pending"}


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed (`apt-get install graphviz`)")
def test_dot_is_accepted_by_graphviz(tmp_path, site, orch):
    repo = rich_campaign(tmp_path, site, orch)

    result = orch("graph", "--topic", "rich", "--format", "dot", cwd=repo)

    assert result.out.startswith('digraph "rich" {')
    done = subprocess.run(["dot", "-Tsvg"], input=result.out, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # not even a warning
    for label in ("A accepted", "C skipped", "T invalidated", "U pending", "plugin:reviewer"):
        assert label in done.stdout
    assert "cluster_g0" in result.out


def test_text_shows_layers_statuses_edges_and_groups(tmp_path, site, orch):
    repo = rich_campaign(tmp_path, site, orch)

    out = orch("graph", "--topic", "rich", cwd=repo).out.splitlines()

    assert out[0].startswith("layer 0: [A accepted]")
    assert "layer 3: [U pending]" in out
    assert any(re.fullmatch(r"  A -> C +TRIGGERS untaken: when src\.outputs\.go == false", ln) for ln in out)
    assert any(re.fullmatch(r"  S -> H +COMPOSES", ln) for ln in out)  # the spoke runs before its hub
    assert "LOOPS_WITH group: L1 L2" in out


def test_graph_refuses_two_sources_and_an_invalid_dag(tmp_path, orch):
    repo = campaign_repo(tmp_path, RICH_DAG, RICH_WORKER)
    both = orch("graph", "--dag", repo / ".ledger" / "state" / "dag.yaml", "--topic", "rich", cwd=repo)
    assert both.rc == 2 and "--dag and --topic" in both.err
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes:\n  - {id: A, depends_on: [Z], file_surface: [a]}\n")
    invalid = orch("graph", "--dag", bad, cwd=repo)
    assert invalid.rc == 1 and "bad.yaml:2" in invalid.err


def test_graph_without_a_source_draws_the_campaign_waiting_at_final_acceptance(tmp_path, orch):
    repo = campaign_repo(tmp_path, "topic: fin\nworkers: {sh: ./work.sh}\nnodes:\n"
                                   "  - {id: A, title: a, file_surface: [a.txt], discipline: sh}\n",
                         "#!/bin/sh\necho a > a.txt\n")
    assert orch("run", "--no-interactive", cwd=repo).rc == 75  # closed, waiting at final acceptance
    assert orch("graph", cwd=repo).out.splitlines()[0] == "layer 0: [A accepted]"


def test_a_plans_complete_nodes_are_drawn_as_complete(tmp_path, orch):
    path = tmp_path / "dag.yaml"
    path.write_text("topic: t\nworkers: {w: x}\nnodes:\n  - {id: A, title: a, file_surface: [a], discipline: w, complete: true}\n"
                    "  - {id: B, title: b, file_surface: [b], discipline: w, depends_on: [A]}\n")
    assert orch("graph", "--dag", path).out.splitlines()[:2] == [
        "complete (settled before the run, in no layer): [A complete]", "layer 0: [B]"]
    assert "class n0 complete" in orch("graph", "--dag", path, "--format", "mermaid").out


def test_graph_numbers_layers_as_layers_and_show_do_when_a_node_is_complete(tmp_path):
    """N1 complete, N3 after N1: `layers` and `show N3` say layer 0, and so does every format of `graph`
    (it once said layer 1, counting the complete node's layer). Run as a person would, in a process."""
    import json
    import sys
    path = tmp_path / "dag.yaml"
    path.write_text("topic: t\nworkers: {w: x}\nnodes:\n"
                    "  - {id: N1, title: a, file_surface: [a], discipline: w, complete: true}\n"
                    "  - {id: N2, title: b, file_surface: [b], discipline: w}\n"
                    "  - {id: N3, title: c, file_surface: [c], discipline: w, depends_on: [N1]}\n"
                    "  - {id: N4, title: d, file_surface: [d], discipline: w, depends_on: [N3, N2]}\n")

    def orchestrate(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "orchestrate", *args, "--dag", str(path)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert json.loads(orchestrate("layers", "--json"))["layers"] == [["N2", "N3"], ["N4"]]
    assert orchestrate("show", "N3").startswith("N3: layer 0")
    assert orchestrate("graph").splitlines()[:3] == [
        "complete (settled before the run, in no layer): [N1 complete]", "layer 0: [N2]  [N3]", "layer 1: [N4]"]
    drawn = orchestrate("graph", "--format", "mermaid")
    assert [ln.strip() for ln in drawn.splitlines() if ln.strip().startswith("%%")] == [
        "%% complete (settled before the run, in no layer): N1", "%% layer 0: N2 N3", "%% layer 1: N4"]
    assert sorted(parse_mermaid(drawn)["nodes"].values()) == ["N1 complete", "N2", "N3", "N4"]
    dot = orchestrate("graph", "--format", "dot")
    assert ('// complete (settled before the run, in no layer)\n  { rank=same; "N1" }' in dot
            and '// layer 0\n  { rank=same; "N2" "N3" }' in dot and '// layer 1\n  { rank=same; "N4" }' in dot)
    if shutil.which("dot"):
        assert subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True).returncode == 0
