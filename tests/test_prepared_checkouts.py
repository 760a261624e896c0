"""Working copies for a batch of nodes checked out several at once (workers/prepared.py): each node of the batch
gets one at its base with nothing else in it, the journal says which were made so, nothing is left behind,
and a checkout that failed or that a crash cut off goes. The threshold is lowered here: these repositories
are tiny, and the checkouts only pay on big ones."""
from __future__ import annotations

import os
from concurrent.futures import Future
from pathlib import Path

import pytest

from orchestrate import git
from orchestrate.errors import GitError
from orchestrate.workers import pool, prepared
from tests.engine_helpers import campaign_repo, journal

DAG = """\
topic: batch
schedule: {schedule}
workers: {{sh: "./work.sh"}}
defaults: {{timeout: 60}}
nodes:
  - {{id: A, title: a, file_surface: [a/], discipline: sh{tripwire}}}
  - {{id: B, title: b, file_surface: [b/], discipline: sh}}
  - {{id: C, title: c, file_surface: [c/], discipline: sh}}
  - {{id: D, title: d, depends_on: [A, B, C], file_surface: [d/], discipline: sh}}
"""
# Each node writes down what its working copy held when it started: anything but its base is a leak.
WORKER = r"""#!/bin/sh
set -eu
dir="$(echo "$ORCH_NODE" | tr A-Z a-z)"
found="$(git status --porcelain --ignored --untracked-files=all)"
mkdir -p "$dir"
{ echo "head $(git rev-parse HEAD) base $ORCH_BASE"; [ -z "$found" ] || echo "$found"; } > "$dir/seen"
echo "$ORCH_NODE" > "$dir/made"
"""


@pytest.fixture
def batched(monkeypatch):
    monkeypatch.setattr(prepared, "FROM_FILES", 0)
    monkeypatch.setattr(prepared, "THREADS", 2)


def _adds(repo) -> dict[str, dict]:
    return {e["context"]["node"]: e["context"] for e in journal(repo, "batch")
            if e["kind"] == "result" and e["context"].get("effect") == "worktree-add"}


# A premise makes the integration worktree (a checkout too) while the batch's are being made.
TRIPWIRE = ', tripwires: [{{run: "test -f README.md"}}]'


@pytest.mark.parametrize("schedule, tripwire", [("eager", ""), ("layered", ""), ("eager", TRIPWIRE)])
def test_a_batch_gets_working_copies_checked_out_at_once_each_exactly_its_base(tmp_path, orch, batched, schedule,
                                                                             tripwire):
    dag = DAG.format(schedule=schedule, tripwire=tripwire.format())
    repo = campaign_repo(tmp_path, dag, WORKER, files={".gitignore": "*.o\n"})
    result = orch("run", "--jobs", "3", cwd=repo)
    assert result.rc == 75 and "final-acceptance" in result.out, result.out + result.err
    adds = _adds(repo)
    assert all(adds[n].get("prepared") for n in "ABC"), adds  # three nodes, one batch
    made = [e for e in journal(repo, "batch") if e["kind"] == "result" and e["context"].get("effect") == "integration-add"]
    assert bool(made) is bool(tripwire)
    assert not adds["D"].get("prepared")  # alone in its batch: a spare of A, B or C, re-based
    for node in "ABCD":
        seen = git.out(repo, "show", f"campaign/batch:{node.lower()}/seen").splitlines()
        head, base = seen[0].split()[1], seen[0].split()[3]
        assert head == base and seen[1:] == [], (node, seen)
    home = repo / ".scratch" / "worktrees" / "batch"
    assert not list(home.glob(f".pool/{pool.BEGUN}*")), list(home.glob(".pool/*"))
    # CLOSE removed every one (the spares, the integration worktree), several at once, each intent with its result
    assert repo.git("worktree", "list", "--porcelain").count("worktree ") == 1 and not any(home.iterdir())
    removals = [(e["kind"], e["context"]["path"]) for e in journal(repo, "batch")
                if e["context"].get("effect") == "worktree-remove"]
    assert sorted(p for k, p in removals if k == "intent") == sorted(p for k, p in removals if k == "result")
    assert any(p.endswith("integration/batch") for _, p in removals) is bool(tripwire), removals


def test_a_small_repository_checks_out_one_at_a_time(tmp_path, orch, monkeypatch):
    monkeypatch.setattr(prepared, "THREADS", 2)  # FROM_FILES as shipped: these four files are far below it
    repo = campaign_repo(tmp_path, DAG.format(schedule="eager", tripwire=""), WORKER)
    assert orch("run", "--jobs", "3", cwd=repo).rc == 75
    assert not any(add.get("prepared") for add in _adds(repo).values())


