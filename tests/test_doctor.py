"""`orchestrate doctor` (seeds-other §3.8, R7): a read-only audit of a campaign's journal."""
from __future__ import annotations

import json

import pytest

from tests.engine_helpers import campaign_repo

WORKER = "#!/bin/sh\necho \"$ORCH_NODE\" > \"$ORCH_NODE.txt\"\n"
DAG = """\
topic: doc
workers: {sh: "./work.sh"}
nodes:
  - {id: A, file_surface: [A.txt], discipline: sh, evaluators: [{name: ok, run: "test -f A.txt"}]}
"""


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """One small campaign, run once; each test edits a copy of its journal."""
    import os

    from orchestrate.cli.main import main
    repo = campaign_repo(tmp_path_factory.mktemp("doctor"), DAG, WORKER)
    here = os.getcwd()
    os.chdir(repo)
    try:
        assert main(["run", "--quiet"]) == 75
    finally:
        os.chdir(here)
    return repo


@pytest.fixture
def repo(ran, tmp_path):
    journal = ran / ".ledger" / "state" / "doc" / "journal.jsonl"
    original = journal.read_bytes()
    yield ran
    journal.write_bytes(original)


def path(repo):
    return repo / ".ledger" / "state" / "doc" / "journal.jsonl"


def edit(repo, line: int, change) -> dict:
    """Apply `change` to the entry on 1-based `line`; returns the entry as it was."""
    lines = path(repo).read_text().splitlines()
    entry = json.loads(lines[line - 1])
    before = dict(entry)
    change(entry)
    lines[line - 1] = json.dumps(entry)
    path(repo).write_text("\n".join(lines) + "\n")
    return before


def test_a_clean_journal_passes_and_nothing_is_written(repo, orch):
    ledger_before = repo.git("-C", ".ledger", "status", "--porcelain")
    result = orch("doctor", "--topic", "doc", cwd=repo)
    assert result.rc == 0, result.out
    assert result.out.strip().endswith("entries, no problems")
    assert repo.git("-C", ".ledger", "status", "--porcelain") == ledger_before


def test_R7_an_entry_without_source_entity_is_reported_with_its_line(repo, orch):
    before = edit(repo, 5, lambda e: e.pop("source_entity"))
    result = orch("doctor", "--topic", "doc", cwd=repo)
    assert result.rc == 1
    assert f"journal.jsonl:5: entry {before['id']} has no source_entity" in result.out.splitlines()


@pytest.mark.parametrize("line, change, expected", [
    (4, lambda e: e.update(seq=99), "seq is 99, expected 4"),
    (4, lambda e: e.update(created_at="2026-11-23T10:00:00+01:00"), "is not a UTC time ending in Z"),
    (4, lambda e: e.update(source_type="guess"), "unknown source_type 'guess'; valid values: answers, decision"),
    (4, lambda e: e.update(derived_from=["doc:9999"]), "referenced doc:9999 does not exist before it"),
    (4, lambda e: e.update(derived_from="doc:1"), "derived_from is not a list"),
    (4, lambda e: e.update(derived_from=[5]), "derived_from holds 5, not entry ids"),
    (4, lambda e: e.update(id=["x"]), 'id ["x"] is not a string'),
    (4, lambda e: e.update(created_at="2026-11-23T10:00:00+01:00Z"), "is not a UTC time ending in Z"),
    (4, lambda e: e.update(created_at="2026-11-23Z"), "is not a UTC time ending in Z"),
    (5, lambda e: e.update(id="doc:4"), "the id is used by an earlier entry"),
])
def test_each_broken_rule_is_named(repo, orch, line, change, expected):
    edit(repo, line, change)
    result = orch("doctor", "--topic", "doc", cwd=repo)
    assert result.rc == 1
    assert any(ln.startswith(f"journal.jsonl:{line}: ") and expected in ln for ln in result.out.splitlines()), \
        result.out


def test_an_accept_verdict_without_its_gates_is_a_lineage_problem(repo, orch):
    lines = path(repo).read_text().splitlines()
    number = next(i for i, ln in enumerate(lines, 1) if '"kind":"verdict"' in ln)
    edit(repo, number, lambda e: e.update(derived_from=[]))
    result = orch("doctor", "--topic", "doc", cwd=repo)
    assert result.rc == 1
    assert f"journal.jsonl:{number}: entry" in result.out and "without provenance" in result.out


def test_a_damaged_entry_that_others_cite_is_one_problem_not_a_cascade(repo, orch):
    lines = path(repo).read_text().splitlines()
    verdict = next(json.loads(ln) for ln in lines if '"kind":"verdict"' in ln)
    cited = verdict["derived_from"][0]
    number = next(i for i, ln in enumerate(lines, 1) if json.loads(ln)["id"] == cited)
    edit(repo, number, lambda e: e.pop("source_entity"))
    result = orch("doctor", "--topic", "doc", cwd=repo)
    assert result.rc == 1
    problems = result.out.splitlines()[:-1]
    assert problems == [f"journal.jsonl:{number}: entry {cited} has no source_entity"], result.out


