"""Conflicts found early (engine/probes.py): after each merge, every landed node waiting for its turn is
trial-merged onto the new campaign head with `git merge-tree`; a conflict reworks it before it is judged.

Concurrent nodes cannot claim overlapping surfaces (the validator refuses them unless one is
serialized, and a serialized node runs after the others have merged), so the conflicts here are ones
git finds between disjoint surfaces: B moves every file of `d/` to `e/` while C adds `d/three.txt`, which
git's directory-rename detection reports as a conflict at `e/three.txt` (CONFLICT (file location)).
"""
from __future__ import annotations

import json
import os
import shutil

import pytest

from orchestrate import git
from orchestrate.errors import GitError
from tests.engine_helpers import campaign_repo, journal
from tests.helpers import make_repo, object_folders_blocked_until_a_failure

WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  A) echo A > a.txt ;;
  B) git mv d e ;;
  C) mkdir -p d && echo "C $ORCH_ATTEMPT" > d/three.txt ;;
  D) echo "D $ORCH_ATTEMPT" > f.txt ;;
esac
git add -A && git commit -qm "$ORCH_NODE attempt $ORCH_ATTEMPT"
"""

FILES = {"d/one.txt": "one: the first file of d\n", "d/two.txt": "two: the second file of d\n"}

# layered: the three land together and merge in id order, so which probe finds what is fixed (under the
# eager schedule the order in which workers return, and so what is landed when a merge moves the head,
# is the workers' timing)
DAG = """\
topic: early
schedule: layered
workers: {{sh: "./work.sh"}}
defaults: {{max_attempts: {attempts}, timeout: 60}}
nodes:
  - {{id: A, title: alpha, file_surface: [a.txt], discipline: sh}}
  - {{id: B, title: bravo, file_surface: [d/one.txt, d/two.txt, e/], discipline: sh}}
  - {{id: C, title: charlie, file_surface: [d/three.txt], discipline: sh}}
