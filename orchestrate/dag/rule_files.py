"""Files git reads rules from for more than themselves: a change to one changes what git does with files
elsewhere, so a surface grants it only with all it reaches (dag/surface.py's `covering`)."""
from __future__ import annotations

# what each one's rules choose ({} is where they reach)
_RULES = {".gitattributes": "how git checks out, diffs and merges every file in {}",
          ".gitignore": "which new files in {} `git add` takes (orchestrate stages what later nodes leave with it)",
          ".gitmodules": "where every submodule of {} is fetched from"}


def _rules_file(path: str) -> tuple[str, str] | None:
    """(folder, name) for a rules file at `path`, its name compared as a case-insensitive checkout (and git's
    NTFS checks) would find it; None for any other path. Only the top `.gitmodules` is read."""
    folder, _, name = path.rstrip("/").rpartition("/")
    name = name.lower().rstrip(". ")
    return (folder, name) if name in _RULES and (name != ".gitmodules" or not folder) else None


def rules_folder(path: str) -> str | None:
    """The folder ('' at the top) that a rules file at `path` speaks for; None for other paths."""
    found = _rules_file(path)
    return None if found is None else found[0]


def rules_reach(path: str) -> str:
    """What a change to the rules file at `path` reaches, as a clause: "a .gitignore chooses ..."."""
    folder, name = _rules_file(path)
    return f"a {name} chooses " + _RULES[name].format(f"{folder}/" if folder else "the repository")


def needed(path: str) -> str:
    """The token a surface must gain to change `path`: the path itself, or a rules file's whole folder."""
    folder = rules_folder(path)
    return path if folder is None else f"{folder}/" if folder else "**"
