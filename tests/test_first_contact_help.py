"""Every command's --help shows at least one example and its exit codes, after the options; `decide`
lists the seams and their choices from the table that defines them; a gate's help reads like the rest."""
from __future__ import annotations

import re

import pytest

from gates.registry import GATES
from orchestrate.cli.main import cli
from orchestrate.seams.choices import CHOICES

COMMANDS = sorted(cli.commands)


def test_the_walk_covers_every_command():
    assert len(COMMANDS) >= 20 and {"init", "run", "resume", "status", "decide", "gate", "validate"} <= set(COMMANDS)


@pytest.mark.parametrize("name", [None] + COMMANDS)
def test_every_help_has_an_example_and_its_exit_codes(orch, name):
    r = orch(*([name] if name else []), "--help")
    assert r.rc == 0 and r.err == "", r.err
    text = r.out
    assert text.startswith("Usage: orchestrate")
    examples = re.search(r"^  Examples:\n((?:    .+\n)+)", text, re.M)
    assert examples, text
    assert all(ln.strip().startswith(("orchestrate ", "git ")) for ln in examples.group(1).splitlines())
    codes = re.search(r"^  Exit codes:\n((?:    .+\n)+)", text, re.M)
    assert codes, text
    assert re.match(r"    0 ", codes.group(1))  # each code on its own line, kept by click's \b
    if name and name != "gate":
        assert text.index("Options:") < text.index("Examples:")  # after the options, where the eye looks


@pytest.mark.parametrize("name", [None] + COMMANDS)
def test_no_help_line_runs_past_a_hundred_columns(orch, name):
    """rv84: the exit codes, kept as written by click's \\b, are not re-wrapped: decide's ran to 136 columns."""
    text = orch(*([name] if name else []), "--help").out
    assert not [ln for ln in text.splitlines() if len(ln) > 100], text


def test_every_example_names_a_real_command():
    for name in COMMANDS:
        help_text = cli.commands[name].help or ""
        for line in re.findall(r"^\s*orchestrate (\S+)", help_text, re.M):
            assert line in cli.commands, (name, line)


def test_decide_help_lists_every_seam_and_its_choices_from_the_table(orch):
    text = orch("decide", "--help").out
    block = text[text.index("Seams and their choices:"):]
    for seam, choices in CHOICES.items():
        assert re.search(rf"^    {re.escape(seam)} +{re.escape(', '.join(choices))}$", block, re.M), seam


@pytest.mark.parametrize("gate", sorted(GATES))
def test_a_gates_help_is_laid_out_like_the_other_commands(orch, gate):
    text = orch("gate", gate, "--help").out
    assert text.startswith(f"Usage: orchestrate gate {gate} ")
    assert "\nOptions:\n" in text and "\n  -h, --help" in text and "Show this message and exit." in text
    assert text.index("Options:") < text.index("  Examples:\n    ") < text.index("  Exit codes:\n    0  ")
    assert all(len(ln) <= 100 for ln in text.splitlines() if not ln.startswith("    "))
    description = text.split("\n\n")[1]
    assert description.startswith("  ") and description.strip()


def test_a_gates_usage_error_keeps_one_usage_line_and_exit_2(orch):
    r = orch("gate", "coherence")
    assert r.rc == 2 and r.err.startswith("usage: orchestrate gate coherence") and "--base" in r.err


@pytest.mark.parametrize("gate", sorted(GATES))
def test_a_gates_usage_error_with_json_is_a_verdict_on_stdout(orch, gate):
    """rv45: with --json, wrong arguments printed nothing on stdout: a script reading it had no verdict."""
    import json
    r = orch("gate", gate, "--json", "--bogus")
    assert r.rc == 2 and r.err.startswith(f"usage: orchestrate gate {gate}"), r.err
    verdict = json.loads(r.out)
    said = r.err.strip().splitlines()[-1].split(": error: ", 1)[1]  # what argparse said on stderr
    assert verdict["gate"] == gate and verdict["code"] == 2 and not verdict["ok"] and verdict["summary"] == f"ERROR: {said}"
    assert orch("gate", gate, "--bogus").out == ""  # without --json, stdout stays empty


@pytest.mark.parametrize("gate", sorted(GATES))
def test_every_example_in_a_gates_help_parses(monkeypatch, gate):
    """Each example names its gate and gives it arguments its parser takes (what they name is not looked at)."""
    import shlex
    from gates import registry
    from gates.shared import gatecli
    made = []
    monkeypatch.setattr(gatecli, "run_gate", lambda p, argv, decide: made.append(p) or 0)
    registry.module(gate).main([])
    examples = re.search(r"^  Examples:\n((?:    .+\n)+)", made[0].format_help(), re.M).group(1).splitlines()
    for example in examples:
        words = shlex.split(example.split(" | ")[-1])
        assert words[:3] == ["orchestrate", "gate", gate], example
        made[0].parse_args(words[3:])  # argparse exits 2 on what it does not take


def test_help_shows_the_same_help_as_the_help_option(orch):
    """rv45: `orchestrate help` was no command, where git, pip and most tools take it."""
    assert orch("help").out == orch("--help").out
    for name in ("decide", "gate", "help"):
        assert orch("help", name).out == orch(name, "--help").out, name
    missing = orch("help", "nope")
    assert missing.rc == 2 and "no command `nope`" in missing.err


def test_the_command_list_gives_each_command_a_whole_summary(orch):
    """rv45: click cut every summary mid-sentence (`End a campaign for good, as a recorded human decision: who...`)."""
    listed = orch("--help").out.split("Commands:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(listed) == len(COMMANDS) and not [ln for ln in listed if ln.endswith("...")], listed


def test_an_options_default_is_said_whole(orch):
    """rv84: each help said less than the command does: resume's --jobs default left out the run given none
    (then one per CPU, test_resume_keeps_jobs.py), abandon's --topic the paused or halted campaign it picks as
    decide does, graph's --topic that a campaign not yet ended comes before the default DAG, clean's exit 2 an
    unknown topic."""
    def said(name, start):
        return " ".join(orch(name, "--help").out.split(start, 1)[1].split())
    assert said("resume", "--jobs").startswith("INTEGER RANGE Workers at once (default: the --jobs the campaign was "
                                               "run with, if one was given; else one per CPU).")
    assert said("abandon", "--topic").startswith("TEXT Campaign topic (default: the one in flight, paused or halted")
    assert said("graph", "--topic").startswith("TEXT Draw this campaign's DAG with its nodes' statuses (default: the "
                                               "one in flight or paused, final acceptance included; else")
    for name in ("run", "resume"):  # --quiet keeps warnings and the 30 s progress line too (README, Watching a run)
        assert said(name, "-q, --quiet").startswith("Print only seams, halts, ") and "progress line" in said(name, "-q")
    assert said("clean", "Exit codes:").split(" 2 ", 1)[1].startswith("--topic names no campaign, or one that has not")
