"""Tracked files whose bytes a checkout converts so that different bytes clean to the same blob, written anew
from orchestrate's index before a node is judged (rv31).

With `ident`, any `$Id: ... $` cleans to `$Id$`: a worker can hide a line of code inside one and the worktree
still compares equal to the commit, in orchestrate's own index too, so the evaluators ran code that was never
merged. `working-tree-encoding` re-encodes (UTF-7 has many spellings of one text). These two are looked for
only where an attributes file could set them: the committed `.gitattributes` files (one `git grep` of the
index, again only once a `.gitattributes` changed), `info/attributes` and the attributes files your config
names. Only then is each tracked file's
attribute asked, and those it applies to are checked out again, as a checkout of the head writes them.
(`text` and `eol` only change line ends; a clean filter's files are leftovers to commit, never passed over.)
"""
from __future__ import annotations

from pathlib import Path

from orchestrate import git
from orchestrate.errors import GitError
from orchestrate.workers import git_named, quoted, watched

_HIDING = ("ident", "working-tree-encoding")


_last: dict[str, tuple[str, bool]] = {}  # repository -> (a commit, whether its .gitattributes files name them)


def rewrite(path: Path, common: Path, root: Path, head: str) -> list[str]:
    """Check out again, from the worktree's index (at commit `head`), every file an `ident` or
    `working-tree-encoding` attribute applies to; returns their paths. GitError when git cannot tell or write
    them."""
    if not (_committed(path, root, head) or _named(common, root)):
        return []
    listed = git.git(path, *quoted.QUOTED, "ls-files").stdout
    asked = git.git(path, *quoted.QUOTED, "check-attr", "--cached", "--stdin", *_HIDING, input=listed).stdout
    found = []
    for line in asked.split("\n"):
        name, attr, value = (line.rsplit(": ", 2) + ["", ""])[:3]
        if (attr == "ident" and value == "set") or (attr == "working-tree-encoding" and value not in
                                                     ("unspecified", "unset", "")):
            found.append(name)
    if found:
        git.git(path, "checkout-index", "--force", "--stdin", input="".join(n + "\n" for n in dict.fromkeys(found)))
    return [quoted.unquote(n) for n in dict.fromkeys(found)]


def _committed(path: Path, root: Path, head: str) -> bool:
    """Whether a committed `.gitattributes` of `head` names them: asked of git (one grep of the index) only when
    a `.gitattributes` changed since the last commit asked about, as the kept differ tells."""
    from orchestrate import git_diffs
    last = _last.get(str(root))
    if last is not None and (changed := git_diffs.changed(root, last[0], head)) is not None and not any(
            name == ".gitattributes" or name.endswith("/.gitattributes") for _, name in changed):
        return last[1]
    grep = git.git(path, "grep", "--cached", "-l", "-i", "-E", "|".join(_HIDING), "--",
                   ":(glob)**/.gitattributes", check=False)
    if grep.rc not in (0, 1):
        raise GitError(list(grep.cmd), grep.rc, grep.stdout, grep.stderr)
    _last[str(root)] = (head, grep.rc == 0)
    return grep.rc == 0


def _named(common: Path, root: Path) -> bool:
    """Whether `info/attributes` or an attributes file your config names names them."""
    named, _ = git_named.split(common, root)  # what the repository's config names, its attributesFile among them
    for file in (common / "info" / "attributes", *git_named.home_files(root), *named):
        text = (watched.read_file(file) or b"").lower()  # never waits on a FIFO a worker planted there
        if any(word.encode() in text for word in _HIDING):
            return True
    return False
