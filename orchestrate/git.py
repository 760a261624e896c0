"""The only module that speaks git: typed verbs over the git CLI. Mutations always go through the CLI
(complete worktree and merge semantics, thread-safe by being a process per call). Every failure becomes a
GitError naming the command and git's own last line."""
from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orchestrate import proc
from orchestrate.errors import GitError, ProcError, UsageError
from orchestrate import git_admin

_READ_ENV = {"LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"}


def git(repo: str | Path, *args: str, check: bool = True, env: dict[str, str] | None = None,
        input: str | None = None, timeout: float | None = None) -> "proc.Completed":
    from orchestrate import proc  # lazily: subprocess's import is most of what `status` would cost
    argv, merged = command(repo, *args, env=env)
    try:
        done = proc.run(argv, env=merged, input=input, timeout=timeout, confined=True)  # inert: see inert.py
    except ProcError as exc:
        raise GitError(exc.cmd, None, message=f"git is not installed or cannot start: {exc.message}") from exc
    if check and not done:
        raise GitError(list(done.cmd), done.rc, done.stdout, done.stderr)
    return done


PROGRAM = "git"  # looked up on PATH once a run (proc.program); the sandbox keeps its folder read-only


def command(repo: str | Path, *args: str, env: dict[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The argv and environment of a git call in `repo`: C locale, no optional locks, inert."""
    from orchestrate import inert
    return [PROGRAM, "-C", str(repo), *args], {**_READ_ENV, **inert.env(Path(repo)), **(env or {})}


def out(repo: str | Path, *args: str, **kw) -> str:
    return git(repo, *args, **kw).stdout.strip()


def lines(repo: str | Path, *args: str, **kw) -> list[str]:
    return [ln for ln in git(repo, *args, **kw).stdout.splitlines() if ln]


# ---- repository discovery -------------------------------------------------------------------

def toplevel(path: str | Path) -> Path:
    """The top of the working tree containing `path` (git_batch keeps it), or UsageError naming the fix."""
    from orchestrate import git_batch
    if (top := git_batch.toplevel(path)) is None:
        bare = out(path, "rev-parse", "--is-bare-repository", check=False) == "true"  # told apart from none
        said, hint = (("a bare repository: it has no checkout", "run from a clone with a working tree: `git clone BARE DIR`")
                      if bare else ("not inside a git repository", "run from the project's checkout, or `git init` first"))
        raise UsageError(f"{Path(path).resolve()} is {said}", hint=hint)
    return top


def main_worktree(path: str | Path) -> Path:
    """The main checkout of the repository containing `path` (also from a linked worktree). The ordinary
    layouts are read from the `.git` entries (a process costs more than all of `status`'s own work)."""
    found = _main_worktree_from_files(Path(path))
    if found is not None:
        return found
    done = git(path, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir", check=False)
    if not done:
        toplevel(path)  # raises the one-line error naming the fix
    top, common = (Path(x) for x in done.stdout.split("\n")[:2])
    return common.parent if common.name == ".git" else top


def _main_worktree_from_files(path: Path) -> Path | None:
    if any(v in os.environ for v in ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES")):
        return None
    here = path.resolve()
    for top in (here, *here.parents):
        dot = top / ".git"
        if dot.is_dir():
            return top if (dot / "HEAD").is_file() and not (dot / "commondir").exists() else None
        if dot.is_file():  # a linked worktree: `gitdir: <common>/worktrees/<name>`, whose commondir is `../..`
            text = dot.read_text(errors="replace").strip()
            if not text.startswith("gitdir: "):
                return None
            gitdir = (top / text[len("gitdir: "):]).resolve()
            try:
                common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve()
            except OSError:
                return None
            return common.parent if common.name == ".git" and (common / "HEAD").is_file() else None
    return None


def git_common_dir(repo: str | Path) -> Path:
    """The shared git dir; no git process for a main checkout (its `.git` a folder: where git would find it)."""
    dot = Path(repo).absolute() / ".git"
    return dot if dot.is_dir() else Path(out(repo, "rev-parse", "--path-format=absolute", "--git-common-dir"))


def is_repo_root(path: str | Path) -> bool:
    if not ((p := Path(path)) / ".git").exists():
        return False
    done = git(p, "rev-parse", "--show-toplevel", check=False)
    return bool(done) and Path(done.stdout.strip()).resolve() == p.resolve()


# ---- refs and commits -------------------------------------------------------------------------

def rev_parse(repo: str | Path, rev: str) -> str | None:
    from orchestrate import git_batch  # a reader kept open where it answers as `rev-parse --verify` would
    return git_batch.commit(repo, rev)


def resolve(repo: str | Path, rev: str) -> str:
    sha = rev_parse(repo, rev)
    if sha is None:
        raise UsageError(f"`{rev}` does not name a commit in {repo}", hint="check the ref with `git log`")
    return sha


def head_branch(repo: str | Path) -> str | None:
    done = git(repo, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    return done.stdout.strip() if done else None


def branch_exists(repo: str | Path, branch: str) -> bool:
    from orchestrate import git_batch  # a reader kept open, or `show-ref --verify`
    return git_batch.has_ref(repo, f"refs/heads/{branch}")


def refs(repo: str | Path, pattern: str) -> dict[str, str]:
    """{refname: sha} for refs matching a for-each-ref pattern."""
    return dict(ln.rsplit(" ", 1) for ln in lines(repo, "for-each-ref", "--format=%(refname) %(objectname)", pattern))


def is_ancestor(repo: str | Path, ancestor: str, descendant: str) -> bool:
    from orchestrate import git_batch  # a few commits down the first-parent line, read without a process
    if git_batch.first_parents(repo, ancestor, descendant, limit=8) is not None:
        return True
    done = git(repo, "merge-base", "--is-ancestor", ancestor, descendant, check=False)
    if done.rc not in (0, 1):
        raise GitError(list(done.cmd), done.rc, done.stdout, done.stderr)
    return done.rc == 0


def create_branch(repo: str | Path, branch: str, start: str) -> None:
    git(repo, "branch", "--no-track", branch, start)


def update_ref(repo: str | Path, ref: str, new: str, old: str | None = None, *, reason: str = "") -> bool:
    """Compare-and-swap the ref itself (never what a worker's symbolic ref names); False when `old` no longer matches."""
    args = ["update-ref", "--no-deref"] + (["-m", reason] if reason else []) + [ref, new] + ([old] if old is not None else [])
    return bool(git(repo, *args, check=False))


def commit_subjects(repo: str | Path, rev_range: str, *extra: str) -> list[tuple[str, str]]:
    """[(sha, subject)] newest first."""
    rows = (ln.partition("\t") for ln in lines(repo, "log", "--format=%H%x09%s", *extra, rev_range))
    return [(sha, subject) for sha, _, subject in rows]


# ---- changes ----------------------------------------------------------------------------------

def changed_paths(repo: str | Path, base: str, head: str | None = None) -> list[tuple[str, str]]:
    """[(status letter, path)] between two commits (or base and the working tree), renames split in two:
    `--no-renames` reports a rename as a deletion plus an addition, so both its old and new path count."""
    if head:  # between two commits: asked of the kept differ, which keeps its answers (git_diffs)
        from orchestrate import git_diffs
        if (found := git_diffs.changed(repo, base, head)) is not None:
            return found
    args = ["diff", "--name-status", "--no-renames", "--ignore-submodules=none", "-z", base] + ([head] if head else [])
    fields = git(repo, *args).stdout.split("\0")
    return [(fields[i][0], fields[i + 1]) for i in range(0, len(fields) - 1, 2) if fields[i]]



# A gitlink's move is a change; whether its nested repository's worktree is dirty is not looked at: git would
# start a git there, which reads that repository's config (a worker's). On the command line: a `.gitmodules`
# `ignore = none` (a file a worker writes) outranks the config key inert.py sets, not the option.
NO_SUBMODULE_DIRT = ("--ignore-submodules=dirty",)


def status(repo: str | Path) -> "proc.Completed":
    """Every changed and untracked file (not folder), NUL-separated; git's stderr too (workers/unread.py)."""
    return git(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all", *NO_SUBMODULE_DIRT)


def has_changes(repo: str | Path) -> bool:
    return bool(status(repo).stdout)


def head_and_changes(worktree: str | Path) -> tuple[str | None, str | None, list[str]]:
    """(HEAD's sha or None, the branch HEAD is on or None when detached, the paths `git status` reports)
    in one git process: porcelain v2's branch header carries what rev-parse and symbolic-ref would say."""
    fields = git(worktree, "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all",
                 *NO_SUBMODULE_DIRT).stdout.split("\0")
    sha = branch = None
    paths: list[str] = []
    skip = False
    for field in fields:
        if skip or not field:  # a rename's second path (v2 -z gives it a field of its own)
            skip = False
            continue
        if field.startswith("# branch.oid "):
            sha = None if (value := field.removeprefix("# branch.oid ")) == "(initial)" else value
        elif field.startswith("# branch.head "):
            branch = None if (value := field.removeprefix("# branch.head ")) == "(detached)" else value
        elif field[0] in "12u?":  # ordinary, renamed, unmerged, untracked: the path is the last space field
            spaces = {"1": 8, "2": 9, "u": 10, "?": 1}[field[0]]
            paths.append(field.split(" ", spaces)[spaces])
            skip = field[0] == "2"
    return sha, branch, paths


def commit_all(repo: str | Path, message: str, *, env: dict[str, str] | None = None, allow_empty: bool = False) -> str:
    # `add` of a gitlink starts a git in the nested repository, whose config a worker may have written:
    # gitlinks are left as they are (a worker commits a submodule's move itself)
    links = [link for entry in git(repo, "ls-files", "-s", "-z").stdout.split("\0") if entry.startswith("160000 ")
             and (Path(repo) / (link := entry.split("\t", 1)[1]) / ".git").exists()]  # checked out: a repository
    if links and (moved := git(repo, "status", "--porcelain=v1", "-z", *NO_SUBMODULE_DIRT, "--",
                               *(f":(literal){link}" for link in links)).stdout):
        raise GitError(["git", "add"], 1, "", f"a submodule was moved and the move not committed "
                       f"({moved.split(chr(0))[0][3:]}): git add it and commit")
    git(repo, "add", "-A", "--", ".", *(f":(exclude,literal){link}" for link in links), env=env)
    args = ["commit", "-q", "--no-verify", "-m", message] + (["--allow-empty"] if allow_empty else [])
    git(repo, *args, env=env)
    return out(repo, "rev-parse", "HEAD")


def config_get(repo: str | Path, key: str) -> str | None:
    done = git(repo, "config", "--get", key, check=False)
    return done.stdout.strip() or None if done else None


# ---- worktrees and merges ---------------------------------------------------------------------

def worktree_add(repo: str | Path, path: str | Path, branch: str, start: str, *, new_branch: bool = True) -> None:
    def args() -> list[str]:
        fresh = new_branch and not branch_exists(repo, branch)  # a try that failed may have made the branch
        return ["worktree", "add", "--quiet"] + (["-b", branch, str(path), start] if fresh else [str(path), branch])
    _worktree_add(repo, args)


def worktree_add_detached(repo: str | Path, path: str | Path, start: str) -> None:
    _worktree_add(repo, lambda: ["worktree", "add", "--quiet", "--detach", str(path), start])


def _worktree_add(repo: str | Path, args) -> None:
    """`git worktree add`, tried again when it lost a race with another git (git_admin.lost_race)."""
    for attempt in range(4):
        with git_admin.adding(repo):
            done = git(repo, *args(), check=False)
        if done or not git_admin.lost_race(done.stderr) or attempt == 3:
            break
        time.sleep(0.05 * (attempt + 1))
    if not done:
        raise GitError(list(done.cmd), done.rc, done.stdout, done.stderr)


def worktree_remove(repo: str | Path, path: str | Path) -> None:
    """Its files and admin dir gone (git_files.remove_worktree: `git worktree remove` removes files by path,
    following a link a worker without the sandbox swaps in for a folder), then a prune."""
    from orchestrate import git_files
    git_files.remove_worktree(git_common_dir(repo), Path(path))
    git_admin.prune(repo, check=False, later=True)


worktree_prune = git_admin.prune  # never beside an add of this process's


def worktree_move(repo: str | Path, src: str | Path, dst: str | Path) -> bool:
    return bool(git(repo, "worktree", "move", str(src), str(dst), check=False))


def worktree_detach(worktree: str | Path) -> bool:
    """Let go of the branch a worktree holds, so the branch can be deleted, moved or checked out elsewhere:
    HEAD becomes its own commit, index and files untouched (O(1); `checkout --detach` stats every file)."""
    return bool(git(worktree, "update-ref", "--no-deref", "-m", "detach", "HEAD", "HEAD", check=False))


def worktrees(repo: str | Path) -> list[dict[str, str]]:
    text = git(repo, "worktree", "list", "--porcelain").stdout
    return [{k: v for k, _, v in (ln.partition(" ") for ln in block.splitlines())}
            for block in text.split("\n\n") if block.strip()]


def head_state(worktree: str | Path) -> tuple[str, str | None]:
    """(the commit HEAD is at, the branch it is on or None when detached), in one process."""
    sha, name = lines(worktree, "rev-parse", "HEAD", "--symbolic-full-name", "HEAD")
    return sha, None if name == "HEAD" else name


def worktree_bring(worktree: str | Path, sha: str) -> None:
    """Bring a detached worktree to `sha`: `reset --keep` rewrites and stats only the paths that differ
    (O(the diff); `checkout` stats every file); `reset --hard` where it refuses (a local change in the way)."""
    if not git(worktree, "reset", "--quiet", "--keep", sha, check=False):
        git(worktree, "reset", "--quiet", "--hard", sha)


def commit_tree(repo: str | Path, tree: str, parents: list[str], message: str, *,
                env: dict[str, str] | None = None) -> str:
    """A commit of `tree` on `parents`, no branch moved; the message cleaned up as `git commit -m` does
    (trailing whitespace, blank lines at the ends and runs of them), so either way reads the same. Written
    by the repository's kept commit writer (git_pipe): the object `git commit-tree` would write, no process."""
    from orchestrate import git_pipe
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(line.rstrip() for line in message.split("\n")).strip("\n"))
    return git_pipe.store(repo).commit(tree, parents, text + "\n", env or {})


def merge_abort(worktree: str | Path) -> None:
    git(worktree, "merge", "--abort", check=False)


def conflicted_paths(worktree: str | Path) -> list[str]:
    return lines(worktree, "diff", "--name-only", "--diff-filter=U")


def merge_tree(repo: str | Path, onto: str, head: str) -> tuple[str, list[str]] | None:
    """Merge `head` onto `onto` in the object store alone, as `git merge` would (rename and directory-rename
    detection included, no index, no working tree): (the merged tree, the paths that conflict; [] when clean; a
    conflicted tree holds markers and is never committed). None when this git cannot (`merge-tree --write-tree`
    came with git 2.38; older ones exit 129). Asked twice when git failed: a `git gc --auto` of the user's may
    have removed an object folder as git wrote in it (git_pipe.py)."""
    args = ("merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", onto, head)
    if (done := git(repo, *args, check=False)).rc not in (0, 1, 129):
        done = git(repo, *args, check=False)
    if done.rc == 129:
        return None
    fields = done.stdout.split("\0")
    # 0: clean, stdout is the tree; 1: conflicts, the tree then one path per conflicted file. Git 2.39
    # also exits 1 for a commit it cannot merge, with nothing on stdout: that is an error, not a conflict.
    if done.rc not in (0, 1) or len(fields[0]) not in (40, 64):
        raise GitError(list(done.cmd), done.rc, done.stdout, done.stderr)
    return fields[0], [f for f in fields[1:] if f] if done.rc == 1 else []


def init_repo(path: str | Path, branch: str = "main") -> None:
    git(path, "init", "--quiet", f"--initial-branch={branch}")


# ---- remotes (the Dask executor's only channel; nothing else pushes) ---------------------------

def remote_head(repo: str | Path, remote: str, ref: str) -> str | None:
    """The sha `ref` has on `remote`, or None when the remote lacks it."""
    found = lines(repo, "ls-remote", "--", remote, ref)
    exact = [ln.split("\t")[0] for ln in found if ln.split("\t")[-1] == ref]
    return exact[0] if exact else None


def fetch(repo: str | Path, remote: str, refspec: str) -> None:
    """Fetch objects (and whatever `refspec` stores); FETCH_HEAD is left alone: it is shared state."""
    git(repo, "fetch", "--quiet", "--no-write-fetch-head", "--no-tags", remote, refspec)


def push(repo: str | Path, remote: str, src: str, ref: str, *, lease: str | None = None) -> None:
    """Push `src` to `ref` on `remote`. With `lease`, the ref may be moved anywhere, but only while the
    remote still has it at `lease` ("" = must not exist): never a blind force."""
    leased = [f"--force-with-lease={ref}:{lease}"] if lease is not None else []
    git(repo, "push", "--quiet", "--no-verify", *leased, remote, f"{src}:{ref}")


def identity_env(repo: str | Path) -> dict[str, str]:
    """The identity of our own commits: the user's, or orchestrate's where none is configured (git_batch)."""
    from orchestrate import git_batch
    return git_batch.identity(repo)


def show_file(repo: str | Path, rev: str, path: str) -> str | None:
    from orchestrate import git_batch  # a reader kept open where it reads as `git show rev:path` would
    return git_batch.show(repo, rev, path)


def files_in_commit(repo: str | Path, sha: str) -> list[str]:
    return lines(repo, "diff-tree", "--root", "--no-commit-id", "--name-only", "-r", "--no-renames", sha)


def admin_dir(worktree: str | Path) -> Path | None:
    """A linked worktree's own folder in the common git dir (HEAD, index, logs), from its `.git` file."""
    dot = Path(worktree) / ".git"
    if not dot.is_file():
        return None
    path = Path(dot.read_text(errors="replace").strip().removeprefix("gitdir: "))
    return path if path.is_absolute() else (Path(worktree) / path).resolve()


# ---- campaign life: several topics on one recorder, and cleaning up after ended campaigns ---------

def trailer_values(repo: str | Path, rev_range: str, key: str) -> list[str]:
    """The `key:` trailer of each commit in `rev_range`, newest first ("" for a commit without one)."""
    out_ = git(repo, "log", f"--format=%(trailers:key={key},valueonly,separator=%x2C)%x00", rev_range).stdout
    return [chunk.strip() for chunk in out_.split("\0")[:-1]]


def delete_branch(repo: str | Path, branch: str, sha: str) -> bool:
    """Delete refs/heads/`branch` itself (never what a worker's symbolic ref names) only while it points at `sha`."""
    return bool(git(repo, "update-ref", "--no-deref", "-d", f"refs/heads/{branch}", sha, check=False))

