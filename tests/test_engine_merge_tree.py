"""MERGE without a checkout: a single node in a campaign without checks is merged by `git merge-tree` and
`git commit-tree`, and campaign/<topic> moved by compare-and-swap; the integration worktree is brought to
the campaign head only when something needs its files (a premise, the boundary's project gates)."""
from __future__ import annotations

import json
import subprocess

import pytest

from tests import engine_helpers
from tests.engine_helpers import campaign_repo, first_parent_chain, journal, statuses
from tests.helpers import RepoDir
from tests.test_campaign_life_resume import TOOL  # each node writes <node>/one.txt

WORKER = r"""#!/bin/sh
set -eu
n=$(echo "$ORCH_NODE" | tr A-Z a-z)
mkdir -p "$n" && echo "$ORCH_NODE" > "$n/one.txt"
case "$ORCH_NODE" in
  A) git mv old.txt a/old.txt && sed -i '1s/.*/alpha/' a/old.txt ;;
  B) echo more >> b/one.txt ;;
esac
git add -A && git commit -qm "$ORCH_NODE"
"""
# C's premise is judged in the integration worktree before C starts (and against each judged node's own
# tree before that, where it holds vacuously): there, A's and B's merges must be on disk.
DAG = """\
topic: mt
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1, timeout: 60}
CHECKS
nodes:
  - {id: A, title: alpha, depends_on: [], file_surface: [a/, old.txt], discipline: sh}
  - {id: B, title: bravo, depends_on: [], file_surface: [b/], discipline: sh}
  - {id: C, title: charlie, depends_on: [A, B], file_surface: [c/], discipline: sh,
     tripwires: [{run: "case $(pwd -P) in */.scratch/integration/*) test -f a/one.txt && test -f b/one.txt
                        && grep -qx alpha a/old.txt && test ! -e old.txt ;; esac", why: "A and B are merged"}]}
"""
# A boundary gate: the integration worktree is exactly the campaign head, HEAD, index and files.
AT_HEAD = """#!/bin/sh
test "$(git rev-parse HEAD)" = "$ORCH_HEAD" && git diff --quiet "$ORCH_HEAD" && git diff --cached --quiet "$ORCH_HEAD"
"""


def repo_for(tmp_path, dag: str, worker: str, files: dict[str, str] | None = None) -> RepoDir:
    """The campaign's repository, with the boundary gate; the worker script, which names the paths it
    moves, is no reference coherence should hold against the move."""
    repo = campaign_repo(tmp_path, dag, worker, files)
    gate = repo / ".ledger" / "gates" / "10-at-head"
    gate.parent.mkdir(parents=True, exist_ok=True)
    gate.write_text(AT_HEAD)
    gate.chmod(0o755)
    with (repo / ".ledger" / "config.yaml").open("a") as config:
        config.write("coherence: {ignore: [work.sh]}\n")
    ledger = RepoDir(repo / ".ledger")
    ledger.git("add", "gates", "config.yaml")
    ledger.git("commit", "-qm", "a boundary gate")
    return repo


def traced(monkeypatch, tmp_path):
    """Every git process the run starts writes its argv to a trace2 event file."""
    trace = tmp_path / "trace2.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    return trace


def in_integration(trace) -> list[str]:
    """The git subcommands orchestrate ran in an integration worktree (`git -C <it> <subcommand> ...`)."""
    calls = [json.loads(line) for line in trace.read_text().splitlines()]
    return [e["argv"][3] for e in calls if e.get("event") == "start" and e["argv"][1:2] == ["-C"]
            and "/.scratch/integration/" in e["argv"][2]]


def merged_trees(repo: RepoDir, topic: str) -> dict[str, str]:
    out = repo.git("log", "--first-parent", "--format=%s%x09%T", f"campaign/{topic}")
    return dict(line.split("\t") for line in out.splitlines() if line.startswith("merge "))


