"""trial-merge (predicate.md §8.10): regressions, conflicts and pre-existing failures, judged in a throwaway
worktree that leaves the user's checkout, worktrees, branches and locks exactly as they were."""
from __future__ import annotations

import json

import pytest

from gates import trial_merge
from orchestrate import git, proc
from orchestrate.dag.model import Check
from tests.helpers import make_repo

# Runs every consumer script present; vacuously green where there is none (the branch alone).
CONSUMERS = 'for f in use*.sh; do [ -e "$f" ] || continue; sh "$f" >/dev/null 2>&1 || exit 3; done'


def state(repo):
    """Everything a trial merge must leave untouched in the user's repository."""
    return {
        "status": repo.git("status", "--porcelain=v1", "--untracked-files=all"),
        "head": repo.head(),
        "symbolic": repo.git("symbolic-ref", "-q", "HEAD", check=False),
        "index": repo.git("ls-files", "--stage"),
        "worktrees": repo.git("worktree", "list", "--porcelain"),
        "branches": repo.git("branch", "--list", "--all"),
        "locks": sorted(str(p) for p in (repo / ".git").rglob("*.lock")),
        "scratch": (repo / ".scratch").exists(),
        "merge_head": (repo / ".git" / "MERGE_HEAD").exists(),
    }


@pytest.fixture
def lib(repo):
    repo.commit("library", {"lib.sh": "helper() { echo hi; }\n"})
    return repo


@pytest.fixture
def untouched(lib):
    """Assert after the test that the repository is exactly as the test left it before the gate ran."""
    snap = {}

    def take():
        snap.update(state(lib))

    yield take
    if snap:
        assert state(lib) == snap


def branch(repo, name, files=None, *, mv=None, start="main"):
    repo.git("switch", "-q", "-c", name, start)
    if mv:
        repo.git("mv", *mv)
    repo.commit(name, files)
    repo.git("switch", "-q", "main")


# ---- (a) a rename that breaks an already-merged consumer ----------------------------------------

@pytest.mark.parametrize("rename", ["function", "file"])
def test_a_rename_breaking_a_merged_consumer_is_a_regression(lib, untouched, orch, rename):
    if rename == "function":
        branch(lib, "node/t/rename", {"lib.sh": "assist() { echo hi; }\n"})
    else:
        branch(lib, "node/t/rename", mv=("lib.sh", "tools.sh"))
    lib.commit("consumer", {"use.sh": ". ./lib.sh\nhelper\n"})  # lands on main after the branch forked
    assert not {p for _, p in git.changed_paths(lib, "main~1", "main")} & \
        {p for _, p in git.changed_paths(lib, "main~1", "node/t/rename")}  # disjoint files
    consumer = [Check("consumer", CONSUMERS)]
    assert trial_merge.check(lib, "node/t/rename", "node/t/rename", consumer).code == 0  # green on the branch alone
    assert trial_merge.check(lib, "main", "main", consumer).code == 0  # and on onto alone
    untouched()

    v = trial_merge.check(lib, "node/t/rename", "main", consumer + [Check("fine", "true")])
    assert v.code == 1 and v.summary == "FAIL: 1 regression(s)"
    assert [(i.status, i.subject) for i in v.items] == [("REGRESSION", "consumer"), ("PASS", "fine")]
    assert v.items[0].detail == "rc 3 only after merging node/t/rename"
    assert v.data["checks"][0] | {"seconds": 0} == {"name": "consumer", "rc": 3, "seconds": 0, "pre_existing": False}
    assert v.data["merged_tree"] and v.data["conflicts"] == []

    out = orch("gate", "trial-merge", "node/t/rename", "--repo", lib, "--check", f"consumer={CONSUMERS}")
    assert out.rc == 1 and "REGRESSION consumer  <- rc 3 only after merging node/t/rename" in out.out
    assert out.out.rstrip().endswith("FAIL: 1 regression(s)")


# ---- (b) a clean merge with checks that pass -----------------------------------------------------

def test_b_unrelated_passing_checks_are_clean(lib, untouched, orch):
    branch(lib, "node/t/A", {"a.txt": "a\n"})
    lib.commit("main moves on", {"b.txt": "b\n"})
    untouched()
    # a.txt exists only on the branch: these pass only if the checks really run in the merged tree,
    # which is a detached checkout with the merge in progress (never the user's checkout on main).
    checks = ["lib=grep -q helper lib.sh", "merged=test -f a.txt && test -f b.txt",
              'detached=test "$(git rev-parse --abbrev-ref HEAD)" = HEAD && git rev-parse -q --verify MERGE_HEAD']
    out = orch("gate", "trial-merge", "node/t/A", "--repo", lib, *[a for c in checks for a in ("--check", c)])
    assert out.rc == 0, out
    assert out.out.splitlines() == ["PASS       lib", "PASS       merged", "PASS       detached",
                                    "CLEAN: merged cleanly; 3 check(s) pass"]