"""


def probes_of(entries: list[dict]) -> list[tuple]:
    return [(e["context"]["node"], e["context"]["clean"], e["context"]["conflicts"], e["context"]["merged"])
            for e in entries if e["kind"] == "probe"]


def status_of(repo, orch, topic: str) -> dict:
    return json.loads(orch("status", "--json", "--topic", topic, cwd=repo).out)


def test_a_conflict_with_a_merged_node_reworks_the_node_before_its_turn(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG.format(attempts=2), WORKER, FILES)
    result = orch("run", "--no-interactive", cwd=repo)
    assert result.rc == 75, result.out + result.err  # final acceptance
    entries = journal(repo, "early")
    # after A merged, B was probed clean (B deletes: a rename may meet A's file) while C, which shares no
    # path with A and deletes nothing, needed no merge; after B merged, C conflicts with B's move of d/
    assert probes_of(entries) == [("B", True, [], ["A"]), ("C", False, ["e/three.txt"], ["B"])]
    merges = {e["context"]["node"]: e for e in entries if e["kind"] == "merge"}
    conflict = next(e for e in entries if e["kind"] == "probe" and not e["context"]["clean"])
    assert conflict["context"]["onto"] == merges["B"]["context"]["sha"]
    assert conflict["derived_from"] == [merges["B"]["id"]]
    assert conflict["context"]["head"] == repo.git("rev-parse", "node/early/C")
    # the conflict is known before C's first attempt is judged: no gate ever judged attempt 1, and no
    # merge of it was tried
    at = entries.index(conflict)
    first_gate = next(i for i, e in enumerate(entries) if e["kind"] == "gate" and e["context"].get("node") == "C")
    assert at < first_gate
    assert not [e for e in entries if e["kind"] == "result" and e["context"].get("aborted")]
    rework = next(e for e in entries[at:] if e["kind"] == "node" and e["context"].get("status") == "REWORK")
    assert rework["context"]["node"] == "C" and rework["derived_from"] == [conflict["id"]]
    assert rework["context"]["failures"] == 1  # counted, as the same conflict found at MERGE would be
    reconciles = [i for i, e in enumerate(entries) if e["kind"] == "transition" and e["context"]["to"] == "RECONCILE"]
    assert len(reconciles) == 3 and reconciles[1] < at < reconciles[2]  # A's, B's, then C's second attempt
    # the second attempt started from the head that holds B's merge, and its brief says why
    brief = (repo / ".scratch" / "runs" / "early" / "C" / "brief-2.md").read_text()
    assert "e/three.txt" in brief and "after the merge of node B" in brief
    assert repo.git("rev-parse", "node/early/C+2~1") == merges["B"]["context"]["sha"]
    assert "C: conflict found before its turn (e/three.txt with node B); REWORK" in result.out
    # the clean probes changed nothing; C's second attempt merged; nothing is pending any more
    status = status_of(repo, orch, "early")
    assert {n["id"]: (n["status"], n["attempt"]) for n in status["nodes"]} == {
        "A": ("ACCEPTED", 1), "B": ("ACCEPTED", 1), "C": ("ACCEPTED", 2)}
    assert status["conflicts"] == {}
    tree = repo.git("ls-tree", "-r", "--name-only", "campaign/early").splitlines()
    assert {"a.txt", "e/one.txt", "e/two.txt", "d/three.txt"} <= set(tree)


def test_a_conflict_on_the_last_attempt_is_left_to_merge_and_status_shows_it(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG.format(attempts=1), WORKER, FILES)
    result = orch("run", "--no-interactive", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert ("C: conflict found before its turn (e/three.txt with node B); not reworked now, as that would spend "
            "a last attempt") in result.out
    entries = journal(repo, "early")
    assert probes_of(entries)[-1] == ("C", False, ["e/three.txt"], ["B"])
    # C was judged in its turn and MERGE refused it, escalating as it does without probes
    aborted = [e["context"] for e in entries if e["kind"] == "result" and e["context"].get("aborted")]
    assert aborted == [{"effect": "merge", "node": "C", "aborted": True, "conflicts": ["e/three.txt"]}]
    status = status_of(repo, orch, "early")
    assert status["seams"][0]["seam"] == "realignment" and status["seams"][0]["node"] == "C"
    pending = status["conflicts"]["C"]
    assert pending["paths"] == ["e/three.txt"] and pending["with"] == ["B"]
    assert pending["head"] == repo.git("rev-parse", "node/early/C")
    text = orch("status", "--topic", "early", cwd=repo).out
    assert (f"pending conflict: C at {pending['head'][:12]} conflicts with {pending['onto'][:12]} "
            "(after B merged) in e/three.txt") in text


GROUP = """\
topic: group
schedule: layered
workers: {sh: "./work.sh"}
defaults: {max_attempts: 2, timeout: 60}
nodes:
  - {id: B, title: bravo, file_surface: [d/one.txt, d/two.txt, e/], discipline: sh}
  - {id: C, title: charlie, file_surface: [d/three.txt], discipline: sh}
  - {id: D, title: delta, file_surface: [f.txt], discipline: sh}
edges:
  - {id: cd, from: C, to: D, predicate: LOOPS_WITH}
