"""git_pipe: the kept writers store what one-shot git commands would (blobs, trees, commits), swap refs only
from the value they were given, start again after git refused, and stay started across calls."""
from __future__ import annotations

import os

import pytest

from orchestrate import git, git_ids, git_pipe, memfiles, proc
from tests.helpers import make_repo


@pytest.fixture
def repo(tmp_path):
    r = make_repo(tmp_path / "r", {"a.txt": "one\n", "dir/b.md": "# b\n"})
    yield r
    git_pipe.close_all()


ENV = {"GIT_AUTHOR_NAME": "A U", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "C M", "GIT_COMMITTER_EMAIL": "c@x"}


def tree_id(entries: dict, width: int = 40) -> str:
    return git_ids.tree(entries, width)[0]


def stored(store, blobs: list[bytes], trees: list[dict], parents: list[str], message: str = "m", env=ENV) -> str:
    """`Store.objects` of these contents and trees (name -> (mode, id)), the last tree the commit's; each id
    worked out by git_ids, and checked by `objects` against git's."""
    root = tree_id(trees[-1]) if trees else tree_id({})
    return store.objects([(git_ids.blob_id(data, 40), data) for data in blobs],
                         [git_ids.tree(t) for t in trees],
                         (root, parents, message, env))


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


def test_blobs_trees_and_a_commit_read_back_as_git_wrote_them(repo):
    store = git_pipe.store(repo)
    data = b"crlf\r\nand bytes \xff\n"
    blob = git_ids.blob_id(data, 40)
    sub = {"run.sh": ("100755", blob)}
    root = {"z.txt": ("100644", blob), "bin": ("40000", tree_id(sub)), "a b.txt": ("100644", blob)}
    head = repo.head()
    sha = stored(store, [data], [sub, root], [head], "subject\n\nbody line")  # the parent's id named before git
    assert repo.git("ls-tree", "-r", sha).splitlines() == [  # wrote the subtree
        f"100644 blob {blob}\ta b.txt", f"100755 blob {blob}\tbin/run.sh", f"100644 blob {blob}\tz.txt"]
    (repo / "c.txt").write_bytes(data)
    assert blob == repo.git("hash-object", "--no-filters", "c.txt")
    assert repo.git("log", "-1", "--format=%T %P%n%an <%ae>%n%cn <%ce>%n%B", sha).splitlines() == [
        f"{tree_id(root)} {head}", "A U <a@x>", "C M <c@x>", "subject", "", "body line"]
    assert repo.git("cat-file", "commit", sha).endswith("body line")  # one newline at the end, as commit-tree -m
    assert tree_id({}) == repo.git("hash-object", "-t", "tree", "/dev/null")
    assert repo.git("cat-file", "-t", stored(store, [], [{}], [])) == "commit"  # the empty tree written too


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_a_tree_id_worked_out_here_is_the_one_git_gives(tmp_path, object_format):
    """Git sorts a subtree's name as if it ended in "/": `a` the folder comes after `a.b` and before `a0`."""
    repo = tmp_path / object_format
    git.git(tmp_path, "init", "-q", f"--object-format={object_format}", str(repo))
    (repo / "f").write_text("x\n")
    blob = git.out(repo, "hash-object", "-w", "f")
    width = len(blob)
    sub = tree_id({"x": ("100644", blob)}, width)
    entries = {"a": ("40000", sub), "a.b": ("100644", blob), "a-b": ("100755", blob), "a0": ("100644", blob),
               "\u00e9t\u00e9": ("100644", blob), "B": ("40000", sub)}
    store = git_pipe.store(repo)
    sha = store.objects([], [git_ids.tree({"x": ("100644", blob)}, width), git_ids.tree(entries, width)],
                        (tree_id(entries, width), [], "m", ENV))  # git's answers checked against these
    assert git.out(repo, "rev-parse", f"{sha}^{{tree}}") == tree_id(entries, width)
    assert git.out(repo, "ls-tree", "--name-only", sha).splitlines() == ["B", "a-b", "a.b", "a", "a0", '"\\303\\251t\\303\\251"']
    assert store.swap("refs/heads/first", sha, "0" * width)  # a branch made where ids are 64 digits too


def test_an_id_that_is_not_the_one_git_gives_is_refused(repo):
    store = git_pipe.store(repo)
    data = b"x\n"
    wrong = git_ids.blob_id(b"y\n", 40)
    with pytest.raises(git.GitError, match="not what orchestrate wrote"):
        store.objects([(wrong, data)], [], (tree_id({}), [], "m", ENV))