def test_a_checkout_that_failed_is_removed_and_the_node_checks_out_its_own(tmp_path):
    from tests.engine_helpers import make_repo
    repo = make_repo(tmp_path / "repo", {"f.txt": "x\n"})
    home = tmp_path / "worktrees"
    place = pool.folder(home) / f"{pool.BEGUN}1"
    place.mkdir(parents=True)
    (place / "half").write_text("what git wrote before the disk filled\n")
    failed: Future = Future()
    failed.set_exception(GitError(["worktree", "add"], 128, "", "fatal: No space left on device"))
    prepared._pending[failed] = (place, git.out(repo, "rev-parse", "HEAD"))
    prepared.settle(repo, home)
    assert not os.path.lexists(place) and not prepared._pending
    assert pool.spares(home) == 0


def test_a_checkout_a_crash_cut_off_goes_on_resume(tmp_path):
    from tests.engine_helpers import make_repo
    repo = make_repo(tmp_path / "repo", {"f.txt": "x\n"})
    home = tmp_path / "worktrees"
    place = pool.folder(home) / f"{pool.BEGUN}1"
    git.worktree_add_detached(repo, place, "HEAD")
    pool.drop_left(repo, home)
    assert not os.path.lexists(place)
    assert all(Path(w["worktree"]) != place for w in git.worktrees(repo))


def test_a_checkout_that_failed_leaves_the_index_copies_of_the_nodes_running(tmp_path, batched):
    """The pool's folder holds the copy of each running node's index its checkout wrote (pool.record); a batch
    checkout that failed must not take the folder with it, or each node running fails when it is judged."""
    from tests.engine_helpers import make_repo
    repo = make_repo(tmp_path / "repo", {"f.txt": "x\n"})
    home = tmp_path / "worktrees"
    running = home / "A"
    git.worktree_add_detached(repo, running, "HEAD")
    pool.record(running, home, git.out(repo, "rev-parse", "HEAD"))
    prepared.start(repo, home, 2, "0" * 40)  # a commit that is not there: git fails both, for real
    assert prepared._pending
    prepared.settle(repo, home)
    assert not prepared._pending and pool.spares(home) == 0
    assert pool.unseen(running, "HEAD", "HEAD") == []  # its index copy still there to judge it by
    pool.forget(running)


def test_a_batch_never_names_its_checkouts_as_an_earlier_one_did(tmp_path, batched):
    """A checkout a SIGKILLed runner left running (git runs in a session of its own) goes on after the resume
    removed its folder, fails, and git then removes the folder and the admin dir it was given, by name: the
    resumed run's checkouts must not have those names (git names an admin dir after its folder)."""
    from tests.engine_helpers import make_repo
    repo = make_repo(tmp_path / "repo", {"f.txt": "x\n"})
    home = tmp_path / "worktrees"
    admins = git.git_common_dir(repo) / "worktrees"
    head = git.out(repo, "rev-parse", "HEAD")
    prepared.start(repo, home, 2, head)
    earlier = {place.name for place, _ in prepared._pending.values()}
    prepared.settle(repo, home)
    earlier |= {p.name for p in admins.iterdir()}
    pool._spares.clear()  # the runner is gone; its resume removes what it left
    pool.drop_left(repo, home)
    prepared.start(repo, home, 2, head)
    later = {place.name for place, _ in prepared._pending.values()}
    prepared.settle(repo, home)
    later |= {p.name for p in admins.iterdir()}
    assert len(later) == 2 and not later & earlier, (earlier, later)
    pool.drop_left(repo, home)


GROUP = """\
topic: batch
schedule: {schedule}
workers: {{sh: "./work.sh"}}
defaults: {{timeout: 60, sandbox: none}}
nodes:
  - {{id: A, title: a, file_surface: [a/], discipline: sh}}
  - {{id: B, title: b, file_surface: [b/], discipline: sh}}
  - {{id: C, title: c, file_surface: [c/], discipline: sh}}
edges:
  - {{id: e1, from: A, to: B, predicate: LOOPS_WITH}}
  - {{id: e2, from: B, to: C, predicate: LOOPS_WITH}}
"""