def test_b_merged_tree_is_the_tree_of_the_merge(lib, untouched):
    branch(lib, "node/t/A", {"a.txt": "a\n"})
    lib.commit("main moves on", {"b.txt": "b\n"})
    untouched()
    v = trial_merge.check(lib, "node/t/A", "main", [])
    assert v.code == 0 and v.summary == "CLEAN: merged cleanly; 0 check(s) pass" and v.items == ()
    listed = lib.git("ls-tree", "--name-only", v.data["merged_tree"]).split()
    assert listed == ["README.md", "a.txt", "b.txt", "lib.sh"]
    assert v.data["branch_sha"] == lib.git("rev-parse", "node/t/A") and v.data["onto_sha"] == lib.head()


def test_b_an_already_merged_branch_is_clean(lib, untouched):
    branch(lib, "node/t/old", {"a.txt": "a\n"})
    lib.git("merge", "-q", "--no-ff", "--no-edit", "node/t/old")
    untouched()
    v = trial_merge.check(lib, "node/t/old", "HEAD", [Check("a", "test -f a.txt")])
    assert v.code == 0 and v.data["merged_tree"] == lib.git("rev-parse", "HEAD^{tree}")


# ---- (c) conflicting edits ----------------------------------------------------------------------

def test_c_conflicting_edits_are_3_listing_the_paths(lib, untouched, orch):
    branch(lib, "node/t/B", {"lib.sh": "helper() { echo B; }\n", "README.md": "B\n", "new.txt": "B\n"})
    lib.commit("main edits", {"lib.sh": "helper() { echo main; }\n", "README.md": "main\n"})
    untouched()
    v = trial_merge.check(lib, "node/t/B", "main", [Check("never", "exit 9")])
    assert v.code == 3 and v.summary == "CONFLICT: 2 path(s) conflict"
    assert [i.line() for i in v.items] == ["CONFLICT   README.md", "CONFLICT   lib.sh"]
    assert v.data["conflicts"] == ["README.md", "lib.sh"] and v.data["merged_tree"] is None
    assert v.data["checks"] == []  # no check runs on a tree that does not exist

    out = orch("gate", "trial-merge", "node/t/B", "--onto", "main", "--repo", lib, "--check", "c=true")
    assert out.rc == 3 and "CONFLICT   lib.sh" in out.out and "CONFLICT: 2 path(s) conflict" in out.out


def test_c_modify_delete_is_a_conflict_too(lib, untouched):
    lib.git("switch", "-q", "-c", "node/t/del")
    lib.git("rm", "-q", "lib.sh")
    lib.commit("delete the library")
    lib.git("switch", "-q", "main")
    lib.commit("main edits", {"lib.sh": "helper() { echo changed; }\n"})
    untouched()
    v = trial_merge.check(lib, "node/t/del", "main", [])
    assert v.code == 3 and "lib.sh" in v.data["conflicts"]


# ---- (d) a check that fails without the merge ---------------------------------------------------

def test_d_a_check_failing_on_onto_is_pre_existing(lib, untouched, orch):
    branch(lib, "node/t/C", {"c.txt": "c\n"})
    untouched()
    v = trial_merge.check(lib, "node/t/C", "main", [Check("broken", "test -f never.txt"), Check("ok", "true")])
    assert v.code == 0 and v.summary == "CLEAN: merged cleanly; 1 check(s) pass, 1 pre-existing failure(s)"
    assert v.items[0].line() == "PRE-EXISTING broken  <- fails without the merge too (rc 1)"
    assert [c["pre_existing"] for c in v.data["checks"]] == [True, False]

    out = orch("gate", "trial-merge", "node/t/C", "--repo", lib, "--check", "broken=test -f never.txt")
    assert out.rc == 0 and "PRE-EXISTING broken" in out.out


def test_d_pre_existing_and_regression_together_fail_on_the_regression(lib, untouched):
    branch(lib, "node/t/D", {"lib.sh": "renamed() { :; }\n"})
    untouched()
    v = trial_merge.check(lib, "node/t/D", "main", [Check("old", "exit 5"), Check("lib", "grep -q helper lib.sh")])
    assert v.code == 1 and v.summary == "FAIL: 1 regression(s)"
    assert [(i.status, i.subject) for i in v.items] == [("PRE-EXISTING", "old"), ("REGRESSION", "lib")]


