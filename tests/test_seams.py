"""Human seams: without a terminal every seam pauses with 75 and prints a decide command that answers it;
on a terminal a prompt asks; the DAG's policy settles realignment in autonomous mode, never acceptance."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.engine_helpers import campaign_repo, recorder_subjects, journal_text
from tests.helpers import RepoDir


def cli(repo, *args, env_extra=None, stdin_closed=False, timeout=120):
    env = dict(os.environ, CI="true", **(env_extra or {}))
    kwargs = {"preexec_fn": lambda: os.close(0)} if stdin_closed else {"stdin": subprocess.DEVNULL}
    return subprocess.run([sys.executable, "-m", "orchestrate", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=timeout, **kwargs)


def printed_decide(output: str, choice: str) -> str:
    line = next(ln.strip() for ln in output.splitlines() if ln.strip().startswith("orchestrate decide")
                and f" {choice} " in ln)
    return line.replace('--note "..."', '--note "from the test"')


def shell(repo, command: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, CI="true", PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    return subprocess.run(command, shell=True, cwd=repo, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)


def status(repo) -> dict:
    return json.loads(cli(repo, "status", "--json").stdout)


ONE = """\
topic: {topic}
mode: {mode}
workers: {{sh: "./work.sh"}}
defaults: {{max_attempts: {attempts}, sandbox: {sandbox}}}
{extra}
nodes:
  - {{id: N1, title: one, depends_on: [], file_surface: [n1.txt], discipline: sh{node_extra}}}
  - {{id: N2, title: two, depends_on: [N1], file_surface: [n2.txt], discipline: sh}}
"""

OK_WORKER = """#!/bin/sh
set -eu
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr N n).txt" && git add -A && git commit -qm "$ORCH_NODE"
"""


def make(tmp_path, worker=OK_WORKER, *, topic="t", mode="interactive", attempts=2, extra="", node_extra="",
         sandbox="auto"):
    return campaign_repo(tmp_path, ONE.format(topic=topic, mode=mode, attempts=attempts, extra=extra,
                                              node_extra=node_extra, sandbox=sandbox), worker)


@pytest.mark.parametrize("stdin_closed", [False, True], ids=["stdin-devnull", "stdin-closed"])
def test_final_acceptance_pauses_and_the_printed_command_completes_it(tmp_path, stdin_closed):
    repo = make(tmp_path)
    run = cli(repo, "run", stdin_closed=stdin_closed)
    assert run.returncode == 75, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    seams = status(repo)["seams"]
    assert seams[0]["seam"] == "final-acceptance" and seams[0]["choices"] == ["accept", "reject"]
    done = shell(repo, printed_decide(run.stdout, "accept"))
    assert done.returncode == 0, done.stdout + done.stderr
    after = status(repo)
    assert after["state"] == "DONE" and after["accepted"]
    entries = [json.loads(x) for x in journal_text(repo, "t").splitlines()]
    decision = next(e for e in entries if e["kind"] == "decision")
    assert decision["source_entity"] == "human:test@example.com" and decision["source_type"] == "human"
    assert decision["context"]["bound_to"] == repo.git("rev-parse", "campaign/t")
    assert decision["context"]["note"] == "from the test"


RESERVED = """#!/bin/sh
set -eu
if [ "$ORCH_NODE" = N1 ] && [ "$ORCH_ATTEMPT" = 1 ]; then
  printf '{"freeze": "reserved-halt", "reason": "the schema change needs the owner"}' > "$ORCH_RETURN"; exit 0
