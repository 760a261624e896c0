"""What a sandboxed worker leaves in its private object store (workers/private_objects.py) fails its attempt,
hangs nothing, and brings nothing incomplete into the repository: a FIFO or a link named `*.pack`, a pack
that is no pack, an `info/alternates` naming a store it deletes afterwards, and a commit naming a blob that
is nowhere, loose or packed. The campaigns need the sandbox (only a sandboxed worker has a store of its
own); the store-level tests below them do not."""
from __future__ import annotations

import hashlib
import os
import subprocess
import zlib

import pytest

from orchestrate.workers import private_objects, sandbox
from orchestrate.workers.private_objects import BadObject
from tests import test_hostile_workers as hostile
from tests.helpers import make_repo

settled = hostile.settled  # autouse: the user's .git config, hooks and info/ unchanged, no process left
NO_SANDBOX = sandbox.probe()
sandboxed = pytest.mark.skipif(NO_SANDBOX is not None, reason=f"no sandbox here: {NO_SANDBOX}")
GHOST = "e841dae7636b3bf3fdd7d772454e1beb6a445ca7"  # `secret-content`'s blob, written nowhere

# A commit whose tree names a blob that is in no store; HEAD (the worktree's own, in its admin dir) moves to it.
GHOST_COMMIT = f"""echo a > a.txt
git update-index --add --cacheinfo 100644,{GHOST},ghost.txt
c=$(git commit-tree -p HEAD -m "A: work" "$(git write-tree --missing-ok)")
git update-ref --no-deref HEAD "$c"
"""
# ... kept only in a pack: the commit and its tree, packed as they are, the loose copies gone
PACKED = """mkdir -p "$GIT_OBJECT_DIRECTORY/pack"
t=$(git rev-parse "$c^{tree}")
printf "%s\\n%s\\n" "$c" "$t" | git pack-objects -q "$GIT_OBJECT_DIRECTORY/pack/pack" >/dev/null
git prune-packed
"""
# ... its blob written to a store of the worker's own, named in info/alternates, and deleted afterwards
ELSEWHERE = """echo a > a.txt
b=$(echo secret-content | GIT_OBJECT_DIRECTORY=$PWD/.side git hash-object -w --stdin)
mkdir -p "$GIT_OBJECT_DIRECTORY/info"
printf "%s\\n%s\\n" "$PWD/.side" "$GIT_ALTERNATE_OBJECT_DIRECTORIES" > "$GIT_OBJECT_DIRECTORY/info/alternates"
git update-index --add --cacheinfo "100644,$b,ghost.txt"
git update-ref --no-deref HEAD "$(git commit-tree -p HEAD -m "A: work" "$(git write-tree)")"
rm -rf .side
"""


def failed(tmp_path, orch, worker: str, said: str):
    repo, baseline, result = hostile.run(tmp_path, orch, worker, "bwrap")
    text = result.out + result.err
    assert result.rc == 75, text
    assert said in text, text
    assert repo.git("rev-parse", "campaign/hostile") == baseline
    assert not [p for p in (repo / ".git" / "objects").iterdir() if p.name.startswith("tmp_orchestrate")]
    return repo


@sandboxed
def test_an_alternates_file_in_the_store_fails_the_attempt(tmp_path, orch):
    repo = failed(tmp_path, orch, ELSEWHERE, "node A: the worker's store has info/alternates")
    assert repo.git("cat-file", "-t", GHOST, check=False) == ""  # never brought in from the deleted store


@sandboxed
@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_a_commit_naming_a_blob_that_is_nowhere_fails_the_attempt(tmp_path, orch, packed):
    failed(tmp_path, orch, GHOST_COMMIT + (PACKED if packed else ""),
           f"node A: a commit in the worker's store names blob {GHOST}, which is neither there nor in the repository")


@sandboxed
@pytest.mark.parametrize("planted, said", [
    ('mkfifo "$P"\n', "is not a file (prw"),
    ('ln -s /dev/zero "$P"\n', "is not a file (lrw"),
    ('mkdir "$P"\n', "is not a file (drw"),
    ('printf "PACK not really" > "$P"\n', "is not a valid pack: git index-pack:"),
])
def test_what_is_planted_under_pack_fails_the_attempt_and_hangs_nothing(tmp_path, orch, planted, said):
    name = "pack-0000000000000000000000000000000000000000.pack"
    worker = f'echo a > a.txt\nP="$GIT_OBJECT_DIRECTORY/pack/{name}"\nmkdir -p "${{P%/*}}"\n' + planted
    failed(tmp_path, orch, worker, f"node A: pack/{name} in the worker's store {said}")


@sandboxed
def test_a_worker_whose_commit_is_only_in_a_pack_is_merged_whole(tmp_path, orch):
    worker = ('echo a > a.txt && git add a.txt && git commit -qm "A: work"\n'
              'mkdir -p "$GIT_OBJECT_DIRECTORY/pack"\n'
              'printf "%s\\n^%s\\n" "$(git rev-parse HEAD)" "$(git rev-parse HEAD~1)" | '
              'git pack-objects -q --revs "$GIT_OBJECT_DIRECTORY/pack/pack"\ngit prune-packed\n'
              'test -z "$(find "$GIT_OBJECT_DIRECTORY" -path "*/pack" -prune -o -type f -print)"\n')
    repo, _, result = hostile.run(tmp_path, orch, worker, "bwrap")
    assert "A: merged into campaign/hostile" in result.out + result.err, result.out + result.err
    assert repo.git("show", "campaign/hostile:a.txt") == "a"
    assert repo.git("rev-list", "--objects", "campaign/hostile")  # every object there (fails on a missing one)


# The store itself, without a sandbox: a private store written by git with the repository as its alternate,
# brought in by hand.

