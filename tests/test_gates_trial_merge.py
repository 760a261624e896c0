"""trial-merge: reference/predicate.md §8.10, and nothing left behind."""
from __future__ import annotations

import pytest

from gates import trial_merge
from gates.core.dagfile import Check


def _state(repo):
    return (repo.git("status", "--porcelain"), repo.head(), repo.git("worktree", "list", "--porcelain").count("worktree "),
            repo.git("branch", "--list"), sorted(str(p) for p in (repo / ".git").rglob("*.lock")))


@pytest.fixture
def lib(repo):
    repo.commit("lib", {"lib.sh": "helper() { echo hi; }\n"})
    return repo


def test_a_clean_merge_with_passing_checks_is_0(lib, orch):
    base = lib.head()
    lib.git("switch", "-q", "-c", "node/t/A")
    lib.commit("A", {"a.txt": "a\n"})
    lib.git("switch", "-q", "main")
    before = _state(lib)
    result = orch("gate", "trial-merge", "node/t/A", "--onto", base, "--repo", lib, "--check", "lib=grep -q helper lib.sh")
    assert result.rc == 0 and "CLEAN" in result.out
    assert _state(lib) == before


def test_a_regression_names_the_check(lib):
    lib.git("switch", "-q", "-c", "node/t/rename")
    lib.git("mv", "lib.sh", "tools.sh")
    lib.commit("rename the library")
    lib.git("switch", "-q", "main")
    lib.commit("consumer", {"use.sh": ". ./lib.sh && helper\n"})
    before = _state(lib)
    v = trial_merge.check(lib, "node/t/rename", "main", [Check("consumer", "sh use.sh")])
    assert v.code == 1 and v.items[0].status == "REGRESSION" and v.items[0].subject == "consumer"
    assert _state(lib) == before


def test_a_conflict_is_3_and_lists_the_paths(lib, orch):
    lib.git("switch", "-q", "-c", "node/t/B")
    lib.commit("B", {"lib.sh": "helper() { echo B; }\n"})
    lib.git("switch", "-q", "main")
    lib.commit("main edit", {"lib.sh": "helper() { echo main; }\n"})
    before = _state(lib)
    result = orch("gate", "trial-merge", "node/t/B", "--repo", lib)
    assert result.rc == 3 and "CONFLICT   lib.sh" in result.out
    assert _state(lib) == before


def test_a_check_failing_without_the_merge_is_pre_existing(lib):
    lib.git("switch", "-q", "-c", "node/t/C")
    lib.commit("C", {"c.txt": "c\n"})
    lib.git("switch", "-q", "main")
    v = trial_merge.check(lib, "node/t/C", "main", [Check("broken", "test -f never.txt"), Check("ok", "true")])
    assert v.code == 0 and v.items[0].status == "PRE-EXISTING"


def test_unknown_branch_and_bad_arguments_are_2(lib, orch):
    assert orch("gate", "trial-merge", "node/t/none", "--repo", lib).rc == 2
    assert orch("gate", "trial-merge", "main", "--repo", lib, "--check", "nocommand").rc == 2
    assert orch("gate", "trial-merge").rc == 2
