"""git_config reads a config file as git does: each case is compared with `git config --list` of the same
file (what inert neutralises and the watch covers rest on this reading)."""
from __future__ import annotations

import subprocess

import pytest

from orchestrate import git_config

CASES = {
    "plain": "[core]\n\thooksPath = /h\n",
    "case": "[Core]\n\tHooksPath = /h\n",
    "key on the header's line": "[include] path = /x\n",
    "comments": "; top\n[core] # c\n\tx = a ; c\n\ty = b# c\n",
    "quotes": '[core]\n\tx = "a ; b" c\n\ty = " lead"\n',
    "escapes": '[core]\n\tx = a\\tb\\\\c\\"d\n',
    "continued": '[core]\n\tx = a \\\n  b\n\ty = "q \\\n r"\n',
    "subsections": '[filter "A b"]\n\tsmudge = s\n[diff "a\\\\x"]\n\tcommand = c\n[merge.Old]\n\tdriver = d\n',
    "boolean": "[core]\n\tbare\n",
}


def _ours(text: str) -> list[str]:
    out = []
    for e in git_config.entries(text):
        if not e.key:
            continue
        name = e.section + (f".{e.subsection}" if e.subsection is not None else "") + f".{e.key}"
        out.append(f"{name}={e.value}" if e.value is not None else name)
    return out


@pytest.mark.parametrize("case", CASES)
def test_a_config_reads_as_git_reads_it(tmp_path, case):
    path = tmp_path / "config"
    path.write_text(CASES[case])
    theirs = subprocess.run(["git", "config", "--file", str(path), "--list", "--null"], capture_output=True,
                            check=True).stdout.decode()
    want = [entry.replace("\n", "=", 1) for entry in theirs.split("\0") if entry]
    assert _ours(CASES[case]) == want


def test_includes_are_followed_once_with_every_file_looked_at_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "a").write_text('[include]\n\tpath = ~/b\n[includeIf "gitdir:/nowhere/"]\n\tpath = c\n')
    (tmp_path / "b").write_text("[include]\n\tpath = a\n[filter \"x\"]\n\tclean = y\n")
    seen: set = set()
    found = git_config.read(tmp_path / "a", seen)
    assert seen == {tmp_path / "a", tmp_path / "b", tmp_path / "c"}  # c is missing: looked for all the same
    assert ("filter", "x", "clean", "y") in found
