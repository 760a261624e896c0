"""Workers without the sandbox run alone (workers/local.py, workers/siblings.py), unless the campaign opts
out with `unsandboxed: parallel`; the setting is validated like every other. What a worker that writes into
a sibling's worktree meets is in tests/test_hostile_workers.py."""
from __future__ import annotations

import time

import pytest

from tests.engine_helpers import campaign_repo, statuses


def _request(tmp_path, node: str, *, alone: bool):
    from orchestrate.workers.local import WorkRequest
    runs = tmp_path / "runs"
    tags = {"ORCH_TOPIC": f"siblings-{tmp_path.name}", "ORCH_NODE": node, "ORCH_ATTEMPT": "1"}  # what ends it
    return WorkRequest(node, 1, f"while [ ! -e go-{node} ]; do sleep 0.01; done", tmp_path, tags,
                       runs / f"{node}.log", runs / f"{node}.json", 60.0, alone=alone)


def _finish(ex, tmp_path, node: str) -> list:
    """Let `node`'s worker end and poll until the executor reports it (the first poll that does)."""
    (tmp_path / f"go-{node}").touch()
    end = time.monotonic() + 30
    while time.monotonic() < end:
        done = ex.poll()
        if done:
            return [o.node for o in done]
        time.sleep(0.01)
    raise AssertionError(f"{node} never finished")


def test_an_unsandboxed_request_runs_alone_and_the_next_starts_only_at_the_following_poll(tmp_path):
    from orchestrate.workers.local import LocalExecutor
    ex = LocalExecutor(3)
    try:
        ex.start(_request(tmp_path, "X", alone=True))
        ex.start(_request(tmp_path, "Y", alone=False))
        assert list(ex.live) == ["X"] and [r.node for r in ex.queue] == ["Y"]  # free slots, yet Y waits
        assert _finish(ex, tmp_path, "X") == ["X"]
        assert list(ex.live) == []  # X's return is settled before anything else starts
        ex.poll()
        assert list(ex.live) == ["Y"]
        ex.start(_request(tmp_path, "Z", alone=True))
        ex.start(_request(tmp_path, "W", alone=False))
        assert list(ex.live) == ["Y"]  # Z waits for Y to end; W waits behind Z (in order: Z never starves)
        assert _finish(ex, tmp_path, "Y") == ["Y"]
        assert list(ex.live) == ["Z"] and [r.node for r in ex.queue] == ["W"]  # Y was not alone: Z starts at once
        assert _finish(ex, tmp_path, "Z") == ["Z"]
        ex.poll()
        assert list(ex.live) == ["W"]
    finally:
        ex.cancel_all()


def test_requests_that_are_not_alone_share_the_jobs(tmp_path):
    from orchestrate.workers.local import LocalExecutor
    ex = LocalExecutor(2)
    try:
        for node in "PQR":
            ex.start(_request(tmp_path, node, alone=False))
        assert sorted(ex.live) == ["P", "Q"] and [r.node for r in ex.queue] == ["R"]
    finally:
        ex.cancel_all()


DAG = """\
topic: together
mode: autonomous
defaults: {max_attempts: 1, timeout: 60, sandbox: none DEFAULTS}
workers: {sh: "./work.sh"}
nodes:
  - {id: A, file_surface: [a.txt], discipline: sh}
  - {id: B, file_surface: [b.txt], discipline: sh}
"""
# Each waits for the other to have started: only workers running at the same time both finish (alone,
# the first would wait for the second until its timeout).
BARRIER = """#!/bin/sh
touch "MARKS/$ORCH_NODE"
other=$(echo "$ORCH_NODE" | tr AB BA)
until [ -e "MARKS/$other" ]; do sleep 0.01; done
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr AB ab).txt"
"""


