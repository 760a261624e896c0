"""Names that are one where case is not told apart (macOS's and Windows' default checkouts), nor composed and
decomposed accents (macOS: `café` written either way), for reconcile-node: a path a change added, or a folder
on its way, that is new beside a name of its folder differing in case or composition alone. There the two are
one file (or folder), and a checkout of the merge holds only one of them: a node whose surface grants
`src/a1.py` (`src/a*`) would overwrite `src/A1.py`, outside it, in your checkout."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from orchestrate import git, git_batch
from orchestrate.dag.wildmatch import fold_name


def collisions(repo: str | Path, base: str, head: str, added: Iterable[str]) -> dict[str, str]:
    """{added path: the other name} for each added path whose own name, or a folder's on its way, is new at
    `head` and one with another name of the same folder there (the other name's path, from the top)."""
    names: dict[tuple[str, str], dict[str, list[str]]] = {}  # (commit, folder) -> {folded name: names}

    def listed(commit: str, folder: str) -> dict[str, list[str]]:
        if (commit, folder) not in names:
            by_lower: dict[str, list[str]] = {}
            for n in _names(Path(repo), commit, folder):
                by_lower.setdefault(fold_name(n), []).append(n)
            names[commit, folder] = by_lower
        return names[commit, folder]

    found = {}
    for path in sorted(set(added)):
        parts = path.split("/")
        for k, name in enumerate(parts):
            folder = "/".join(parts[:k])
            others = [n for n in listed(head, folder).get(fold_name(name), ()) if n != name]
            if others and name not in listed(base, folder).get(fold_name(name), ()):  # a pair the change did not make
                found[path] = f"{folder}/{others[0]}" if folder else others[0]
                break
    return found


def _names(repo: Path, commit: str, folder: str) -> list[str]:
    """The names in `folder` of `commit`'s tree ('' its top); none when it holds no such folder."""
    spec = f"{commit}:{folder}" if folder else f"{commit}^{{tree}}"
    try:
        found = git_batch.read(repo, spec)
    except git_batch.Unusable:  # a name git's batch reader cannot take (a newline): one process
        listing = git.git(repo, "ls-tree", "-z", "--name-only", commit, "--", f"{folder}/" if folder else ".",
                          check=False).stdout
        return [n.rsplit("/", 1)[-1] for n in listing.split("\0") if n]
    if found is None or found[1] != "tree":
        return []
    data, out, i = found[2], [], 0
    width = len(found[0]) // 2  # 20 bytes an id for SHA-1, 32 for SHA-256
    while i < len(data):
        end = data.index(b"\0", i)
        out.append(data[i:end].split(b" ", 1)[1].decode("utf-8", "replace"))
        i = end + 1 + width
    return out
