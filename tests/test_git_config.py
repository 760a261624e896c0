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
    "a byte order mark": "\ufeff[filter \"b\"]\n\tclean = c\n",
    "CRLF": "[filter \"c\"]\r\n\tclean = c\r\n",
    "two headers on a line": "[core][filter \"d\"] clean = c\n",
    "a dotted section with a subsection": "[filter.x \"y\"]\n\tclean = c\n",
    "a vertical tab and a line separator in names": "[filter \"a\x0bb\u2028c\"]\n\tclean = c\n",
}


def _ours(path) -> list[str]:
    out = []
    for e in git_config.read(path, set()):
        if not e.key:
            continue
        name = e.section + (f".{e.subsection}" if e.subsection is not None else "") + f".{e.key}"
        out.append(f"{name}={e.value}" if e.value is not None else name)
    return out


@pytest.mark.parametrize("case", CASES)
def test_a_config_reads_as_git_reads_it(tmp_path, case):
    path = tmp_path / "config"
    path.write_bytes(CASES[case].encode())
    theirs = subprocess.run(["git", "config", "--file", str(path), "--list", "--null"], capture_output=True,
                            check=True).stdout.decode()
    want = [entry.replace("\n", "=", 1) for entry in theirs.split("\0") if entry]
    assert _ours(path) == want


def test_a_name_that_is_not_utf8_keeps_its_bytes(tmp_path):
    """What inert hands git as GIT_CONFIG_KEY_n must name the same driver: os.environ encodes a surrogate
    back into the byte it stood for."""
    import os
    path = tmp_path / "config"
    path.write_bytes(b'[filter "\xff"]\n\tclean = c\n')
    [entry] = [e for e in git_config.read(path, set()) if e.key]
    assert os.fsencode(entry.subsection) == b"\xff"


def test_a_fifo_or_a_device_is_not_read(tmp_path):
    import os
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "config").write_text(f"[include]\n\tpath = {tmp_path / 'fifo'}\n\tpath = /dev/zero\n")
    assert [e.key for e in git_config.read(tmp_path / "config", set())] == ["", "path", "path"]


def test_includes_are_followed_once_with_every_file_looked_at_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "a").write_text('[include]\n\tpath = ~/b\n[includeIf "gitdir:/nowhere/"]\n\tpath = c\n')
    (tmp_path / "b").write_text("[include]\n\tpath = a\n[filter \"x\"]\n\tclean = y\n")
    seen: set = set()
    found = git_config.read(tmp_path / "a", seen)
    assert seen == {tmp_path / "a", tmp_path / "b", tmp_path / "c"}  # c is missing: looked for all the same
    assert ("filter", "x", "clean", "y") in found