def _store(tmp_path, script: str):
    return _store_in(make_repo(tmp_path / "repo", {"f.txt": "x\n"}), tmp_path, script)


def _store_in(repo, tmp_path, script: str):
    private = tmp_path / "objects" / "t" / "A+1"
    private.mkdir(parents=True)
    env = dict(os.environ, **private_objects.env(private, repo / ".git" / "objects"))
    done = subprocess.run(["sh", "-c", script], cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return repo, private, done.stdout.strip()


def _shared_files(repo) -> list[str]:
    objects = repo / ".git" / "objects"
    return sorted(str(p.relative_to(objects)) for p in objects.rglob("*") if p.is_file())


def test_a_pack_whose_commit_names_a_blob_that_is_nowhere_brings_nothing_in(tmp_path):
    script = (f"git update-index --add --cacheinfo 100644,{GHOST},ghost.txt\n"
              'c=$(git commit-tree -p HEAD -m x "$(git write-tree --missing-ok)")\n'
              'git reset -q\n' + PACKED + 'echo "$c"\n')
    repo, private, commit = _store(tmp_path, script)
    before = _shared_files(repo)
    with pytest.raises(BadObject, match=f"names blob {GHOST}, which is neither there nor in the repository"):
        private_objects.bring_in(repo, private, repo / ".git" / "objects")
    assert _shared_files(repo) == before  # the commit, its tree and the pack stayed out
    assert repo.git("cat-file", "-t", commit, check=False) == ""


def test_a_tree_entry_naming_an_object_of_another_kind_brings_nothing_in(tmp_path):
    script = ('git update-index --add --cacheinfo "100644,$(git rev-parse HEAD),ghost.txt"\n'
              'git commit-tree -p HEAD -m x "$(git write-tree)"\ngit reset -q\n')
    repo, private, _ = _store(tmp_path, script)
    before = _shared_files(repo)
    with pytest.raises(BadObject, match="names blob [0-9a-f]{40}, which is a commit"):
        private_objects.bring_in(repo, private, repo / ".git" / "objects")
    assert _shared_files(repo) == before


def test_a_whole_store_is_brought_in_loose_and_packed(tmp_path):
    script = ('echo y > g.txt && git add g.txt && git commit -qm one && echo z > h.txt && git add h.txt && '
              'git commit -qm two\nmkdir -p "$GIT_OBJECT_DIRECTORY/pack"\n'
              'printf "%s\\n^%s\\n" "$(git rev-parse HEAD~1)" "$(git rev-parse HEAD~2)" | '
              'git pack-objects -q --revs "$GIT_OBJECT_DIRECTORY/pack/pack" >/dev/null\ngit prune-packed\n'
              'git rev-parse HEAD\ngit reset -q --hard HEAD~2\n')
    repo, private, head = _store(tmp_path, script)
    private_objects.bring_in(repo, private, repo / ".git" / "objects")
    assert repo.git("rev-list", "--objects", head)  # both commits, one loose, one packed, and all they hold
    assert repo.git("show", f"{head}:g.txt") == "y" and repo.git("show", f"{head}:h.txt") == "z"
    assert not [p for p in (repo / ".git" / "objects").iterdir() if p.name.startswith("tmp_orchestrate")]


def _loose(repo) -> set[str]:
    objects = repo / ".git" / "objects"
    return {p.parent.name + p.name for p in objects.glob("??/*") if p.is_file()}


def test_objects_the_repository_holds_packed_are_not_brought_in_again_and_the_store_goes(tmp_path):
    """rv74: a worker's `git add -A` over a checkout git finds racily clean writes a copy of every file to its
    store (the read-only shared objects cannot be freshened); each was brought in as a loose duplicate of
    the packed original, O(the repository) on every such node, and the store itself was never removed."""
    repo = make_repo(tmp_path / "repo", {f"f{i}.txt": f"{i}\n" for i in range(5)})
    repo.git("gc", "-q")
    assert not _loose(repo)
    repo, private, new = _store_in(repo, tmp_path, 'echo new | git hash-object -w --stdin\n')
    for i in range(5):  # what git writes when it cannot freshen the pack: a loose copy of each
        data = f"{i}\n".encode()
        raw = b"blob %d\0" % len(data) + data
        sha = hashlib.sha1(raw).hexdigest()
        (private / sha[:2]).mkdir(exist_ok=True)
        (private / sha[:2] / sha[2:]).write_bytes(zlib.compress(raw))
    assert len(list(private.glob("??/*"))) == 6
    private_objects.bring_in(repo, private, repo / ".git" / "objects")
    assert _loose(repo) == {new}  # the five the pack holds stayed out
    assert not private.exists()


@sandboxed
def test_a_worker_that_rewrites_every_blob_adds_none_to_the_repository(tmp_path, orch):
    worker = 'git ls-files | xargs git hash-object -w >/dev/null\necho a > a.txt && git add -A && git commit -qm "A: work"\n'
    repo = hostile.campaign_repo(tmp_path, hostile.dag("bwrap", ""), "#!/bin/sh\n" + worker)
    repo.git("gc", "-q")  # the repository's objects packed, as a clone's are
    hostile._WATCHED[-1] = (repo, "hostile", hostile.git_dir_state(repo))
    result = orch("run", cwd=repo)
    assert "A: merged into campaign/hostile" in result.out + result.err, result.out + result.err
    added = _loose(repo)
    new_blob = repo.git("rev-parse", "campaign/hostile:a.txt")
    assert all(sha == new_blob or repo.git("cat-file", "-t", sha) in ("commit", "tree") for sha in added), added
    # ^ the new blob, trees and commits: no copy of a blob the pack holds
    assert not [p for p in (repo / ".scratch" / "objects").rglob("*") if p.is_file()]