def test_d_a_check_that_leaves_files_behind_is_rerun_on_a_fresh_onto(lib, untouched):
    # The check writes a marker and fails; on a reused worktree the rerun would see the marker and pass.
    branch(lib, "node/t/E", {"e.txt": "e\n"})
    untouched()
    v = trial_merge.check(lib, "node/t/E", "main", [Check("once", "test ! -e mark && touch mark && exit 1")])
    assert v.code == 0 and v.items[0].status == "PRE-EXISTING"


def test_d_a_check_timing_out_everywhere_is_pre_existing(lib, untouched):
    branch(lib, "node/t/slow", {"s.txt": "s\n"})
    untouched()
    v = trial_merge.check(lib, "node/t/slow", "main", [Check("slow", "sleep 30", timeout=1)])
    assert v.code == 0 and v.data["checks"][0]["rc"] == 124 and "timed out" in v.items[0].detail


# ---- (e) nothing left behind --------------------------------------------------------------------

def test_e_a_dirty_checkout_is_left_exactly_as_it_was(lib, untouched):
    branch(lib, "node/t/A", {"a.txt": "a\n"})
    lib.write({"lib.sh": "helper() { echo dirty; }\n", "untracked.txt": "u\n", "staged.txt": "s\n"})
    lib.git("add", "staged.txt")
    lib.git("worktree", "add", "-q", str(lib.parent / "other"), "-b", "node/t/other")
    untouched()
    before = state(lib)
    assert before["status"].count("\n") == 2  # really dirty: modified, staged, untracked
    for br, onto, code in (("node/t/A", "main", 0), ("node/t/nope", "main", 2), ("node/t/A", "nope", 2)):
        assert trial_merge.check(lib, br, onto, [Check("f", "exit 1")]).code == code
        assert state(lib) == before


def test_e_the_default_scratch_lives_under_the_main_worktree_and_is_removed(lib, untouched):
    branch(lib, "node/t/A", {"a.txt": "a\n"})
    linked = lib.parent / "linked"
    lib.git("worktree", "add", "-q", "--detach", str(linked), "main")
    untouched()
    v = trial_merge.check(linked, "node/t/A", "main", [Check("where", 'case "$PWD" in */repo/.scratch/trial/merge-*) ;; *) exit 1;; esac')])
    assert v.code == 0, v.lines()
    assert not (lib / ".scratch").exists()


def test_e_an_existing_scratch_dir_is_kept_and_emptied(lib, untouched, tmp_path):
    branch(lib, "node/t/A", {"a.txt": "a\n"})
    (lib / ".scratch" / "trial").mkdir(parents=True)
    (lib / ".scratch" / "keep.txt").write_text("mine\n")
    untouched()
    assert trial_merge.check(lib, "node/t/A", "main", [Check("f", "exit 1")]).code == 0
    assert list((lib / ".scratch" / "trial").iterdir()) == []
    other = tmp_path / "elsewhere"
    assert trial_merge.check(lib, "node/t/A", "main", [], scratch=other).code == 0
    assert not other.exists()


@pytest.mark.parametrize("where", ["check", "worktree_add", "cleanup"])
def test_e_ctrl_c_leaves_nothing_behind(lib, untouched, monkeypatch, where):
    branch(lib, "node/t/A", {"a.txt": "a\n"})
    untouched()
    seen = []

    def interrupt(*a, **kw):
        raise KeyboardInterrupt

    if where == "check":
        monkeypatch.setattr(proc, "run_shell", interrupt)
    elif where == "worktree_add":
        real = git.worktree_add_detached
        monkeypatch.setattr(git, "worktree_add_detached", lambda *a: (real(*a), seen.append(a[1]), interrupt()))
    else:
        real_remove = git.worktree_remove

        def remove_once(repo, path):  # a second Ctrl-C while cleaning up
            if not seen:
                seen.append(path)
                raise KeyboardInterrupt
            real_remove(repo, path)

        monkeypatch.setattr(git, "worktree_remove", remove_once)
    with pytest.raises(KeyboardInterrupt):
        trial_merge.check(lib, "node/t/A", "main", [Check("c", "true")])
    assert all(not p.exists() for p in seen)


def test_e_works_without_a_git_identity(lib, untouched, monkeypatch, tmp_path):
    branch(lib, "node/t/A", {"a.txt": "a\n"})
    untouched()
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.gitconfig: no user.name, no user.email
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    assert trial_merge.check(lib, "node/t/A", "main", [Check("a", "test -f a.txt")]).code == 0