def test_objects_are_stored_after_a_writer_ended_between_commits(repo):
    store = git_pipe.store(repo)
    for round_ in range(2):
        data = f"journal, round {round_}\n".encode()
        sub = {"journal.jsonl": ("100644", git_ids.blob_id(data, 40))}
        sha = stored(store, [data], [sub, {"state": ("40000", tree_id(sub))}], [repo.head()], f"round {round_}")
        assert repo.git("show", f"{sha}:state/journal.jsonl") == data.decode().rstrip("\n")
        assert repo.git("log", "-1", "--format=%P %s", sha) == f"{repo.head()} round {round_}"
        for writer in (store.blob_writer, store.tree_writer, store.commit_writer):
            writer._child.kill()  # gone before the next round's requests: each started again
            writer._child.wait()


@pytest.mark.parametrize("memfd", [True, False])
def test_contents_reach_git_through_memory_or_through_unnamed_files_where_memory_is_refused(repo, monkeypatch, memfd):
    if not memfd:
        def refused(*_args):
            raise OSError(38, "Function not implemented")
        monkeypatch.setattr(os, "memfd_create", refused)
    store = git_pipe.store(repo)
    big = b"x" * 300_000 + b"\n"  # more than a pipe or a single write holds
    files = [b"small\n", big] + [b"%d\n" % i for i in range(memfiles.KEPT)]  # more memfds than are kept
    root = {str(i): ("100644", git_ids.blob_id(data, 40)) for i, data in enumerate(files)}
    sha = stored(store, files, [root], [])
    assert repo.git("cat-file", "-s", f"{sha}:1") == str(len(big))
    assert store._contents._folder is None  # unnamed files: a memfd, or where refused an O_TMPFILE
    assert len(store._contents._fds) == memfiles.KEPT  # emptied and kept, the others closed


def test_many_objects_at_once_never_leave_git_and_orchestrate_waiting_on_each_other(repo):
    """A request bigger than a pipe holds, written before any answer is read, would stop both: git waiting for
    its answers to be read, orchestrate for git to read the rest (rv41)."""
    store = git_pipe.store(repo)
    files = [b"file %d\n" % i for i in range(700)]
    trees = [{f"f{i}": ("100644", git_ids.blob_id(data, 40))} for i, data in enumerate(files)]
    trees.append({f"d{i}": ("40000", tree_id(t)) for i, t in enumerate(trees)})
    sha = stored(store, files, trees, [])
    assert repo.git("show", f"{sha}:d699/f699") == "file 699"
    names = [f"new/{'n' * 100}{i}.tmp" for i in range(600)] + [":foo", "keep.tmp"]
    (repo / ".gitignore").write_text("*.tmp\nfoo\n!keep.tmp\n")
    assert store.ignored(names) == set(names[:600])  # `:foo` is no pathspec, and `!keep.tmp` keeps it


def test_an_interrupt_mid_commit_leaves_no_answer_for_the_next_one(repo, monkeypatch):
    """Ctrl-C while one writer's answer is read: the others' answers, left in their pipes, were taken for the
    next commit's (a branch moved to a commit whose tree was never written: rv41)."""
    store = git_pipe.store(repo)
    data = b"interrupted\n"
    real = git_pipe._Writer.receive

    def interrupted(self, answers):
        if self is store.tree_writer:
            raise KeyboardInterrupt
        return real(self, answers)
    monkeypatch.setattr(git_pipe._Writer, "receive", interrupted)
    with pytest.raises(KeyboardInterrupt):
        stored(store, [data], [{"a": ("100644", git_ids.blob_id(data, 40))}], [], "interrupted")
    monkeypatch.setattr(git_pipe._Writer, "receive", real)
    later = b"the next commit\n"
    tree = {"b": ("100644", git_ids.blob_id(later, 40))}
    sha = stored(store, [later], [tree], [], "next")
    assert repo.git("log", "-1", "--format=%T %s", sha) == f"{tree_id(tree)} next"
    assert repo.git("show", f"{sha}:b") == "the next commit"


def test_an_interrupt_between_a_request_and_its_answer_leaves_nothing_for_the_next_request(repo, monkeypatch):
    """A Ctrl-C as the answer is about to be read: a swap then took the interrupted one's `ok` for its own (a
    ref git refused to move said moved), check-ignore stayed an answer behind (rv42)."""
    store = git_pipe.store(repo)
    head, second = repo.head(), repo.commit("second")
    (repo / ".gitignore").write_text("*.tmp\n")
    for name in ("receive", "receive_fields"):
        real = getattr(git_pipe._Writer, name)

        def interrupted(self, *args, real=real):
            raise KeyboardInterrupt
        monkeypatch.setattr(git_pipe._Writer, name, interrupted)
        with pytest.raises(KeyboardInterrupt):
            store.swap("refs/heads/main", head, second) if name == "receive" else store.ignored(["a.tmp", "b.txt"])
        monkeypatch.setattr(git_pipe._Writer, name, real)
    # the interrupted move went through or not, as git got to it before its pipe closed (under load it can);
    # either way a move from where main is not is refused, not answered with the interrupted one's `ok`
    at = repo.git("rev-parse", "refs/heads/main")
    assert at in (head, second)
    assert not store.swap("refs/heads/main", at, head if at == second else second)
    assert repo.git("rev-parse", "refs/heads/main") == at
    assert store.ignored(["keep.txt", "drop.tmp"]) == {"drop.tmp"}


