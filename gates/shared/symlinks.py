"""Where a commit's symbolic links lead, resolved as the kernel would in a checkout of it, for coherence.

A link is followed one name at a time: each name that is itself a link of the tree is replaced by its
target before the next name is taken, so `..` climbs out of where a link led, not out of the link's own
name (`s -> .` then `t -> s/..` leads out of the repository, though `s/..` reads as `.`). An absolute target
leads out at once. Only the tree is consulted: a name the tree does not hold is taken as a folder that
may be made later (a build's output), which keeps a dangling link inside; what is merged is all a link can
rest on.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from orchestrate import git, git_batch

HOPS = 40  # as Linux's MAXSYMLINKS: a longer chain is a loop
# git's output is read as UTF-8, a byte that is not read as U+FFFD: two such names read alike, so a link named
# so, or a chain through such a name, is not followed but refused (rv31)
_ODD = "through a name that is not UTF-8, which is not followed here (rename it)"
# top-level folders no merged link may lead into: git's own, and orchestrate's (the recorder, other worktrees)
_CLOSED = {".git": "into the git dir", ".ledger": "into orchestrate's recorder",
           ".scratch": "into orchestrate's working copies"}


def leaving(repo: Path, head: str, changed: Sequence[str]) -> list[tuple[str, str, str]]:
    """(link, its target, where it leads) for each link of `head` that leads out of the repository or into a
    closed folder, along a chain that goes through a link in `changed` (one the range added, re-pointed or
    made of a file or folder): a link of yours the range did not touch, and whose chain it did not change,
    is not judged here."""
    if not changed:
        return []
    links = _links(repo, head)
    touched = set(changed)
    out = [(path, links.get(path, "?"), _ODD) for path in sorted(touched) if "\ufffd" in path]
    for path in sorted(links):
        where, used = _leads(links, path)
        if where and used & touched and "\ufffd" not in path:
            out.append((path, links[path], where))
    return out


def _links(repo: Path, head: str) -> dict[str, str]:
    """Every link of `head` and its target, read by object id."""
    listing = git.git(repo, "ls-tree", "-r", "-z", head).stdout.split("\0")
    found = {}
    for entry in listing:
        meta, _, path = entry.partition("\t")
        if meta.startswith("120000 "):
            found[path] = _target(repo, meta.split(" ")[2])
    return found


def _target(repo: Path, blob: str) -> str:
    try:
        answer = git_batch.read(repo, blob)
        if answer is not None:
            return answer[2].decode(errors="replace")
    except git_batch.Unusable:
        pass
    return git.git(repo, "cat-file", "blob", blob).stdout


def _leads(links: dict[str, str], path: str) -> tuple[str, set[str]]:
    """Where the link `path` leads ('' inside the repository), and the links its chain went through."""
    used = {path}
    folder = path.split("/")[:-1]
    names = links[path].split("/")
    if links[path].startswith("/"):
        return "out of the repository", used
    hops = HOPS
    while names:
        name = names.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            if not folder:
                return "out of the repository", used
            folder.pop()
            continue
        folder.append(name)
        if "\ufffd" in name:
            return _ODD, used
        if len(folder) == 1 and (closed := _CLOSED.get(name.lower())):
            return closed, used
        here = "/".join(folder)
        if here in links:
            hops -= 1
            if not hops:
                return "round a loop of links", used
            used.add(here)
            folder.pop()
            if links[here].startswith("/"):
                return "out of the repository", used
            names = links[here].split("/") + names
    return "", used
