"""The live view: on a terminal a header with overall progress and a line per active node (queued, running,
judging, merging); off a terminal plain lines and a progress summary every 30 s; --quiet keeps only what a
person must see. The terminal test drives a real run on a pseudo-terminal, its workers, evaluator and
campaign check held until the test releases them (by creating files in the project, which a sandboxed
worker can read), so what it reads never depends on timing."""
from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrate.recorder.campaign import ACCEPTED, DISPATCHED, LANDED, PENDING, Campaign, NodeState
from orchestrate.report.live import Reporter
from orchestrate.report.progress import Progress, last_line
from tests.engine_helpers import campaign_repo

SGR = r"(?:\x1b\[[0-9;]*m)*"  # the live view colours each node's phase word
HELD = "sh -c 'while [ ! -e RELEASE/{name} ]; do sleep 0.05; done'"
# layered: the layer's nodes are dispatched at once, so those beyond --jobs show as queued (an eager
# schedule starts a node only when a slot is free, and queues nothing)
DAG = f"""\
topic: live
schedule: layered
workers: {{sh: "./work.sh"}}
checks:
  - {{name: held, run: "{HELD.format(name='merge')}"}}
nodes:
  - {{id: A, title: a, depends_on: [], file_surface: [A.txt], discipline: sh,
      evaluators: [{{name: held, run: "{HELD.format(name='judge-A')}"}}]}}
  - {{id: B, title: b, depends_on: [], file_surface: [B.txt], discipline: sh}}
  - {{id: C, title: c, depends_on: [], file_surface: [C.txt], discipline: sh}}
  - {{id: D, title: d, depends_on: [A, B, C], file_surface: [D.txt], discipline: sh}}
"""
WORKER = """#!/bin/sh
set -eu
echo "$ORCH_NODE is waiting for its release"
while [ ! -e "RELEASE/$ORCH_NODE" ]; do sleep 0.05; done
echo "$ORCH_NODE" > "$ORCH_NODE.txt" && git add -A && git commit -qm "$ORCH_NODE"
"""
QUICK_DAG = """\
topic: quick
workers: {sh: "./work.sh"}
nodes:
  - {id: A, title: a, depends_on: [], file_surface: [A.txt], discipline: sh}
  - {id: B, title: b, depends_on: [A], file_surface: [B.txt], discipline: sh}
"""
QUICK = """#!/bin/sh
set -eu
echo "$ORCH_NODE" > "$ORCH_NODE.txt" && git add -A && git commit -qm "$ORCH_NODE"
"""


def _held_repo(tmp_path: Path) -> tuple[Path, Path]:
    release = tmp_path / "repo" / ".scratch" / "release"
    repo = campaign_repo(tmp_path, DAG.replace("RELEASE", str(release)), WORKER.replace("RELEASE", str(release)))
    release.mkdir(parents=True)
    return repo, release


def _spawn(repo: Path, *args: str):
    pexpect = pytest.importorskip("pexpect", reason="pexpect drives the run on a pseudo-terminal")
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    child = pexpect.spawn(sys.executable, ["-m", "orchestrate", *args], cwd=str(repo), env=env,
                          encoding="utf-8", timeout=60, dimensions=(30, 160))
    child.logfile_read = io.StringIO()
    return child


def test_on_a_terminal_the_header_counts_nodes_done_and_queued_nodes_show_as_queued(tmp_path):
    pexpect = pytest.importorskip("pexpect", reason="pexpect drives the run on a pseudo-terminal")
    repo, release = _held_repo(tmp_path)
    child = _spawn(repo, "run", "--jobs", "1")

    def release_(*names: str) -> None:
        for name in names:
            (release / name).touch()

    child.expect(re.escape("live | layer 0 (layers 0-1) | 0/4 done | 1 running | 2 queued | 0 judging"))
    child.expect(rf"A\s+{SGR}running{SGR}\s+\d+\.\ds\s+A is waiting for its release")
    child.expect(rf"B\s+{SGR}queued")
    seen = child.logfile_read.getvalue()
    assert "\x1b[1;36mrunning" in seen  # the phase is coloured too
    assert not re.search(rf"[BC]\s+{SGR}running", seen), "a queued node was shown as running"
    release_("A")
    child.expect(rf"B\s+{SGR}running{SGR}\s+\d+\.\ds\s+B is waiting for its release")
    release_("B", "C")
    child.expect(r"\| 0 running \| 0 queued \| 1 judging \|")  # the evaluator of A holds RECONCILE
    child.expect(rf"A\s+{SGR}judging{SGR}\s+\d+\.\ds")
    release_("judge-A")
    child.expect(rf"A\s+{SGR}merging{SGR}\s+\d+\.\ds")  # the campaign check holds MERGE
    release_("merge")
    child.expect(re.escape("live | layer 1 (layers 0-1) | 3/4 done | 1 running | 0 queued | 0 judging"))
    release_("D")
    child.expect(r"decide \(accept, reject, pause\) \[pause\]: ")
    child.sendline("accept")
    child.expect("note")
    child.sendline("")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    out = child.logfile_read.getvalue()
    for line in ("A: ACCEPT (attempt 1)", "D: merged into campaign/live", "campaign live is done"):
        assert line in out  # transitions scroll above the view, and stay


