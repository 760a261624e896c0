"""Gitlinks a range added or moved whose submodule is fetched from this machine, for coherence.

A gitlink is a commit of another repository: no gate sees what it holds, and `git submodule update` fetches
it from the url `.gitmodules` gives. A path (absolute, `~/...`, or relative without `./` or `../`, which git
takes from the top of the checkout) or a `file:` url is a repository on this machine, one a sandboxed worker
can make in $HOME: what the merge then brings in was never judged by anyone. A url relative to your remote
(`../lib.git`) is one only when your remote is one: with none, or a remote that is itself a path, it names a
folder here too. A network url (`https://`, `ssh://`, `git@host:path`) is a dependency like any other.
`.gitmodules` is read as git reads it: each key's last value wins, and a path belongs to the submodule that
named it last (rv31).
"""
from __future__ import annotations

import re
from typing import Callable, Sequence

from orchestrate import git_config

_NETWORK = re.compile(r"(?:[a-z][a-z0-9+.-]*://|[^/:]+:)", re.I)  # a scheme, or scp's host: (no slash before it)


def local(gitmodules: str | None, moved: Sequence[str], remote: Callable[[], str | None]) -> list[tuple[str, str]]:
    """(gitlink, its url) for each of the `moved` gitlinks whose url in `gitmodules` (its text at head) is on
    this machine, or that `.gitmodules` does not name at all (an embedded repository a leftover commit took in).
    `remote()` gives the url a relative one is resolved against (None: no remote)."""
    if not moved:
        return []
    owner: dict[str, str] = {}  # path -> the submodule that named it last
    urls: dict[str, str] = {}
    for entry in git_config.entries(gitmodules or ""):
        if entry.section == "submodule" and entry.subsection is not None and entry.value is not None:
            if entry.key == "path":
                owner[entry.value.strip().rstrip("/").removeprefix("./")] = entry.subsection
            elif entry.key == "url":
                urls[entry.subsection] = entry.value.strip()
    out = []
    for path in moved:
        url = urls.get(owner.get(path, ""), "")
        if not url or _here(url, remote):
            out.append((path, url or "(no url in .gitmodules)"))
    return out


def _here(url: str, remote: Callable[[], str | None]) -> bool:
    if url.startswith(("./", "../")):
        base = remote()
        return base is None or _here(base, lambda: None) or _climbs_out(base, url)
    network = _NETWORK.match(url)
    return url.lower().startswith("file:") or not network or network.group(0).strip(".:") == ""  # `.:lib`


def _climbs_out(remote: str, url: str) -> bool:
    """Whether `url` climbs (`../` each) past the path of `remote`: git then cuts into its host (`git@host:x` and
    `../../lib` make `.:lib`, a folder here; rv32)."""
    ups = re.match(r"(?:\.\.?/)*", url).group(0).split("/").count("..")  # git strips each ./ in the run too
    scheme = re.match(r"[a-z][a-z0-9+.-]*://[^/]*", remote, re.I)
    rest = remote[scheme.end():] if scheme else remote.partition(":")[2]
    return ups > len([part for part in rest.split("/") if part])
