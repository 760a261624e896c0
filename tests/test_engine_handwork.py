"""Nodes worked by a person (`worker: {kind: human}`): the attempt is the `handwork` seam. The person
works in the node's worktree, `decide handwork done` hands it over, and the same gates judge it."""
from __future__ import annotations

import subprocess

from tests.engine_helpers import campaign_repo, journal, statuses

WORKER = r"""#!/bin/sh
set -eu
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr 'A-Z' 'a-z').txt"
"""

DAG = """\
topic: hand
workers: {sh: "./work.sh"}
nodes:
  - {id: A, file_surface: [a.txt], discipline: sh}
  - {id: B, file_surface: [b.txt], discipline: sh}
  - {id: H, file_surface: [h.txt], discipline: sh, worker: {kind: human},
     evaluators: [{name: has-h, run: "grep -q done h.txt"}]}
  - {id: Z, depends_on: [H], file_surface: [z.txt], discipline: sh}
"""


def worktree_of(repo, node: str):
    dispatched = [e["context"] for e in journal(repo, "hand")
                  if e["kind"] == "node" and e["context"].get("node") == node and e["context"].get("worktree")]
    return repo / dispatched[-1]["worktree"]


def test_a_person_works_the_node_and_the_gates_judge_it_like_a_worker(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    first = orch("run", "--quiet", cwd=repo)
    assert first.rc == 75, first.out + first.err
    assert "orchestrate decide handwork done --topic hand" in first.out
    # the machines' nodes of the layer were merged first; nothing runs while the person works
    assert statuses(repo, orch, "hand") == {"A": "ACCEPTED", "B": "ACCEPTED", "H": "DISPATCHED", "Z": "PENDING"}
    assert not any(e["kind"] == "intent" and e["context"].get("effect") == "worker-start"
                   and e["context"]["node"] == "H" for e in journal(repo, "hand"))
    status = orch("status", "--topic", "hand", cwd=repo).out
    assert "open seam handwork: H is worked by a person: work and commit in " in status

    work = worktree_of(repo, "H")
    assert (work / ".git").exists() and "a.txt" in {p.name for p in work.iterdir()}  # branched from the tip
    (work / "h.txt").write_text("not yet\n")
    subprocess.run(["git", "-C", str(work), "add", "h.txt"], check=True)
    subprocess.run(["git", "-C", str(work), "commit", "-qm", "h by hand"], check=True)
    assert orch("decide", "handwork", "done", cwd=repo).rc == 0
    second = orch("resume", "--quiet", "--topic", "hand", cwd=repo)
    assert second.rc == 75, second.out + second.err  # has-h failed: a new attempt, again by hand
    assert [e["context"]["verdict"] for e in journal(repo, "hand") if e["kind"] == "verdict"
            and e["context"]["node"] == "H"] == ["rework"]
    work2 = worktree_of(repo, "H")
    assert work2 != work
    assert "has-h" in (repo / ".scratch" / "runs" / "hand" / "H" / "brief-2.md").read_text()

    (work2 / "h.txt").write_text("done\n")  # left uncommitted: committed for the person, as for a worker
    assert orch("decide", "handwork", "done", cwd=repo).rc == 0
    third = orch("resume", "--quiet", "--topic", "hand", cwd=repo)
    assert third.rc == 75, third.out + third.err  # final acceptance
    assert statuses(repo, orch, "hand") == {"A": "ACCEPTED", "B": "ACCEPTED", "H": "ACCEPTED", "Z": "ACCEPTED"}
    assert repo.git("show", "campaign/hand:h.txt").strip() == "done"


def test_skip_at_the_handwork_seam_skips_the_node_and_its_dependents(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert orch("run", "--quiet", cwd=repo).rc == 75
    assert orch("decide", "handwork", "skip", cwd=repo).rc == 0
    assert orch("resume", "--quiet", "--topic", "hand", cwd=repo).rc == 75
    found = statuses(repo, orch, "hand")
    assert found["H"] == "SKIPPED" and found["Z"] == "SKIPPED"


def test_layered_without_the_sandbox_still_merges_the_machines_nodes_before_the_person_starts(tmp_path, orch):
    # workers without the sandbox start one by one under layered; the person's node still comes after the
    # layer's machine nodes were judged and merged
    repo = campaign_repo(tmp_path, DAG.replace("nodes:", "defaults: {sandbox: none}\nnodes:"), WORKER)
    first = orch("run", "--quiet", "--schedule", "layered", cwd=repo)
    assert first.rc == 75, first.out + first.err
    assert statuses(repo, orch, "hand") == {"A": "ACCEPTED", "B": "ACCEPTED", "H": "DISPATCHED", "Z": "PENDING"}


def test_a_persons_outputs_are_read_where_the_brief_names_them(tmp_path, orch):
    """A person's attempt has no log; its $ORCH_OUTPUTS is still the run folder's `outputs-N.json`, read when
    `decide handwork done` hands it over, and only the declared keys are journalled."""
    repo = campaign_repo(tmp_path, DAG.replace("worker: {kind: human},", "worker: {kind: human}, outputs: [k],"),
                         WORKER)
    assert orch("run", "--quiet", cwd=repo).rc == 75
    work = worktree_of(repo, "H")
    (work / "h.txt").write_text("done\n")
    brief = (repo / ".scratch" / "runs" / "hand" / "H" / "brief-1.md").read_text()
    named = repo / ".scratch" / "runs" / "hand" / "H" / "outputs-1.json"
    assert str(named) in brief
    named.write_text('{"k": 7, "secret": "not for the journal"}')
    (repo / "outputs-1.json").write_text('{"k": "from the wrong folder"}')  # where a relative read would look
    assert orch("decide", "handwork", "done", cwd=repo).rc == 0
    assert orch("resume", "--quiet", "--topic", "hand", cwd=repo).rc == 75
    assert statuses(repo, orch, "hand")["H"] == "ACCEPTED"
    reported = [e["context"]["outputs_reported"] for e in journal(repo, "hand") if e["kind"] == "result"
                and e["context"].get("node") == "H" and "outputs_reported" in e["context"]]
    assert [r["values"] for r in reported] == [{"k": 7}]
    assert "not for the journal" not in (repo / ".ledger" / "state" / "hand" / "journal.jsonl").read_text()


def test_what_git_does_not_track_in_a_persons_worktree_is_gone_before_the_gates_as_the_readme_says(tmp_path, orch):
    """Judged on the commit alone, a person's node as a worker's: a `.venv/` they made there is removed when
    they answer done (README: keep such things outside the worktree)."""
    repo = campaign_repo(tmp_path, DAG.replace("grep -q done h.txt", "test ! -e .venv/marker && grep -q done h.txt"),
                         WORKER, {".gitignore": ".venv/\n"})
    assert orch("run", "--quiet", cwd=repo).rc == 75
    work = worktree_of(repo, "H")
    (work / ".venv").mkdir()
    (work / ".venv" / "marker").write_text("mine\n")
    (work / "h.txt").write_text("done\n")
    assert orch("decide", "handwork", "done", cwd=repo).rc == 0
    assert orch("resume", "--quiet", "--topic", "hand", cwd=repo).rc == 75
    assert statuses(repo, orch, "hand")["H"] == "ACCEPTED" and not (work / ".venv").exists()


def test_status_and_a_second_decide_name_the_answer_recorded_but_not_yet_applied(tmp_path, orch):
    """rv69: after `decide handwork skip` no seam is open and no runner runs; status said H was queued for a
    --jobs slot and a second decide said no seam was open, as if the answer were lost."""
    import json
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert orch("run", "--quiet", cwd=repo).rc == 75
    assert orch("decide", "handwork", "skip", "--note", "later", cwd=repo).rc == 0
    text = orch("status", "--topic", "hand", cwd=repo).out
    data = json.loads(orch("status", "--json", "--topic", "hand", cwd=repo).out)
    assert data["seams"] == [] and data["runner"]["resume"] is True
    assert {k: data["decision"][k] for k in ("seam", "node", "choice", "who", "note")} == \
        {"seam": "handwork", "node": "H", "choice": "skip", "who": "test@example.com", "note": "later"}
    rows = {n["id"]: n["waiting"] for n in data["nodes"]}
    assert rows["H"] == "answered handwork skip: waiting for the answer to be applied", rows
    assert "answer recorded, waiting to be applied: handwork skip for node H by test@example.com; " \
           "`orchestrate resume --topic hand` applies it" in text, text
    assert "--jobs slot" not in text, text
    again = orch("decide", "handwork", "done", cwd=repo)
    assert again.rc == 2, again.out + again.err
    assert "an answer is already recorded for campaign hand, waiting to be applied: handwork skip for node H " \
           "by test@example.com" in again.err, again.err
    assert len([e for e in journal(repo, "hand") if e["kind"] == "decision"]) == 1  # nothing written
    assert orch("resume", "--quiet", "--topic", "hand", cwd=repo).rc == 75
    assert statuses(repo, orch, "hand")["H"] == "SKIPPED"
    assert json.loads(orch("status", "--json", "--topic", "hand", cwd=repo).out)["decision"] is None
