"""The close-check gate on real recorder repositories: closed after the last open, with a real Sufficiency Review."""
from __future__ import annotations

import json

import pytest

from gates import close_check
from gates.close_check import is_prose, review_sections
from tests.engine_helpers import cli
from tests.helpers import RepoDir, make_repo

REVIEW = """\
# Campaign demo-topic

## Retrospective

Two nodes merged.

## Sufficiency Review

- The evaluators only checked that files exist, not what they say.
"""


@pytest.fixture
def rec(tmp_path) -> RepoDir:
    """A recorder: a git repository on branch main with one commit."""
    return make_repo(tmp_path / "ledger", {"README.md": "recorder\n"})


def open_(rec: RepoDir, topic: str = "demo-topic", rest: str = " start") -> str:
    return rec.commit(f"log: open {topic}{rest}", {f"log/{topic}.md": f"# {topic}\n"})


def close(rec: RepoDir, topic: str = "demo-topic", body: str = REVIEW, rest: str = " retrospective") -> str:
    return rec.commit(f"log: close {topic}{rest}", {f"log/{topic}.md": body})


def lines(v) -> list[str]:
    return [i.line() for i in v.items]


# ---- predicate.md §8.5 ---------------------------------------------------------------------

def test_8_5_close_entry_with_a_review_passes(rec):
    # The reference fixture at @a7930209 had no Sufficiency section; with the section check it must
    # carry one (the reference's own note), so this fixture does.
    o = open_(rec)
    c = close(rec)
    v = close_check.check(rec, "demo-topic")
    assert v.code == 0, v.lines()
    assert lines(v) == [f"{'PASS':<10} open  <- {o[:12]} log: open demo-topic start",
                        f"{'PASS':<10} close  <- {c[:12]} log: close demo-topic retrospective",
                        f"{'PASS':<10} sufficiency  <- log/demo-topic.md: 1 line(s) of prose"]
    assert v.summary.startswith("PASS: demo-topic closed on main at " + c[:12])
    assert v.data["close"] == c and v.data["sufficiency"] == {"log/demo-topic.md": 1}


def test_8_5_close_entry_without_a_review_fails(rec):
    # The literal @a7930209 fixture: a close commit and nothing else.
    open_(rec)
    c = rec.commit("log: close demo-topic retrospective")
    v = close_check.check(rec, "demo-topic")
    assert v.code == 1
    assert v.items[-1].detail == f"close commit {c[:12]} touches no file with a Sufficiency Review section"


def test_8_5_no_close_entry_fails(rec):
    o = open_(rec)
    v = close_check.check(rec, "demo-topic")
    assert v.code == 1
    assert v.items[-1].line() == (f"{'FAIL':<10} close  <- no `log: close demo-topic` after the last "
                                  f"`log: open demo-topic` (at {o[:12]})")
    assert v.summary == "FAIL: demo-topic is not closed on main: no close entry"


def test_8_5_empty_topic_is_a_usage_error(rec, orch):
    assert close_check.check(rec, "").code == 2
    r = orch("gate", "close-check", "", str(rec))
    assert r.rc == 2 and "ERROR:" in r.err and "Traceback" not in r.err


def test_8_5_hollow_heading_fails(rec):
    open_(rec)
    close(rec, body="# Campaign\n\n## Sufficiency Review\n\n## Next steps\n\nWe will do many more things.\n")
    v = close_check.check(rec, "demo-topic")
    assert v.code == 1
    assert v.items[-1].detail.startswith("Sufficiency Review in log/demo-topic.md is hollow")
    assert v.summary.endswith("hollow Sufficiency Review")


def test_8_5_review_in_a_file_the_close_did_not_touch_fails(rec):
    open_(rec)
    rec.commit("docs(sketch): sync demo-topic", {"log/retro.md": REVIEW})
    rec.commit("log: close demo-topic retrospective", {"log/demo-topic.md": "# closed, see retro.md\n"})
    v = close_check.check(rec, "demo-topic")
    assert v.code == 1
    assert "touches no file with a Sufficiency Review section" in v.items[-1].detail


