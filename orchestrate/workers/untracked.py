"""Clearing a worktree of what git does not track: untracked and ignored files, nested repositories, empty
folders (as `git ls-files --others --directory` lists them, C-quoted), and what no git listing shows: a `.git`
planted in a tracked folder, FIFOs and sockets in one, and what is in a gitlink's folder. Used before a pooled worktree is re-based
(pool.py) and before a returned node is judged (returns.py). Every removal is by descriptors (removal.py)."""
from __future__ import annotations

import os
from pathlib import Path

from orchestrate import git, git_files, removal
from orchestrate.errors import GitError
from orchestrate.workers import quoted, unread

_folders: tuple[str, set[str]] = ("", set())  # the last base re-based to, and its tracked folders (or more)


def clear(path: Path, commit: str, keep_ignored: bool = False) -> list[str]:
    """All the index of the worktree (at `commit`) does not hold removed, as pool.py's docstring says; with
    `keep_ignored`, what the repository's own ignore rules match stays. GitError: git could not list it all (an
    unreadable folder); OSError: a removal met a link on its way (swapped in by a worker still running)."""
    listed = git.git(path, *quoted.QUOTED, "ls-files", "--others", "--directory", check=False)
    if not listed or (said := unread.missed(listed.stderr, path)):  # an unreadable folder: what it holds is unknown
        raise GitError(["ls-files", "--others"], listed.rc, "", said or listed.stderr.strip() or "git could not list")
    try:
        left: list[str] | None = [quoted.unquote(entry).rstrip("/") for entry in listed.stdout.split("\n") if entry]
        if keep_ignored and (left := _not_ignored(path, left)) is None:
            raise GitError(["check-ignore"], 1, "", "git could not tell what its ignore rules match")
        for entry in left:  # each removal walks down from the worktree, never through a link
            removal.remove_below(path, entry)
        for folder in _tracked_folders(path, commit):  # git never lists a `.git` below the top, nor tracks one
            removal.remove_below(path, folder + "/.git")
            left += [f"{folder}/{name}" for name in removal.remove_odd_in(path, folder)]
        left += removal.remove_odd_in(path, "")  # FIFOs and sockets: git lists neither (untracked folders went whole)
        _empty_gitlinks(path)
    except ValueError as exc:  # a name git did not quote as asked
        raise GitError(["ls-files"], 0, "", f"a name git did not quote as asked ({exc})") from None
    return left


def _tracked_folders(path: Path, base: str) -> set[str]:
    """Every folder commit `base` tracks, or more (a folder since removed may be named: nothing is there to
    remove then). Derived from the last commit asked about in this repository, with the folders of every path
    the kept differ says changed since (O(the diff), no process); listed by `ls-tree` (O(the tree)) when
    there is none, or the differ cannot be asked."""
    from orchestrate import git_diffs
    global _folders
    last, folders = _folders  # a commit's folders are the same in any repository that has it
    changed = git_diffs.changed(git.main_worktree(path), last, base) if last else None  # the engine's differ
    if changed is None or any("\ufffd" in name for _, name in changed):  # a name not UTF-8: ask for it quoted
        listed = git.git(path, *quoted.QUOTED, "ls-tree", "-r", "-d", "--name-only", base).stdout.split("\n")
        folders = {quoted.unquote(line) for line in listed if line}
    else:  # a path the new base holds is no folder (a folder that became a link would stop every re-base)
        there = [name for code, name in changed if code != "D"]
        folders = (folders - set(there)) | {name[:cut] for name in there for cut in _slashes(name)}
    _folders = (base, folders)
    return folders


def _slashes(name: str) -> list[int]:
    return [i for i, char in enumerate(name) if char == "/"]


def _empty_gitlinks(path: Path) -> None:
    """Each gitlink's folder emptied, as a fresh checkout leaves it: no git listing shows what is in one (a
    submodule the last node checked out, files written there), and the next node would find it. Looked for
    only when the index may hold a gitlink (its mode's bytes appear in it). OSError when the folder, or one
    on the way, is not a plain one (a link): the spare is then removed."""
    admin = git.admin_dir(path)
    if admin is None or not git_files.may_hold_gitlink(admin / "index"):
        return
    for line in git.git(path, *quoted.QUOTED, "ls-files", "--stage").stdout.split("\n"):
        mode, _, name = line.partition("\t")
        if mode.startswith("160000 "):
            removal.empty_below(path, quoted.unquote(name))


def _not_ignored(path: Path, entries: list[str]) -> list[str] | None:
    """Remove each untracked `.gitignore` among `entries`, then return the entries the repository's ignore
    rules (the new base's `.gitignore` files and `info/exclude`; not the user's global excludes file,
    which a worker may have written) do not match. None when git could not tell."""
    planted = [e for e in entries if os.path.basename(e) == ".gitignore"]
    for entry in planted:  # gone before git is asked: each would make what it names look ignored
        removal.remove_below(path, entry)
    rest = [e for e in entries if os.path.basename(e) != ".gitignore"]
    if not rest:
        return []
    # without a trailing slash a folder is matched by the rules above it, never by a .gitignore inside it
    asked = git.git(path, *quoted.QUOTED, "-c", "core.excludesFile=/dev/null", "check-ignore", "--stdin",
                    input="".join(quoted.quote(e) + "\n" for e in rest), check=False)
    if asked.rc not in (0, 1):
        return None
    ignored = {quoted.unquote(line) for line in asked.stdout.split("\n") if line}
    return [e for e in rest if e not in ignored]