fi
grep -q "go ahead" "$ORCH_BRIEF" || [ "$ORCH_NODE" = N2 ]
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr N n).txt" && git add -A && git commit -qm "$ORCH_NODE"
"""


def test_reserved_halt_pauses_and_rework_with_a_note_continues(tmp_path):
    repo = make(tmp_path, RESERVED)
    run = cli(repo, "run")
    assert run.returncode == 75 and "seam reserved-halt for node N1" in run.stdout
    assert "the schema change needs the owner" in run.stdout and "freeze report" in run.stdout
    done = shell(repo, printed_decide(run.stdout, "rework").replace("from the test", "go ahead"))
    assert done.returncode == 0, done.stderr
    resumed = cli(repo, "resume")
    assert resumed.returncode == 75 and "final-acceptance" in resumed.stdout
    assert {n["id"]: n["status"] for n in status(repo)["nodes"]} == {"N1": "ACCEPTED", "N2": "ACCEPTED"}


FAILS_ONCE_MORE = """#!/bin/sh
set -eu
if [ "$ORCH_NODE" = N1 ] && ! grep -q "try the other way" "$ORCH_BRIEF"; then exit 1; fi
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr N n).txt" && git add -A && git commit -qm "$ORCH_NODE"
"""


def test_realignment_after_attempts_spent_takes_a_human_note_into_the_next_brief(tmp_path):
    repo = make(tmp_path, FAILS_ONCE_MORE, attempts=2)
    run = cli(repo, "run")
    assert run.returncode == 75 and "seam realignment for node N1" in run.stdout
    assert "attempts spent" in run.stdout
    assert shell(repo, printed_decide(run.stdout, "rework").replace("from the test", "try the other way")).returncode == 0
    resumed = cli(repo, "resume")
    assert resumed.returncode == 75, resumed.stdout + resumed.stderr
    brief = (repo / ".scratch/runs/t/N1/brief-3.md").read_text()
    assert "try the other way" in brief


def test_skip_skips_the_node_and_its_dependents(tmp_path):
    repo = make(tmp_path, FAILS_ONCE_MORE, attempts=1)
    run = cli(repo, "run")
    assert shell(repo, printed_decide(run.stdout, "skip")).returncode == 0
    resumed = cli(repo, "resume")
    assert resumed.returncode == 75
    assert {n["id"]: n["status"] for n in status(repo)["nodes"]} == {"N1": "SKIPPED", "N2": "SKIPPED"}


def test_review_divergence_asks_and_accept_merges(tmp_path):
    node_extra = (', evaluators: [{name: strict, run: "false", review: true}, '
                  '{name: lenient, run: "true", review: true}]')
    repo = make(tmp_path, node_extra=node_extra)
    run = cli(repo, "run")
    assert run.returncode == 75 and "seam review-divergence for node N1" in run.stdout
    assert "strict: fail" in run.stdout and "lenient: pass" in run.stdout
    seam = status(repo)["seams"][0]
    assert seam["choices"] == ["accept", "rework", "halt"]
    assert shell(repo, printed_decide(run.stdout, "accept")).returncode == 0
    assert cli(repo, "resume").returncode == 75
    entries = [json.loads(x) for x in journal_text(repo, "t").splitlines()]
    decision = next(e for e in entries if e["kind"] == "decision")
    gate_ids = {e["id"] for e in entries if e["kind"] == "gate" and e["context"]["node"] == "N1"}
    assert seam["id"] in decision["derived_from"] and gate_ids & set(decision["derived_from"])
    # the person's accept is a verdict grounded in the decision; the merge cites it; the lineage holds
    accept = next(e for e in entries if e["kind"] == "verdict" and e["context"]["verdict"] == "accept")
    merge = next(e for e in entries if e["kind"] == "merge" and e["context"]["node"] == "N1")
    assert decision["id"] in accept["derived_from"] and merge["derived_from"] == [accept["id"]]
    assert cli(repo, "why", "N1").returncode == 0 and cli(repo, "doctor").returncode == 0


# N1 fails its first attempt, so the run pauses at realignment; meanwhile a person edits the plan.
FAILS_ONCE = """#!/bin/sh
set -eu
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr N n).txt" && git add -A && git commit -qm "$ORCH_NODE"
"""


def test_dag_amendment_is_shown_before_the_edit_is_used_and_accepting_it_continues(tmp_path):
    repo = make(tmp_path, FAILS_ONCE, attempts=1, sandbox="none",  # its evaluator keeps a mark beside the worktree
                node_extra=', evaluators: [{name: second-time, run: "test -e ../second || { touch ../second; false; }"}]')
    run = cli(repo, "run")
    assert run.returncode == 75 and "seam realignment" in run.stdout, run.stdout + run.stderr
    dag = repo / ".ledger" / "state" / "t" / "dag.yaml"
    dag.write_text(dag.read_text().replace("title: two,", 'title: "two renamed",'))
    assert shell(repo, printed_decide(run.stdout, "rework")).returncode == 0
    amended = cli(repo, "resume")  # the seam comes before anything uses the edit: N1's rework waits too
    assert amended.returncode == 75 and "seam dag-amendment" in amended.stdout, amended.stdout + amended.stderr
    assert 'node N2: title "two" -> "two renamed"' in amended.stdout
    assert "started attempt" not in amended.stdout and "dispatched attempt" not in amended.stdout
    assert shell(repo, printed_decide(amended.stdout, "accept")).returncode == 0
    resumed = cli(repo, "resume")
    assert resumed.returncode == 75 and "final-acceptance" in resumed.stdout, resumed.stdout + resumed.stderr
    assert "merge node N2: two renamed" in repo.git("log", "--format=%s", "campaign/t")


def test_answering_a_seam_that_is_not_open_is_refused_and_writes_nothing(tmp_path):
    repo = make(tmp_path)
    cli(repo, "run")
    before = recorder_subjects(repo)
    wrong = cli(repo, "decide", "realignment", "rework")
    assert wrong.returncode == 2 and "seam realignment is not open" in wrong.stderr
    bad_choice = cli(repo, "decide", "final-acceptance", "maybe")
    assert bad_choice.returncode == 2 and "choose one of: accept, reject" in bad_choice.stderr
    assert recorder_subjects(repo) == before


def test_decide_needs_to_know_who(tmp_path):
    repo = make(tmp_path)
    cli(repo, "run")
    RepoDir(repo).git("config", "user.email", "")
    (tmp_path / "nohome").mkdir()
    anonymous = cli(repo, "decide", "final-acceptance", "accept", env_extra={"HOME": str(tmp_path / "nohome")})
    assert anonymous.returncode == 2 and "set git config user.email (or pass --as NAME) so the decision can be attributed" in anonymous.stderr
    named = cli(repo, "decide", "final-acceptance", "accept", "--as", "lead@example.com",
                env_extra={"HOME": str(tmp_path / "nohome")})
    assert named.returncode == 0 and "by lead@example.com" in named.stdout


def test_answers_file_settles_seams_in_a_scripted_run(tmp_path):
    repo = make(tmp_path, FAILS_ONCE_MORE, attempts=1)
    answers = tmp_path / "answers.yaml"
    answers.write_text("realignment: {choice: rework, note: try the other way}\n")
    run = cli(repo, "run", "--answers", str(answers))
    assert run.returncode == 75 and "final-acceptance" in run.stdout
    entries = [json.loads(x) for x in journal_text(repo, "t").splitlines()]
    assert any(e["kind"] == "decision" and e["source_type"] == "answers" for e in entries)


POLICY = "policy:\n  realignment:\n    attempts-spent: {choice: rework, limit: 1, then: halt}\n"
ALWAYS_FAILS = "#!/bin/sh\nif [ \"$ORCH_NODE\" = N1 ]; then exit 1; fi\n" + OK_WORKER.split("\n", 2)[2]


def test_policy_reworks_up_to_its_limit_then_halts_and_says_so(tmp_path):
    repo = make(tmp_path, ALWAYS_FAILS, mode="autonomous", attempts=1, extra=POLICY)
    run = cli(repo, "run")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "policy chooses rework" in run.stdout and "policy chooses halt" in run.stdout
    entries = [json.loads(x) for x in journal_text(repo, "t").splitlines()]
    decisions = [e for e in entries if e["kind"] == "decision"]
    assert [d["context"]["choice"] for d in decisions] == ["rework", "halt"]
    assert all(d["source_type"] == "policy" and d["source_entity"] == "policy:policy" for d in decisions)


def test_final_acceptance_is_never_decided_by_policy(tmp_path):
    policy = POLICY.replace("attempts-spent", "stale-premise")
    repo = make(tmp_path, mode="autonomous", extra=policy)
    run = cli(repo, "run")
    assert run.returncode == 75 and "final-acceptance" in run.stdout


def test_an_invalid_policy_is_a_validation_error(tmp_path):
    repo = make(tmp_path, extra="policy:\n  realignment:\n    attempts-spnt: {choice: maybe}\n")
    result = cli(repo, "validate")
    assert result.returncode == 1 and "did you mean `attempts-spent`" in result.stdout


pexpect = pytest.importorskip("pexpect")


def _spawn(repo, *args):
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    return pexpect.spawn(sys.executable, ["-m", "orchestrate", *args], cwd=str(repo), env=env,
                         encoding="utf-8", timeout=60)


def test_on_a_terminal_the_prompt_records_the_answer_and_the_campaign_continues(tmp_path):
    repo = make(tmp_path)
    child = _spawn(repo, "run")
    child.expect(r"decide \(accept, reject, pause\) \[pause\]: ")
    child.sendline("accept")
    child.expect("note")
    child.sendline("checked by hand")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    after = status(repo)
    assert after["state"] == "DONE" and after["accepted"]
    entries = [json.loads(x) for x in journal_text(repo, "t").splitlines()]
    decision = next(e for e in entries if e["kind"] == "decision")
    assert decision["context"]["who"] == "test@example.com"
    assert decision["context"]["bound_to"] == repo.git("rev-parse", "campaign/t")


def test_ctrl_d_at_the_prompt_pauses_and_accepts_nothing(tmp_path):
    repo = make(tmp_path)
    child = _spawn(repo, "run")
    child.expect(r"decide \(accept, reject, pause\) \[pause\]: ")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 75
    after = status(repo)
    assert after["state"] == "PAUSE" and not after["accepted"]
    assert not any(json.loads(x)["kind"] == "decision"
                   for x in journal_text(repo, "t").splitlines())


REFUTES = """#!/bin/sh
set -eu
if [ "$ORCH_NODE" = N1 ] && [ "$ORCH_ATTEMPT" = 1 ]; then
  printf '{"freeze": "refuted-premise", "premise": "the API is stable", "evidence": "api.py:12 changed"}' > "$ORCH_RETURN"
  exit 0
fi
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr N n).txt" && git add -A && git commit -qm "$ORCH_NODE"
"""


def test_a_refuted_premise_freeze_opens_a_realignment_seam(tmp_path):
    repo = make(tmp_path, REFUTES)
    run = cli(repo, "run")
    assert run.returncode == 75 and "seam realignment for node N1" in run.stdout
    assert "refuted premise 'the API is stable'" in run.stdout and "api.py:12 changed" in run.stdout
    assert shell(repo, printed_decide(run.stdout, "rework")).returncode == 0
    resumed = cli(repo, "resume")
    assert resumed.returncode == 75 and "final-acceptance" in resumed.stdout