def test_8_5_topic_is_not_a_prefix_of_a_longer_topic(rec):
    open_(rec, "demo")
    open_(rec, "demo-topic")
    close(rec, "demo-topic")
    v = close_check.check(rec, "demo")
    assert v.code == 1
    assert "no `log: close demo`" in v.items[1].detail
    assert close_check.check(rec, "demo-topic").code == 0


def test_8_5_bare_close_subject_passes(rec):
    open_(rec, rest="")
    close(rec, rest="")
    v = close_check.check(rec, "demo-topic")
    assert v.code == 0, v.lines()


def test_8_5_recorder_not_a_repository_is_a_usage_error(tmp_path, rec):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert close_check.check(plain, "demo-topic").code == 2
    assert close_check.check(tmp_path / "missing", "demo-topic").code == 2
    (rec / "sub").mkdir()  # a directory inside some other repository is not a recorder
    v = close_check.check(rec / "sub", "demo-topic")
    assert v.code == 2 and "is not a git repository" in v.summary


def test_topic_is_matched_literally(rec):
    open_(rec, "demo.x")
    close(rec, "demoyx")  # `.` must not match any character
    v = close_check.check(rec, "demo.x")
    assert v.code == 1 and "no `log: close demo.x`" in v.items[1].detail


def test_invalid_topic_is_a_usage_error(rec):
    for topic in ("Demo Topic", "-x", "a..b", "x.lock"):
        assert close_check.check(rec, topic).code == 2, topic


# ---- predicate.md §9.2: the holes ------------------------------------------------------------

def test_reopened_topic_fails(rec):
    open_(rec)
    c = close(rec)
    again = open_(rec, rest=" again")
    v = close_check.check(rec, "demo-topic")
    assert v.code == 1
    assert v.items[1].detail == f"reopened: `log: open` at {again[:12]} comes after the last close ({c[:12]})"
    assert v.summary.endswith("reopened after its last close")
    close(rec, body=REVIEW + "- A second round fixed what the first one missed.\n")
    v = close_check.check(rec, "demo-topic")
    assert v.code == 0 and v.data["sufficiency"] == {"log/demo-topic.md": 2}


def test_close_on_a_sibling_recorder_branch_does_not_count(rec):
    rec.git("checkout", "-q", "-b", "project-a")
    open_(rec)
    rec.git("checkout", "-q", "-b", "project-b")
    close(rec)  # project-b inherits the open and holds the close
    rec.git("checkout", "-q", "project-a")
    v = close_check.check(rec, "demo-topic")
    assert v.code == 1 and v.data["branch"] == "project-a"
    assert close_check.check(rec, "demo-topic", branch="project-b").code == 0
    assert close_check.check(rec, "demo-topic", branch="refs/heads/project-b").code == 0


def test_close_merged_in_from_a_sibling_branch_does_not_count(rec):
    # Only the branch's own first-parent line counts: merging a sibling project's history in does not
    # bring its close along.
    open_(rec)
    rec.git("checkout", "-q", "-b", "sibling")
    close(rec)
    rec.git("checkout", "-q", "main")
    rec.commit("docs: unrelated", {"notes.md": "x\n"})
    rec.git("merge", "-q", "--no-ff", "sibling", "-m", "merge sibling")
    assert close_check.check(rec, "demo-topic").code == 1


def test_unknown_branch_and_detached_head_are_usage_errors(rec):
    open_(rec)
    close(rec)
    v = close_check.check(rec, "demo-topic", branch="nope")
    assert v.code == 2 and "no branch `nope`" in v.summary and "main" in v.summary
    rec.git("checkout", "-q", "--detach")
    assert close_check.check(rec, "demo-topic").code == 2
    assert close_check.check(rec, "demo-topic", branch="main").code == 0


def test_close_without_open_fails(rec):
    close(rec)
    v = close_check.check(rec, "demo-topic")
    assert v.code == 1
    assert v.items[0].detail == "no `log: open demo-topic` on branch main"


def test_empty_recorder_branch_fails(tmp_path):
    empty = RepoDir(tmp_path / "empty")
    empty.mkdir()
    empty.git("init", "-q", "--initial-branch=main")
    v = close_check.check(empty, "demo-topic")
    assert v.code == 1 and [i.status for i in v.items] == ["FAIL", "FAIL"]


