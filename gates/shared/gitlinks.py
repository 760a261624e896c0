"""Gitlinks a range added or moved whose submodule is fetched from this machine, for coherence.

A gitlink is a commit of another repository: no gate sees what it holds, and `git submodule update` fetches
it from the url `.gitmodules` gives. An absolute path, `~/...` or a `file:` url is a repository on this
machine, one a sandboxed worker can make in $HOME: what the merge then brings in was never judged by
anyone. A url relative to your remote (`../lib.git`) or a remote one is a dependency like any other.
"""
from __future__ import annotations

from typing import Sequence

from orchestrate import git_config


def local(gitmodules: str | None, moved: Sequence[str]) -> list[tuple[str, str]]:
    """(gitlink, its url) for each of the `moved` gitlinks whose url in `gitmodules` (its text at head) is on
    this machine, or that `.gitmodules` does not name at all (git would then fetch nothing, or ask)."""
    if not moved:
        return []
    paths: dict[str, str] = {}
    urls: dict[str, str] = {}
    for entry in git_config.entries(gitmodules or ""):
        if entry.section == "submodule" and entry.subsection is not None and entry.value is not None:
            (paths if entry.key == "path" else urls if entry.key == "url" else {})[entry.subsection] = entry.value
    url_of = {path: urls.get(name, "") for name, path in paths.items()}
    out = []
    for path in moved:
        url = url_of.get(path, "")
        if not url or url.startswith(("/", "~", "file:")):
            out.append((path, url or "(no url in .gitmodules)"))
    return out
