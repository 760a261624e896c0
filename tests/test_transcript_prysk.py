"""orchestrate's transcripts against prysk's (and cram's) on the same files: the same verdict for each.

prysk (and cram) are GPL-licensed: they run here as separate programs, never imported by orchestrate,
and none of their files is copied. Each transcript below was written for these tests.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("prysk", reason="prysk (the dev extra) is what these tests compare against")

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

# name: (transcript, verdict prysk gives it)
CASES: dict[str, tuple[str, str]] = {
    "plain": ("  $ echo hi\n  hi\n", "passed"),
    "plain-wrong": ("  $ echo hi\n  ho\n", "failed"),
    "exit-code": ("  $ false\n  [1]\n", "passed"),
    "exit-code-missing": ("  $ false\n", "failed"),
    "exit-code-wrong": ("  $ (exit 2)\n  [1]\n", "failed"),
    "literal-bracket": ("  $ echo '[1]'\n  [1]\n", "passed"),
    "literal-bracket-then-code": ("  $ echo '[2]'; false\n  [2]\n  [1]\n", "passed"),
    "continuation": ("  $ echo a \\\n  > b\n  a b\n", "passed"),
    "heredoc": ("  $ cat <<EOF\n  > x\n  > \n  > y\n  > EOF\n  x\n  \n  y\n", "passed"),
    "heredoc-stripped": ("  $ cat <<EOF\n  > x\n  >\n  > y\n  > EOF\n  x\n  \n  y\n", "failed"),
    "syntax-error": ("  $ if true; then\n  $ echo after\n  after\n", "failed"),
    "exit-midway": ("  $ exit 1\n  $ echo never\n  never\n", "failed"),
    "exit-last": ("  $ echo a\n  a\n  $ exit 1\n", "passed"),
    "exit-last-cuts-newline": ("  $ echo hi; exit 3\n  hi (no-eol)\n", "passed"),
    "skip-80": ("  $ echo x\n  x\n  $ exit 80\n", "skipped"),
    "skip-80-despite-mismatch": ("  $ echo x\n  y\n  $ exit 80\n", "skipped"),
    "empty": ("", "skipped"),
    "re": ("  $ echo abc123\n  abc\\d+ (re)\n", "passed"),
    "re-anchored": ("  $ echo abc123\n  ^abc\\d+$ (re)\n", "failed"),
    "re-invalid": ("  $ echo abc\n  ab( (re)\n", "failed"),
    "re-whole-line": ("  $ echo abc123\n  abc (re)\n", "failed"),
    "glob": ("  $ echo foo.bar\n  f?o.* (glob)\n", "passed"),
    "glob-escapes": ("  $ printf '%s\\n' 'a*b?c\\d'\n  a\\*b\\?c\\\\d (glob)\n", "passed"),
    "glob-escaped-star": ("  $ echo axb\n  a\\*b (glob)\n", "failed"),
    "no-eol": ("  $ printf hi\n  hi (no-eol)\n", "passed"),
    "no-eol-missing": ("  $ printf hi\n  hi\n", "failed"),
    "esc-control": ("  $ printf 'a\\033[1mb\\n'\n  a\\x1b[1mb (esc)\n", "passed"),
    "esc-raw-tab": ("  $ printf 'a\\tb\\n'\n  a\tb\n", "passed"),
    "esc-utf8-raw": ("  $ printf '\\342\\230\\272\\n'\n  \u263a\n", "passed"),
    "esc-utf8-escaped": ("  $ printf '\\342\\230\\272\\n'\n  \\xe2\\x98\\xba (esc)\n", "passed"),
    "esc-not-utf8": ("  $ printf 'x\\377y\\n'\n  x\\xffy (esc)\n", "passed"),
    "esc-nul": ("  $ printf 'a\\000b\\n'\n  a\\x00b (esc)\n", "passed"),
    "esc-wrong": ("  $ printf 'a\\001\\n'\n  a\\x02 (esc)\n", "failed"),
    "esc-no-eol": ("  $ printf 'a\\tb'\n  a\\tb (no-eol) (esc)\n", "passed"),
    "carriage-return": ("  $ printf 'a\\rb\\n'\n  a\\r (no-eol) (esc)\n  b\n", "passed"),
    "output-after-prose": ("  $ echo a\nprose\n  a\n", "failed"),
    "output-before-command": ("  a\n  $ echo a\n  a\n", "failed"),
    "prose-between": ("Intro\n\n  $ echo a\n  a\n\nMore prose.\n  $ echo b\n  b\n", "passed"),
    "state-carries": ("  $ cd /; X=1\n  $ pwd; echo $X\n  /\n  1\n", "passed"),
    "testfile": ('  $ echo "$TESTFILE"\n  testfile.t\n', "passed"),
    "testdir": ('  $ test -f "$TESTDIR/$TESTFILE" && echo yes\n  yes\n', "passed"),
    "cwd": (('  $ basename "$PWD"\n  cwd.t\n  $ test "$(dirname "$PWD")" = "$PRYSK_TEMP" && echo root\n  root\n'
             '  $ test "$TMPDIR" = "$PRYSK_TEMP/tmp" && echo tmp\n  tmp\n'), "passed"),
    "reset-variables": (('  $ echo $LANG $LC_ALL $LANGUAGE $TZ $COLUMNS "[$CDPATH]" "[$GREP_OPTIONS]" $TESTSHELL\n'
                         "  C C C GMT 80 [] [] /bin/sh\n"), "passed"),
    "caller-path": ("  $ tool-on-my-path\n  found\n", "passed"),
    "caller-home": ('  $ test "$HOME" = "$CALLER_HOME" && echo same\n  same\n', "passed"),
    "tmpdir-shown": ('  $ echo "$TMPDIR/x"\n  $TMPDIR/x\n', "passed"),
    "cramtmp-unset": ('  $ echo "[${CRAMTMP-unset}] [${PRYSK_TEMP:+set}]"\n  [unset] [set]\n', "passed"),
    "dollar-line": ("  $ echo '$ x'\n  \\x24 x (esc)\n", "passed"),
    "literal-annotations": ("  $ echo 'x (re)'; echo 'y (esc)'\n  x (re)\n  y (esc)\n", "passed"),
}


def _environment(tmp_path: Path) -> dict[str, str]:
    tools = tmp_path / "tools"
    tools.mkdir(exist_ok=True)
    tool = tools / "tool-on-my-path"
    tool.write_text("#!/bin/sh\necho found\n")
    tool.chmod(0o755)
    env = dict(os.environ, PATH=os.pathsep.join([str(BIN), str(tools), os.environ.get("PATH", "")]),
               CALLER_HOME=os.environ["HOME"])
    for name in ("CRAMTMP", "PRYSK_TEMP"):  # a caller's value would pass through to every tool
        env.pop(name, None)
    return env


def _write(folder: Path, cases: dict[str, tuple[str, str]]) -> None:
    folder.mkdir()
    for name, (text, _) in cases.items():
        (folder / f"{name}.t").write_bytes(text.encode())


def _verdicts(text: str, pattern: str) -> dict[str, str]:
    found = {m.group(1): m.group(2) for m in re.finditer(pattern, text, re.MULTILINE)}
    return {name: "skipped" if verdict == "empty" else verdict for name, verdict in found.items()}


def _prysk(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "prysk", "--color=never", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, errors="replace", check=False)


def _orchestrate(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "orchestrate"), "replay", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, errors="replace", check=False)


def test_every_construct_gets_the_verdict_prysk_gives_it(tmp_path):
    _write(tmp_path / "cases", CASES)
    env = _environment(tmp_path)
    theirs = _prysk(["-q", "-v", "cases"], env, tmp_path)
    ours = _orchestrate(["cases"], env, tmp_path)
    prysk_says = _verdicts(theirs.stdout, r"^cases/(\S+)\.t: (passed|failed|skipped|empty)$")
    we_say = _verdicts(ours.stdout, r"^cases/(\S+)\.t: (passed|failed|skipped)\b")
    assert prysk_says == {name: verdict for name, (_, verdict) in CASES.items()}, theirs.stdout
    assert we_say == prysk_says, ours.stdout
    counts = {v: list(prysk_says.values()).count(v) for v in ("passed", "failed", "skipped")}
    assert ours.stdout.endswith(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped\n")
    assert ours.returncode == theirs.returncode == 1


# transcripts whose expectations are missing or wrong; --update must make prysk and cram pass them all
TO_UPDATE: dict[str, tuple[str, str]] = {
    "no-eol": ("  $ printf hi\n", "  hi (no-eol)\n"),
    "control": ("  $ printf 'a\\033[1mb\\tc\\n'\n", "  a\\x1b[1mb\\tc (esc)\n"),
    "nul-and-not-utf8": ("  $ printf 'a\\000b\\377\\n'\n", "  a\\x00b\\xff (esc)\n"),
    "printable-utf8": ("  $ printf '\\342\\230\\272 ok\\n'\n", "  \u263a ok\n"),
    "no-break-space": ("  $ printf 'a\\302\\240b\\n'\n", None),
    "no-break-space-no-eol": ("  $ printf '$ \\302\\240'\n", None),
    "looks-like-commands": ("  $ echo '$ not a command'; echo '> nor a continuation'; printf '%s\\n' '$ a\\b'\n",
                            "  \\x24 not a command (esc)\n  \\x3e nor a continuation (esc)\n  \\x24 a\\\\b (esc)\n"),
    "backslash": ("  $ printf '%s\\n' 'a\\b'\n", "  a\\b\n"),
    "code-and-bracket": ("  $ echo '[1]'; false\n", "  [1]\n  [1]\n"),
    "keeps-a-pattern": ("  $ echo abc123; echo new\n  abc\\d+ (re)\n  old\n", "  abc\\d+ (re)\n  new\n"),
    "after-prose": ("  $ echo a\nprose\n  a\n", None),
    "carriage-return": ("  $ printf 'a\\rb\\n'\n", "  a\\r (no-eol) (esc)\n  b\n"),
    "ends-the-shell": ("  $ echo hi; exit 3\n", "  hi (no-eol)\n"),
    "literal-annotations": ("  $ echo 'x (re)'; echo 'y (esc)'; echo 'z (glob)'\n", "  x (re)\n  y (esc)\n  z (glob)\n"),
    # prysk shows the path of $TMPDIR as `$TMPDIR`, cram as it is (in its own cramtests-* folder)
    "tmpdir": ('  $ echo "$TMPDIR/x"; echo "$TMPDIR"\n',
               "  (?:\\$TMPDIR|/.+/cramtests-[^/]+/tmp)/x (re)\n  (?:\\$TMPDIR|/.+/cramtests-[^/]+/tmp) (re)\n"),
    "tmpdir-printable-utf8": ("  $ printf '\\342\\230\\272 %s\\n' \"$TMPDIR\"\n", None),  # cram escapes it, prysk not
    "tmpdir-no-break-space": ("  $ printf '> %s\\302\\240\\n' \"$TMPDIR\"\n", None),
    "tmpdir-control": ("  $ printf '\\033%s\\\\' \"$TMPDIR\"\n", None),
}


def test_update_writes_files_that_prysk_and_cram_pass(tmp_path):
    folder = tmp_path / "cases"
    folder.mkdir()
    for name, (text, _) in TO_UPDATE.items():
        (folder / f"{name}.t").write_bytes(text.encode())
    env = _environment(tmp_path)
    updated = _orchestrate(["--update", "cases"], env, tmp_path)
    assert updated.returncode == 0, updated.stdout
    assert updated.stdout.endswith(f"{len(TO_UPDATE)} passed, 0 failed, 0 skipped, {len(TO_UPDATE)} updated\n")
    for name, (text, output) in TO_UPDATE.items():
        if output is not None:
            assert (folder / f"{name}.t").read_bytes() == (text.splitlines(True)[0] + output).encode(), name
    theirs = _prysk(["-v", "cases"], env, tmp_path)
    assert theirs.returncode == 0, theirs.stdout
    again = _orchestrate(["cases"], env, tmp_path)
    assert again.returncode == 0 and again.stdout.endswith(f"{len(TO_UPDATE)} passed, 0 failed, 0 skipped\n"), again.stdout
    if shutil.which("cram", path=str(BIN)) is None:
        pytest.skip("cram is not installed beside this interpreter: prysk alone was compared")
    cram = subprocess.run([str(BIN / "cram"), "-v", "cases"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          errors="replace", check=False)
    assert cram.returncode == 0, cram.stdout


def _cram(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    if shutil.which("cram", path=str(BIN)) is None:
        pytest.skip("cram is not installed beside this interpreter")
    return subprocess.run([str(BIN / "cram"), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          errors="replace", check=False)


# where cram's verdict differs from prysk's (replay follows prysk): the scratch folder's variable is
# CRAMTMP in cram and PRYSK_TEMP in prysk, and cram shows the path of $TMPDIR as it is
CRAM_DIFFERS = {"cwd": "failed", "tmpdir-shown": "failed", "cramtmp-unset": "failed"}


def test_cram_differs_from_prysk_only_where_the_readme_says(tmp_path):
    _write(tmp_path / "cases", CASES)
    cram = _cram(["-q", "-v", "cases"], _environment(tmp_path), tmp_path)
    cram_says = _verdicts(cram.stdout, r"^cases/(\S+)\.t: (passed|failed|skipped|empty)$")
    assert cram_says == {name: CRAM_DIFFERS.get(name, verdict) for name, (_, verdict) in CASES.items()}, cram.stdout


def test_what_replay_refuses_and_what_the_tools_do_with_it(tmp_path):
    """A file with no command passes under both tools (there is nothing to check); replay refuses it.
    A glob ending in a lone backslash stops both tools with a traceback; replay refuses it in one line."""
    env = _environment(tmp_path)
    (tmp_path / "prose.t").write_text("Only prose, no command.\n")
    (tmp_path / "glob.t").write_text("  $ echo 'a\\'\n  a\\ (glob)\n")
    assert _prysk(["prose.t"], env, tmp_path).returncode == 0
    assert _cram(["prose.t"], env, tmp_path).returncode == 0
    for tool in (_prysk(["glob.t"], env, tmp_path), _cram(["glob.t"], env, tmp_path)):
        assert tool.returncode == 1 and "IndexError" in tool.stderr, tool.stderr
    for name, says in (("prose.t", "prose.t:1: not a transcript: no command line in it"),
                       ("glob.t", "glob.t:2: this ` (glob)` line ends in a lone backslash")):
        ours = _orchestrate([str(tmp_path / name)], env, tmp_path)
        assert (ours.returncode, ours.stdout, ours.stderr.count("\n")) == (2, "", 1), ours.stderr
        assert ours.stderr.startswith(f"orchestrate: error: {tmp_path / name}:") and says in ours.stderr


def test_the_demo_transcript_passes_under_prysk(tmp_path):
    env = dict(os.environ, PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))
    env.pop("HOME", None)  # the transcript makes a home of its own
    shutil.copytree(ROOT / "demo", tmp_path / "demo")
    theirs = _prysk(["-v", "demo/TRANSCRIPT.t"], env, tmp_path)
    assert theirs.returncode == 0, theirs.stdout
    if shutil.which("cram", path=str(BIN)) is None:
        pytest.skip("cram is not installed beside this interpreter: prysk alone was compared")
    cram = subprocess.run([str(BIN / "cram"), "-v", "demo/TRANSCRIPT.t"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, errors="replace", check=False)
    assert cram.returncode == 0, cram.stdout
