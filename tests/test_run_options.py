"""What the plan's `topic:`, `base:` and `mode:` default to or are overridden by, and the run's short options
(README "The plan" and the command table): the topic defaults to the DAG file's stem; `base: HEAD` is the main
checkout's HEAD even when run from a linked worktree; `--mode` overrides the DAG's mode; `-V` prints the version
(through the console script's fast path and through the CLI); `-j N` is `--jobs N`; and an `--answers` list is
used in order."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import orchestrate
from tests.engine_helpers import campaign_repo, journal

CONSOLE = Path(sys.executable).parent / "orchestrate"  # the installed console script, fast path included
OK = """#!/bin/sh
set -eu
echo "$ORCH_NODE" > "$ORCH_NODE.txt" && git add -A && git commit -qm "$ORCH_NODE"
"""
FAILS_FIRST = "#!/bin/sh\nset -eu\nif [ \"$ORCH_ATTEMPT\" = 1 ]; then exit 1; fi\n" + OK.split("\n", 2)[2]
ALWAYS_FAILS = "#!/bin/sh\nexit 1\n"
DAG = """\
{head}workers: {{sh: "./work.sh"}}
defaults: {{max_attempts: 1, sandbox: none}}
{extra}nodes:
  - {{id: A, title: alpha, depends_on: [], file_surface: [A.txt], discipline: sh}}
