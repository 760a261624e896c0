"""Where case is not told apart (macOS's and Windows' default checkouts), `SRC/util.py` and `src/util.py` are
one file: two concurrent nodes claiming them would clobber each other in the user's checkout, so their
surfaces overlap (rv72: a worker's request for `SRC/util.py` was widened beside a node holding `src/util.py`,
and the campaign merged both)."""
from __future__ import annotations

import pytest

from gates import collision_check
from orchestrate.dag.surface import overlap, overlap_as_written
from orchestrate.dag.wildmatch import fold


@pytest.mark.parametrize("a, b", [
    ("SRC/util.py", "src/util.py"), ("README.md", "readme.md"), ("Docs/", "docs/*.md"), ("SRC", "src/x/y.py"),
    ("x/[[:upper:]]*", "x/a"), ("x/[[:lower:]]", "x/Q"), ("x/[A-C]", "x/b"), ("Ünï/", "ünï/a"),
    # composed and decomposed accents: one name on macOS
    ("docs/caf\u00e9.md", "docs/cafe\u0301.md"), ("CAFE\u0301/", "caf\u00e9/x"), ("x/*\u00e9", "x/ae\u0301"),
])
def test_tokens_that_name_one_path_where_case_is_not_told_apart_overlap(a, b):
    assert not overlap_as_written(a, b)
    assert overlap(a, b) and overlap(b, a)


@pytest.mark.parametrize("a, b", [("src/util.py", "src/utils.py"), ("SRC/a", "src/b"), ("x/[A-C]", "x/d")])
def test_folding_adds_no_overlap_between_different_names(a, b):
    assert not overlap(a, b)


def test_a_fold_lowers_names_and_widens_cased_classes():
    assert fold("Src/[[:upper:]]x[[:lower:]]") == "src/[a-z]x[a-z]"


def test_a_fold_composes_accents_and_a_names_fold_reads_no_glob():
    from orchestrate.dag.wildmatch import fold_name
    assert fold("Cafe\u0301/[A]") == "caf\u00e9/[a]"
    assert fold_name("E\u0301[A].txt") == "\u00e9[a].txt"  # a name: its brackets are its own text


def test_a_request_for_a_case_variant_of_a_concurrent_path_serializes():
    verdict = collision_check.check(["SRC/util.py"], {"B": ["src/util.py"]})
    assert verdict.code == 3, verdict.summary
    assert [i.detail for i in verdict.items] == ["B surface src/util.py"]


def test_validate_names_case_variant_surfaces_of_concurrent_nodes(tmp_path, orch):
    dag = tmp_path / "dag.yaml"
    dag.write_text("topic: t\nworkers: {sh: x}\nnodes:\n"
                   "  - {id: A, discipline: sh, file_surface: [SRC/util.py]}\n"
                   "  - {id: B, discipline: sh, file_surface: [src/util.py, lib/]}\n"
                   "  - {id: C, discipline: sh, file_surface: [Lib/x.py], depends_on: [B]}\n")
    result = orch("validate", "--dag", str(dag))
    assert result.rc == 1
    assert (f"{dag}:5: nodes.B.file_surface: concurrent nodes `A` and `B` both claim `SRC/util.py` ~ "
            "`src/util.py` (one path where case or accents' composition is not told apart, as on macOS and "
            "Windows)") in result.out
    assert "nodes.C" not in result.out  # C runs after B: one after the other, case or not


# rv73: a fold must cover the lower-case form of every path the token covers. Lowering a class's text does
# not: `[!A-Z]` covers `a`, `[!a-z]` does not; `[A-z]` covers `_`, `[a-z]` does not; `[a-Z]` is `a` alone in
# git, `[a-z]` invents 25 more letters.
@pytest.mark.parametrize("a, b", [
    ("src/[!A-Z]*.py", "src/A.py"), ("src/[!a-z]*.py", "SRC/a.py"), ("x/[![:lower:]]", "x/a"),
    ("x/[![:upper:]]", "x/A"), ("Docs/[A-z]*.md", "docs/_index.md"), ("SRC/x[Z-a]", "src/x_"),
])
def test_a_class_is_folded_by_what_it_matches_not_by_its_text(a, b):
    assert not overlap_as_written(a, b)
    assert overlap(a, b) and overlap(b, a)


@pytest.mark.parametrize("a, b", [("x/[a-Z]", "x/b"), ("x/[[:UPPER:]]", "x/a")])
def test_a_fold_invents_no_name_the_class_never_matched(a, b):
    assert not overlap(a, b) and not overlap(b, a)


def test_validation_folds_classes_by_what_they_match():
    from orchestrate.dag import graph
    surfaces = {"A": ("src/[!A-Z]*.py",), "B": ("src/A.py",), "C": ("x/[a-Z]",), "D": ("x/b",)}
    found = graph.surface_conflicts(surfaces, {n: [] for n in surfaces})
    assert found == [("A", "B", [("src/[!A-Z]*.py", "src/A.py")])]


