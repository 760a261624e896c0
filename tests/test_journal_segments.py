"""The journal in sealed segments (recorder/segments.py): a commit hashes the live file alone, readers see
the whole journal, a crash around a seal resumes to the same campaign, and a sealed segment is guarded as
the live file is."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from orchestrate.recorder import segments
from tests import engine_helpers
from tests.engine_helpers import campaign_repo, journal, racing_seal
from tests.helpers import RepoDir

SMALL = 4000  # bytes: a 9-node campaign's journal (about 70 KB) makes a dozen and more segments
TOPIC = "seg"
WORKER = "#!/bin/sh\necho \"$ORCH_NODE\" > \"$ORCH_NODE.txt\"\n"


def dag(nodes: int = 9) -> str:
    lines = [f"topic: {TOPIC}", "workers: {sh: ./work.sh}", "defaults: {sandbox: none}", "nodes:"]
    for i in range(nodes):
        dep = f"N{i - 3}" if i >= 3 else ""
        lines.append(f"  - {{id: N{i}, depends_on: [{dep}], file_surface: [N{i}.txt], discipline: sh}}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def small(monkeypatch):
    monkeypatch.setattr(segments, "SEGMENT_BYTES", SMALL)


def live(repo) -> "os.PathLike":
    return repo / ".ledger" / "state" / TOPIC / "journal.jsonl"


def recorder(repo) -> RepoDir:
    return RepoDir(repo / ".ledger")


def cli(repo, *args: str, fault: str | None = None) -> subprocess.CompletedProcess:
    return engine_helpers.cli(repo, *args, fault=fault, quiet=True, timeout=300,
                              env={"ORCHESTRATE_JOURNAL_SEGMENT_BYTES": str(SMALL)})

@pytest.mark.parametrize("size", [SMALL, 5000, 8000])
def test_a_long_journal_is_sealed_committed_whole_and_read_as_one(tmp_path, orch, monkeypatch, size):
    monkeypatch.setattr(segments, "SEGMENT_BYTES", size)
    repo = campaign_repo(tmp_path, dag(), WORKER)
    assert orch("run", "--quiet", cwd=repo).rc == 75  # final acceptance
    assert recorder(repo).git("status", "--porcelain") == ""  # every seal was committed with its transition
    sealed = segments.sealed(live(repo))
    assert len(sealed) >= 5, sealed
    assert all(p.stat().st_size >= size for p in sealed)
    entries = journal(repo, TOPIC)
    assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
    assert "open" in [e["kind"] for e in entries[:5]] and sum(e["kind"] == "merge" for e in entries) == 9
    assert recorder(repo).git("status", "--porcelain") == ""
    # every commit carried the live file at under a segment (it is sealed as the commit is built once it
    # holds that much); a sealed segment was added once and never changed
    rec = recorder(repo)
    for sha in rec.git("rev-list", "HEAD").split():
        held = rec.git("cat-file", "-s", f"{sha}:state/{TOPIC}/journal.jsonl", check=False)
        assert not held or int(held) < size, (sha, held)
    for path in sealed:
        rel = f"state/{TOPIC}/{segments.name(path)}"
        assert len(rec.git("log", "--format=%H", "--", rel).split()) == 1, rel
    status = json.loads(orch("status", "--json", cwd=repo).out)
    assert {n["status"] for n in status["nodes"]} == {"ACCEPTED"}
    assert orch("doctor", "--topic", TOPIC, cwd=repo).rc == 0
    assert orch("decide", "final-acceptance", "accept", "--topic", TOPIC, "--note", "ok", cwd=repo).rc == 0
    assert orch("status", "--json", cwd=repo).rc == 0  # ended: read from its segments' close and decision
    assert recorder(repo).git("status", "--porcelain") == ""


def test_a_short_journal_stays_one_file(tmp_path, orch, monkeypatch):
    monkeypatch.setattr(segments, "SEGMENT_BYTES", 256 * 1024)  # the default, whatever the environment says
    repo = campaign_repo(tmp_path, dag(3), WORKER)
    assert orch("run", "--quiet", cwd=repo).rc == 75
    assert segments.sealed(live(repo)) == [] and not (live(repo).parent / segments.SEALED).exists()


def outcome(repo) -> dict:
    entries = journal(repo, TOPIC)
    return {"tree": repo.git("rev-parse", f"campaign/{TOPIC}^{{tree}}"),
            "merged": sorted(e["context"]["node"] for e in entries if e["kind"] == "merge"),
            "seqs": [e["seq"] for e in entries] == list(range(1, len(entries) + 1)),
            "recorder clean": recorder(repo).git("status", "--porcelain") == ""}


@pytest.mark.parametrize("fault", ["seal:2", "sealed:2", "sealed:5"])
def test_a_crash_around_a_seal_resumes_to_the_same_campaign(tmp_path, fault):
    reference = campaign_repo(tmp_path / "ref", dag(), WORKER)
    assert cli(reference, "run").returncode == 75
    repo = campaign_repo(tmp_path / "cut", dag(), WORKER)
    first = cli(repo, "run", fault=fault)
    assert first.returncode == -9, first.stdout + first.stderr
    fresh = [p for p in segments.sealed(live(repo))
             if not recorder(repo).git("ls-tree", "--name-only", "HEAD", f"state/{TOPIC}/{segments.name(p)}")]
    assert len(fresh) == 1  # the crash left one seal that the recorder's last commit lacks
    done = cli(repo, "resume", "--topic", TOPIC)
    assert done.returncode == 75, done.stdout + done.stderr
    assert outcome(repo) == outcome(reference)
    assert subprocess.run([sys.executable, "-m", "orchestrate", "doctor", "--topic", TOPIC], cwd=repo,
                          capture_output=True).returncode == 0


def tamperer(action: str) -> str:
    """A worker (no sandbox) that, as node N7, tampers with the journal's sealed segments; others do their job."""
    return ("#!/bin/sh\necho \"$ORCH_NODE\" > \"$ORCH_NODE.txt\"\n"
            "[ \"$ORCH_NODE\" = N7 ] || exit 0\n"
            "cd \"$(git rev-parse --git-common-dir)/../.ledger/state/seg/journal.d\"\n" + action)


