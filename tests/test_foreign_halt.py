"""After a run halts on a journal written by something else (ForeignWrite), resume goes on only from what
the runner wrote: the last commit, or the runner's own lines since, never a line someone else appended,
however well it imitates the engine's (recorder/guard.py keeps the runner's own length and digest)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from orchestrate.engine import resume
from orchestrate.errors import ForeignWrite
from orchestrate.recorder import guard, segments
from orchestrate.recorder.journal import Recorder
from orchestrate.recorder.paths import Layout
from tests.engine_helpers import campaign_repo, journal_text, racing_seal, statuses
from tests.helpers import RepoDir

DAG = """\
topic: forge
mode: autonomous
defaults: {max_attempts: 1, sandbox: none}
workers: {sh: "./work.sh"}
nodes:
  - {id: A, file_surface: [a.txt], discipline: sh}
  - {id: B, depends_on: [A], file_surface: [b.txt], discipline: sh}
"""
JOURNAL = ".ledger/state/forge/journal.jsonl"
# A (its first attempt), without the sandbox, appends a copy of the journal's last transition under an id of
# its own: a line of the engine's shape that resume, were it to trust the file, would commit and fold.
FORGER = f"""#!/bin/sh
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr AB ab).txt"
[ "$ORCH_NODE$ORCH_ATTEMPT" = A1 ] || exit 0
j="$(git rev-parse --git-common-dir)/../{JOURNAL}"
grep '"kind":"transition"' "$j" | tail -1 | sed 's/"id":"[^"]*"/"id":"forge:9999"/' >> "$j"
"""


FORGED_LINE = b'{"context":{},"id":"forge:99","kind":"transition","seq":99}\n'


def recorded(repo) -> str:
    return RepoDir(repo / ".ledger").git("log", "-p", "--format=")


def uncommitted_transition(tmp_path):
    """A recorder with one commit and a transition journalled after it: (repo, recorder, the live file)."""
    repo = campaign_repo(tmp_path, DAG, FORGER)
    rec = Recorder(repo / ".ledger", "forge").pin()
    rec.event("note", {"i": 0})
    rec.commit("forge: zero")
    rec.event("transition", {"node": "A", "from": "PENDING", "outcome": "ok", "to": "READY"})
    rec.flush()
    return repo, rec, rec.journal.read_bytes()


@pytest.fixture
def halted(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, FORGER)
    result = orch("run", cwd=repo)
    assert result.rc == 1 and "changed behind the engine's back" in result.err, result.out + result.err
    assert "forge:9999" in (repo / JOURNAL).read_text()
    return repo


def test_resume_refuses_the_line_a_worker_appended_until_the_journal_is_put_back(halted, orch):
    repo = halted
    head = RepoDir(repo / ".ledger").head()
    assert "the last run halted on a journal write orchestrate did not make" in orch("status", cwd=repo).out
    for _ in range(2):  # refused again and again, not once
        refused = orch("resume", "--topic", "forge", cwd=repo)
        assert refused.rc == 1, refused.out + refused.err
        assert "holds lines this runner did not write" in refused.err
        assert "checkout HEAD -- state/forge/journal.jsonl" in refused.err
        assert RepoDir(repo / ".ledger").head() == head
    abandoned = orch("abandon", "--topic", "forge", "--note", "x", cwd=repo)  # it settles the journal first too
    assert abandoned.rc == 1 and RepoDir(repo / ".ledger").head() == head, abandoned.out + abandoned.err
    RepoDir(repo / ".ledger").git("checkout", "HEAD", "--", "state/forge/journal.jsonl")
    done = orch("resume", "--topic", "forge", cwd=repo)
    assert done.rc == 75 and "paused at seam final-acceptance" in done.out, done.out + done.err
    assert "forge:9999" not in recorded(repo) and "forge:9999" not in journal_text(repo, "forge")
    assert not guard.halt_record(repo / ".ledger", "forge").exists()
    assert "halted on a journal write" not in orch("status", cwd=repo).out
    assert statuses(repo, orch, "forge") == {"A": "ACCEPTED", "B": "ACCEPTED"}


def test_the_runners_own_lines_after_the_last_commit_are_kept_once_the_foreign_one_is_removed(tmp_path):
    """Unit level: the runner had journalled a transition it had not committed yet when the foreign line came;
    with that line deleted by hand, resume commits the runner's transition, and the halt record goes."""
    repo, rec, own = uncommitted_transition(tmp_path)
    ledger = repo / ".ledger"
    forged = own.splitlines(keepends=True)[-1].replace(b'"id":"forge:', b'"id":"forge:99')
    with rec.journal.open("ab") as fh:
        fh.write(forged)
    with pytest.raises(ForeignWrite, match="bytes since its last write"):
        rec.event("note", {"i": 1})
        rec.flush()
    assert guard.halt_record(ledger, "forge").exists()
    warnings: list[str] = []
    with pytest.raises(ForeignWrite, match="holds lines this runner did not write"):
        resume.settle_journal(Layout(repo), Recorder(ledger, "forge").pin(), warnings.append, crashed=False)
    rec.journal.write_bytes(own)  # the person deletes the foreign line only
    again = Recorder(ledger, "forge").pin()
    resume.settle_journal(Layout(repo), again, warnings.append, crashed=False)
    assert "committed a transition" in " ".join(warnings)
    assert RepoDir(ledger).git("show", "HEAD:state/forge/journal.jsonl").encode() == own.rstrip(b"\n")
    assert not guard.halt_record(ledger, "forge").exists()


