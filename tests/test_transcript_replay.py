"""`orchestrate replay PATHS`: many files and folders, skips, refusals, what --update writes, and why a
transcript failed."""
from __future__ import annotations

import pytest

from orchestrate.replay.transcript_match import escape, matches, unreadable, writable


def _t(folder, name: str, text: bytes | str):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def test_folders_and_files_are_counted_in_one_summary(tmp_path, orch):
    d = tmp_path / "suite"
    _t(d, "b/pass.t", "  $ echo hi\n  hi\n")
    _t(d, "a/fail.t", "  $ echo hi\n  ho\n")
    _t(d, "skip.t", "  $ exit 80\n")
    _t(d, "empty.t", "")
    _t(d, ".hidden/ignored.t", "  $ echo no\n")
    _t(d, "notes.txt", "not a transcript, not collected")
    other = _t(tmp_path, "other.t", "  $ echo x\n  x\n")
    result = orch("replay", d, other, d / "b" / "pass.t")
    assert result.rc == 1
    verdicts = [line for line in result.out.splitlines() if line.startswith(str(tmp_path))]
    assert verdicts == [f"{d}/a/fail.t: failed (run with --update to accept the actual output)",
                        f"{d}/b/pass.t: passed", f"{d}/empty.t: skipped (empty)", f"{d}/skip.t: skipped (exit 80)",
                        f"{other}: passed"]
    assert result.out.endswith("2 passed, 1 failed, 2 skipped\n")


def test_skipped_transcripts_do_not_fail_the_run(tmp_path, orch):
    _t(tmp_path, "s.t", "  $ echo x\n  wrong\n  $ exit 80\n")
    _t(tmp_path, "e.t", "")
    result = orch("replay", tmp_path)
    assert (result.rc, result.out.splitlines()[-1]) == (0, "0 passed, 0 failed, 2 skipped")


@pytest.mark.parametrize("content, says", [
    (b"\x7fELF\x02\x01\x01\x00\x00\x00", "a binary file, not a transcript"),
    (b"just prose\n\xff\xfe and no command\n", "not a transcript: no command line in it"),
])
def test_what_is_not_a_transcript_is_refused_before_anything_runs(tmp_path, orch, content, says):
    marker = tmp_path / "ran"
    _t(tmp_path, "a.t", f"  $ touch {marker}\n")
    bad = _t(tmp_path, "b.t", content)
    result = orch("replay", tmp_path)
    assert result.rc == 2 and result.out == "" and not marker.exists()
    assert result.err.count("\n") == 1 and result.err.startswith(f"orchestrate: error: {bad}:1: {says} (")


def test_a_program_given_as_a_transcript_is_a_one_line_error(orch, tmp_path):
    program = _t(tmp_path, "prog", b"\x00\x01binary\x00")
    result = orch("replay", program)
    assert result.rc == 2 and len(result.err.strip().splitlines()) == 1 and "binary" in result.err


def test_missing_paths_and_folders_without_transcripts_are_2(tmp_path, orch):
    assert orch("replay", tmp_path / "none.t").rc == 2
    (tmp_path / "bare").mkdir()
    result = orch("replay", tmp_path / "bare")
    assert result.rc == 2 and "no transcript (*.t) in this directory" in result.err
    assert orch("replay").rc == 2
    assert orch("replay", tmp_path / "x.t", "--campaign", "demo").rc == 2


def test_update_writes_escapes_and_no_eol_byte_for_byte(tmp_path, orch):
    t = _t(tmp_path, "u.t", "Prose stays.\n  $ printf 'caf\\303\\251 \\033[0m\\377'\n  $ echo ok\n  wrong\n")
    result = orch("replay", t, "--update")
    assert result.rc == 0 and result.out.endswith("1 passed, 0 failed, 0 skipped, 1 updated\n")
    assert t.read_bytes() == ("Prose stays.\n  $ printf 'caf\\303\\251 \\033[0m\\377'\n"
                              "  caf\u00e9 \\x1b[0m\\xff (no-eol) (esc)\n  $ echo ok\n  ok\n").encode()
    assert orch("replay", t).out.endswith("1 passed, 0 failed, 0 skipped\n")


def test_update_refuses_when_a_command_did_not_run(tmp_path, orch):
    text = "  $ echo a\n  b\n  $ exit 4\n  $ echo never\n  never\n"
    t = _t(tmp_path, "x.t", text)
    result = orch("replay", t, "--update")
    assert result.rc == 1 and t.read_text() == text
    assert f"{t}:3: the shell ended during this command (exit 4); 1 later command(s) did not run" in result.out
    assert f"{t}: failed, not updated: not every command ran" in result.out
    assert "did not run" not in t.read_text()


def test_the_shells_syntax_error_is_shown_and_a_stripped_continuation_named(tmp_path, orch):
    t = _t(tmp_path, "s.t", "  $ if true; then\n  >\n  > echo in\n  in\n")
    result = orch("replay", t)
    assert result.rc == 1
    assert any(line.startswith("+  ") and "syntax error" in line.lower() for line in result.out.splitlines()), result.out
    assert f"{t}:2: `  >` has no space after it, so it is expected output, not a continuation" in result.out
    assert f"{t}:1: the shell ended during this command" in result.out


