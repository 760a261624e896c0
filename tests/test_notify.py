"""`notify:` in .ledger/config.yaml: commands run on seam, halt, done (and verdicts when asked) with what
happened in their environment, in the background with a timeout; a failing one is a warning, never a
failed campaign; a typo in the section is an error naming file and line."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrate import config
from orchestrate.errors import UsageError
from tests.engine_helpers import campaign_repo

DAG = """\
topic: t
workers: {sh: "./work.sh"}
defaults: {max_attempts: 1}
nodes:
  - {id: N1, title: one, depends_on: [], file_surface: [n1.txt], discipline: sh}
  - {id: N2, title: two, depends_on: [N1], file_surface: [n2.txt], discipline: sh}
"""
WORKER = """#!/bin/sh
set -eu
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr N n).txt" && git add -A && git commit -qm "$ORCH_NODE"
"""
FAILING = "#!/bin/sh\necho 'no luck'\nexit 1\n"
RECORD = """import json, os, sys
event = {k: v for k, v in os.environ.items() if k.startswith("ORCH_")}
name = f"{event['ORCH_EVENT']}-{event['ORCH_NODE'] or '-'}-{os.getpid()}.json"
with open(os.path.join(sys.argv[1], name), "w") as fh:
    json.dump(event, fh)
"""


def _setup(tmp_path: Path, notify: str, worker: str = WORKER):
    repo = campaign_repo(tmp_path, DAG, worker)
    got, stamp = tmp_path / "got", tmp_path / "stamp"
    got.mkdir()
    stamp.mkdir()
    (tmp_path / "record.py").write_text(RECORD)
    record = f"{sys.executable} {tmp_path / 'record.py'} {got}"
    (repo / ".ledger" / "config.yaml").write_text(notify.replace("RECORD", record).replace("STAMP", str(stamp)))
    return repo, got, stamp


def _cli(repo: Path, *args: str, stamp: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, CI="true", STAMP=str(stamp))
    return subprocess.run([sys.executable, "-m", "orchestrate", *args], cwd=repo, env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120)


def _events(got: Path) -> list[dict]:
    return sorted((json.loads(p.read_text()) for p in got.glob("*.json")),
                  key=lambda e: (e["ORCH_EVENT"], e["ORCH_NODE"]))


def test_a_seam_and_done_run_the_command_with_what_happened_in_its_environment(tmp_path):
    repo, got, stamp = _setup(tmp_path, "notify: RECORD\n")
    run = _cli(repo, "run", stamp=stamp)
    assert run.returncode == 75, run.stdout + run.stderr
    (seam,) = _events(got)  # verdicts were not asked for
    assert {k: seam[k] for k in ("ORCH_EVENT", "ORCH_TOPIC", "ORCH_NODE", "ORCH_SEAM")} == {
        "ORCH_EVENT": "seam", "ORCH_TOPIC": "t", "ORCH_NODE": "", "ORCH_SEAM": "final-acceptance"}
    decide = seam["ORCH_DECIDE"].splitlines()
    assert decide == ['orchestrate decide final-acceptance accept --topic t --note "..."',
                      'orchestrate decide final-acceptance reject --topic t --note "..."']
    assert all(f"  {line}" in run.stdout.splitlines() for line in decide)  # exactly what the run printed
    assert "waiting for you at seam final-acceptance" in seam["ORCH_MESSAGE"]
    accepted = _cli(repo, "decide", "final-acceptance", "accept", "--note", "fine", stamp=stamp)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    done = [e for e in _events(got) if e["ORCH_EVENT"] == "done"]
    assert len(done) == 1 and done[0]["ORCH_TOPIC"] == "t" and done[0]["ORCH_DECIDE"] == ""
    assert done[0]["ORCH_MESSAGE"].startswith("t: campaign done, campaign/t at ")


def test_verdicts_only_when_asked_and_a_notifier_never_holds_the_run_up(tmp_path):
    # The second command, on N1's verdict, waits until N2 is dispatched (its run folder appears): had the
    # run waited for the notifier, N2 could never have started and the notifier would have been stopped.
    waits = ('[ "$ORCH_NODE" = N1 ] || exit 0; while [ ! -d .scratch/runs/t/N2 ]; do sleep 0.05; done; '
             'echo "$ORCH_VERDICT" > STAMP/notifier-saw-N2')
    repo, got, stamp = _setup(tmp_path, "notify:\n  - {run: RECORD, events: [verdict]}\n"
                                        f"  - run: '{waits}'\n    events: verdict\n    timeout: 60\n")
    run = _cli(repo, "run", stamp=stamp)
    assert run.returncode == 75 and "warning" not in run.stdout, run.stdout + run.stderr
    assert (stamp / "notifier-saw-N2").read_text() == "accept\n"
    events = _events(got)
    assert [(e["ORCH_EVENT"], e["ORCH_NODE"], e["ORCH_VERDICT"]) for e in events] == [
        ("verdict", "N1", "accept"), ("verdict", "N2", "accept")]  # no seam: this command asked for verdicts only


def test_a_halt_notifies_and_a_failing_or_hanging_notifier_is_a_warning_not_a_failure(tmp_path):
    repo, got, stamp = _setup(tmp_path, "notify:\n  - RECORD\n  - echo boom >&2; exit 3\n"
                                        "  - {run: sleep 30, timeout: 0.5}\n", worker=FAILING)
    (tmp_path / "answers.yaml").write_text("realignment: {choice: halt, note: stop here}\n")
    run = _cli(repo, "run", "--answers", str(tmp_path / "answers.yaml"), stamp=stamp)
    assert run.returncode == 1, run.stdout + run.stderr  # the halt's exit code: the notifiers changed nothing
    (halt,) = _events(got)  # the seam was answered from the file: nobody was waited for
    assert halt["ORCH_EVENT"] == "halt" and halt["ORCH_TOPIC"] == "t" and halt["ORCH_MESSAGE"].startswith("t: halted")
    log = repo / ".scratch" / "runs" / "t" / "notify.log"
    assert "warning: notify command `echo boom >&2; exit 3` exited 3: boom (on halt; the campaign goes on; " \
           f"log: {log})" in run.stdout
    assert "warning: notify command `sleep 30` was stopped after 0.5s" in run.stdout
    text = log.read_text()
    assert "halt -: echo boom >&2; exit 3: notify command `echo boom >&2; exit 3` exited 3: boom\n  boom\n" in text
    assert f"halt -: {sys.executable}" in text and ": ok\n" in text


def test_on_a_terminal_the_seam_is_notified_while_the_prompt_waits_and_only_once(tmp_path):
    pexpect = pytest.importorskip("pexpect", reason="pexpect drives the run on a pseudo-terminal")
    repo, got, stamp = _setup(tmp_path, "notify: RECORD\n")
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["STAMP"] = str(stamp)
    child = pexpect.spawn(sys.executable, ["-m", "orchestrate", "run"], cwd=str(repo), env=env,
                          encoding="utf-8", timeout=60)
    child.expect(r"decide \(accept, reject, pause\) \[pause\]: ")
    deadline = time.monotonic() + 60  # a bound on waiting for the background notifier, not a timing assumption
    while not list(got.glob("seam-*.json")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [e["ORCH_SEAM"] for e in _events(got)] == ["final-acceptance"]  # sent before anyone answered
    child.sendeof()  # pause: the same seam is not notified a second time
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 75
    assert [e["ORCH_EVENT"] for e in _events(got)] == ["seam"]


def _ledger(tmp_path: Path, text: str) -> Path:
    ledger = tmp_path / "ledger"
    ledger.mkdir(exist_ok=True)
    (ledger / "config.yaml").write_text(text)
    return ledger


def test_the_section_reads_a_command_a_list_and_mappings(tmp_path):
    assert config.notify(None) == [] and config.notify(_ledger(tmp_path, "coherence: {names: []}\n")) == []
    assert config.notify(_ledger(tmp_path, "notify: notify-send hi\n")) == [config.NotifyCommand("notify-send hi")]
    got = config.notify(_ledger(tmp_path, "notify:\n  - a\n  - {run: b, events: [verdict, done, verdict], timeout: 2}\n"))
    assert got == [config.NotifyCommand("a", ("seam", "halt", "done"), 10.0),
                   config.NotifyCommand("b", ("verdict", "done"), 2.0)]


@pytest.mark.parametrize("text, message", [
    ("notify: ''\n", "config.yaml:1: notify: expected a command line"),
    ("notify: {run: x}\n", "config.yaml:1: notify: expected a command, or a list of commands"),
    ("# two notifiers\nnotify:\n  - ok\n  - 12\n", "config.yaml:4: notify[1]: expected a command, or a mapping of run"),
    ("notify:\n  - run: x\n    evnts: [seam]\n", "config.yaml:3: notify[0].evnts: unknown key; keys: run, events, timeout"),
    ("notify:\n  - {events: [seam]}\n", "config.yaml:2: notify[0]: no `run:`"),
    ("notify:\n  - run: x\n    events: [seam, verdit]\n",
     "config.yaml:3: notify[0].events: unknown event `verdit`; events: seam, halt, done, verdict"),
    ("notify:\n  - run: x\n    events: []\n", "config.yaml:3: notify[0].events: expected a list of events"),
    ("notify:\n  - run: x\n    timeout: soon\n", "config.yaml:3: notify[0].timeout: expected a number of seconds"),
    ("notify:\n  - run: x\n    timeout: true\n", "config.yaml:3: notify[0].timeout: expected a number of seconds"),
    ("notify:\n  - run: x\n\n    timeout: 0\n", "config.yaml:4: notify[0].timeout: expected a number of seconds"),
    ("notify:\n  - run: ['a']\n", "config.yaml:2: notify[0].run: expected a command line"),
])
def test_a_typo_in_the_section_names_file_and_line(tmp_path, text, message):
    with pytest.raises(UsageError) as err:
        config.notify(_ledger(tmp_path, text))
    assert message in str(err.value) and str(tmp_path / "ledger" / "config.yaml") in str(err.value)


def test_a_run_with_a_bad_notify_section_halts_before_writing_anything(tmp_path):
    repo, got, stamp = _setup(tmp_path, "notify:\n  - run: RECORD\n    events: [sem]\n")
    run = _cli(repo, "run", stamp=stamp)
    assert run.returncode == 1  # as an invalid DAG: every problem listed, nothing written
    assert "config.yaml:3: notify[0].events: unknown event `sem`" in run.stdout and "nothing was written" in run.stdout
    assert not (repo / ".ledger" / "state" / "t").exists() and repo.git("branch", "--list", "campaign/*") == ""


def test_the_readme_examples_are_valid_sections(tmp_path):
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("## Notifications\n")[1].split("\n## ")[0]
    blocks = [b.split("```")[0] for b in section.split("```yaml\n")[1:]]
    desktop, both = (config.notify(_ledger(tmp_path, block)) for block in blocks)
    assert desktop == [config.NotifyCommand('notify-send "orchestrate" "$ORCH_MESSAGE"')]
    assert both[1].events == ("seam", "halt", "done", "verdict") and both[1].timeout == 10.0
    assert both[1].run.startswith("python3 -c ") and " | curl -fsS -m 5 " in both[1].run
    # the payload a worker's words cannot reshape (rv67: pasted into a JSON string, a reason of `stuck", "channel":
    # "#general", "text": "all clear` chose the channel and the text)
    words = 'stuck", "channel": "#general", "text": "all clear'
    payload = subprocess.run(["sh", "-c", both[1].run.split(" | curl")[0]], env=dict(os.environ, ORCH_MESSAGE=words),
                             capture_output=True, text=True, check=True).stdout
    assert json.loads(payload) == {"text": words}
