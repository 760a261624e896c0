"""git_pipe: the kept writers store what one-shot git commands would (blobs, trees, commits), swap refs only
from the value they were given, start again after git refused, and stay started across calls."""
from __future__ import annotations

import os

import pytest

from orchestrate import git, git_pipe, proc
from tests.helpers import make_repo


@pytest.fixture
def repo(tmp_path):
    r = make_repo(tmp_path / "r", {"a.txt": "one\n", "dir/b.md": "# b\n"})
    yield r
    git_pipe.close_all()


@pytest.fixture
def starts(monkeypatch):
    """The argv of every long-running helper started from here on."""
    seen: list[list[str]] = []
    real = proc.start_pipe

    def counting(cmd, **kw):
        seen.append([str(c) for c in cmd])
        return real(cmd, **kw)
    monkeypatch.setattr(proc, "start_pipe", counting)
    return seen


def test_a_blob_is_what_hash_object_stores(repo):
    (repo / "c.txt").write_bytes(b"crlf\r\nand bytes \xff\n")
    [sha] = git_pipe.store(repo).blobs([repo / "c.txt"])
    assert sha == repo.git("hash-object", "--no-filters", "c.txt")
    assert repo.git("cat-file", "-t", sha) == "blob"  # written, not only hashed


def test_a_tree_and_a_commit_read_back_as_git_wrote_them(repo):
    store = git_pipe.store(repo)
    [blob] = store.blobs([repo / "a.txt"])
    sub = git_pipe.tree_id({"run.sh": ("100755", blob)})
    entries = {"z.txt": ("100644", blob), "bin": ("40000", sub), "a b.txt": ("100644", blob)}
    root = git_pipe.tree_id(entries)  # the parent's id before git has written the subtree it names
    assert store.trees([[("100755", blob, "run.sh")], [(mode, oid, name) for name, (mode, oid) in entries.items()]]) \
        == [sub, root]
    assert repo.git("ls-tree", "-r", root).splitlines() == [
        f"100644 blob {blob}\ta b.txt", f"100755 blob {blob}\tbin/run.sh", f"100644 blob {blob}\tz.txt"]
    assert store.trees([[]]) == [repo.git("hash-object", "-t", "tree", "/dev/null")] == [git_pipe.tree_id({})]
    head = repo.head()
    env = {"GIT_AUTHOR_NAME": "A U", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "C M",
           "GIT_COMMITTER_EMAIL": "c@x"}
    sha = store.commit(root, [head], "subject\n\nbody line", env)
    assert repo.git("log", "-1", "--format=%T %P%n%an <%ae>%n%cn <%ce>%n%B", sha).splitlines() == [
        f"{root} {head}", "A U <a@x>", "C M <c@x>", "subject", "", "body line"]
    assert repo.git("cat-file", "commit", sha).endswith("body line")  # one newline at the end, as commit-tree -m


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_a_tree_id_worked_out_here_is_the_one_git_gives(tmp_path, object_format):
    """Git sorts a subtree's name as if it ended in "/": `a` the folder comes after `a.b` and before `a0`."""
    repo = tmp_path / object_format
    git.git(tmp_path, "init", "-q", f"--object-format={object_format}", str(repo))
    (repo / "f").write_text("x\n")
    store = git_pipe.store(repo)
    [blob] = store.blobs([repo / "f"])
    width = len(blob)
    sub = git_pipe.tree_id({"x": ("100644", blob)}, width)
    entries = {"a": ("40000", sub), "a.b": ("100644", blob), "a-b": ("100755", blob), "a0": ("100644", blob),
               "\u00e9t\u00e9": ("100644", blob), "B": ("40000", sub)}
    ids = [sub, git_pipe.tree_id(entries, width)]
    assert store.trees([[("100644", blob, "x")], [(m, o, n) for n, (m, o) in entries.items()]]) == ids
    assert git.out(repo, "ls-tree", "--name-only", ids[1]).splitlines() == ["B", "a-b", "a.b", "a", "a0", '"\\303\\251t\\303\\251"']