@pytest.mark.parametrize("where", ["dag", "config"])
def test_unsandboxed_parallel_lets_workers_without_the_sandbox_run_together(tmp_path, orch, where):
    marks = tmp_path / "marks"
    marks.mkdir()
    repo = campaign_repo(tmp_path, DAG.replace(" DEFAULTS", ", unsandboxed: parallel" if where == "dag" else ""),
                         BARRIER.replace("MARKS", str(marks)))
    if where == "config":
        (repo / ".ledger" / "config.yaml").write_text("sandbox: {mode: none, unsandboxed: parallel}\n")
    result = orch("run", "--jobs", "2", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert statuses(repo, orch, "together") == {"A": "ACCEPTED", "B": "ACCEPTED"}
    assert "one at a time" not in result.out


def test_a_bad_unsandboxed_setting_is_one_line_naming_it(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG.replace(" DEFAULTS", ", unsandboxed: sometimes"), "#!/bin/sh\n")
    r = orch("validate", cwd=repo)
    assert r.rc == 1
    dag = repo / ".ledger" / "state" / "dag.yaml"
    assert r.out.splitlines() == [
        f"{dag}:3: defaults.unsandboxed: `sometimes` is not an unsandboxed setting: use serial or parallel"]
    repo = campaign_repo(tmp_path / "c", DAG.replace(" DEFAULTS", ""), "#!/bin/sh\n")
    (repo / ".ledger" / "config.yaml").write_text("sandbox: {mode: none, unsandboxed: always}\n")
    r = orch("validate", cwd=repo)
    assert r.rc == 1
    assert r.out.splitlines() == [f"{repo / '.ledger' / 'config.yaml'}:1: sandbox.unsandboxed: `always` is not an "
                                  "unsandboxed setting: use serial, parallel"]
    ran = orch("run", cwd=repo)
    assert ran.rc == 1 and "sandbox.unsandboxed: `always` is not an unsandboxed setting" in ran.out  # as validate


def test_a_sibling_found_unchanged_is_not_asked_of_git_again_until_something_in_it_is_written(tmp_path, monkeypatch):
    from orchestrate import git, proc, stamps
    from orchestrate.workers import siblings
    from tests.helpers import make_repo
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    wt = tmp_path / "wt"
    repo.git("worktree", "add", "-q", "-b", "node/t/S", str(wt))
    kept = siblings.Kept("S", wt, "wt", repo.head(), "node/t/S", False)
    common = git.git_common_dir(repo)
    monkeypatch.setattr(stamps, "FINE", -60.0)  # as if every file had been written a minute ago
    monkeypatch.setattr(stamps, "COARSE", -60.0)
    asked: list[list[str]] = []
    real = proc.run
    monkeypatch.setattr(proc, "run", lambda cmd, **kw: asked.append(list(cmd)) or real(cmd, **kw))
    branches = siblings.Branches(repo, "t")
    assert siblings._changed(kept, common, branches) == "" and len(asked) == 1  # git status, once
    assert siblings._changed(kept, common, branches) == "" and len(asked) == 1  # the stamp stands for it
    (wt / "a.txt").write_text("changed\n")
    assert siblings._changed(kept, common, branches) == "a.txt" and len(asked) == 2
    (wt / "a.txt").write_text("a\n")  # as it was, but written: git is asked again and finds nothing
    assert siblings._changed(kept, common, branches) == "" and len(asked) == 3
    repo.git("-C", str(wt), "commit", "-q", "--allow-empty", "-m", "moved")  # HEAD's branch moves
    assert "HEAD moved" in siblings._changed(kept, common, branches) and len(asked) == 4
    moved = siblings.Kept("S", wt, "wt", repo.git("rev-parse", "node/t/S"), "node/t/S", False)
    assert siblings._changed(moved, common, branches) == "" and len(asked) == 5
    monkeypatch.setattr(siblings, "STAMPED", 0)  # a worktree past it: git is asked at every return
    assert siblings._changed(moved, common, branches) == "" and len(asked) == 6


def test_a_sibling_compared_by_its_branch_alone_reads_no_file_and_no_process_unless_its_ref_is_odd(tmp_path,
                                                                                                  monkeypatch):
    from orchestrate import git, proc
    from orchestrate.workers import siblings
    from tests.helpers import make_repo
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    wt = tmp_path / "wt"
    repo.git("worktree", "add", "-q", "-b", "node/t/S", str(wt))
    kept = siblings.Kept("S", wt, "wt", repo.head(), "node/t/S", False, files=False)
    common = git.git_common_dir(repo)
    asked: list[list[str]] = []
    real = proc.run
    monkeypatch.setattr(proc, "run", lambda cmd, **kw: asked.append(list(cmd)) or real(cmd, **kw))
    branches = siblings.Branches(repo, "t")
    (wt / "a.txt").write_text("changed\n")  # its files are never read: no stat, no git status
    (wt / "planted.txt").write_text("x\n")
    assert siblings._changed(kept, common, branches) == "" and asked == []
    repo.git("pack-refs", "--all")  # no loose ref file left: git is asked, and agrees
    assert siblings._changed(kept, common, branches) == "" and len(asked) == 1
    repo.git("update-ref", "refs/heads/node/t/S", repo.git("commit-tree", "-m", "x", f"{repo.head()}^{{tree}}"))
    assert siblings._changed(kept, common, siblings.Branches(repo, "t")) == "branch node/t/S moved"


def test_a_sibling_compared_by_its_branch_is_read_again_once_its_head_or_link_is_written(tmp_path, monkeypatch):
    from orchestrate import git, stamps
    from orchestrate.workers import siblings
    from tests.helpers import make_repo
    monkeypatch.setattr(stamps, "FINE", -60.0)  # every stat stands at once: the stamp is what is tested
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    wt = tmp_path / "wt"
    repo.git("worktree", "add", "-q", "-b", "node/t/S", str(wt))
    kept = siblings.Kept("S", wt, "wt", repo.head(), "node/t/S", False, files=False)
    common, branches = git.git_common_dir(repo), siblings.Branches(repo, "t")
    assert siblings._changed(kept, common, branches) == "" and str(wt) in siblings._seen
    assert siblings._changed(kept, common, branches) == ""  # from the stamp
    head = git.admin_dir(wt) / "HEAD"
    head.write_text("ref: refs/heads/campaign/t\n")
    assert siblings._changed(kept, common, branches) == "HEAD is not on node/t/S"
    head.write_text("ref: refs/heads/node/t/S\n")
    assert siblings._changed(kept, common, branches) == ""
    (wt / ".git").write_text(f"gitdir: {repo / '.git'}\n")
    assert siblings._changed(kept, common, branches) == "its .git link or admin dir was replaced"


def test_judging_reads_a_landed_nodes_files_only_for_evaluators_plugins_groups_premises_or_project_evaluators(
        tmp_path):
    from types import SimpleNamespace

    from orchestrate.dag.load import load_dag
    from orchestrate.engine import judge
    from orchestrate.recorder.campaign import Campaign, NodeState
    ledger = tmp_path / ".ledger"
    ledger.mkdir()
    path = tmp_path / "dag.yaml"
    path.write_text("""\
topic: t
workers: {sh: ./w.sh}
nodes:
  - {id: A, file_surface: [a.txt], discipline: sh}
  - {id: B, file_surface: [b.txt], discipline: sh, evaluators: [{name: e, run: "true"}]}
  - {id: C, file_surface: [c.txt], discipline: sh, depends_on: [A], tripwires: [{run: "true"}]}
""")
    dag = load_dag(path)
    campaign = Campaign(nodes={n: NodeState(n) for n in ("A", "B", "C")})
    ctx = SimpleNamespace(campaign=campaign, dag=dag, layout=SimpleNamespace(ledger=ledger))
    assert judge.reads_files(ctx)("A")  # C's premise is re-checked against the judged node's files
    campaign.nodes["C"].status = "ACCEPTED"
    reads = judge.reads_files(ctx)
    assert not reads("A") and reads("B")
    (ledger / "config.yaml").write_text("coherence:\n  evaluators: [{name: p, run: 'true'}]\n")
    assert judge.reads_files(ctx)("A")


def test_a_cleared_sibling_rewritten_behind_ident_is_found_changed_and_put_back(tmp_path):
    """rv34: `git status` cleans an `ident` file's `$Id: ... $` before it compares, so what another node's worker
    (no sandbox) wrote there, at the same size, was not found, and the landed sibling's evaluators ran it."""
    import os
    from orchestrate import git
    from orchestrate.workers import siblings
    from tests.helpers import make_repo
    repo = make_repo(tmp_path / "repo", {".gitattributes": "f.py ident\n", "f.py": "x = 1  # $Id$\n"})
    tree = tmp_path / "trees" / "S"
    git.worktree_add(repo, tree, "node/t/S", "HEAD")
    k = siblings.Kept("S", tree, "trees/S", repo.head(), "node/t/S", False, cleared=True)
    common = git.git_common_dir(repo)
    assert siblings._changed(k, common, siblings.Branches(repo, "t"), repo) == ""
    text = (tree / "f.py").read_text()
    i, j = text.index("$Id: ") + 5, text.rindex(" $")
    with open(tree / "f.py", "r+") as fh:  # the same size, in place
        fh.write(text[:i] + '"; x = 2; "'.ljust(j - i) + text[j:])
    assert repo.git("-C", str(tree), "status", "--porcelain") == ""  # git takes it for unchanged
    found = siblings._changed(k, common, siblings.Branches(repo, "t"), repo)
    assert found == "f.py (other bytes that git cleans to the same blob)"
    assert not os.path.lexists(tree / "f.py")  # removed: the put-back's checkout writes it