"""


def test_a_conflicting_group_member_reworks_its_whole_group(tmp_path, orch):
    repo = campaign_repo(tmp_path, GROUP, WORKER, FILES)
    result = orch("run", "--no-interactive", cwd=repo)
    assert result.rc == 75, result.out + result.err
    entries = journal(repo, "group")
    assert probes_of(entries) == [("C", False, ["e/three.txt"], ["B"]), ("D", True, [], ["B"])]
    conflict = next(e for e in entries if e["kind"] == "probe" and not e["context"]["clean"])
    reworked = [e for e in entries if e["kind"] == "node" and e["context"].get("status") == "REWORK"]
    assert [(e["context"]["node"], e["derived_from"]) for e in reworked] == [("C", [conflict["id"]]),
                                                                            ("D", [conflict["id"]])]
    assert "D: its LOOPS_WITH peer C conflicts (e/three.txt with node B); REWORK" in result.out
    brief = (repo / ".scratch" / "runs" / "group" / "D" / "brief-2.md").read_text()
    assert "e/three.txt" in brief and "LOOPS_WITH group lands as one" in brief
    status = status_of(repo, orch, "group")
    assert {n["id"]: (n["status"], n["attempt"]) for n in status["nodes"]} == {
        "B": ("ACCEPTED", 1), "C": ("ACCEPTED", 2), "D": ("ACCEPTED", 2)}
    subjects = repo.git("log", "--first-parent", "--format=%s", "campaign/group").splitlines()
    assert subjects[0].startswith("merge group C+D: ")


# ---- git.merge_tree ---------------------------------------------------------------------------

@pytest.fixture
def moved(tmp_path):
    """main moved d/ to e/; `add` adds d/three.txt on the old base; `other` adds an unrelated file."""
    repo = make_repo(tmp_path / "r", FILES)
    base = repo.head()
    for name, files in (("add", {"d/three.txt": "three\n"}), ("other", {"x.txt": "x\n"})):
        repo.git("switch", "-q", "-c", name, base)
        repo.commit(name, files)
    repo.git("switch", "-q", "main")
    repo.git("mv", "d", "e")
    repo.commit("move d to e")
    return repo


def test_merge_tree_names_the_conflicting_paths_and_touches_no_checkout(moved):
    before = (moved.git("status", "--porcelain"), moved.head(), moved.git("worktree", "list"))
    assert git.merge_tree(moved, "main", "add")[1] == ["e/three.txt"]
    assert git.merge_tree(moved, "main", "other")[1] == []
    assert (moved.git("status", "--porcelain"), moved.head(), moved.git("worktree", "list")) == before


def test_merge_tree_raises_on_what_it_cannot_merge(moved):
    with pytest.raises(GitError):
        git.merge_tree(moved, "main", "0" * 40)


def test_a_merged_tree_git_failed_to_write_is_written_on_the_second_try(moved, monkeypatch):
    """A `git gc --auto` the user's own commit started removes an emptied fan-out folder of the object store
    as merge-tree writes in it: the merge failed (exit 128), and the node with it."""
    moved.git("repack", "-a", "-d", "-q")  # every object packed, every fan-out folder removed
    failed = object_folders_blocked_until_a_failure(moved / ".git", monkeypatch, "merge-tree")
    tree, conflicts = git.merge_tree(moved, "main", "other")
    assert failed and "unable to create temporary file" in failed[0] and conflicts == []
    assert "x.txt" in moved.git("ls-tree", "--name-only", tree).split()  # the merged tree, stored


@pytest.fixture
def old_git(tmp_path, monkeypatch):
    """git as 2.37 and older answer `merge-tree --write-tree`: git's usage exit code, 129; every other
    call goes to the real git."""
    shim = tmp_path / "old-git"
    shim.mkdir()
    (shim / "git").write_text(f'#!/bin/sh\ncase " $* " in *" merge-tree --write-tree "*) '
                              f'echo "error: unknown option \\`write-tree\'" >&2; exit 129 ;; esac\n'
                              f'exec {shutil.which("git")} "$@"\n')
    (shim / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")


def test_merge_tree_on_a_git_without_write_tree_says_none(moved, old_git):
    assert git.merge_tree(moved, "main", "add") is None


def test_without_merge_tree_the_conflict_is_found_at_merge_as_before(tmp_path, orch, old_git):
    repo = campaign_repo(tmp_path, DAG.format(attempts=2), WORKER, FILES)
    result = orch("run", "--no-interactive", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert result.out.count("this git has no `merge-tree --write-tree`") == 1
    entries = journal(repo, "early")
    assert probes_of(entries) == []
    aborted = [e["context"] for e in entries if e["kind"] == "result" and e["context"].get("aborted")]
    assert aborted == [{"effect": "merge", "node": "C", "aborted": True, "conflicts": ["e/three.txt"]}]
    assert {n["id"]: n["attempt"] for n in status_of(repo, orch, "early")["nodes"]} == {"A": 1, "B": 1, "C": 2}
