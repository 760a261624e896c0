"""Golden DAG cases: each file in tests/data/dags states its expected layers or its expected problems."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from orchestrate.dag.load import check_dag

CASES = sorted((Path(__file__).parent / "data" / "dags").glob("*.yaml"))


def expectations(path: Path) -> tuple[list | None, list[tuple[int, str, str]]]:
    layers, problems = None, []
    for line in path.read_text().splitlines():
        if m := re.match(r"# expect-layers: (.*)", line):
            layers = json.loads(m.group(1))
        elif m := re.match(r"# expect-problem: (\d+) (\S+) (.*)", line):
            problems.append((int(m.group(1)), m.group(2), m.group(3)))
    assert layers is not None or problems, f"{path.name} states no expectation"
    return layers, problems


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_golden_case(path, orch):
    layers, expected = expectations(path)
    dag, problems = check_dag(path)
    result = orch("validate", "--dag", path, "--json")
    if layers is not None:
        assert problems == [], problems
        assert dag.layers() == layers
        assert result.rc == 0 and json.loads(result.out) == []
        assert json.loads(orch("layers", "--dag", path, "--json").out) == {"layer_count": len(layers), "layers": layers}
        return
    assert dag is None
    assert {(p.line, p.code) for p in problems} == {(line, code) for line, code, _ in expected}, problems
    for line, code, text in expected:
        assert any(p.line == line and p.code == code and text in p.message for p in problems), (text, problems)
    assert result.rc == 1
    listed = json.loads(result.out)
    assert all(set(p) == {"file", "line", "field", "code", "message"} for p in listed)
    plain = orch("validate", "--dag", path)
    assert plain.rc == 1 and "Traceback" not in plain.err
    for line, _, _ in expected:
        assert f"{path}:{line}: " in plain.out