def test_keep_worktree_receives_a_plain_copy_of_the_merge(lib, untouched, tmp_path):
    branch(lib, "node/t/A", {"a.txt": "a\n"})
    branch(lib, "node/t/B", {"lib.sh": "helper() { echo B; }\n"})
    lib.commit("main edit", {"lib.sh": "helper() { echo main; }\n"})
    untouched()
    clean, conflict = tmp_path / "clean", tmp_path / "conflict"
    assert trial_merge.check(lib, "node/t/A", "main", [Check("w", "touch written")], keep_worktree=clean).code == 0
    assert sorted(p.name for p in clean.iterdir()) == ["README.md", "a.txt", "lib.sh"]  # no .git, no check output
    assert trial_merge.check(lib, "node/t/B", "main", [], keep_worktree=conflict).code == 3
    assert "<<<<<<<" in (conflict / "lib.sh").read_text()
    assert trial_merge.check(lib, "node/t/A", "main", [], keep_worktree=clean).code == 2  # not empty


# ---- environment errors and the CLI ------------------------------------------------------------

def test_unknown_branch_or_ref_and_missing_repo_are_2(lib, untouched, orch, tmp_path):
    untouched()
    v = trial_merge.check(lib, "node/t/none", "main", [])
    assert v.code == 2 and "node/t/none" in v.summary and v.data["merged_tree"] is None
    assert trial_merge.check(lib, "main", "no-such-ref", []).code == 2
    assert trial_merge.check(tmp_path / "missing", "main", "HEAD", []).code == 2
    (tmp_path / "plain").mkdir()
    assert trial_merge.check(tmp_path / "plain", "main", "HEAD", []).code == 2
    out = orch("gate", "trial-merge", "node/t/none", "--repo", lib)
    assert out.rc == 2 and "node/t/none" in out.err and "Traceback" not in out.err


def test_unrelated_histories_cannot_start_a_merge_and_are_2(lib, untouched, tmp_path):
    stranger = make_repo(tmp_path / "stranger", {"x.txt": "x\n"})
    lib.git("fetch", "-q", str(stranger), "main:other")
    untouched()
    v = trial_merge.check(lib, "other", "main", [])
    assert v.code == 2 and "could not merge" in v.summary


@pytest.mark.parametrize("args", [[], ["main", "--check", "nocommand"], ["main", "--check", "=true"],
                                  ["main", "--timeout", "0"], ["main", "--timeout", "soon"],
                                  ["main", "--check", "a=true", "--check", "a=false"], ["main", "--bogus"]])
def test_wrong_arguments_are_2(lib, untouched, orch, args):
    untouched()
    out = orch("gate", "trial-merge", *args, "--repo", lib)
    assert out.rc == 2 and "Traceback" not in out.err and out.err


def test_missing_branch_prints_usage(orch):
    out = orch("gate", "trial-merge")
    assert out.rc == 2 and "usage:" in out.err and "BRANCH" in out.err


def test_help_lists_the_exit_codes(orch):
    out = orch("gate", "trial-merge", "--help")
    assert out.rc == 0 and "Exit codes" in out.out
    for code in ("0  CLEAN", "1  FAIL", "2  environment", "3  CONFLICT"):
        assert code in out.out


def test_json_verdict(lib, untouched, orch):
    branch(lib, "node/t/A", {"a.txt": "a\n"})
    untouched()
    out = orch("gate", "trial-merge", "node/t/A", "--repo", lib, "--check", "a=test -f a.txt", "--json")
    v = json.loads(out.out)
    assert out.rc == 0 and v["gate"] == "trial-merge" and v["code"] == 0 and v["ok"]
    assert set(v["data"]) >= {"merged_tree", "conflicts", "checks"}
    assert v["data"]["checks"][0]["name"] == "a" and v["data"]["checks"][0]["rc"] == 0


def test_checks_from_the_dag(lib, untouched, orch, tmp_path):
    branch(lib, "node/t/rename", {"lib.sh": "assist() { :; }\n"})
    dag = tmp_path / "dag.yaml"
    dag.write_text('topic: t\nworkers:\n  core: "true"\nchecks:\n  - {name: lib, run: "grep -q helper lib.sh"}\n'
                   'nodes:\n  - {id: A, title: a, depends_on: [], file_surface: ["lib.sh"], discipline: core,'
                   ' mitigates: []}\n')
    untouched()
    out = orch("gate", "trial-merge", "node/t/rename", "--repo", lib, "--dag", dag, "--check", "fine=true")
    assert out.rc == 1 and "REGRESSION lib" in out.out and "PASS       fine" in out.out
    assert orch("gate", "trial-merge", "node/t/rename", "--repo", lib, "--dag", tmp_path / "none.yaml").rc == 2


def test_module_entry_point(lib, untouched):
    import sys
    branch(lib, "node/t/A", {"a.txt": "a\n"})
    untouched()
    done = proc.run([sys.executable, "-m", "gates.trial_merge", "node/t/A", "--check", "a=test -f a.txt"],
                    cwd=lib, env={"PYTHONPATH": str(trial_merge.__file__).rsplit("/gates/", 1)[0]})
    assert done.rc == 0 and "CLEAN" in done.stdout