@pytest.mark.parametrize("section", [
    "## Sufficiency Review\n",                                   # heading only, end of file
    "## Sufficiency Review\n\n\n",                               # heading + blank lines
    "## Sufficiency Review\n\nTODO\n",                           # heading + TODO
    "## Sufficiency Review\n\nTODO: write the review later\n",   # a placeholder note
    "## Sufficiency Review\n\n- N/A\n- none\n- -\n- ...\n- TBD\n",
    "## Sufficiency Review\n\n<!-- write three or more sentences here -->\n",
    "## Sufficiency Review\n\n<!--\nwrite three or more\nsentences here\n-->\n",
    "## Sufficiency Review\n\n```\nthis is code not prose\n```\n",
    "## Sufficiency Review\n\nOK fine.\n",                       # fewer than 3 words
    "## Sufficiency Review\n\nhttps://example.com/see/the/review/elsewhere\n",
    "## Sufficiency Review\n\n## Findings\n\nThe findings section is its own section.\n",
    "### Sufficiency Review\n## Later\nThis prose is under a higher-level heading.\n",
])
def test_hollow_reviews_fail(rec, section):
    open_(rec)
    close(rec, body="# Campaign demo-topic\n\nSome narrative that is real prose.\n\n" + section)
    v = close_check.check(rec, "demo-topic")
    assert v.code == 1, section
    assert "is hollow" in v.items[-1].detail


@pytest.mark.parametrize("section", [
    "## Sufficiency Review\nThe gates never read the prose.\n",
    "# sufficiency review (layer 2)\n\n> Nobody checked the rename of `a.txt` to `b.txt`.\n",
    "### Sufficiency Review ###\n#### Gaps\n1. Tripwires did not cover the README.\n",
    "## **Sufficiency Review**\n\nNone of the evaluators measured speed.\n",
    "## Sufficiency Review\n\n- [x] Evaluators were reviewed by hand.\n",
])
def test_real_reviews_pass(rec, section):
    open_(rec)
    close(rec, body="# Campaign demo-topic\n\n" + section)
    v = close_check.check(rec, "demo-topic")
    assert v.code == 0, (section, v.lines())


def test_one_good_file_is_enough_and_deleted_files_are_skipped(rec):
    open_(rec)
    rec.commit("docs: scratch", {"log/old.md": "## Sufficiency Review\nThis old one is removed.\n"})
    (rec / "log" / "old.md").unlink()
    rec.commit("log: close demo-topic retrospective",
               {"log/a.md": "## Sufficiency Review\n\nTODO\n", "log/b.md": REVIEW})
    v = close_check.check(rec, "demo-topic")
    assert v.code == 0
    assert [i.detail for i in v.items if i.subject == "sufficiency"] == ["log/b.md: 1 line(s) of prose"]


def test_review_is_read_as_of_the_close_commit(rec):
    open_(rec)
    close(rec)
    rec.commit("docs: empty the sketch", {"log/demo-topic.md": "## Sufficiency Review\n"})
    assert close_check.check(rec, "demo-topic").code == 0  # later edits do not change the close


# ---- the rule itself -------------------------------------------------------------------------

@pytest.mark.parametrize("line,prose", [
    ("The merge hid a rename.", True),
    ("- the evaluators were weak", True),
    ("None of the gates read prose.", True),
    ("See [the notes](https://example.com/a/b/c) here.", True),
    ("", False), ("   ", False), ("TODO", False), ("todo: add the review", False), ("TBD", False),
    ("N/A", False), ("n/a n/a n/a", False), ("none", False), ("-", False), ("...", False), ("…", False),
    ("a b c", False), ("12 34 56", False), ("TODO TBD FIXME", False), ("https://example.com/x/y/z", False),
])
def test_is_prose(line, prose):
    assert is_prose(line) is prose


def test_review_sections_counts_each_section():
    text = ("# A\n## Sufficiency Review\nOne real line of prose.\n### Sub\nAnother real line here.\n"
            "## Other\nNot counted at all here.\n## Sufficiency Review again\n\n")
    assert review_sections(text) == [2, 0]
    assert review_sections("no headings at all in this text\n") == []
    assert review_sections("```\n## Sufficiency Review\nhidden in a fence here\n```\n") == []
    assert review_sections("#Sufficiency Review\nnot a heading without the space\n") == []


