"""authorize, reconcile-node, collision-check: reference/predicate.md §8.1 and the holes of §9.2."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gates import authorize, collision_check, reconcile_node

DAG = """\
workers: {core: x}
nodes:
  - {id: N, depends_on: [], file_surface: ["src/", "docs/x.md"], discipline: core}
  - {id: S, depends_on: [], file_surface: ["lib/"], discipline: core}
  - {id: T, depends_on: [], file_surface: ["templates/*.md"], discipline: core}
"""


@pytest.fixture
def dag(tmp_path):
    path = tmp_path / "dag.yaml"
    path.write_text(DAG)
    return path


@pytest.mark.parametrize("paths,against,rc", [
    (["newdir/file.py"], ["src/,docs/"], 0),
    (["docs/x.md"], ["src/,docs/"], 3),
    (["README.md"], ["README.md"], 3),
    (["templates/IBC.md"], ["templates/*.md"], 3),
    (["templates/sub/x.md"], ["templates/*.md"], 0),
    (["a.txt"], [], 0),
])
def test_collision_check_cases(orch, paths, against, rc):
    args = [x for p in paths for x in ("--path", p)] + [x for a in against for x in ("--against-surfaces", a)]
    result = orch("gate", "collision-check", *args)
    assert result.rc == rc, result.out + result.err
    assert ("SERIALIZE" if rc == 3 else "WIDEN") in result.out


def test_collision_check_needs_a_path_and_refuses_unsafe_ones(orch):
    assert orch("gate", "collision-check", "--against-surfaces", "a").rc == 2
    assert orch("gate", "collision-check", "--path", "../x", "--against-surfaces", "a").rc == 2


def test_collision_check_against_the_dags_concurrent_nodes(orch, dag):
    result = orch("gate", "collision-check", "--dag", dag, "--node", "S", "--path", "docs/x.md")
    assert result.rc == 3 and "N surface docs/x.md" in result.out
    assert orch("gate", "collision-check", "--dag", dag, "--node", "S", "--path", "lib2/").rc == 0


@pytest.mark.parametrize("paths,rc", [
    (["src/a.py", "docs/x.md"], 0), (["src/a.py", "docs/y.md"], 1), (["templates/IBC.md"], 0),
    (["templates/sub/IBC.md"], 1), (["lib/z.py"], 0),
])
def test_authorize_cases(orch, dag, paths, rc):
    result = orch("gate", "authorize", "--dag", dag, *[x for p in paths for x in ("--path", p)])
    assert result.rc == rc, result.out


@pytest.mark.parametrize("module,extra,summary", [
    ("gates.authorize", [], "PASS: no paths to authorize"),
    ("gates.reconcile_node", ["--node", "N"], "PASS: node N touched nothing"),
])
def test_no_paths_on_stdin_pass(dag, module, extra, summary):
    done = subprocess.run([sys.executable, "-m", module, "--dag", str(dag), *extra], input="",
                          capture_output=True, text=True)
    assert done.returncode == 0 and summary in done.stdout


def test_authorize_reads_paths_from_stdin(dag):
    done = subprocess.run([sys.executable, "-m", "gates.authorize", "--dag", str(dag)], input="src/a.py\n\nzzz\n",
                          capture_output=True, text=True)
    assert done.returncode == 1 and "DENY       zzz" in done.stdout and "OK         src/a.py  <- node N" in done.stdout


def test_authorize_usage_errors(orch, tmp_path):
    assert orch("gate", "authorize", "--path", "x").rc == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes: [\n")
    result = orch("gate", "authorize", "--dag", bad, "--path", "x")
    assert result.rc == 2 and "Traceback" not in result.err


@pytest.mark.parametrize("paths,rc", [
    (["src/a.py", "docs/x.md"], 0), (["src/a.py", "docs/y.md"], 1), (["lib/z.py"], 1),
])
def test_reconcile_node_cases(orch, dag, paths, rc):
    result = orch("gate", "reconcile-node", "--dag", dag, "--node", "N", *[x for p in paths for x in ("--path", p)])
    assert result.rc == rc
    if paths == ["lib/z.py"]:
        assert "UNDECLARED" in result.out  # a sibling's surface grants nothing


def test_reconcile_node_unknown_node_is_2_with_a_hint(orch, dag):
    result = orch("gate", "reconcile-node", "--dag", dag, "--node", "NN", "--path", "src/a")
    assert result.rc == 2 and "no node `NN`" in result.err and "did you mean `N`" in result.err


def test_a_rename_out_of_the_surface_counts_both_paths(repo, dag, orch):
    repo.commit("seed", {"src/mod.py": "x = 1\n"})
    base = repo.head()
    repo.git("mv", "src/mod.py", "elsewhere.py")
    head = repo.commit("move it out")
    result = orch("gate", "reconcile-node", "--dag", dag, "--node", "N", "--base", base, "--head", head,
                  "--repo", repo)
    assert result.rc == 1
    assert "OK         D src/mod.py" in result.out and "UNDECLARED A elsewhere.py" in result.out


def test_a_rename_into_the_surface_from_a_siblings_is_undeclared(repo, dag, orch):
    repo.commit("seed", {"lib/util.py": "y = 2\n"})
    base = repo.head()
    (repo / "src").mkdir()
    repo.git("mv", "lib/util.py", "src/util.py")
    head = repo.commit("take it")
    verdict = reconcile_node.check("N", ("src/", "docs/x.md"), reconcile_node.changes_between(repo, base, head))
    assert verdict.code == 1 and verdict.data["undeclared"] == ["lib/util.py"]


def test_a_deletion_out_of_the_surface_is_undeclared(repo, dag, orch):
    repo.commit("seed", {"README2.md": "x\n"})
    base = repo.head()
    repo.git("rm", "-q", "README2.md")
    head = repo.commit("delete")
    result = orch("gate", "reconcile-node", "--dag", dag, "--node", "N", "--base", base, "--head", head, "--repo", repo)
    assert result.rc == 1 and "UNDECLARED D README2.md" in result.out


def test_a_worktree_counts_uncommitted_and_untracked_changes(repo, dag, orch):
    base = repo.head()
    (repo / "src").mkdir()
    (repo / "src" / "new.py").write_text("z\n")
    (repo / "stray.txt").write_text("oops\n")
    result = orch("gate", "reconcile-node", "--dag", dag, "--node", "N", "--worktree", repo, "--base", base)
    assert result.rc == 1 and "A stray.txt" in result.out and "OK         A src/new.py" in result.out


def test_json_verdicts_and_module_entry_points(dag):
    done = subprocess.run([sys.executable, "-m", "gates.collision_check", "--path", "x", "--against-surfaces", "x",
                           "--json"], capture_output=True, text=True)
    verdict = json.loads(done.stdout)
    assert done.returncode == 3 and verdict["code"] == 3 and verdict["items"][0]["status"] == "COLLIDE"


@pytest.mark.parametrize("gate", ["authorize", "reconcile-node", "collision-check", "evaluators", "premise",
                                  "coherence", "adherence", "close-check", "trial-merge"])
def test_every_gate_states_its_exit_codes_and_refuses_bad_arguments(orch, gate):
    helped = orch("gate", gate, "--help")
    assert helped.rc == 0 and "Exit codes" in helped.out and "2 " in helped.out
    wrong = orch("gate", gate, "--no-such-flag")
    assert wrong.rc == 2 and "usage:" in wrong.err and "Traceback" not in wrong.err


def test_the_gate_list_has_one_line_per_gate(orch):
    out = orch("gate", "--help").out
    for name in ["authorize", "reconcile-node", "collision-check", "evaluators", "premise", "coherence",
                 "adherence", "close-check", "trial-merge"]:
        assert sum(1 for ln in out.splitlines() if ln.strip().startswith(name + " ")) == 1, name


def test_check_functions_are_callable_in_process():
    assert authorize.check({"A": ["x/"]}, ["x/y"]).ok
    assert collision_check.check(["a"], {"B": ["b"]}).code == 0