def test_validation_compares_mixed_case_globs_once(monkeypatch):
    """rv73: the index compared every pair as written (overlap folding each again) and then all again folded:
    10,000 globs with capitals took 3.4 times as long as the same in lower case. One pass over the folds."""
    from orchestrate.dag import graph, surface
    calls = []
    real = surface.overlap_as_written
    monkeypatch.setattr(surface, "overlap_as_written", lambda a, b: calls.append((a, b)) or real(a, b))

    def compared(case):
        calls.clear()
        surfaces = {f"N{i}": (case(f"src/mod{i}_*.py"),) for i in range(40)}
        assert graph.surface_conflicts(surfaces, {n: [] for n in surfaces}) == []
        return len(calls)

    assert compared(lambda t: t.replace("src", "Src").replace("mod", "Mod")) == compared(str) > 0


def test_one_pass_over_folds_finds_every_overlap_the_pairs_do():
    import itertools
    import random
    from orchestrate.dag import graph, surface
    rng = random.Random(73)
    pieces = ["src", "Src", "SRC", "a", "A", "*", "**", "[!a-z]*", "[A-Z]", "x?.py", "X.py", "docs", "[[:upper:]]"]
    for _ in range(200):
        tokens = sorted({"/".join(rng.choice(pieces) for _ in range(rng.randint(1, 3))) for _ in range(6)})
        tokens = [t for t in tokens if surface.token_problem(t) is None]
        expected = {(a, b) for a, b in itertools.combinations(tokens, 2) if surface.overlap(a, b)}
        found = {(a, b) for a, b in graph._token_pairs(tokens) if a != b}
        assert found == expected, tokens


# A path a node adds beside a name of its folder that differs in case alone: one file on macOS and Windows,
# so under `src/a*` a node would overwrite `src/A1.py` (outside it) in your checkout.

def _commit(repo, files: dict[str, str]) -> str:
    repo.write(files)
    repo.git("add", "-A")
    repo.git("commit", "-qm", "x")
    return repo.git("rev-parse", "HEAD")


def test_names_one_with_another_of_their_folder_are_found_only_when_the_change_made_them(repo):
    from gates.shared.case_names import collisions
    base = _commit(repo, {"src/A1.py": "a\n", "src/lib/x.py": "x\n", "README.md": "r\n", "readme.md": "r\n"})
    head = _commit(repo, {"src/a1.py": "evil\n", "Src/y.py": "y\n", "src/Lib/z.py": "z\n", "src/new.py": "n\n",
                          "README.md": "changed\n"})
    added = ["src/a1.py", "Src/y.py", "src/Lib/z.py", "src/new.py"]
    assert collisions(repo, base, head, added) == {"src/a1.py": "src/A1.py", "Src/y.py": "src",
                                                   "src/Lib/z.py": "src/lib"}
    assert collisions(repo, base, head, ["README.md"]) == {}  # the pair was there before the change


def test_a_name_added_with_its_accents_composed_otherwise_is_found(repo):
    from gates.shared.case_names import collisions
    base = _commit(repo, {"docs/caf\u00e9.md": "mine\n"})
    head = _commit(repo, {"docs/cafe\u0301.md": "evil\n", "docs/other.md": "fine\n"})
    found = collisions(repo, base, head, ["docs/cafe\u0301.md", "docs/other.md"])
    assert found == {"docs/cafe\u0301.md": "docs/caf\u00e9.md"}


def test_the_gate_refuses_a_case_twin_of_a_file_outside_the_surface(repo):
    from gates import reconcile_node
    from gates.shared.case_names import collisions
    base = _commit(repo, {"src/A1.py": "a\n"})
    head = _commit(repo, {"src/a1.py": "evil\n", "src/a2.py": "fine\n"})
    changes = reconcile_node.changes_between(repo, base, head)
    found = collisions(repo, base, head, reconcile_node.added(changes))
    verdict = reconcile_node.check("N", ["src/a*"], changes, found)
    assert verdict.code == 1 and verdict.data["undeclared"] == ["src/a1.py"]
    assert "one with src/A1.py, outside the declared surface of N" in verdict.items[0].detail
    assert reconcile_node.check("N", ["src/"], changes, found).code == 0  # both are the node's: its own affair


def test_a_campaign_does_not_merge_a_case_twin_of_a_file_outside_the_surface(tmp_path, orch):
    from tests.engine_helpers import campaign_repo, journal
    dag = ("topic: twin\nworkers: {sh: ./work.sh}\ndefaults: {max_attempts: 1}\n"
           "nodes:\n  - {id: A, title: a, file_surface: ['src/a*'], discipline: sh}\n")
    repo = campaign_repo(tmp_path, dag, "#!/bin/sh\necho evil > src/a1.py\n", files={"src/A1.py": "mine\n"})
    result = orch("run", cwd=repo)
    assert result.rc == 75 and "seam realignment for node A" in result.out, result.out + result.err
    assert "src/a1.py" not in repo.git("ls-tree", "-r", "--name-only", "campaign/twin").split()
    gate = [e["context"] for e in journal(repo, "twin")
            if e["kind"] == "gate" and e["context"].get("gate") == "reconcile-node"][-1]
    assert any("one with src/A1.py" in line for line in gate["items"]), gate