def test_a_rewrite_of_the_runners_own_uncommitted_lines_is_refused_too(tmp_path):
    """Same length, other bytes: the digest, not the size, tells the runner's lines from a rewrite."""
    repo, rec, own = uncommitted_transition(tmp_path)
    ledger = repo / ".ledger"
    rec.journal.write_bytes(own.replace(b'"to":"READY"', b'"to":"FORGE"'))
    with pytest.raises(ForeignWrite, match="rewritten in place"):
        rec.commit("forge: one")
    with pytest.raises(ForeignWrite, match="holds lines this runner did not write"):
        resume.settle_journal(Layout(repo), Recorder(ledger, "forge").pin(), lambda m: None, crashed=False)
    assert b"FORGE" not in RepoDir(ledger).git("log", "-p", "--format=").encode()


def test_a_rewrite_through_a_shared_mapping_that_leaves_the_stat_alone_is_refused_at_the_commit(tmp_path):
    """Only the first write through a mapping moves the file's ctime: a worker without the sandbox that wrote a
    byte back to itself once (seen, and taken as touched, not changed) could rewrite the runner's lines after
    it unseen by their stat, and the commit would have carried them."""
    import mmap
    repo, rec, own = uncommitted_transition(tmp_path)
    fd = os.open(rec.journal, os.O_RDWR)
    mapped = mmap.mmap(fd, 0)
    os.close(fd)
    mapped[0:1] = mapped[0:1]
    rec.verify()  # the stat moved, the content did not: touched
    before = os.stat(rec.journal)
    mapped[:] = own.replace(b'"to":"READY"', b'"to":"FORGE"')
    after = os.stat(rec.journal)
    if (before.st_ctime_ns, before.st_mtime_ns) != (after.st_ctime_ns, after.st_mtime_ns):
        pytest.skip("this kernel moved the file's times at the second write through the mapping")
    with pytest.raises(ForeignWrite, match="rewritten in place"):
        rec.commit("forge: one")
    mapped.close()
    assert b"FORGE" not in RepoDir(repo / ".ledger").git("log", "-p", "--format=").encode()