def test_quiet_on_a_terminal_shows_no_live_view_only_the_seam_and_its_answers(tmp_path):
    pexpect = pytest.importorskip("pexpect", reason="pexpect drives the run on a pseudo-terminal")
    repo = campaign_repo(tmp_path, QUICK_DAG, QUICK)
    child = _spawn(repo, "run", "--quiet")
    child.expect(r"decide \(accept, reject, pause\) \[pause\]: ")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    out = child.logfile_read.getvalue()
    assert child.exitstatus == 75
    assert "| 0 judging |" not in out and " -> " not in out and "\x1b[" not in out
    assert "orchestrate decide final-acceptance accept --topic quick" in out


def _cli(repo: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, CI="true")
    return subprocess.run([sys.executable, "-m", "orchestrate", *args], cwd=repo, env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120)


def test_off_a_terminal_plain_lines_without_cursor_codes(tmp_path):
    repo = campaign_repo(tmp_path, QUICK_DAG, QUICK)
    run = _cli(repo, "run")
    assert run.returncode == 75
    assert "\x1b" not in run.stdout and "\r" not in run.stdout
    assert re.search(r"^\d\d:\d\d:\d\d RECONCILE -> MERGE \(accept: A\)$", run.stdout, re.M)


def test_quiet_off_a_terminal_prints_the_seam_and_nothing_of_the_transitions(tmp_path):
    repo = campaign_repo(tmp_path, QUICK_DAG, QUICK)
    run = _cli(repo, "run", "--quiet")
    assert run.returncode == 75
    assert run.stdout.splitlines()[0].startswith("paused at seam final-acceptance")
    assert "orchestrate decide final-acceptance accept --topic quick --note" in run.stdout
    assert " -> " not in run.stdout and "dispatched" not in run.stdout


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _campaign(statuses: dict[str, str], layers: list[list[str]], k: int = 0) -> Campaign:
    c = Campaign(topic="t", layers=layers, k=k)
    c.nodes = {n: NodeState(n, status=s, attempt=1) for n, s in statuses.items()}
    return c


def test_queued_nodes_are_listed_as_queued_with_no_time(tmp_path):
    clock = Clock()
    progress = Progress(clock)
    c = _campaign({"A": DISPATCHED, "B": DISPATCHED, "C": PENDING}, [["A", "B"], ["C"]])
    progress.state("AWAIT", c, tmp_path)
    clock.now += 5
    progress.workers([("A", 4.0), ("B", 0.0)], queued=["B"])  # as the executors report a queued node
    lines = progress.node_lines()
    assert lines[0].split() == ["A", "running", "4.0s"] and lines[1].split() == ["B", "queued"]
    assert "t | layer 0 (layers 0-1) | 0/3 done | 1 running | 1 queued | 0 judging | elapsed 5.0s | AWAIT" == progress.header()
    c.nodes["A"].status = LANDED  # A returned while B still runs
    progress.workers([("B", 2.0)], queued=[])
    assert [line.split()[:2] for line in progress.node_lines()] == [["B", "running"], ["A", "landed"]]


def test_judging_and_merging_are_phases_and_landed_nodes_wait_to_be_judged(tmp_path):
    clock = Clock()
    progress = Progress(clock)
    c = _campaign({"A": LANDED, "B": LANDED, "Z": ACCEPTED}, [["Z"], ["A", "B"]], k=1)
    (tmp_path / "A").mkdir()
    (tmp_path / "A" / "evaluators-1.log").write_text("ran 3 tests\n\x1b[31mOK\x1b[0m\n\n")
    progress.state("RECONCILE", c, tmp_path, focus=["A"])
    clock.now += 75
    assert progress.node_lines() == ["  A  judging    1m15s  OK", "  B  landed"]
    assert "| 1/3 done | 0 running | 0 queued | 1 judging |" in progress.header()
    progress.state("MERGE", c, tmp_path, focus=["A"])
    assert progress.node_lines()[0].split()[:3] == ["A", "merging", "0.0s"]
    c.nodes["A"].status = ACCEPTED
    progress.state("CHECKPOINT", c, tmp_path)
    assert progress.node_lines() == ["  B  landed"] and "| 2/3 done |" in progress.header()


