"""First contact: a closed pipe after `status`, prompt answers, CI detection, a bare repository, nothing
created on an exit-2 failure, config.yaml checked by `validate` and refused by `run`, the starter plan,
and one rule for picking the campaign."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from tests.engine_helpers import campaign_repo, cli, journal
from tests.helpers import RepoDir, make_repo

CONSOLE = Path(sys.executable).parent / "orchestrate"  # the installed console script, fast path included
WORKER = "#!/bin/sh\necho \"$ORCH_NODE\" > \"$ORCH_NODE.txt\"\n"
DAG = """\
topic: {topic}
workers: {{sh: "./work.sh"}}
nodes:
  - {{id: A, title: alpha, depends_on: [], file_surface: [A.txt], discipline: sh}}
"""


def _into_closed_pipe(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first byte: `orchestrate status | head -0`
    try:
        return subprocess.run([str(CONSOLE), *args], cwd=cwd, stdout=write, stderr=subprocess.PIPE, text=True,
                              timeout=60)
    finally:
        os.close(write)


@pytest.mark.parametrize("args", [["status"], ["status", "--json"], ["status", "--topic", "one"]])
def test_status_into_a_closed_pipe_is_a_normal_end_through_the_console_script(tmp_path, orch, args):
    repo = campaign_repo(tmp_path, DAG.format(topic="one"), WORKER)
    assert orch("run", "--quiet", "--no-interactive", cwd=repo).rc == 75
    done = _into_closed_pipe(args, repo)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    head = subprocess.run(f"'{CONSOLE}' {' '.join(args)} | head -1", shell=True, cwd=repo, capture_output=True,
                          text=True, timeout=60)
    assert head.returncode == 0 and "Traceback" not in head.stderr and head.stderr == ""
    assert len(head.stdout.splitlines()) == 1


@pytest.mark.parametrize("value,counts", [("true", True), ("1", True), ("YES", True), ("True", True),
                                           ("false", False), ("0", False), ("", False), ("no", False)])
def test_ci_counts_only_when_true(monkeypatch, value, counts):
    from orchestrate.seams import prompt
    monkeypatch.setenv("CI", value)
    assert prompt.ci() is counts


def test_ci_unset_is_not_ci(monkeypatch):
    from orchestrate.seams import prompt
    monkeypatch.delenv("CI", raising=False)
    assert prompt.ci() is False


@pytest.mark.parametrize("typed,chosen", [("ACCEPT", "accept"), ("Rej", "reject"), ("a", "accept"), ("p", "pause"),
                                          (" r ", "reject")])
def test_prompt_answers_take_any_case_and_unique_prefixes(typed, chosen):
    from orchestrate.seams.prompt import resolve
    assert resolve(typed, ["accept", "reject", "pause"]) == chosen


def test_an_ambiguous_or_unknown_answer_asks_again():
    from orchestrate.seams.prompt import resolve
    with pytest.raises(click.BadParameter, match="could be rework or reject"):
        resolve("re", ["rework", "reject", "pause"])
    with pytest.raises(click.BadParameter, match="is not one of"):
        resolve("maybe", ["rework", "reject", "pause"])


def test_the_prompt_takes_a_prefix_and_asks_again_after_a_wrong_answer(tmp_path, orch, monkeypatch):
    repo = campaign_repo(tmp_path, DAG.format(topic="ask"), WORKER)
    monkeypatch.setattr(sys, "stdin", io.StringIO("maybe\nACC\nread it\n"))
    r = orch("run", "--interactive", cwd=repo)
    assert r.rc == 0, r.err
    assert "`maybe` is not one of accept, reject, pause" in r.err
    [decision] = [e for e in journal(repo, "ask") if e["kind"] == "decision"]
    assert (decision["context"]["choice"], decision["context"]["note"]) == ("accept", "read it")


def test_a_bare_repository_has_its_own_message(tmp_path, orch):
    bare = tmp_path / "b.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    for command in (("init",), ("status",), ("validate",), ("run",), ("resume",), ("decide", "final-acceptance", "accept"),
                    ("abandon", "--note", "x"), ("clean",), ("report",), ("graph",), ("layers",), ("doctor",),
                    ("replay", "--campaign", "x"), ("realign", "--rediscover", "A")):
        r = orch(*command, cwd=bare)
        assert r.rc == 2 and "is a bare repository" in r.err and "not inside a git repository" not in r.err, command
    for gate in (("adherence", "--topic", "t", "--base", "HEAD"), ("close-check", "--topic", "t"),
                 ("coherence", "--base", "HEAD"), ("trial-merge", "main")):  # rv84: "not inside a git repository"
        r = orch("gate", *gate, cwd=bare)
        assert r.rc == 2 and "is a bare repository" in r.out + r.err, (gate, r.out + r.err)
    assert not (bare / ".ledger").exists() and not (bare / ".scratch").exists()
    assert orch("status", cwd=tmp_path).err.count("not inside a git repository") == 1  # no repository at all


def test_a_typo_in_config_yaml_is_reported_by_validate_and_refused_by_run(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG.format(topic="conf"), WORKER)
    (repo / ".ledger" / "config.yaml").write_text(
        "# settings\ncoherance:\n  names: []\nsandbox: maybe\nexecutor:\n  kind: local\n  shceduler: x\n"
        "notify:\n  - {run: 'true', events: [sam]}\n")
    r = orch("validate", cwd=repo)
    assert r.rc == 1
    conf = str(repo / ".ledger" / "config.yaml")
    assert r.out.splitlines() == [
        f"{conf}:2: coherance: unknown setting (did you mean `coherence`?); settings: coherence, executor, "
        "sandbox, notify",
        f"{conf}:4: sandbox: `maybe` is not a sandbox setting: use auto, bwrap, none",
        f"{conf}:7: executor.shceduler: unknown key; keys: kind, scheduler, remote",
        f"{conf}:9: notify[0].events: unknown event `sam`; events: seam, halt, done, verdict"]
    assert "invalid: 4 problem(s)" in r.err
    as_json = json.loads(orch("validate", "--json", cwd=repo).out)
    assert [(p["line"], p["field"]) for p in as_json] == [(2, "coherance"), (4, "sandbox"), (7, "executor.shceduler"),
                                                          (9, "notify[0].events")]
    recorded = RepoDir(repo / ".ledger").head()
    # each read at a different moment of a run (the notifier at its start, the sandbox at the first dispatch,
    # coherence's timeout when the first node is judged): all refused before anything is recorded
    for bad, said in [("coherance:\n  names: []\n", "config.yaml:1: coherance: unknown setting (did you mean"),
                      ("sandbox: maybe\n", "config.yaml:1: sandbox: `maybe` is not a sandbox setting"),
                      ("coherence: {timeout: -1}\n", "config.yaml:1: coherence.timeout"),
                      ("notify: {run: 5}\n", "config.yaml:1: notify: expected a command")]:
        (repo / ".ledger" / "config.yaml").write_text(bad)
        ran = orch("run", "--no-interactive", cwd=repo)
        assert ran.rc == 1 and said in ran.out and "config.yaml is invalid; nothing was written" in ran.out, bad
        assert not (repo / ".ledger" / "state" / "conf").exists()
        assert RepoDir(repo / ".ledger").head() == recorded and repo.git("branch", "--list", "campaign/*") == ""
    (repo / ".ledger" / "config.yaml").write_text("notify: [\n")
    bad = orch("validate", cwd=repo)
    assert bad.rc == 1 and bad.out.startswith(f"{conf}:1: malformed YAML: ")  # the last line, not the one after
    assert "a `[` or `{` left open" in bad.out



def test_validate_lists_every_problem_of_each_config_section_not_only_the_first(tmp_path):
    repo = campaign_repo(tmp_path, DAG.format(topic="many"), WORKER)
    (repo / ".ledger" / "config.yaml").write_text(
        "coherence:\n  timeout: -1\n  names: 5\n  ignore: [7]\n  evaluators:\n    - {run: '', extra: 1}\n"
        "executor:\n  kind: nope\n  color: red\n"
        "sandbox:\n  mode: jail\n  keep_ignored: maybe\n"
        "notify:\n  - {run: 'true', events: [sam], timeout: -3}\n  - 5\n")
    r = cli(repo, "validate", "--json")
    assert r.returncode == 1, r.stdout + r.stderr
    assert [(p["line"], p["field"]) for p in json.loads(r.stdout)] == [
        (2, "coherence.timeout"), (3, "coherence.names"), (4, "coherence.ignore"),
        (6, "coherence.evaluators[0].extra"), (6, "coherence.evaluators[0]"),
        (8, "executor.kind"), (9, "executor.color"), (11, "sandbox.mode"), (12, "sandbox.keep_ignored"),
        (14, "notify[0].events"), (14, "notify[0].timeout"), (15, "notify[1]")]
    assert "invalid: 12 problem(s)" in cli(repo, "validate").stderr
    ran = cli(repo, "run", "--no-interactive")  # a run refuses on the same list, before anything is recorded
    assert ran.returncode == 1 and ran.stdout.count("config.yaml:") == 12 and not (repo / ".ledger/state/many").exists()


def test_resume_refuses_a_config_yaml_edited_into_an_invalid_one(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG.format(topic="later"), WORKER)
    assert orch("run", "--no-interactive", cwd=repo).rc == 75  # at final acceptance
    recorded = RepoDir(repo / ".ledger").head()
    (repo / ".ledger" / "config.yaml").write_text("coherence: {timeout: -1}\nsandbox: maybe\n")
    r = orch("resume", "--no-interactive", cwd=repo)
    assert r.rc == 2 and "config.yaml:1: coherence.timeout" in r.err and "(and 1 more: `orchestrate validate`" in r.err
    assert "fix config.yaml, then resume" in r.err and RepoDir(repo / ".ledger").head() == recorded
    (repo / ".ledger" / "config.yaml").write_text("sandbox: none\n")
    assert orch("resume", "--no-interactive", cwd=repo).rc == 75

def test_a_dag_and_a_config_problem_are_listed_together(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG.format(topic="both").replace("depends_on: []", "depends_on: [Z]"), WORKER)
    (repo / ".ledger" / "config.yaml").write_text("sandbox: {mode: auto, writeable: []}\n")
    r = orch("validate", cwd=repo)
    assert r.rc == 1 and len(r.out.splitlines()) == 2
    assert "dag.yaml:" in r.out and "config.yaml:1: sandbox.writeable: unknown key" in r.out


def test_an_exit_2_failure_in_a_repository_without_commits_creates_nothing(tmp_path, orch):
    repo = tmp_path / "empty"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert orch("init", cwd=repo).rc == 0
    before = sorted(str(p.relative_to(repo)) for p in repo.rglob("*") if ".git" not in p.parts)
    r = orch("run", "--no-interactive", cwd=repo)
    assert r.rc == 2 and f"{repo} has no commit yet: a campaign starts from one" in r.err and "first commit" in r.err
    after = sorted(str(p.relative_to(repo)) for p in repo.rglob("*") if ".git" not in p.parts)
    assert after == before and not (repo / ".scratch").exists()


def test_init_writes_a_starter_plan_that_validates_and_runs_unless_one_exists(tmp_path, orch):
    repo = make_repo(tmp_path / "fresh")
    r = orch("init", cwd=repo)
    plan = repo / ".ledger" / "state" / "dag.yaml"
    assert r.rc == 0 and f"wrote a starter plan {plan}" in r.out
    text = plan.read_text()
    assert text.startswith("# ") and text.count("\n#") >= 3  # commented for a first reader
    valid = orch("validate", cwd=repo)
    assert valid.rc == 0 and "(2 nodes, 2 layers, topic starter)" in valid.out
    layers = orch("layers", cwd=repo)
    assert layers.rc == 0 and layers.out.splitlines()[:2] == ["layer 0: first", "layer 1: second"]
    ran = orch("run", "--no-interactive", cwd=repo)
    assert ran.rc == 75, ran.out + ran.err  # both nodes merged: the run waits at final acceptance
    gates = [e["context"]["gate"] for e in journal(repo, "starter") if e["kind"] == "gate"]
    assert gates.count("evaluators") == 4  # each node's evaluator, and the campaign check before each merge
    assert (repo / ".scratch/runs/starter/first/checks-1.log").is_file()
    assert repo.git("show", "campaign/starter:starter/second.txt") == "written by second"
    plan.write_text("# mine\n" + text)
    again = orch("init", cwd=repo)
    assert again.rc == 0 and "already initialised" in again.out and plan.read_text().startswith("# mine\n")
    plan.unlink()
    restored = orch("init", cwd=repo)
    assert f"wrote a starter plan {plan}" in restored.out and plan.read_text() == text


def test_plain_resume_decide_and_status_find_a_campaign_paused_at_final_acceptance(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG.format(topic="fin"), WORKER)
    assert orch("run", "--quiet", "--no-interactive", cwd=repo).rc == 75
    resumed = orch("resume", "--no-interactive", cwd=repo)
    assert resumed.rc == 75 and "no campaign is in flight" not in resumed.err
    assert "final-acceptance" in resumed.out
    assert orch("status", cwd=repo).out.startswith("campaign fin: PAUSE")
    assert orch("decide", "final-acceptance", "accept", "--note", "ok", cwd=repo).rc == 0
    ended = orch("resume", cwd=repo)
    assert ended.rc == 2 and "no campaign is in flight or paused (every one has ended)" in ended.err
    assert orch("status", cwd=repo).out.startswith("campaign fin: DONE")  # the newest, once all have ended


def test_status_without_any_campaign_says_how_to_start_one(tmp_path, orch):
    repo = make_repo(tmp_path / "new")
    assert orch("init", cwd=repo).rc == 0
    for command in (("status",), ("resume",), ("decide", "final-acceptance", "accept")):
        r = orch(*command, cwd=repo)
        assert r.rc == 2 and "no campaign has been started here" in r.err and "`orchestrate run` starts one" in r.err
    fast = subprocess.run([str(CONSOLE), "status"], cwd=repo, capture_output=True, text=True, timeout=60)
    assert fast.returncode == 2 and "`orchestrate run` starts one" in fast.stderr


@pytest.mark.parametrize("text, said", [
    ("final-acceptance: maybe\n", "final-acceptance: `maybe` is not one of its choices"),
    ("realignment: [rework, {choice: later, note: x}]\n", "realignment: `later` is not one of its choices"),
    ("realignment: {note: no choice}\n", "realignment: `None` is not one of its choices"),
    ("final-acceptance: [accept\n", "answers.yaml:2: malformed YAML: expected ',' or ']'"),
])
def test_an_answers_file_is_checked_whole_before_the_run_starts(tmp_path, orch, text, said):
    repo = campaign_repo(tmp_path, DAG.format(topic="ans"), WORKER)
    answers = tmp_path / "answers.yaml"
    answers.write_text(text)
    r = orch("run", "--no-interactive", "--answers", answers, cwd=repo)
    assert r.rc == 2 and said in r.err and not (repo / ".ledger" / "state" / "ans").exists(), r.err



def test_an_unknown_topic_is_one_error_for_every_command(tmp_path, orch):
    """rv45: three phrasings, and a hint (`orchestrate status` lists topics) that listed none."""
    repo = campaign_repo(tmp_path, DAG.format(topic="known"), WORKER)
    for command in (("status",), ("resume",), ("report",), ("doctor",), ("why", "A"), ("clean",),
                    ("decide", "final-acceptance", "accept"), ("abandon", "--note", "x")):
        said = orch(*command, "--topic", "nope", cwd=repo)
        assert said.rc == 2 and said.err.startswith("orchestrate: error: no campaign `nope`: none has been started "
                                                    "here (`orchestrate run` starts one)"), (command, said.err)
    assert orch("run", "--no-interactive", cwd=repo).rc in (0, 75)
    for command in (("status",), ("resume",), ("report",), ("doctor",), ("why", "A"), ("clean",)):
        said = orch(*command, "--topic", "nope", cwd=repo)
        assert said.rc == 2 and "no campaign `nope` in " in said.err and "(its campaigns: known)" in said.err, command
