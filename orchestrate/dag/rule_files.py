"""Files git reads rules from for more than themselves: a change to one changes what git does with files
elsewhere, so a surface grants it only with all it reaches (dag/surface.py's `covering`)."""
from __future__ import annotations

import re

# what each one's rules choose ({} is where they reach)
_RULES = {".gitattributes": "how git checks out, diffs and merges every file in {}",
          ".gitignore": "which new files in {} `git add` takes (orchestrate stages what later nodes leave with it)",
          ".gitmodules": "where every submodule of {} is fetched from"}


# What NTFS and HFS+ open as one of these files though its name differs, as git's own path checks read them
# (is_ntfs_dot_generic, is_hfs_dot_generic): a stream (`.gitignore:x`), trailing dots and spaces, code
# points HFS+ ignores in a name, and the 8.3 short names: the name's first six letters and `~1` to `~4`, or
# a head of a hash of it, `~`, and digits, eight characters in all (`gi7d29~1`, `gi~12345`)
_SHORT = {".gitattributes": "gi7d29", ".gitignore": "gi250a", ".gitmodules": "gi7eba"}
_TILDE = re.compile(r"([^~]{0,6})~[1-9][0-9]*")
_IGNORED_BY_HFS = dict.fromkeys([*range(0x200C, 0x2010), *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF])


def _rules_file(path: str) -> tuple[str, str] | None:
    """(folder, name) for a rules file at `path`, its name compared as a checkout that ignores case (and NTFS
    or HFS+) would find it; None for any other path. Only the top `.gitmodules` is read."""
    folder, _, name = path.rstrip("/").rpartition("/")
    # most names at once: what is not a short name (`~`) nor spelled with what HFS+ ignores starts `.git`
    if name.isascii() and "~" not in name and not name.lower().startswith(".git"):
        return None
    name = name.translate(_IGNORED_BY_HFS).split(":", 1)[0].rstrip(". ").lower()
    found = name if name in _RULES else next((rule for rule in _RULES if _short_for(name, rule)), None)
    return (folder, found) if found and (found != ".gitmodules" or not folder) else None


def _short_for(name: str, rule: str) -> bool:
    if len(name) == 8 and name[:6] == rule[1:7] and name[6] == "~" and name[7] in "1234":
        return True
    tilde = _TILDE.fullmatch(name)
    return bool(tilde) and len(name) == 8 and _SHORT[rule].startswith(tilde.group(1))


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