def test_off_a_terminal_a_progress_summary_every_30_seconds_while_workers_run(tmp_path):
    for quiet in (False, True):
        clock, said = Clock(), io.StringIO()
        out = Reporter(quiet=quiet, live=False, stream=said, clock=clock)
        out.state("AWAIT", _campaign({"A": DISPATCHED}, [["A"]]), tmp_path)
        for step in (0, 10, 19.9):
            clock.now += step
            out.running([("A", 1.0)])
        assert said.getvalue() == ""
        clock.now += 0.1  # 30 s since the first poll
        out.running([("A", 31.0)])
        clock.now += 29
        out.running([("A", 60.0)])
        lines = said.getvalue().splitlines()
        assert len(lines) == 1
        assert lines[0].endswith("progress: t layer 0 (layers 0-0), 0/1 done, 1 running (A 31.0s), 0 queued, 0 judging, "
                                 "elapsed 30.0s")
        clock.now += 1
        out.running([("A", 61.0)])
        assert len(said.getvalue().splitlines()) == 2


def test_the_log_tail_is_the_last_line_with_text_and_no_control_codes(tmp_path):
    log = tmp_path / "attempt-1.log"
    log.write_bytes(b"x" * 10000 + b"\nbuilding \x1b[1mstep 3\x1b[0m\x07\n  \n")
    assert last_line(log) == "building step 3"
    log.write_bytes(b"fetching 10%\rfetching 60%\r\n")  # a progress bar: what the terminal would show last
    assert last_line(log) == "fetching 60%"
    assert last_line(tmp_path / "missing.log") == ""


def test_the_progress_summary_keeps_its_pace_through_frequent_transitions(tmp_path):
    """Nodes landing and being judged every few seconds must not restart the summary's interval: one
    line per interval of polling, however many states the loop went through in between."""
    clock, said = Clock(), io.StringIO()
    out = Reporter(live=False, quiet=True, stream=said, clock=clock, summary_every=10.0)
    c = _campaign({"A": DISPATCHED, "B": DISPATCHED}, [["A", "B"]])
    for _ in range(13):  # polls at 0, 3, ..., 36 s, each followed by three states a second apart
        out.running([("A", 1.0), ("B", 1.0)])
        for state in ("RECONCILE", "CHECKPOINT", "DISPATCH"):
            clock.now += 1
            out.state(state, c, tmp_path)
    lines = said.getvalue().splitlines()
    assert len(lines) == 3 and all("progress: t layer 0 (layers 0-0), 0/2 done" in line for line in lines)
    assert [line.split("elapsed ")[1] for line in lines] == ["12.0s", "24.0s", "36.0s"]


def test_a_fifo_or_a_link_in_the_place_of_a_log_is_not_waited_on_or_followed(tmp_path):
    """A worker's run folder is writable to it, in the sandbox too: the live view and the return's look at the
    log read only a plain file (opening a FIFO to read waits for a writer, forever)."""
    import os

    from orchestrate.workers.returns import environment_error
    fifo, link = tmp_path / "attempt-1.log", tmp_path / "attempt-2.log"
    os.mkfifo(fifo)
    (tmp_path / "secret").write_text("# orchestrate: node A attempt 1: ./work.sh\nnot found\n")
    link.symlink_to(tmp_path / "secret")
    assert last_line(fifo) == "" and last_line(link) == ""
    assert environment_error(127, str(fifo)) == environment_error(127, str(link)) == environment_error(127, "")


def test_why_the_environment_ended_an_attempt_is_found_after_any_amount_of_output(tmp_path):
    """The header orchestrate wrote first and the line the worker printed last, however long the log."""
    from orchestrate.workers.returns import AGENT_PREFIX, environment_error
    log = tmp_path / "attempt-1.log"
    log.write_text("# orchestrate: node A attempt 1: ./agent.sh\n" + "progress\n" * 300_000
                   + f"{AGENT_PREFIX}the agent is not logged in\n")
    assert environment_error(69, str(log)) == ("the worker `./agent.sh` cannot work here (exit 69): "
                                              f"{AGENT_PREFIX}the agent is not logged in")
