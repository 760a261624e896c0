"""The premise gate: tripwires re-checked against the current tree (reference §3.4, §8.3, and the §9.2 holes)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gates import premise
from orchestrate.dag.model import Tripwire
from orchestrate.errors import UsageError


def spec(where, text, name="spec.tsv"):
    path = where / name
    path.write_text(text)
    return path


@pytest.fixture
def tree(repo):
    repo.write({"docs/guide.md": "the campaign skill lives here\n"})
    return repo


# ---- §8.3: the reference's own cases ----------------------------------------------------------

def test_fresh_spec_is_0(tree, orch):
    path = spec(tree, "0\ttest -f docs/guide.md\n0\tgrep -q 'campaign skill' docs/guide.md\n")
    result = orch("gate", "premise", "FIXTURE", path, "--cwd", tree)
    lines = result.out.splitlines()
    assert result.rc == 0
    assert lines[0].split(None, 2) == ["FRESH", "(0==0)", "test -f docs/guide.md"]
    assert lines[1].split(None, 2) == ["FRESH", "(0==0)", "grep -q 'campaign skill' docs/guide.md"]
    assert lines[-1] == "FRESH: node FIXTURE: every premise still holds"


def test_stale_when_grep_now_finds_what_was_expected_absent(tree, orch):
    path = spec(tree, "1\tgrep -q 'campaign skill' docs/guide.md\tnobody has written the guide yet\n")
    result = orch("gate", "premise", "FIXTURE", path, "--cwd", tree)
    assert result.rc == 1
    assert result.out.splitlines()[0].split(None, 3)[:3] == ["STALE", "(got", "0,"]
    assert "(got 0, want 1)  grep -q 'campaign skill' docs/guide.md  <- nobody has written the guide yet" in result.out
    assert result.out.splitlines()[-1] == "INVALIDATED: node FIXTURE has 1 stale premise(s); realign before dispatch"


def test_no_arguments_is_2_with_usage(orch):
    result = orch("gate", "premise")
    assert result.rc == 2 and "usage:" in result.err and "Traceback" not in result.err



@pytest.mark.parametrize("args, reason", [
    (("N",), "NODE needs a SPEC.tsv"),
    (("N", "s.tsv", "--timeout", "soon"), "`soon` is not a number of seconds"),
    (("N", "s.tsv", "--timeout", "0"), "`0` must be a positive number of seconds"),
    (("N", "s.tsv", "--timeout", "inf"), "`inf` must be a positive number of seconds"),
])
def test_arguments_that_do_not_go_together_are_2_with_usage_and_reason(orch, args, reason):
    result = orch("gate", "premise", *args)
    assert result.rc == 2 and result.err.startswith("usage:") and reason in result.err

def test_a_missing_spec_is_2(tmp_path, orch):
    result = orch("gate", "premise", "N", tmp_path / "missing.tsv")
    assert result.rc == 2 and "missing.tsv: no such tripwire spec" in result.err


def test_a_line_without_a_tab_is_2_naming_file_and_line(tmp_path, orch):
    path = spec(tmp_path, "# header\n0\ttrue\n0 test -f x\n")
    result = orch("gate", "premise", "N", path, "--cwd", tmp_path)
    assert result.rc == 2 and f"{path}:3: malformed tripwire (no TAB" in result.err
    assert result.out == ""  # nothing ran: a malformed spec is refused before any command


def test_only_comments_and_blank_lines_is_2(tmp_path, orch):
    result = orch("gate", "premise", "N", spec(tmp_path, "# just a comment\n\n   \n# another\n"))
    assert result.rc == 2 and "declared no tripwires" in result.err
    assert orch("gate", "premise", "N", spec(tmp_path, "", "empty.tsv")).rc == 2


# ---- §9.2: the holes closed ---------------------------------------------------------------------

@pytest.mark.parametrize("expect", ["zero", "", "-1", "1.0", "+1", "1_0", "256", "0x1"])
def test_a_non_numeric_or_impossible_expectation_is_2(tmp_path, orch, expect):
    result = orch("gate", "premise", "N", spec(tmp_path, f"0\ttrue\n{expect}\ttrue\n"), "--cwd", tmp_path)
    assert result.rc == 2 and ":2: expected exit" in result.err and result.out == ""


def test_a_hanging_tripwire_is_stale_after_its_own_timeout(tmp_path):
    v = premise.check("N", [Tripwire("sleep 30", 0, "the build is quick", timeout=1)], tmp_path, default_timeout=60)
    assert v.code == 1 and v.items[0].status == "STALE"
    assert v.items[0].subject == "(timed out after 1s)  sleep 30" and v.items[0].detail == "the build is quick"
    assert v.data["results"][0]["timed_out"] is True


def test_the_cli_timeout_applies_to_every_command(tmp_path, orch):
    result = orch("gate", "premise", "N", spec(tmp_path, "0\tsleep 30\n0\ttrue\n"), "--cwd", tmp_path,
                  "--timeout", "1")
    assert result.rc == 1
    assert "STALE      (timed out after 1s)  sleep 30" in result.out and "FRESH      (0==0)  true" in result.out


def test_output_is_captured_not_printed(tmp_path, orch):
    path = spec(tmp_path, "0\techo chatter-on-stdout; echo chatter-on-stderr >&2\n")
    result = orch("gate", "premise", "N", path, "--cwd", tmp_path, "--json")
    verdict = json.loads(result.out)
    assert result.rc == 0 and "chatter" not in result.err
    (row,) = verdict["data"]["results"]
    assert "chatter-on-stdout" in row["output"] and "chatter-on-stderr" in row["output"]
    assert (row["rc"], row["expect"], row["timed_out"]) == (0, 0, False) and "seconds" in row
    plain = orch("gate", "premise", "N", path, "--cwd", tmp_path)
    printed = (plain.out + plain.err).splitlines()
    assert plain.rc == 0 and "chatter-on-stdout" not in printed and "chatter-on-stderr" not in printed


# ---- expectations other than 0 ----------------------------------------------------------------

def test_expect_1_asserts_absence(tree, orch):
    path = spec(tree, "1\ttest -e docs/later.md\tlater.md is this node's to write\n"
                      "1\tgrep -q TODO docs/guide.md\n")
    assert orch("gate", "premise", "N", path, "--cwd", tree).rc == 0
    (tree / "docs" / "later.md").write_text("someone else wrote it\n")
    result = orch("gate", "premise", "N", path, "--cwd", tree)
    assert result.rc == 1 and "(got 0, want 1)  test -e docs/later.md  <- later.md is this node's to write" in result.out
    assert "FRESH      (1==1)  grep -q TODO docs/guide.md" in result.out


def test_any_exit_code_can_be_expected(tmp_path):
    v = premise.check("N", [Tripwire("exit 3", 3), Tripwire("exit 3", 0)], tmp_path)
    assert v.code == 1 and [i.status for i in v.items] == ["FRESH", "STALE"]
    assert v.items[1].subject == "(got 3, want 0)  exit 3"


def test_a_pipe_keeps_the_first_failure(tmp_path):
    v = premise.check("N", [Tripwire("false | true", 0)], tmp_path)
    assert v.code == 1 and v.data["results"][0]["rc"] == 1


def test_a_tripwire_whose_command_is_missing_is_stale_with_a_hint(tmp_path):
    v = premise.check("N", [Tripwire("no-such-command-anywhere", 0, "tool is installed")], tmp_path)
    assert v.code == 1 and v.items[0].detail == "tool is installed; rc 127: command not found"


def test_a_summary_counts_every_stale_premise(tmp_path):
    v = premise.check("X9", [Tripwire("exit 1"), Tripwire("true"), Tripwire("exit 2")], tmp_path)
    assert v.summary == "INVALIDATED: node X9 has 2 stale premise(s); realign before dispatch"


# ---- check() inputs -----------------------------------------------------------------------------

def test_commands_run_in_cwd(tree):
    assert premise.check("N", [Tripwire("test -f docs/guide.md")], tree).code == 0
    assert premise.check("N", [Tripwire("test -f docs/guide.md")], tree / "docs").code == 1


def test_a_missing_cwd_is_2(tmp_path):
    v = premise.check("N", [Tripwire("true")], tmp_path / "gone")
    assert v.code == 2 and "no such directory" in v.summary


def test_an_impossible_expectation_from_a_dag_is_2(tmp_path):
    v = premise.check("N", [Tripwire("true", 300)], tmp_path)
    assert v.code == 2 and v.items[0].status == "ERROR"


def test_no_tripwires(tmp_path):
    v = premise.check("N", [], tmp_path)
    assert v.code == 0 and v.summary == "FRESH: node N declares no premises"


# ---- parse_spec ---------------------------------------------------------------------------------

def test_parse_spec_reads_the_reference_format():
    text = "# premises\n\n0\ttest -f a\n1\tgrep -q x b\tx is not there yet\r\n  # indented comment\n2\tfinal line"
    assert premise.parse_spec(text, "s.tsv") == [
        Tripwire("test -f a", 0, ""), Tripwire("grep -q x b", 1, "x is not there yet"), Tripwire("final line", 2, "")]


@pytest.mark.parametrize("text,fragment", [
    ("0 test -f x\n", "s.tsv:1: malformed tripwire (no TAB"),
    ("#c\n0\t\n", "s.tsv:2: malformed tripwire (empty command)"),
    ("0\t   \twhy\n", "s.tsv:1: malformed tripwire (empty command)"),
    ("\ttrue\n", "s.tsv:1: expected exit ``"),
    ("# only\n", "s.tsv: spec declared no tripwires"),
])
def test_parse_spec_errors(text, fragment):
    with pytest.raises(UsageError) as caught:
        premise.parse_spec(text, "s.tsv")
    assert fragment in str(caught.value)


# ---- the DAG form and arguments -----------------------------------------------------------------

def dag_file(tmp_path):
    path = tmp_path / "dag.yaml"
    path.write_text("workers: {c: x}\nnodes:\n"
                    "  - id: A\n    file_surface: [a]\n    discipline: c\n    tripwires:\n"
                    "      - {run: 'test ! -e a', expect: 0, why: 'a is new'}\n"
                    "      - {run: 'test -e a', expect: 1}\n"
                    "  - {id: B, file_surface: [b], discipline: c}\n")
    return path


def test_premises_from_the_dag(tmp_path, orch):
    work = tmp_path / "work"
    work.mkdir()
    dag = dag_file(tmp_path)
    fresh = orch("gate", "premise", "--dag", dag, "--node", "A", "--cwd", work)
    assert fresh.rc == 0 and fresh.out.splitlines()[-1] == "FRESH: node A: every premise still holds"
    (work / "a").write_text("")
    stale = orch("gate", "premise", "--dag", dag, "--node", "A", "--cwd", work)
    assert stale.rc == 1 and "has 2 stale premise(s)" in stale.out and "<- a is new" in stale.out


def test_cwd_defaults_to_the_current_directory(tmp_path, orch):
    work = tmp_path / "work"
    work.mkdir()
    (work / "a").write_text("")
    assert orch("gate", "premise", "--dag", dag_file(tmp_path), "--node", "A", cwd=work).rc == 1


def test_a_node_without_tripwires_is_fresh(tmp_path, orch):
    result = orch("gate", "premise", "--dag", dag_file(tmp_path), "--node", "B")
    assert result.rc == 0 and result.out.strip() == "FRESH: node B declares no premises"


def test_an_unknown_node_is_2(tmp_path, orch):
    result = orch("gate", "premise", "--dag", dag_file(tmp_path), "--node", "AB")
    assert result.rc == 2 and "no node `AB`" in result.err


def test_wrong_arguments_are_2_with_usage(tmp_path, orch):
    good = spec(tmp_path, "0\ttrue\n")
    cases = [
        ("N",),                                         # NODE without a spec
        ("--dag", dag_file(tmp_path)),                  # --dag without --node
        ("--node", "A"),                                # --node without --dag
        ("N", good, "--dag", tmp_path / "dag.yaml", "--node", "A"),
        ("N", good, "extra"),
        ("N", good, "--timeout", "never"),
        ("N", good, "--timeout", "-1"),
        ("--bogus",),
    ]
    for args in cases:
        result = orch("gate", "premise", *args)
        assert result.rc == 2, args
        assert "usage:" in result.err and "Traceback" not in result.err, args
    assert orch("gate", "premise", "N", good, "--cwd", tmp_path / "gone").rc == 2


def test_help_lists_the_exit_codes(orch):
    result = orch("gate", "premise", "--help")
    assert result.rc == 0 and "Exit codes" in result.out
    assert "FRESH" in result.out and "INVALIDATED" in result.out and "  2  " in result.out


def test_module_entry_point(tmp_path):
    path = spec(tmp_path, "0\ttrue\n")
    done = subprocess.run([sys.executable, "-m", "gates.premise", "N", str(path), "--json"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0 and json.loads(done.stdout)["summary"] == "FRESH: node N: every premise still holds"
