"""Accepting the dag-amendment seam adopts the edit the seam showed. rv75 found an edit made after the seam
opened (a surface widened, here) adopted with it, never shown to the person who accepted."""
from __future__ import annotations

import json

from tests.engine_helpers import campaign_repo

DAG = """\
topic: amend
workers: {sh: "./work.sh"}
defaults: {timeout: 60, max_attempts: 1}
nodes:
  - {id: A, title: a, file_surface: [a/], discipline: sh, evaluators: [{name: noted, run: "test -f a/noted"}]}
  - {id: B, title: b, depends_on: [A], file_surface: [b/], discipline: sh}
"""
WORKER = r"""#!/bin/sh
d=$(echo "$ORCH_NODE" | tr AB ab); mkdir -p "$d" && echo x > "$d/x"
if grep -q NOTE-FIX "$ORCH_BRIEF"; then echo ok > "$d/noted"; fi
"""


def test_an_edit_made_after_the_seam_showed_the_amendment_is_not_adopted_with_it(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert orch("run", "--no-interactive", cwd=repo).rc == 75  # A's attempts spent
    copy = repo / ".ledger" / "state" / "amend" / "dag.yaml"
    copy.write_text(copy.read_text().replace("title: b,", "title: b renamed,"))
    assert orch("decide", "realignment", "rework", "--note", "NOTE-FIX", cwd=repo).rc == 0
    shown = orch("resume", "--no-interactive", cwd=repo)
    assert shown.rc == 75 and 'node B: title "b" -> "b renamed"' in shown.out, shown.out
    assert json.loads(orch("status", "--json", cwd=repo).out)["seams"][0]["seam"] == "dag-amendment"

    copy.write_text(copy.read_text().replace("file_surface: [b/]", "file_surface: [b/, README.md]"))  # unseen
    assert orch("decide", "dag-amendment", "accept", "--note", "the title", cwd=repo).rc == 0
    done = orch("resume", "--no-interactive", cwd=repo)
    assert done.rc == 75 and "final-acceptance" in done.out, done.out + done.err
    assert "title: b renamed" in copy.read_text() and "README.md" not in copy.read_text()
    kept = (repo / ".scratch" / "rejected" / "amend" / "dag.yaml").read_text()
    assert "README.md" in kept


def test_an_edit_taken_back_settles_its_seam_with_nothing_to_amend(tmp_path, orch):
    """rv75: the dag-amendment seam stayed open after the person took the edit back, to be accepted as a no-op."""
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert orch("run", "--no-interactive", cwd=repo).rc == 75  # A's attempts spent
    copy = repo / ".ledger" / "state" / "amend" / "dag.yaml"
    approved = copy.read_text()
    copy.write_text(approved.replace("title: b,", "title: b renamed,"))
    assert orch("decide", "realignment", "rework", "--note", "NOTE-FIX", cwd=repo).rc == 0
    assert orch("resume", "--no-interactive", cwd=repo).rc == 75
    assert json.loads(orch("status", "--json", cwd=repo).out)["seams"][0]["seam"] == "dag-amendment"

    copy.write_text(approved)  # taken back
    done = orch("resume", "--no-interactive", cwd=repo)
    assert done.rc == 75 and "final-acceptance" in done.out, done.out + done.err
    assert "the edit was undone" in done.out and copy.read_text() == approved
    assert not (repo / ".scratch" / "rejected" / "amend").exists()