@pytest.mark.parametrize("action,what", [
    ("tail -1 000001.jsonl >> 000001.jsonl\n", "000001.jsonl, sealed, was written"),
    ("cp 000001.jsonl 999999.jsonl\n", "999999.jsonl appeared"),
    ("rm 000002.jsonl\n", "000002.jsonl, sealed, was removed"),
])
def test_a_worker_that_touches_a_sealed_segment_halts_the_campaign_and_nothing_of_it_is_committed(
        tmp_path, orch, small, action, what):
    repo = campaign_repo(tmp_path, dag(), tamperer(action))
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 1 and what in result.err and "N7" in result.err, result.err
    rec = recorder(repo)
    committed = rec.git("ls-tree", "--name-only", "HEAD", f"state/{TOPIC}/journal.d/").split()
    assert f"state/{TOPIC}/journal.d/000002.jsonl" in committed  # a removal is not committed
    assert not [p for p in committed if "999999" in p]  # nor a planted segment
    first = rec.git("show", f"HEAD:state/{TOPIC}/journal.d/000001.jsonl").splitlines()
    assert first[-1] != first[-2]  # nor a line added to a sealed one
    assert not [e for e in journal(repo, TOPIC) if e["context"].get("node") == "N7" and e["kind"] == "merge"]


def test_damage_in_a_sealed_segment_is_named_by_its_file_and_line(tmp_path, orch, small):
    repo = campaign_repo(tmp_path, dag(), WORKER)
    assert orch("run", "--quiet", cwd=repo).rc == 75
    segment = segments.sealed(live(repo))[1]
    lines = segment.read_bytes().splitlines(keepends=True)
    segment.write_bytes(b"".join(lines[:1] + [b"garbage\n"] + lines[1:]))
    where = "journal.d/000002.jsonl:2"
    assert f"damaged journal: {where} (not JSON)" in orch("status", cwd=repo).out
    resumed = orch("resume", "--topic", TOPIC, cwd=repo)
    assert resumed.rc == 1 and resumed.err.startswith(f"orchestrate: error: {where}: not JSON"), resumed.err
    assert f"checkout HEAD -- state/{TOPIC}/journal.d/000002.jsonl" in resumed.err
    doctor = orch("doctor", "--topic", TOPIC, cwd=repo)
    assert doctor.rc == 1 and f"{where}: not a JSON object" in doctor.out, doctor.out


@pytest.mark.parametrize("when", ["into the segment", "into the new live file"])
def test_a_line_written_while_the_journal_is_sealed_is_refused_and_never_committed(tmp_path, monkeypatch, small, when):
    """A worker appending as the runner seals: its line lands in the file it opened (now the segment) or in
    the live file started anew before the runner stamps it; either is found at once."""
    from orchestrate.errors import ForeignWrite
    from orchestrate.recorder.journal import Recorder
    repo = campaign_repo(tmp_path, dag(1), WORKER)
    rec = Recorder(repo / ".ledger", "t").pin()
    forged = b'{"context":{},"id":"t:99","kind":"note","seq":99}\n'
    real = segments.write_atomic

    rec.event("note", {"i": 0})
    rec.commit("t: zero")
    monkeypatch.setattr(segments, "write_atomic", racing_seal(real, when, forged))
    rec.event("note", {"padding": "x" * SMALL})
    with pytest.raises(ForeignWrite, match="sealed|started anew"):
        rec.commit("t: one")
    with pytest.raises(ForeignWrite):
        rec.event("note", {"i": 2})
        rec.commit("t: two")
    committed = recorder(repo).git("ls-tree", "-r", "--name-only", "HEAD", "state/t")
    assert "journal.d" not in committed
    assert b"t:99" not in recorder(repo).git("show", "HEAD:state/t/journal.jsonl").encode()