def run_main(tmp_path, monkeypatch, orch, checks: str) -> tuple[RepoDir, list[str]]:
    repo = repo_for(tmp_path / ("checks" if checks else "none"), DAG.replace("CHECKS", checks), WORKER,
                    {"old.txt": "one\ntwo\n"})
    trace = traced(monkeypatch, tmp_path / ("checks" if checks else "none"))
    result = orch("run", "--jobs", "1", "--no-interactive", cwd=repo)
    assert result.rc == 75, result.out + result.err
    return repo, in_integration(trace)


def test_without_checks_merges_without_the_integration_worktree(tmp_path, monkeypatch, orch):
    repo, integ = run_main(tmp_path, monkeypatch, orch, "")
    assert statuses(repo, orch, "mt") == dict.fromkeys("ABC", "ACCEPTED")  # C's premise saw A's and B's files
    chain = first_parent_chain(repo, repo.git("rev-parse", "main"), "campaign/mt")
    assert all(len(parents.split()) == 2 for parents, _ in chain)
    assert sorted(s for _, s in chain) == ["merge node A: alpha", "merge node B: bravo", "merge node C: charlie"]
    assert "merge" not in integ and "commit" not in integ  # no merge was made in a checkout
    assert 1 <= integ.count("reset") <= 3  # brought to the head when a premise or a boundary needed it
    entries = journal(repo, "mt")
    assert sum(e["kind"] == "gate" and e["context"]["gate"] == "coherence" and e["context"]["node"] is None
               and e["context"]["code"] == 0 for e in entries) == 2  # both boundaries saw the head on disk
    for node in "ABC":  # the journal reads as it did with a merge in the worktree
        intent = next(e["context"] for e in entries if e["kind"] == "intent" and e["context"].get("effect") == "merge"
                      and e["context"]["node"] == node)
        merge = next(e["context"] for e in entries if e["kind"] == "merge" and e["context"]["node"] == node)
        result = next(e["context"] for e in entries if e["kind"] == "result"
                      and e["context"].get("effect") == "merge" and e["context"]["node"] == node)
        assert set(intent) == {"effect", "node", "nodes", "branch", "head", "onto"}
        assert result == {"effect": "merge", "node": node, "sha": merge["sha"]}
        assert repo.git("rev-parse", f"{merge['sha']}^2") == merge["head"] == intent["head"]
        assert repo.git("rev-parse", f"{merge['sha']}^1") == intent["onto"]
    assert orch("gate", "adherence", "--topic", "mt", "--base", repo.git("rev-parse", "main"), cwd=repo).rc == 0
    assert orch("doctor", "--topic", "mt", cwd=repo).rc == 0


def test_with_checks_merges_in_the_worktree_to_the_same_trees(tmp_path, monkeypatch, orch):
    plain, _ = run_main(tmp_path, monkeypatch, orch, "")
    checked, integ = run_main(tmp_path, monkeypatch, orch, 'checks: [{name: fine, run: "true"}]')
    assert statuses(checked, orch, "mt") == dict.fromkeys("ABC", "ACCEPTED")
    # the checks ran on the merged tree (merge --no-commit), which is committed as staged before they ran (in
    # the repository: commit-tree), and what they left is scrubbed (merge --abort, reset, clean) each time
    assert integ.count("merge") == 6 and integ.count("write-tree") == 6 and integ.count("clean") == 3
    assert "commit" not in integ
    assert merged_trees(checked, "mt") == merged_trees(plain, "mt")
    assert len(merged_trees(plain, "mt")) == 3


# B moves the only file of b/ to c/ (git sees a directory renamed); A adds a file to b/. Their surfaces
# are disjoint, yet whichever merges second conflicts at c/new.txt, where the rename would move A's file.
# Its second attempt starts from the head holding both: B's move of one file of two is no directory rename.
CONFLICT_WORKER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  A) echo new > b/new.txt ;;
  B) mkdir -p c && git mv b/old.txt c/old.txt ;;