def test_the_work_folder_and_variables_are_prysks(tmp_path, orch, monkeypatch):
    monkeypatch.setenv("REPLAY_FROM_CALLER", "kept")
    monkeypatch.setenv("CRAMTMP", "the-callers")  # prysk leaves cram's variable alone, and so does replay
    t = _t(tmp_path / "deep", "env.t",
           '  $ basename "$PWD"; test "$(dirname "$PWD")" = "$PRYSK_TEMP" && echo in-prysk-temp\n  env.t\n'
           '  in-prysk-temp\n  $ echo "$CRAMTMP"\n  the-callers\n'
           '  $ echo "$TESTFILE $REPLAY_FROM_CALLER $TZ"; test "$TESTDIR" = "$TESTDIR_WANTED" || echo no\n'
           "  env.t kept GMT\n")
    monkeypatch.setenv("TESTDIR_WANTED", str(t.parent.resolve()))
    result = orch("replay", t)
    assert result.rc == 0, result.out


@pytest.mark.parametrize("expected, actual, ok", [
    (b"  a\\*b\\?c\\\\d (glob)", b"  a*b?c\\d", True),
    (b"  a\\*b (glob)", b"  axb", False),
    (b"  f?o* (glob)", b"  foo.bar", True),
    (b"  end\\ (glob)", b"  end\\", False),  # a lone backslash at the end: replay refuses the file
    (b"  end\\\\ (glob)", b"  end\\", True),
    (b"  abc\\d+ (re)", b"  abc12", True),
    (b"  ^abc\\d+$ (re)", b"  abc12", False),  # the pattern includes the indent
    (b"  abc (re)", b"  abcd", False),
    (b"  ab( (re)", b"  ab(", False),
    (b"  a\\x1b[0m (esc)", b"  a\x1b[0m", True),
    (b"  a\tb", b"  a\\tb (esc)", True),
    (b"  bad\\x4 (esc)", b"  bad", False),
    (b"  [1]", b"  [1]", True),
])
def test_how_an_expected_line_matches(expected, actual, ok):
    assert matches(expected, actual) is ok


def test_escapes_follow_prysk_and_writes_pass_both_tools():
    assert escape("caf\u00e9".encode()) == "caf\u00e9".encode()
    assert escape(b"a\\b\t") == b"a\\\\b\\t (esc)"
    assert escape(b"\xff") == b"\\xff (esc)"
    assert writable(b"$ x", b"$ x") == b"\\x24 x (esc)"
    assert writable(b"> a\\b", b"> a\\b") == b"\\x3e a\\\\b (esc)"
    nbsp = "a\u00a0".encode()
    pattern = writable(nbsp, escape(nbsp))
    assert pattern.endswith(b" (re)")
    assert matches(b"  " + pattern, b"  " + escape(nbsp)) and matches(b"  " + pattern, b"  a\\xc2\\xa0 (esc)")


@pytest.mark.parametrize("line, why", [
    (b"  end\\ (glob)", "ends in a lone backslash"),
    (b"  a\\\\\\ (glob)", "ends in a lone backslash"),
    (b"  end\\ (esc)", "cannot be decoded"),
    (b"  bad\\x4 (esc)", "cannot be decoded"),
    (b"  fine\\\\ (glob)", None),
    (b"  end\\ (re)", None),
])
def test_lines_cram_and_prysk_cannot_read(line, why):
    assert (unreadable(line) is None) if why is None else (why in unreadable(line))


def test_a_line_cram_and_prysk_cannot_read_is_refused_before_anything_runs(tmp_path, orch):
    marker = tmp_path / "ran"
    t = _t(tmp_path, "g.t", f"  $ touch {marker}\n  $ echo 'a\\'\n  a\\ (glob)\n")
    result = orch("replay", t, "--update")
    assert result.rc == 2 and result.out == "" and not marker.exists() and result.err.count("\n") == 1
    assert result.err.startswith(f"orchestrate: error: {t}:3: this ` (glob)` line ends in a lone backslash; ")
    assert "write `\\\\` for a backslash" in result.err


def test_update_writes_the_tmpdir_path_as_a_pattern_both_tools_accept():
    tmpdir = b"/tmp/orchestrate-replay-x/tmp"
    for raw in (tmpdir + b"/x", b"\xe2\x98\xba " + tmpdir, b"\xc2\xa0" + tmpdir + b"\\", b"> " + tmpdir):
        prysk = escape(raw).replace(tmpdir, b"$TMPDIR")
        cram_tmp = b"/var/tmp/cramtests-ab_c1/tmp"
        cram = raw.replace(tmpdir, cram_tmp)
        cram = cram if cram.isascii() and b"\\" not in cram else b"".join(
            b"\\\\" if b == 0x5C else bytes([b]) if 0x20 <= b < 0x7F else b"\\x%02x" % b for b in cram) + b" (esc)"
        line = b"  " + writable(raw, prysk, tmpdir)
        assert line.endswith(b" (re)") and not line.startswith((b"  $ ", b"  > ")), line
        assert matches(line, b"  " + prysk) and matches(line, b"  " + cram), (line, cram)
        assert not matches(line, b"  " + cram.replace(b"cramtests-", b"elsewhere-"))


def test_this_installations_folder_is_appended_to_the_callers_path(tmp_path, orch, monkeypatch):
    import sys
    from pathlib import Path
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("WANTED_PATH", f"/usr/bin:/bin:{Path(sys.executable).parent}")
    t = _t(tmp_path, "p.t", '  $ test "$PATH" = "$WANTED_PATH" && echo appended\n  appended\n')
    assert orch("replay", t).rc == 0