@pytest.mark.parametrize("schedule", ["eager", "layered"])
@pytest.mark.parametrize("threads", [True, False])
def test_a_worker_without_the_sandbox_starts_once_its_whole_batch_has_its_working_copies(tmp_path, orch, monkeypatch,
                                                                                       schedule, threads):
    """A LOOPS_WITH group without the sandbox is dispatched as one batch, its workers run one at a time. The first
    started as soon as its own working copy was made, while the others were still being checked out (in threads,
    or one after another) and before the pool had copied their indexes, the copy every later look at them is
    compared with: a worker (rv81's plant: a file rewritten in a peer's finished checkout, with an index written
    to say it is the commit's) made what it wrote there the peer's base, and the peer's own edit of that file
    committed it, merged with no failure and no blame. It starts once every working copy of its batch is made."""
    if threads:
        monkeypatch.setattr(prepared, "FROM_FILES", 0)
        monkeypatch.setattr(prepared, "THREADS", 2)
    repo = campaign_repo(tmp_path, GROUP.format(schedule=schedule), WORKER)
    assert orch("run", "--jobs", "3", cwd=repo).rc == 75
    order = [(e["kind"], e["context"]["effect"], e["context"]["node"]) for e in journal(repo, "batch")
             if e["context"].get("effect") in ("worktree-add", "worker-spawn")]
    first = order.index(next(o for o in order if o[1] == "worker-spawn"))
    assert {n for k, effect, n in order[:first] if k == "result" and effect == "worktree-add"} == set("ABC"), order
    assert any(add.get("prepared") for add in _adds(repo).values()) is threads


# Run by a premise: once every checkout of the batch is done, each gets shared.txt rewritten and its index
# written to say so is the commit's (the blob of the original, the new file's stat; the mtime set back
# past git's racy look). It never waits for one that is not there.
PLANT = r"""#!/bin/sh
pool="$ORCH_ROOT_FOR_TEST/.scratch/worktrees/batch/.pool"
for i in $(seq 300); do
  busy=0
  for w in "$pool"/prepared-*; do
    [ -d "$w" ] || continue
    admin=$(sed 's/^gitdir: //' "$w/.git" 2>/dev/null)
    [ -f "$admin/index" ] && [ -f "$w/shared.txt" ] && [ ! -e "$admin/index.lock" ] || busy=1
  done
  [ $busy = 0 ] && break
  sleep 0.1
done
for w in "$pool"/prepared-* "$pool"/spare-*; do
  [ -d "$w" ] || continue
  blob=$(git -C "$w" rev-parse :shared.txt)
  echo planted > "$w/shared.txt" && touch -d '2020-01-01' "$w/shared.txt"
  echo "shared.txt filter=same" > "$w/../attributes"
  git -C "$w" -c "filter.same.clean=git cat-file blob $blob" -c "core.attributesFile=$w/../attributes" \
    update-index shared.txt
done
exit 0
"""
PREMISED = """\
topic: batch
workers: {sh: "./work.sh"}
defaults: {timeout: 60, sandbox: none}
nodes:
  - {id: A, title: a, file_surface: [a/], discipline: sh, tripwires: [{run: "sh plant.sh"}]}
  - {id: B, title: b, file_surface: [b/, shared.txt], discipline: sh}
edges:
  - {id: e1, from: A, to: B, predicate: LOOPS_WITH}
"""
EDITS = "#!/bin/sh\nn=$(echo $ORCH_NODE | tr A-Z a-z)\nmkdir -p $n && cat shared.txt > $n/seen\n" \
        "[ $ORCH_NODE = B ] && echo 'line of B' >> shared.txt\nexit 0\n"


def test_a_premise_run_without_the_sandbox_finds_the_batch_checkouts_pooled(tmp_path, orch, batched, monkeypatch):
    """Without the sandbox a premise's command runs code the campaign head holds, code a worker may have written, in
    the middle of DISPATCH: the batch's checkouts, made in threads, were pooled (their indexes copied: the base every
    later look compares with) only as each node took one, after the premises. What it wrote in one with an index to
    match was the node's base, and the node's own edit of that file committed it. They are pooled first: what it
    writes in a spare is then undone as the spare is taken."""
    repo = campaign_repo(tmp_path, PREMISED, EDITS, files={"plant.sh": PLANT, "shared.txt": "original\n"})
    monkeypatch.setenv("ORCH_ROOT_FOR_TEST", str(repo))
    assert orch("run", cwd=repo).rc == 75
    assert any(add.get("prepared") for add in _adds(repo).values())  # else this test would prove nothing
    for node in "ab":  # what each found at its base, and what B's edit committed
        assert repo.git("show", f"campaign/batch:{node}/seen") == "original", node
    assert repo.git("show", "campaign/batch:shared.txt") == "original\nline of B"