esac
git add -A && git commit -qm "$ORCH_NODE attempt $ORCH_ATTEMPT"
"""
# layered: both nodes branch from the baseline, so the second conflicts when it merges (eager would
# start it from the first one's merge, and nothing would conflict)
CONFLICT_DAG = """\
topic: cf
schedule: layered
workers: {sh: "./work.sh"}
defaults: {max_attempts: 2, timeout: 60}
CHECKS
nodes:
  - {id: A, title: alpha, depends_on: [], file_surface: [b/new.txt], discipline: sh}
  - {id: B, title: bravo, depends_on: [], file_surface: [b/old.txt, c/], discipline: sh}
"""


@pytest.mark.parametrize("checks", ["", 'checks: [{name: fine, run: "true"}]'])
def test_a_conflict_reworks_the_node_naming_the_paths(tmp_path, orch, checks):
    repo = repo_for(tmp_path, CONFLICT_DAG.replace("CHECKS", checks), CONFLICT_WORKER, {"b/old.txt": "old\n"})
    result = orch("run", "--jobs", "1", "--no-interactive", cwd=repo)
    assert result.rc == 75, result.out + result.err
    entries = journal(repo, "cf")
    # the first merge moves the head and the probe finds the second's conflict before its turn (a conflict
    # met at MERGE itself, as on a last attempt, is tests/test_engine_probes.py's)
    probes = [e["context"] for e in entries if e["kind"] == "probe" and not e["context"]["clean"]]
    assert len(probes) == 1 and probes[0]["conflicts"] == ["c/new.txt"]
    second = probes[0]["node"]
    rework = [e["context"] for e in entries if e["kind"] == "node" and e["context"].get("status") == "REWORK"]
    assert [r["node"] for r in rework] == [second]
    assert "in c/new.txt" in rework[0]["feedback"] and rework[0]["failures"] == 1
    assert statuses(repo, orch, "cf") == {"A": "ACCEPTED", "B": "ACCEPTED"}
    assert sorted(repo.git("ls-tree", "-r", "--name-only", "campaign/cf").split()) == [
        "README.md", "b/new.txt", "c/old.txt", "work.sh"]
    assert [len(p.split()) for p, _ in first_parent_chain(repo, repo.git("rev-parse", "main"), "campaign/cf")] == [2, 2]


def cli(repo, *args, fault: str | None = None) -> subprocess.CompletedProcess:
    return engine_helpers.cli(repo, *args, fault=fault, quiet=True, timeout=300)

def test_a_runner_killed_between_the_merge_commit_and_the_branch_resumes_to_one_merge(tmp_path):
    repo = repo_for(tmp_path, DAG.replace("CHECKS", ""), WORKER, {"old.txt": "one\ntwo\n"})
    killed = cli(repo, "run", "--jobs", "1", fault="merge:2")
    assert killed.returncode == -9, killed.stdout + killed.stderr
    assert len(merged_trees(repo, "mt")) == 1  # the second merge commit was made; the branch never moved to it
    done = cli(repo, "resume", "--topic", "mt")
    assert done.returncode == 75, done.stdout + done.stderr
    assert sorted(merged_trees(repo, "mt")) == ["merge node A: alpha", "merge node B: bravo", "merge node C: charlie"]
    assert repo.git("worktree", "list", "--porcelain").count("worktree ") == 1


def test_an_integration_worktree_on_the_campaign_branch_lets_go_of_it_before_the_branch_moves(tmp_path):
    """A runner of an older orchestrate, killed while A's worker ran, left campaign/mt checked out in the
    integration worktree; the merges that resume makes must not leave it holding the old head's files."""
    repo = repo_for(tmp_path, DAG.replace("CHECKS", ""), WORKER, {"old.txt": "one\ntwo\n"})
    # layered: the queued nodes keep AWAIT polling after the first returns (eager would judge it at once)
    assert cli(repo, "run", "--jobs", "1", "--schedule", "layered", fault="poll:1").returncode == -9
    integ = repo / ".scratch" / "integration" / "mt"
    if integ.exists():
        repo.git("-C", str(integ), "checkout", "-q", "campaign/mt")
    else:  # a campaign without checks, premises or project gates makes none now: as the older runner did
        repo.git("worktree", "add", "-q", str(integ), "campaign/mt")
    done = cli(repo, "resume", "--topic", "mt")
    assert done.returncode == 75, done.stdout + done.stderr  # both boundaries found the worktree at the head
    assert sorted(merged_trees(repo, "mt")) == ["merge node A: alpha", "merge node B: bravo", "merge node C: charlie"]