@pytest.mark.parametrize("when", ["into the segment", "into the new live file"])
def test_a_line_written_as_the_journal_is_sealed_is_refused_by_resume_until_the_hint_is_followed(
        tmp_path, monkeypatch, when):
    """The seal is not committed when the line is found: resume folds it back into the live file, and what
    it folds must be exactly the runner's lines. The halt's own hint puts the journal right."""
    monkeypatch.setattr(segments, "SEGMENT_BYTES", 4000)
    repo = campaign_repo(tmp_path, DAG, FORGER)
    ledger = repo / ".ledger"
    rec = Recorder(ledger, "forge").pin()
    forged = FORGED_LINE
    real = segments.write_atomic

    rec.event("note", {"i": 0})
    rec.commit("forge: zero")
    monkeypatch.setattr(segments, "write_atomic", racing_seal(real, when, forged))
    rec.event("transition", {"from": "A", "outcome": "x", "to": "B", "padding": "x" * 4000})
    with pytest.raises(ForeignWrite) as halt:
        rec.commit("forge: one")
    monkeypatch.setattr(segments, "write_atomic", real)
    with pytest.raises(ForeignWrite, match="holds lines this runner did not write"):
        resume.settle_journal(Layout(repo), Recorder(ledger, "forge").pin(), lambda m: None, crashed=False)
    command = re.search(r"`([^`]*checkout HEAD[^`]*)`", halt.value.hint).group(1)
    assert command.startswith("rm ") == (when == "into the segment"), command
    subprocess.run(command, shell=True, check=True)
    resume.settle_journal(Layout(repo), Recorder(ledger, "forge").pin(), lambda m: None, crashed=False)
    assert b"forge:99" not in RepoDir(ledger).git("log", "-p", "--format=").encode()
    assert b"forge:99" not in segments.read_bytes(ledger / "state" / "forge" / "journal.jsonl")
    assert not guard.halt_record(ledger, "forge").exists()


CHAIN = DAG + "  - {id: C, depends_on: [B], file_surface: [c.txt], discipline: sh}\n"
PLANTED = "forge_20260101T000000_000000Z_deadbeef.json"


@pytest.mark.parametrize("action,what", [
    (f"printf '{{}}' > {PLANTED}", f"checkpoints/{PLANTED} appeared"),
    ('f=$(ls | tail -1); sed "s/ACCEPTED/FORGED/g" "$f" > x && cat x > "$f" && rm x', "was written"),
])
def test_a_checkpoint_planted_or_rewritten_by_a_worker_is_never_committed_or_trusted(
        tmp_path, orch, monkeypatch, action, what):
    """A checkpoint is a campaign state resume trusts: the guard stamps each one (written once, never again);
    resume puts back one that differs from the recorder's last commit and removes one the commit lacks."""
    from orchestrate.engine import loop
    monkeypatch.setattr(loop, "CHECKPOINT_EVERY", 5)  # checkpoints before C runs
    worker = ('#!/bin/sh\necho "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr ABC abc).txt"\n'
              '[ "$ORCH_NODE$ORCH_ATTEMPT" = C1 ] || exit 0\n'
              'cd "$(git rev-parse --git-common-dir)/../.ledger/state/forge/checkpoints"\n' + action + "\n")
    repo = campaign_repo(tmp_path, CHAIN, worker)
    rec = RepoDir(repo / ".ledger")
    halted = orch("run", cwd=repo)
    assert halted.rc == 1 and what in halted.err and "while C ran" in halted.err, halted.out + halted.err
    assert PLANTED not in rec.git("ls-tree", "-r", "--name-only", "HEAD")
    assert "FORGED" not in recorded(repo)
    resumed = orch("resume", "--topic", "forge", cwd=repo)
    said = resumed.out + resumed.err
    if "appeared" in what:  # not in the commit: removed, with a warning
        assert f"checkpoint {PLANTED} is not in the recorder's last commit" in said, said
    else:  # in the commit: put back, with a warning
        assert "differed from the recorder's last commit; put back" in said, said
    assert resumed.rc == 75 and "paused at seam final-acceptance" in resumed.out, resumed.out + resumed.err
    assert PLANTED not in rec.git("ls-tree", "-r", "--name-only", "HEAD")
    assert "FORGED" not in recorded(repo)
    assert rec.git("status", "--porcelain", "--untracked-files=all", "state/forge/checkpoints") == ""  # as committed
    assert statuses(repo, orch, "forge") == {"A": "ACCEPTED", "B": "ACCEPTED", "C": "ACCEPTED"}