"""


def dag(topic: str | None = "t", extra: str = "", head: str = "") -> str:
    return DAG.format(head=(f"topic: {topic}\n" if topic else "") + head, extra=extra)


def opened(repo, topic: str) -> dict:
    return next(e["context"] for e in journal(repo, topic) if e["kind"] == "open")


def decisions(repo, topic: str) -> list[dict]:
    return [e for e in journal(repo, topic) if e["kind"] == "decision"]


def test_without_topic_the_campaign_is_named_by_the_file_stem(tmp_path, orch):
    """README: `topic: demo  # names the campaign and its branch campaign/demo (default: file stem)`."""
    repo = campaign_repo(tmp_path, dag(topic=None), OK)
    plan = tmp_path / "foo.yaml"
    plan.write_text(dag(topic=None))
    assert orch("validate", "--dag", plan, cwd=repo).rc == 0
    run = orch("run", "--no-interactive", "--quiet", "--dag", plan, cwd=repo)
    assert run.rc == 75, run.out + run.err  # done, at final acceptance
    assert repo.git("rev-parse", "--verify", "refs/heads/campaign/foo")
    assert (repo / ".ledger" / "state" / "foo").is_dir()
    assert opened(repo, "foo")["topic"] == "foo" and opened(repo, "foo")["branch"] == "campaign/foo"
    assert repo.git("show", "campaign/foo:A.txt") == "A"


def test_base_head_is_the_main_checkouts_head_when_run_from_a_linked_worktree(tmp_path, orch):
    """README: `base: HEAD  # where the campaign starts (HEAD of the main checkout, even run from a linked
    worktree)`."""
    repo = campaign_repo(tmp_path, dag(head="base: HEAD\n"), OK)
    main_head = repo.head()
    linked = tmp_path / "linked"
    repo.git("worktree", "add", "-q", "-b", "side", str(linked))
    subprocess.run(["git", "-C", str(linked), "commit", "-q", "--allow-empty", "-m", "only on side"], check=True)
    side_head = repo.git("rev-parse", "side")
    assert side_head != main_head
    run = orch("run", "--no-interactive", "--quiet", cwd=linked)
    assert run.rc == 75, run.out + run.err
    assert opened(repo, "t")["baseline"] == main_head
    # the campaign branch grows from the main checkout's HEAD: A's merge is its first commit after it
    first_parents = repo.git("rev-list", "--first-parent", "campaign/t").split()
    assert first_parents[first_parents.index(main_head) - 1] == repo.git("rev-parse", "campaign/t")
    assert side_head not in repo.git("rev-list", "campaign/t").split()
    assert repo.git("rev-parse", "HEAD") == main_head and repo.git("rev-parse", "side") == side_head


POLICY = "policy:\n  realignment:\n    attempts-spent: {choice: rework, limit: 1, then: halt}\n"


def test_mode_flag_overrides_the_dags_interactive_mode(tmp_path, orch):
    """README: `mode: interactive  # or autonomous (see seams); --mode overrides`: the policy settles the
    realignment seam only in autonomous mode, so the DAG's interactive mode pauses at it and --mode autonomous
    lets the policy decide it."""
    plan = dag(head="mode: interactive\n", extra=POLICY)
    paused = campaign_repo(tmp_path / "without", plan, FAILS_FIRST)
    run = orch("run", "--no-interactive", "--quiet", cwd=paused)
    assert run.rc == 75, run.out + run.err
    assert opened(paused, "t")["mode"] == "interactive"
    assert decisions(paused, "t") == []
    status = json.loads(orch("status", "--json", cwd=paused).out)
    assert [(s["seam"], s["node"]) for s in status["seams"]] == [("realignment", "A")], status["seams"]

    overridden = campaign_repo(tmp_path / "with", plan, FAILS_FIRST)
    run = orch("run", "--no-interactive", "--quiet", "--mode", "autonomous", cwd=overridden)
    assert run.rc == 75, run.out + run.err  # the rework landed A; final acceptance is never the policy's
    assert opened(overridden, "t")["mode"] == "autonomous"
    [decision] = decisions(overridden, "t")
    assert decision["source_type"] == "policy" and decision["context"]["seam"] == "realignment"
    assert decision["context"]["choice"] == "rework"
    assert overridden.git("show", "campaign/t:A.txt") == "A"


def test_dash_capital_v_prints_the_version_through_the_console_scripts_fast_path(tmp_path):
    """README: `orchestrate --version` (`-V`) prints the version; the console script answers it without
    loading click (orchestrate/cli/entry.py)."""
    done = subprocess.run([sys.executable, "-X", "importtime", str(CONSOLE), "-V"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"orchestrate, version {orchestrate.__version__}\n"
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]
    assert "orchestrate.cli.entry" in imported and "click" not in imported, "not the fast path"
    plain = subprocess.run([str(CONSOLE), "-V"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0 and plain.stdout == done.stdout


def test_dash_capital_v_prints_the_version_through_the_cli(orch):
    said = orch("-V")
    assert said.rc == 0 and said.out == f"orchestrate, version {orchestrate.__version__}\n", said


@pytest.mark.parametrize("jobs", [1, 2])
def test_dash_j_is_jobs_and_the_journal_records_it(tmp_path, orch, jobs):
    """README: `--jobs` has the short form `-j`; the open entry records the run's jobs. Two values, so a
    default that happened to equal one of them (one per CPU) cannot pass for both."""
    repo = campaign_repo(tmp_path, dag(), OK)
    run = orch("run", "--no-interactive", "--quiet", "-j", str(jobs), cwd=repo)
    assert run.rc == 75, run.out + run.err
    assert opened(repo, "t")["jobs"] == jobs


def test_an_answers_list_is_used_in_order(tmp_path, orch):
    """README: `--answers FILE` (YAML: `realignment: {choice: rework, note: ...}`, or a list used in order):
    the first realignment seam takes the first answer, the second the second."""
    repo = campaign_repo(tmp_path, dag(), ALWAYS_FAILS)
    answers = tmp_path / "answers.yaml"
    answers.write_text("realignment:\n"
                       "  - {choice: rework, note: first answer}\n"
                       "  - {choice: skip, note: second answer}\n")
    run = orch("run", "--no-interactive", "--quiet", "--answers", answers, cwd=repo)
    assert run.rc == 75, run.out + run.err  # at final acceptance, which the file does not answer
    made = [(d["context"]["seam"], d["context"]["choice"], d["context"]["note"], d["source_type"])
            for d in decisions(repo, "t")]
    assert made == [("realignment", "rework", "first answer", "answers"),
                    ("realignment", "skip", "second answer", "answers")], made
    status = json.loads(orch("status", "--json", "--topic", "t", cwd=repo).out)
    assert [(n["id"], n["status"], n["attempt"]) for n in status["nodes"]] == [("A", "SKIPPED", 2)]
    assert [s["seam"] for s in status["seams"]] == ["final-acceptance"]