def test_a_reader_between_the_two_steps_of_a_seal_reads_each_line_once(tmp_path):
    """`status` or `decide` read the journal while the runner seals it: the live file is for a moment the
    newest segment's other name, and counts as empty then."""
    state = tmp_path / "state" / "t"
    (state / segments.SEALED).mkdir(parents=True)
    journal = state / "journal.jsonl"
    (state / segments.SEALED / "000001.jsonl").write_bytes(b'{"seq":1}\n')
    journal.write_bytes(b'{"seq":2}\n{"seq":3}\n{"seq":4')
    assert segments.lines(journal) == [b'{"seq":1}\n', b'{"seq":2}\n', b'{"seq":3}\n']  # the torn end left out
    journal.write_bytes(b'{"seq":2}\n')
    os.link(journal, state / segments.SEALED / "000002.jsonl")  # the seal's first step
    assert segments.read_bytes(journal) == b'{"seq":1}\n{"seq":2}\n'
    data, where = segments.read(journal)
    assert where(2) == "journal.d/000002.jsonl:1"
    segments.write_atomic(journal, b'{"seq":3}\n')  # its second, and a line after it
    assert segments.read_bytes(journal) == b'{"seq":1}\n{"seq":2}\n{"seq":3}\n'
    assert segments.read(journal)[1](3) == "journal.jsonl:1"


@pytest.mark.parametrize("action,what", [
    # the engine may look between the worker's two steps (a node of the other chain commits meanwhile)
    ('mv journal.d "$TMPDIR/stolen" && ln -s "$TMPDIR/stolen" journal.d\n',
     ("journal.d is not a folder", "000001.jsonl, sealed, was removed")),
    ('cp -a journal.d "$TMPDIR/copy" && rm -r journal.d && mv "$TMPDIR/copy" journal.d\n',
     ("000001.jsonl, sealed, was written", "000001.jsonl, sealed, was removed")),
])
def test_a_worker_that_swaps_the_segments_folder_halts_the_campaign(tmp_path, orch, small, monkeypatch, action, what):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    worker = tamperer(action).replace('/journal.d"\n', '"\n')  # in the campaign's folder, not in journal.d
    repo = campaign_repo(tmp_path, dag(), worker)
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 1 and any(said in result.err for said in what), result.err
    assert "040000 tree" in recorder(repo).git("ls-tree", "HEAD", f"state/{TOPIC}/journal.d")


def test_a_file_planted_where_the_segments_go_halts_the_campaign_without_a_traceback(tmp_path, orch, monkeypatch):
    monkeypatch.setattr(segments, "SEGMENT_BYTES", 20000)  # N0 runs before the first seal
    worker = ("#!/bin/sh\necho \"$ORCH_NODE\" > \"$ORCH_NODE.txt\"\n[ \"$ORCH_NODE\" = N0 ] || exit 0\n"
              "echo planted > \"$(git rev-parse --git-common-dir)/../.ledger/state/seg/journal.d\"\n")
    repo = campaign_repo(tmp_path, dag(), worker)
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 1 and "journal.d" in result.err and "Traceback" not in result.err, result.err
    assert "journal.d" not in recorder(repo).git("ls-tree", "-r", "--name-only", "HEAD", f"state/{TOPIC}")


@pytest.mark.parametrize("tamper,what", [
    (lambda d: d.joinpath("000001.jsonl").write_bytes(d.joinpath("000001.jsonl").read_bytes().replace(b"2026-", b"2019-", 1)),
     "journal.d/000001.jsonl differs from the last commit or is gone"),
    (lambda d: d.joinpath("000002.jsonl").unlink(), "journal.d/000002.jsonl differs from the last commit or is gone"),
    (lambda d: d.joinpath("000000.jsonl").write_bytes(b'{"context":{},"id":"seg:1","kind":"note","seq":1}\n'),
     "journal.d/000000.jsonl is not in the last commit"),
    (lambda d: d.joinpath("notes.txt").write_bytes(b"mine\n"), "journal.d/notes.txt is not in the last commit"),
])
def test_resume_refuses_sealed_segments_that_differ_from_the_last_commit(tmp_path, orch, small, tamper, what):
    repo = campaign_repo(tmp_path, dag(), WORKER)
    assert orch("run", "--quiet", cwd=repo).rc == 75
    head = recorder(repo).git("rev-parse", "HEAD")
    tamper(live(repo).parent / segments.SEALED)
    resumed = orch("resume", "--topic", TOPIC, cwd=repo)
    assert resumed.rc == 1 and what in resumed.err and "nothing was resumed" in resumed.err, resumed.err
    assert recorder(repo).git("rev-parse", "HEAD") == head
    recorder(repo).git("checkout", "HEAD", "--", f"state/{TOPIC}/journal.d")
    for extra in ("000000.jsonl", "notes.txt"):
        (live(repo).parent / segments.SEALED / extra).unlink(missing_ok=True)
    assert orch("resume", "--topic", TOPIC, cwd=repo).rc == 75  # restored as the message says: it goes on