def test_a_fifo_named_like_a_checkpoint_hangs_neither_status_nor_resume(halted, orch):
    folder = halted / ".ledger" / "state" / "forge" / "checkpoints"
    folder.mkdir(exist_ok=True)
    os.mkfifo(folder / PLANTED.replace("20260101", "29990101"))  # the newest by name: read first
    assert orch("status", cwd=halted).rc == 0
    refused = orch("resume", "--topic", "forge", cwd=halted)
    assert refused.rc == 1 and "Traceback" not in refused.err, refused.err


def test_a_line_appended_just_after_a_seal_leaves_a_record_of_the_sealed_lines_too(tmp_path, monkeypatch):
    """Until the commit holding a seal lands, resume folds the seal back into the live file: the halt record
    covers the sealed lines and those written since, so deleting only the foreign line is enough."""
    monkeypatch.setattr(segments, "SEGMENT_BYTES", 4000)
    repo, rec, _ = uncommitted_transition(tmp_path)
    real = rec.guard.seal

    def seal_then_append():
        real()
        if rec.journal.stat().st_size == 0:  # sealed a moment ago: the live file is new and empty
            with rec.journal.open("ab") as fh:
                fh.write(FORGED_LINE)
    monkeypatch.setattr(rec.guard, "seal", seal_then_append)
    rec.event("transition", {"from": "B", "outcome": "x", "to": "C", "padding": "y" * 4000})
    with pytest.raises(ForeignWrite, match="since its last write"):
        rec.commit("forge: one")
    rec.journal.write_bytes(rec.journal.read_bytes().replace(FORGED_LINE, b""))  # only the foreign line goes
    resume.settle_journal(Layout(repo), Recorder(repo / ".ledger", "forge").pin(), lambda m: None, crashed=False)
    assert b"forge:99" not in RepoDir(repo / ".ledger").git("log", "-p", "--format=").encode()
    assert not guard.halt_record(repo / ".ledger", "forge").exists()


@pytest.mark.parametrize("plant", ["folder", "fifo"])
def test_something_planted_where_the_halt_record_goes_neither_hides_the_halt_nor_hangs(tmp_path, orch, plant):
    repo = campaign_repo(tmp_path, DAG, FORGER)
    record = guard.halt_record(repo / ".ledger", "forge")
    record.parent.mkdir(parents=True)
    record.mkdir() if plant == "folder" else os.mkfifo(record)
    halted = orch("run", cwd=repo)  # the worker forges; the runner replaces what is in the record's place
    assert halted.rc == 1 and "changed behind the engine's back" in halted.err, halted.out + halted.err
    assert json.loads(record.read_text())["size"] > 0
    record.unlink()
    record.mkdir() if plant == "folder" else os.mkfifo(record)  # and again after the halt
    assert f"its halt record {record} is unreadable" in orch("status", cwd=repo).out
    refused = orch("resume", "--topic", "forge", cwd=repo)
    assert refused.rc == 1 and "holds lines this runner did not write" in refused.err, refused.out + refused.err
    RepoDir(repo / ".ledger").git("checkout", "HEAD", "--", "state/forge/journal.jsonl")
    done = orch("resume", "--topic", "forge", cwd=repo)
    assert done.rc == 75 and not os.path.lexists(record), done.out + done.err
    assert "forge:9999" not in recorded(repo)


@pytest.mark.parametrize("command", [("resume", "--topic", "forge"), ("decide", "final-acceptance", "accept",
                                                                     "--topic", "forge", "--as", "t@x")])
def test_a_checkpoint_planted_while_no_runner_watches_is_removed_before_any_commit(tmp_path, orch, command):
    """A paused campaign has no guard running: the next command that writes settles the checkpoints first."""
    repo = campaign_repo(tmp_path, DAG, "#!/bin/sh\necho \"$ORCH_NODE\" > \"$(echo \"$ORCH_NODE\" | tr AB ab).txt\"\n")
    assert orch("run", cwd=repo).rc == 75
    folder = repo / ".ledger" / "state" / "forge" / "checkpoints"
    newest = checkpoints_in(folder)[-1]
    (folder / PLANTED.replace("20260101", "29990101")).write_text(newest.read_text().replace("ACCEPTED", "FORGED"))
    said = orch(*command, cwd=repo)
    assert said.rc in (0, 75) and "is not in the recorder's last commit" in said.out + said.err, said.out + said.err
    assert "FORGED" not in recorded(repo) and "29990101" not in recorded(repo)