def test_a_commit_text_rewritten_before_git_reads_it_is_refused(repo, monkeypatch):
    """A process of the user's (a worker without the sandbox) writing the runner's own file for the commit's
    text would have had the branch moved to a tree of its choosing (rv41)."""
    from orchestrate import memfiles
    store = git_pipe.store(repo)
    real = memfiles.Scratch.names

    def rewritten(self, contents):
        names = real(self, contents)
        if self.label == "commit":
            with open(names[0], "wb") as fh:
                fh.write(contents[0].replace(b"tree ", b"tree 4b825dc642cb6eb9a060e67bf8d69288fbe2d5ec\nx", 1))
        return names
    monkeypatch.setattr(memfiles.Scratch, "names", rewritten)
    tree = repo.git("rev-parse", "HEAD^{tree}")
    with pytest.raises(git.GitError, match="not what orchestrate wrote"):
        store.commit(tree, [], "m", ENV)


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
        data = b"%d\n" % i
        stored(store, [data], [{"n.txt": ("100644", git_ids.blob_id(data, 40))}], [])
    assert sorted(next(a for a in argv[3:] if not a.startswith(("-c", "core."))) for argv in starts) \
        == ["hash-object", "hash-object", "hash-object"]


def test_loose_blobs_are_stored_uncompressed_and_read_back_whole(repo):
    """The recorder's blobs skip zlib until a repack (git_pipe.Store); git reads them as any other."""
    import zlib
    data = b"a line of journal\n" * 500
    sha = git_ids.blob_id(data, 40)
    stored(git_pipe.store(repo), [data], [{"j.txt": ("100644", sha)}], [])
    raw = (repo / ".git" / "objects" / sha[:2] / sha[2:]).read_bytes()
    assert len(raw) > 9000  # 9,000 bytes of text: stored, not compressed
    assert zlib.decompress(raw).startswith(b"blob 9000\0")
    assert repo.git("cat-file", "-p", sha) == data.decode().rstrip("\n")


def test_a_forked_child_gets_writers_of_its_own(repo):
    parent = git_pipe.store(repo)
    stored(parent, [], [{}], [])
    pid = os.fork()
    if pid == 0:  # the child must not write into the parent's pipes
        child = git_pipe.store(repo)
        os._exit(0 if child is not parent and stored(child, [b"c\n"], [{}], []) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert repo.git("cat-file", "-t", stored(parent, [b"p\n"], [{}], [])) == "commit"


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


def test_a_tree_git_could_not_write_is_refused_not_named(repo):
    """`git mktree` answers a tree's id even when it could not write the tree (a full disk; a fan-out folder
    removed by a background repack's prune-packed between git making it and writing in it): the commit then
    named a tree that was never stored, and `git fsck` found it missing 1 run in 3 of a campaign packing as it
    went. Each writer must end instead, and its request fail."""
    store = git_pipe.store(repo)
    blob = repo.git("rev-parse", "HEAD:a.txt")
    for i in range(1000):  # a tree whose fan-out folder does not exist yet: a file is put in its place
        tree = {f"t{i}": ("100644", blob)}
        folder = repo / ".git" / "objects" / tree_id(tree)[:2]
        if not folder.exists():
            break
    folder.write_text("not a folder\n")
    with pytest.raises(git.GitError, match="ended"):
        stored(store, [], [tree], [])
    folder.unlink()
    sha = stored(store, [], [tree], [])  # the same request once git can write: stored
    assert repo.git("ls-tree", sha) == f"100644 blob {blob}\tt{i}"


def test_a_write_git_failed_once_is_asked_again_and_stored(repo, monkeypatch):
    """A background repack's prune-packed removes a fan-out folder as git is about to write in it: the writer
    ends, and the same request to a writer started anew stores the object (the obstacle gone by then)."""
    store = git_pipe.store(repo)
    blob = repo.git("rev-parse", "HEAD:a.txt")
    for i in range(1000):
        tree = {f"u{i}": ("100644", blob)}
        folder = repo / ".git" / "objects" / tree_id(tree)[:2]
        if not folder.exists():
            break
    folder.write_text("not a folder\n")
    real, ended = git_pipe._Writer.receive, []

    def receive(self, answers):
        got = real(self, answers)
        if got is None and folder.is_file():  # git ended on the write: the folder is free again for the retry
            ended.append(self.args)
            folder.unlink()
        return got
    monkeypatch.setattr(git_pipe._Writer, "receive", receive)
    sha = stored(store, [], [tree], [])
    assert ended in ([store.tree_writer.args], [store.commit_writer.args])  # (the commit's id may share the folder)
    assert repo.git("ls-tree", sha) == f"100644 blob {blob}\tu{i}"