def test_blobs_trees_and_a_commit_are_stored_in_one_round_trip_and_after_a_writer_ended(repo):
    store = git_pipe.store(repo)
    env = {"GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "C", "GIT_COMMITTER_EMAIL": "c@x"}
    for round_ in range(2):
        data = f"journal, round {round_}\n".encode()
        blob = git_pipe.blob_id(data, 40)
        sub = git_pipe.tree_id({"journal.jsonl": ("100644", blob)})
        root = git_pipe.tree_id({"state": ("40000", sub)})
        blobs, trees, sha = store.objects([data], [[("100644", blob, "journal.jsonl")], [("40000", sub, "state")]],
                                          (root, [repo.head()], f"round {round_}", env))
        assert (blobs, trees) == ([blob], [sub, root])
        assert repo.git("show", f"{sha}:state/journal.jsonl") == data.decode().rstrip("\n")
        assert repo.git("log", "-1", "--format=%T %P %s", sha) == f"{root} {repo.head()} round {round_}"
        for writer in (store.blob_writer, store.tree_writer, store.commit_writer):
            writer._child.kill()  # gone before the next round's requests: each started again
            writer._child.wait()


@pytest.mark.parametrize("memfd", [True, False])
def test_contents_reach_git_through_memory_or_through_files_where_memory_is_refused(repo, monkeypatch, memfd):
    if not memfd:
        def refused(*_args):
            raise OSError(38, "Function not implemented")
        monkeypatch.setattr(os, "memfd_create", refused)
    store = git_pipe.store(repo)
    big = b"x" * 300_000 + b"\n"  # more than a pipe or a single write holds
    blobs, _trees, sha = store.objects([b"small\n", big], [], (repo.git("rev-parse", "HEAD^{tree}"), [], "m", {}))
    assert blobs == [git_pipe.blob_id(b"small\n", 40), git_pipe.blob_id(big, 40)]
    assert repo.git("cat-file", "-s", blobs[1]) == str(len(big)) and repo.git("cat-file", "-t", sha) == "commit"
    assert bool(store._blob_contents._fds) == memfd and (store._blob_contents._folder is None) == memfd


def test_a_commit_date_set_in_the_environment_is_kept(repo):
    store = git_pipe.store(repo)
    tree = repo.git("rev-parse", "HEAD^{tree}")
    env = {"GIT_AUTHOR_DATE": "@1700000000 +0200", "GIT_COMMITTER_DATE": "@1700000100 -0130"}
    sha = store.commit(tree, [], "dated", env)
    assert repo.git("log", "-1", "--format=%at %ai|%ct %ci", sha) == \
        "1700000000 2023-11-15 00:13:20 +0200|1700000100 2023-11-14 20:45:00 -0130"


def test_a_swap_moves_a_ref_only_from_the_value_given_and_the_next_swap_works(repo, starts):
    store = git_pipe.store(repo)
    head = repo.head()
    second = repo.commit("second")
    assert not store.swap("refs/heads/main", head, head)  # main is at `second`: refused, nothing moved
    assert repo.head() == second
    assert store.swap("refs/heads/main", head, second)
    assert repo.head() == head
    assert store.swap("refs/heads/new", second, "0" * 40)  # created
    assert not store.swap("refs/heads/new", head, "0" * 40)  # must not exist: it does
    assert repo.git("rev-parse", "new") == second
    assert sum(argv[3:5] == ["update-ref", "--stdin"] for argv in starts) == 2  # refused: started again


def test_writers_start_once_for_many_objects(repo, starts):
    store = git_pipe.store(repo)
    for i in range(20):
        (repo / "n.txt").write_text(f"{i}\n")
        store.trees([[("100644", *store.blobs([repo / "n.txt"]), "n.txt")]])
    assert sorted(next(a for a in argv[3:] if not a.startswith(("-c", "core."))) for argv in starts) \
        == ["hash-object", "mktree"]


def test_loose_blobs_are_stored_uncompressed_and_read_back_whole(repo):
    """The recorder's blobs skip zlib until a repack (git_pipe.Store); git reads them as any other."""
    import zlib
    store = git_pipe.store(repo)
    (repo / "j.txt").write_text("a line of journal\n" * 500)
    [sha] = store.blobs([repo / "j.txt"])
    raw = (repo / ".git" / "objects" / sha[:2] / sha[2:]).read_bytes()
    assert len(raw) > 9000  # 9,000 bytes of text: stored, not compressed
    assert zlib.decompress(raw).startswith(b"blob 9000\0")
    assert repo.git("cat-file", "-p", sha) == ("a line of journal\n" * 500).rstrip("\n")


def test_a_file_git_cannot_read_is_an_error_and_the_writer_recovers(repo):
    store = git_pipe.store(repo)
    with pytest.raises(git.GitError):
        store.blobs([repo / "a.txt", repo / "missing.txt"])
    assert store.blobs([repo / "a.txt"]) == [repo.git("hash-object", "a.txt")]


def test_a_forked_child_gets_writers_of_its_own(repo):
    parent = git_pipe.store(repo)
    parent.blobs([repo / "a.txt"])
    pid = os.fork()
    if pid == 0:  # the child must not write into the parent's pipes
        child = git_pipe.store(repo)
        os._exit(0 if child is not parent and child.blobs([repo / "a.txt"]) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert parent.blobs([repo / "a.txt"]) == [repo.git("hash-object", "a.txt")]


def test_a_writer_that_ended_between_requests_is_started_again_without_a_failed_write(repo):
    """A kept helper can end mid-campaign (killed, or gone under load): the next write starts it anew instead of
    failing the recorder's commit."""
    store = git_pipe.store(repo)
    [tree] = store.trees([[("100644", *store.blobs([repo / "a.txt"]), "a.txt")]])
    first = store.commit(tree, [], "before", {})
    for writer in (store.blob_writer, store.tree_writer, store.commit_writer):
        writer._child.kill()
        writer._child.wait()
    assert store.blobs([repo / "a.txt"]) == [repo.git("hash-object", "a.txt")]
    assert store.trees([[("100644", *store.blobs([repo / "a.txt"]), "a.txt")]]) == [tree]
    assert repo.git("cat-file", "-t", store.commit(tree, [first], "after a helper ended", {})) == "commit"


def test_the_identity_a_run_began_with_stands_while_a_worker_edits_the_user_config(tmp_path, home):
    """A worker (in the sandbox too: $HOME is writable) that removes the identity from ~/.gitconfig had the
    recorder's next commit fail (`git var`: unable to auto-detect email address, exit 2) before the watch
    could put the file back; one that set another name had the recorder's commits signed with it."""
    repo = make_repo(tmp_path / "ident")
    before = git_pipe.identity(repo, git.identity_env(repo))
    (home / ".gitconfig").write_text("[user]\n\tname = Worker\n\temail = w@evil\n")
    assert git_pipe.identity(repo, git.identity_env(repo))[0].rsplit(" ", 2)[0] == before[0].rsplit(" ", 2)[0]
    (home / ".gitconfig").write_text("")
    assert git_pipe.identity(repo, git.identity_env(repo))[0].rsplit(" ", 2)[0] == before[0].rsplit(" ", 2)[0]