def test_a_link_in_the_place_of_the_checkpoints_folder_is_removed_never_followed(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, "#!/bin/sh\necho \"$ORCH_NODE\" > \"$(echo \"$ORCH_NODE\" | tr AB ab).txt\"\n")
    assert orch("run", cwd=repo).rc == 75
    folder = repo / ".ledger" / "state" / "forge" / "checkpoints"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for path in checkpoints_in(folder):
        (elsewhere / path.name).write_text("a person's file that happens to share the name\n")
    (elsewhere / "precious.txt").write_text("keep me\n")
    kept = sorted(p.name for p in folder.iterdir())
    shutil.rmtree(folder)
    folder.symlink_to(elsewhere)
    resumed = orch("resume", "--topic", "forge", cwd=repo)
    assert resumed.rc == 75 and "was not a folder; removed" in resumed.out + resumed.err, resumed.out + resumed.err
    assert sorted(p.name for p in elsewhere.iterdir()) == sorted([*kept, "precious.txt"])  # untouched
    assert folder.is_dir() and not folder.is_symlink() and set(kept) <= {p.name for p in folder.iterdir()}


def checkpoints_in(folder):
    from orchestrate.recorder import checkpoints
    return checkpoints.listing(folder, "forge")


def test_the_recorders_own_repack_while_workers_run_is_blamed_on_nobody(tmp_path, orch, monkeypatch):
    """The watch fingerprints `.ledger/.git`; a repack the runner starts while workers run writes there."""
    from orchestrate.recorder import upkeep
    monkeypatch.setattr(upkeep, "PACK_AFTER", 1)  # a repack after every commit
    worker = "#!/bin/sh\nsleep 0.3\necho \"$ORCH_NODE\" > \"$(echo \"$ORCH_NODE\" | tr ABC abc).txt\"\n"
    repo = campaign_repo(tmp_path, CHAIN, worker)
    result = orch("run", cwd=repo)
    assert result.rc == 75 and "no worker may change" not in result.out + result.err, result.out + result.err
    assert list((repo / ".ledger" / ".git" / "objects" / "pack").glob("*.pack"))  # it did repack
    assert statuses(repo, orch, "forge") == {"A": "ACCEPTED", "B": "ACCEPTED", "C": "ACCEPTED"}


def test_a_checkpoint_planted_before_a_campaign_starts_is_removed_before_its_first_commit(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG, "#!/bin/sh\necho \"$ORCH_NODE\" > \"$(echo \"$ORCH_NODE\" | tr AB ab).txt\"\n")
    folder = repo / ".ledger" / "state" / "forge" / "checkpoints"
    folder.mkdir(parents=True)
    (folder / PLANTED.replace("20260101", "29990101")).write_text('{"campaign": "forge", "state": {}}')
    result = orch("run", cwd=repo)
    assert result.rc == 75 and "is not in the recorder's last commit" in result.out + result.err, result.out
    assert "29990101" not in recorded(repo)


def test_a_checkpoint_that_cannot_be_removed_stops_resume_with_a_hint_not_a_traceback(tmp_path, orch):
    """An immutable file (chattr +i: not even root may remove it) stands for any file the runner may not
    remove, as a non-root user meets them."""
    repo = campaign_repo(tmp_path, DAG, "#!/bin/sh\necho \"$ORCH_NODE\" > \"$(echo \"$ORCH_NODE\" | tr AB ab).txt\"\n")
    assert orch("run", cwd=repo).rc == 75
    planted = repo / ".ledger" / "state" / "forge" / "checkpoints" / PLANTED
    planted.write_text("{}")
    if subprocess.run(["chattr", "+i", str(planted)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i does not work on this filesystem")
    try:
        refused = orch("resume", "--topic", "forge", cwd=repo)
    finally:
        subprocess.run(["chattr", "-i", str(planted)], check=True)
    assert refused.rc == 1 and "Traceback" not in refused.err, refused.err
    assert "cannot be put as the recorder's last commit holds it" in refused.err and f"rm -rf {planted}" in refused.err
    assert PLANTED not in recorded(repo)