# ---- the command line -----------------------------------------------------------------------

def project_with_recorder(tmp_path) -> tuple[RepoDir, RepoDir]:
    project = make_repo(tmp_path / "project")
    ledger = make_repo(project / ".ledger", {"README.md": "recorder\n"})
    return project, ledger


def test_cli_forms_and_exit_codes(rec, orch):
    open_(rec)
    assert orch("gate", "close-check", "demo-topic", str(rec)).rc == 1
    close(rec)
    r = orch("gate", "close-check", "demo-topic", str(rec))
    assert r.rc == 0, r.out + r.err
    assert r.out.splitlines()[-1].startswith("PASS: demo-topic closed on main")
    assert orch("gate", "close-check", "--topic", "demo-topic", "--recorder", str(rec)).rc == 0
    assert orch("gate", "close-check", "demo-topic", "--recorder", str(rec), "--branch", "main").rc == 0
    assert orch("gate", "close-check", "demo-topic", str(rec), "--branch", "nope").rc == 2
    r = orch("gate", "close-check", "demo-topic", str(rec), "--json")
    doc = json.loads(r.out)
    assert doc["code"] == 0 and doc["data"]["topic"] == "demo-topic"


def test_cli_default_recorder_is_the_main_worktrees_ledger(tmp_path, orch):
    project, ledger = project_with_recorder(tmp_path)
    open_(ledger)
    close(ledger)
    assert orch("gate", "close-check", "demo-topic", cwd=project).rc == 0
    linked = tmp_path / "linked"
    project.git("worktree", "add", "-q", "--detach", str(linked))
    assert orch("gate", "close-check", "--topic", "demo-topic", cwd=linked).rc == 0  # no .ledger there


def test_cli_default_recorder_missing_is_a_usage_error(tmp_path, orch):
    project = make_repo(tmp_path / "project")
    r = orch("gate", "close-check", "demo-topic", cwd=project)
    assert r.rc == 2 and "is not a git repository" in r.err and "Traceback" not in r.err


@pytest.mark.parametrize("args", [
    [],                                                       # no topic
    ["--bogus"],
    ["demo-topic", "--topic", "other"],                       # the topic twice, differently
    ["demo-topic", "/x", "--recorder", "/y"],
    ["a", "b", "c"],
])
def test_cli_wrong_arguments_exit_2_with_usage(rec, orch, args):
    r = orch("gate", "close-check", *args, cwd=rec)
    assert r.rc == 2, args
    assert "usage:" in r.err and "Traceback" not in r.err + r.out


@pytest.mark.parametrize("args, said", [
    ([], "a topic is required"),
    (["demo-topic", "--topic", "other"], "the topic is given twice"),
    (["demo-topic", "/x", "--recorder", "/y"], "the recorder is given twice"),
])
def test_cli_arguments_it_cannot_use_with_json_print_a_usage_verdict(rec, args, said):
    # README "Commands": with --json every gate's stdout is its verdict, a usage error's too
    r = cli(rec, "gate", "close-check", *args, "--json")
    assert r.returncode == 2, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert (doc["gate"], doc["code"], doc["ok"]) == ("close-check", 2, False) and said in doc["summary"]
    assert "usage:" in r.stderr and "Traceback" not in r.stderr


def test_cli_same_topic_twice_is_fine(rec, orch):
    open_(rec)
    close(rec)
    assert orch("gate", "close-check", "demo-topic", "--topic", "demo-topic", "--recorder", str(rec)).rc == 0


def test_cli_help_lists_exit_codes_and_the_rule(orch):
    r = orch("gate", "close-check", "--help")
    assert r.rc == 0
    assert "Exit codes:" in r.out
    for code in ("0", "1", "2"):
        assert f"  {code}  " in r.out
    assert "Sufficiency Review" in r.out and "3 words" in r.out


def test_module_main_runs_standalone(rec, capsys):
    open_(rec)
    close(rec)
    assert close_check.main(["demo-topic", str(rec)]) == 0
    assert "PASS: demo-topic closed" in capsys.readouterr().out