def test_a_live_journal_turned_into_a_link_to_its_copy_halts_the_campaign(tmp_path, orch, small):
    copy = tmp_path / "copy.jsonl"
    repo = campaign_repo(tmp_path, dag(), tamperer(f'cd .. && cp journal.jsonl {copy} && ln -sf {copy} journal.jsonl\n'))
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 1 and "no longer a plain file" in result.err, result.err
    assert "100644 blob" in recorder(repo).git("ls-tree", "HEAD", f"state/{TOPIC}/journal.jsonl")


def test_a_crashed_seal_over_a_live_file_put_back_from_the_last_commit_adds_nothing_twice(tmp_path):
    """The guard's message says to put the live file back from the last commit; a seal left beside it goes."""
    repo = campaign_repo(tmp_path, dag(), WORKER)
    assert cli(repo, "run", fault="sealed:3").returncode == -9
    recorder(repo).git("checkout", "HEAD", "--", f"state/{TOPIC}/journal.jsonl")
    assert cli(repo, "resume", "--topic", TOPIC).returncode == 75
    entries = journal(repo, TOPIC)
    assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
    assert len({e["id"] for e in entries}) == len(entries)
    assert recorder(repo).git("status", "--porcelain") == ""


def test_a_stray_file_beside_a_crashed_seal_is_the_only_thing_resume_asks_to_remove(tmp_path):
    reference = campaign_repo(tmp_path / "ref", dag(), WORKER)
    assert cli(reference, "run").returncode == 75
    repo = campaign_repo(tmp_path / "cut", dag(), WORKER)
    assert cli(repo, "run", fault="sealed:3").returncode == -9
    folder = live(repo).parent / segments.SEALED
    stray = folder / "000000.jsonl"
    stray.write_bytes((folder / "000001.jsonl").read_bytes())
    refused = cli(repo, "resume", "--topic", TOPIC)
    assert refused.returncode == 1 and "journal.d/000000.jsonl is not in the last commit" in refused.stderr
    assert f"rm -r {stray}`" in refused.stderr and "000003" not in refused.stderr, refused.stderr
    stray.unlink()  # as the message says
    assert cli(repo, "resume", "--topic", TOPIC).returncode == 75
    assert outcome(repo) == outcome(reference)


@pytest.mark.parametrize("plant", ["folder", "fifo"])
def test_something_other_than_a_file_where_a_segment_or_the_journal_goes_is_refused_and_hangs_nothing(tmp_path, orch, small, plant):
    repo = campaign_repo(tmp_path, dag(), WORKER)
    assert orch("run", "--quiet", cwd=repo).rc == 75
    for where in (live(repo).parent / segments.SEALED / "000099.jsonl", live(repo)):
        backup = where.read_bytes() if where.is_file() else None
        where.unlink(missing_ok=True)
        where.mkdir() if plant == "folder" else os.mkfifo(where)
        status = subprocess.run([sys.executable, "-m", "orchestrate", "status", "--json"], cwd=repo,
                                capture_output=True, text=True, timeout=60)
        assert status.returncode != 70 and "Traceback" not in status.stderr, status.stderr
        resumed = cli(repo, "resume", "--topic", TOPIC)
        assert resumed.returncode == 1 and where.name in resumed.stderr, resumed.stderr
        where.rmdir() if plant == "folder" else where.unlink()
        if backup is not None:
            where.write_bytes(backup)


def test_the_last_entry_time_is_read_when_the_live_journal_holds_one_line(tmp_path):
    from orchestrate.report.status import _last_entry_time
    state = tmp_path / "state" / "t"
    (state / segments.SEALED).mkdir(parents=True)
    (state / segments.SEALED / "000001.jsonl").write_bytes(b'{"created_at":"one"}\n' * 5000)
    journal_file = state / "journal.jsonl"
    journal_file.write_bytes(b'{"created_at":"two"}\n')
    assert _last_entry_time(journal_file) == "two"
    journal_file.write_bytes(b"")
    assert _last_entry_time(journal_file) == "one"
    assert segments.tail(journal_file, 100).count(b"\n") == 4  # whole lines only