def test_garbage_in_the_middle_is_a_problem_and_a_torn_tail_a_warning(repo, orch):
    lines = path(repo).read_text().splitlines()
    path(repo).write_text("\n".join(lines[:3] + ["{not json"] + lines[3:]) + "\n")
    result = orch("doctor", "--topic", "doc", cwd=repo)
    assert result.rc == 1 and "journal.jsonl:4: not a JSON object" in result.out

    path(repo).write_text("\n".join(lines) + "\n" + '{"id": "doc:9')
    torn = orch("doctor", "--topic", "doc", "--json", cwd=repo)
    assert torn.rc == 0
    report = json.loads(torn.out)
    assert report["ok"] and report["entries"] == len(lines)
    assert report["warnings"] == [f"journal.jsonl:{len(lines) + 1}: the last line is incomplete (a crash "
                                  "mid-append); resume drops it"]


def test_an_unknown_campaign_is_a_usage_error(repo, orch):
    assert orch("doctor", "--topic", "nope", cwd=repo).rc == 2


def test_a_merge_forged_on_the_campaign_branch_is_a_problem(tmp_path, orch):
    """A real merge commit of a node's judged head, made by someone else than orchestrate (a worker in the
    integration worktree): the journal does not record making it, so doctor names it FORGED."""
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert orch("run", "--quiet", cwd=repo).rc == 75
    assert orch("doctor", "--topic", "doc", cwd=repo).rc == 0
    tip = repo.git("rev-parse", "campaign/doc")
    head = repo.git("rev-parse", "campaign/doc^2")  # A's judged head, as the engine merged it
    forged = repo.git("commit-tree", f"{tip}^{{tree}}", "-p", tip, "-p", head, "-m", "merge node A: again")
    repo.git("update-ref", "refs/heads/campaign/doc", forged, tip)
    result = orch("doctor", "--topic", "doc", cwd=repo)
    assert result.rc == 1, result.out + result.err
    assert f"campaign/doc: FORGED {forged[:12]}  merge node A: again: a merge the journal does not record" in result.out
    direct = repo.git("commit-tree", f"{tip}^{{tree}}", "-p", forged, "-m", "direct")
    repo.git("update-ref", "refs/heads/campaign/doc", direct, forged)
    assert f"DIRECT {direct[:12]}" in orch("doctor", "--topic", "doc", cwd=repo).out


def test_an_object_missing_from_the_recorder_s_history_is_a_problem(repo, orch):
    """A recorder commit naming a tree git never stored (git_pipe.py: `mktree` answered ids it had not
    written) left the record unreadable from that commit on, and nothing said so until a read failed."""
    ledger = repo / ".ledger"
    trees = repo.git("-C", ".ledger", "log", "--format=%T").split()
    loose = next(ledger / ".git" / "objects" / t[:2] / t[2:] for t in trees[1:]
                 if (ledger / ".git" / "objects" / t[:2] / t[2:]).is_file())
    aside = loose.with_name(loose.name + ".aside")
    loose.rename(aside)
    try:
        result = orch("doctor", "--topic", "doc", cwd=repo)
    finally:
        aside.rename(loose)
    assert result.rc == 1
    assert f"the recorder's history is damaged: missing tree {loose.parent.name}{loose.name}\n" in result.out
    assert orch("doctor", "--topic", "doc", cwd=repo).rc == 0  # put back: whole again


def test_a_ref_of_the_recorder_naming_nothing_is_a_problem(repo, orch):
    ref = repo / ".ledger" / ".git" / "refs" / "heads" / "stray"
    ref.write_text("de" * 20 + "\n")
    try:
        result = orch("doctor", "--topic", "doc", cwd=repo)
    finally:
        ref.unlink()
    assert result.rc == 1
    assert f"the recorder's history is damaged: error: {'de' * 20}: object missing" in result.out


def test_a_recorder_git_cannot_open_is_a_problem_not_the_project_checked_instead(repo, orch):
    """rv43: `git -C .ledger fsck` looks upward when .ledger/.git is no repository (its HEAD gone): it checked
    the project, and said nothing of the recorder."""
    head = repo / ".ledger" / ".git" / "HEAD"
    kept = head.read_bytes()
    head.unlink()
    try:
        result = orch("doctor", "--topic", "doc", cwd=repo)
    finally:
        head.write_bytes(kept)
    assert result.rc == 1
    assert "the recorder's history is damaged: fatal: not a git repository" in result.out


def test_commits_landing_while_doctor_looks_are_not_taken_for_missing_objects(tmp_path):
    """rv43: git 2.39's fsck lists the objects it has, then reads the refs: a commit landing in between (a runner
    of any topic) was reported missing in 29 of 40 looks. The refs are read first now, and fsck walks from them."""
    import threading

    from orchestrate.recorder import doctor
    from orchestrate.recorder.journal import Recorder
    repo = campaign_repo(tmp_path, "nodes: []\n", "#!/bin/sh\n")
    ledger = repo / ".ledger"
    rec = Recorder(ledger, "busy").pin()
    stop = threading.Event()

    def commit() -> None:
        i = 0
        while not stop.is_set():
            rec.event("note", {"i": i})
            rec.commit(f"busy: step {i}")
            i += 1
    runner = threading.Thread(target=commit)
    runner.start()
    try:
        problems = []
        for _ in range(30):
            report = doctor.Report("busy")
            doctor._audit_history(ledger, report)
            problems += report.problems
    finally:
        stop.set()
        runner.join()
    assert problems == []