PAUSE_DAG = """\
topic: lg
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1, timeout: 60, sandbox: none}  # its evaluator reads a flag outside the worktree
nodes:
  - {id: A, title: alpha, depends_on: [], file_surface: [a/], discipline: sh}
  - {id: B, title: bravo, depends_on: [A], file_surface: [b/], discipline: sh,
     evaluators: [{name: go, run: "test -e GO"}]}
"""


def paused(tmp_path, orch) -> RepoDir:
    """A campaign paused at B's realignment, A merged; B passes once GO exists."""
    go = tmp_path / "go"
    repo = repo_for(tmp_path, PAUSE_DAG.replace("GO", str(go)), TOOL)
    assert orch("run", "--no-interactive", cwd=repo).rc == 75
    assert statuses(repo, orch, "lg")["A"] == "ACCEPTED"
    go.touch()
    assert orch("decide", "realignment", "rework", "--note", "again", cwd=repo).rc == 0
    return repo


def test_a_campaign_branch_checked_out_elsewhere_halts_the_merge_until_switched_away(tmp_path, orch):
    repo = paused(tmp_path, orch)
    tip = repo.git("rev-parse", "campaign/lg")
    elsewhere = tmp_path / "elsewhere"
    repo.git("worktree", "add", "-q", str(elsewhere), "campaign/lg")
    halted = orch("resume", "--no-interactive", "--topic", "lg", cwd=repo)
    assert halted.rc == 1 and f"campaign/lg is checked out in {elsewhere}" in halted.err, halted.out + halted.err
    assert repo.git("rev-parse", "campaign/lg") == tip and RepoDir(elsewhere).git("status", "--porcelain") == ""
    RepoDir(elsewhere).git("switch", "-q", "--detach")
    done = orch("resume", "--no-interactive", "--topic", "lg", cwd=repo)
    assert done.rc == 75, done.out + done.err
    assert statuses(repo, orch, "lg") == {"A": "ACCEPTED", "B": "ACCEPTED"}


def test_a_campaign_that_reads_no_head_files_never_checks_the_repository_out(tmp_path, orch):
    """No campaign checks, no tripwires, no project gates, no coherence evaluators: nothing reads the head's
    files, so no integration worktree is made (a checkout of the whole repository); one project gate makes
    the boundary read them, and it is made."""
    plain = DAG.replace("CHECKS", "").split("  - {id: C")[0]
    repo = campaign_repo(tmp_path / "plain", plain, WORKER, {"old.txt": "one\ntwo\n"})
    with (repo / ".ledger" / "config.yaml").open("a") as config:  # as repo_for has it, without the gate
        config.write("coherence: {ignore: [work.sh]}\n")
    assert orch("run", "--jobs", "1", "--no-interactive", cwd=repo).rc == 75
    assert statuses(repo, orch, "mt") == dict.fromkeys("AB", "ACCEPTED")

    def made(r):
        return [e for e in journal(r, "mt") if e["kind"] == "intent" and e["context"]["effect"] == "integration-add"]
    assert made(repo) == [] and not (repo / ".scratch" / "integration").exists()
    gated = repo_for(tmp_path / "gated", plain, WORKER, {"old.txt": "one\ntwo\n"})
    assert orch("run", "--jobs", "1", "--no-interactive", cwd=gated).rc == 75
    assert len(made(gated)) == 1  # (CLOSE removes it again)
