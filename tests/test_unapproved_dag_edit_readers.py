"""A person's edit of the campaign's DAG copy that no dag-amendment seam has approved is never what `decide`,
`report` or `status` read: they work from the version the recorder committed with the journal's hash, so a
half-typed edit neither breaks them nor leaves the recorder half-written (rv64). Real git; the CLI runs as
its own process each time, as a person runs it."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.engine_helpers import campaign_repo, journal

WORKER = r"""#!/bin/sh
set -eu
d=$(echo "$ORCH_NODE" | tr AC ac); mkdir -p "$d" && echo "$ORCH_NODE" > "$d/x.txt" && git add -A && git commit -qm "$ORCH_NODE"
"""
DAG = """\
topic: edit
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1, timeout: 60}
nodes:
  - {id: A, title: approved alpha, file_surface: [a/], discipline: sh}
  - {id: C, title: approved charlie, depends_on: [A], file_surface: [c/], discipline: sh}
"""


def cli(repo, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orchestrate", *args], cwd=repo, capture_output=True, text=True,
                          env=os.environ.copy(), timeout=300)


def ledger_git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo / ".ledger"), *args], capture_output=True, text=True,
                          check=True).stdout


def test_decide_final_acceptance_with_a_broken_unapproved_edit_commits_everything_it_wrote(tmp_path):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert cli(repo, "run", "--no-interactive").returncode == 75  # paused at final acceptance
    copy = repo / ".ledger" / "state" / "edit" / "dag.yaml"
    with copy.open("a") as fh:
        fh.write("\tx\n")  # not YAML: a person mid-edit

    done = cli(repo, "decide", "final-acceptance", "accept", "--note", "ok")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "campaign edit accepted" in done.stdout and "malformed YAML" not in done.stderr
    # all of it in the recorder's last commit: nothing journalled, checkpointed or logged is left outside it
    assert ledger_git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert ledger_git(repo, "log", "-1", "--format=%s").strip() == "edit: SEAM accepted -> DONE (final-acceptance accept)"
    last = journal(repo, "edit")[-1]
    assert last["kind"] == "transition" and last["context"]["to"] == "DONE"
    assert "\tx" in copy.read_text()  # the person's edit is theirs: never rewritten

    after = cli(repo, "status")
    assert after.returncode == 0 and "campaign edit: DONE" in after.stdout, after.stdout + after.stderr
    report = cli(repo, "report")
    assert report.returncode == 0, report.stderr
    page = next((repo / ".ledger" / "log").glob("????-??-??-edit.html"))
    assert report.stdout.strip() == str(page) and "approved charlie" in page.read_text()


def test_report_and_graph_show_the_approved_plan_not_a_valid_edit_waiting_for_its_seam(tmp_path):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert cli(repo, "run", "--no-interactive").returncode == 75
    approved = cli(repo, "graph").stdout
    copy = repo / ".ledger" / "state" / "edit" / "dag.yaml"
    copy.write_text(copy.read_text().replace("approved charlie", "unapproved title")
                    + "  - {id: Z, title: zulu, file_surface: [z/], discipline: sh}\n")

    out = tmp_path / "page.html"
    assert cli(repo, "report", "-o", str(out)).returncode == 0
    text = out.read_text()
    assert "approved charlie" in text and "unapproved title" not in text and "zulu" not in text
    graph = cli(repo, "graph")
    assert graph.returncode == 0 and graph.stdout == approved and "[A accepted]" in approved, graph.stdout


EAGER_DAG = DAG.replace("defaults:", "schedule: eager\ndefaults:").replace(
    "discipline: sh}\n  - {id: C", "discipline: sh, evaluators: [{name: never, run: \"false\"}]}\n  - {id: C")


def test_status_says_why_a_node_waits_by_the_approved_plan(tmp_path):
    repo = campaign_repo(tmp_path, EAGER_DAG, WORKER)
    assert cli(repo, "run", "--no-interactive").returncode == 75  # A fails its evaluator: realignment seam
    copy = repo / ".ledger" / "state" / "edit" / "dag.yaml"
    copy.write_text(copy.read_text().replace("depends_on: [A], ", ""))  # C no longer waits, once approved

    rows = {n["id"]: n["waiting"] for n in json.loads(cli(repo, "status", "--json").stdout)["nodes"]}
    assert rows["C"] == "starts once A has merged", rows
