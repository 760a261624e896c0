"""Budgets (DESIGN §14.6): a node's `budget:` stops its further attempts once they spent it; the campaign's
stops new dispatches and opens the `budget` seam (raise with a new limit, or halt). Spend is what real
shell-script workers report to $ORCH_USAGE."""
from __future__ import annotations

from orchestrate.dag.load import load_dag
from tests.engine_helpers import campaign_repo, cli, journal, statuses

# every attempt reports 500 in / 100 out tokens and 4 cents; N1 fails until `pass` exists in the worktree
WORKER = r"""#!/bin/sh
printf '{"usage": {"input_tokens": 500, "output_tokens": 100, "cost_usd": 0.04, "model": "m"}}' > "$ORCH_USAGE"
echo "$ORCH_NODE $ORCH_ATTEMPT ${ORCH_BUDGET_TOKENS:-no-limit}" > "$ORCH_NODE.txt"
[ "$ORCH_NODE" != N1 ] || [ -n "${N1_PASSES:-}" ] || exit 1
"""

NODE_DAG = """\
topic: nodebud
workers: {sh: "./work.sh"}
nodes:
  - {id: N1, file_surface: [N1.txt], discipline: sh, max_attempts: 5, budget: {cost_usd: 0.05}}
"""

CAMPAIGN_DAG = """\
topic: {topic}
budget: {{tokens: 500}}
workers: {{sh: "./work.sh"}}
nodes:
  - {{id: N1, file_surface: [N1.txt], discipline: sh}}
  - {{id: N2, depends_on: [N1], file_surface: [N2.txt], discipline: sh}}
"""


def _attempts(repo, topic: str, node: str) -> int:
    return sum(1 for e in journal(repo, topic) if e["kind"] == "result"
               and e["context"].get("effect") == "worker-start" and e["context"]["node"] == node)


def test_a_node_that_spent_its_budget_gets_no_further_attempt_and_says_why(tmp_path, orch):
    repo = campaign_repo(tmp_path, NODE_DAG, WORKER)
    result = orch("run", cwd=repo)
    assert result.rc == 75, result.out + result.err
    said = ("node N1 spent $0.0800 over 2 attempt(s), reaching its budget of $0.0500 (nodes.N1.budget); "
            "this attempt is not merged and no further attempt is started")
    assert said in result.out, result.out
    assert _attempts(repo, "nodebud", "N1") == 2  # max_attempts 5 would have allowed three more
    seam = [e["context"] for e in journal(repo, "nodebud") if e["kind"] == "seam"][-1]
    assert (seam["seam"], seam["case"], seam["node"]) == ("realignment", "attempts-spent", "N1")
    assert orch("resume", "--topic", "nodebud", cwd=repo).rc == 75  # unanswered: still paused, nothing started
    assert _attempts(repo, "nodebud", "N1") == 2
    assert orch("decide", "realignment", "skip", "--topic", "nodebud", "--as", "t@x", cwd=repo).rc == 0
    done = orch("resume", "--topic", "nodebud", cwd=repo)
    assert done.rc == 75 and "final-acceptance" in done.out, done.out + done.err
    assert statuses(repo, orch, "nodebud")["N1"] == "SKIPPED"


def test_the_attempt_that_crosses_the_budget_is_not_merged_even_when_its_gates_would_pass(tmp_path, orch,
                                                                                         monkeypatch):
    monkeypatch.setenv("N1_PASSES", "1")
    repo = campaign_repo(tmp_path, NODE_DAG.replace("cost_usd: 0.05", "cost_usd: 0.03"), WORKER)
    result = orch("run", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert "N1: ESCALATE" in result.out and "reaching its budget of $0.0300" in result.out
    assert _attempts(repo, "nodebud", "N1") == 1
    assert "N1.txt" not in repo.git("ls-tree", "--name-only", "campaign/nodebud")  # nothing of it merged
    gates = [e["context"] for e in journal(repo, "nodebud") if e["kind"] == "gate"]
    assert [g["gate"] for g in gates] == ["budget"]  # its evaluators and checks were not even run


def test_on_exhausted_continue_abandons_a_node_over_budget(tmp_path, orch):
    dag = NODE_DAG.replace("max_attempts: 5,", "max_rework: 4, on_exhausted: continue,")
    repo = campaign_repo(tmp_path, dag, WORKER)
    result = orch("run", cwd=repo)
    assert "reaching its budget of $0.0500" in result.out, result.out + result.err
    assert statuses(repo, orch, "nodebud")["N1"] == "ABANDONED"
    assert _attempts(repo, "nodebud", "N1") == 2


def test_a_campaign_budget_opens_the_budget_seam_and_a_raise_lets_it_continue(tmp_path, orch, monkeypatch):
    monkeypatch.setenv("N1_PASSES", "1")
    repo = campaign_repo(tmp_path, CAMPAIGN_DAG.format(topic="campbud"), WORKER)
    result = orch("run", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert "the campaign spent 600 tokens, reaching its budget of 500 tokens; nothing new is dispatched" in result.out
    assert "orchestrate decide budget raise --limit-usd X" in result.out
    assert statuses(repo, orch, "campbud") == {"N1": "ACCEPTED", "N2": "PENDING"}
    assert repo.git("show", "campaign/campbud:N1.txt") == "N1 1 500"  # the worker was told what it may spend

    from types import SimpleNamespace

    from orchestrate.engine import budget
    from orchestrate.recorder.journal import Recorder
    ctx = SimpleNamespace(dag=load_dag(repo / ".ledger" / "state" / "dag.yaml"),
                          recorder=Recorder(repo / ".ledger", "campbud"), spending=None)
    assert budget.worker_env(ctx, "N2") == {"ORCH_BUDGET_TOKENS": "0"}  # nothing left to spend

    refused = orch("decide", "budget", "raise", "--topic", "campbud", "--as", "t@x", cwd=repo)
    assert refused.rc == 2 and "budget raise needs the new limit" in refused.err
    assert orch("resume", "--topic", "campbud", cwd=repo).rc == 75  # unanswered: still paused
    # a limit the spend already reached does not lift the seam: it opens again, saying why
    assert orch("decide", "budget", "raise", "--limit-tokens", "600", "--topic", "campbud", "--as", "t@x",
                cwd=repo).rc == 0
    again = orch("resume", "--topic", "campbud", cwd=repo)
    assert again.rc == 75 and "named no limit above what was spent (600 tokens" in again.out, again.out
    assert orch("decide", "budget", "raise", "--limit-tokens", "5000", "--note", "worth it", "--topic", "campbud",
                "--as", "t@x", cwd=repo).rc == 0
    decision = [e["context"] for e in journal(repo, "campbud") if e["kind"] == "decision"][-1]
    assert (decision["choice"], decision["limit"], decision["note"]) == ("raise", {"tokens": 5000},
                                                                         "tokens=5000 worth it")
    done = orch("resume", "--topic", "campbud", cwd=repo)
    assert done.rc == 75 and "final-acceptance" in done.out, done.out + done.err
    assert "campaign budget raised to 5000 tokens by t@x" in done.out
    assert statuses(repo, orch, "campbud") == {"N1": "ACCEPTED", "N2": "ACCEPTED"}


def test_a_campaign_budget_halt_halts_with_nothing_new_dispatched(tmp_path, orch, monkeypatch):
    monkeypatch.setenv("N1_PASSES", "1")
    repo = campaign_repo(tmp_path, CAMPAIGN_DAG.format(topic="haltbud"), WORKER)
    assert orch("run", cwd=repo).rc == 75
    assert orch("decide", "budget", "halt", "--limit-usd", "3", "--topic", "haltbud", "--as", "t@x",
                cwd=repo).rc == 2  # a limit belongs to a raise only
    assert orch("decide", "budget", "halt", "--topic", "haltbud", "--as", "t@x", cwd=repo).rc == 0
    halted = orch("resume", "--topic", "haltbud", cwd=repo)
    assert halted.rc == 1 and "t@x chose to halt at seam budget" in halted.out + halted.err
    assert statuses(repo, orch, "haltbud")["N2"] == "PENDING"
    assert _attempts(repo, "haltbud", "N2") == 0


def test_budgets_are_validated_with_their_line_and_a_did_you_mean(tmp_path, orch):
    dag = tmp_path / "dag.yaml"
    dag.write_text("""\
topic: v
budget: {cost_usd: 0, tokns: 5}
nodes:
  - {id: A, file_surface: [a.txt], worker: ./w.sh, budget: {tokens: -3}}
  - {id: B, file_surface: [b.txt], worker: ./w.sh, budget: {}}
  - {id: C, file_surface: [c.txt], worker: ./w.sh, budget: 5}
  - {id: D, file_surface: [d.txt], worker: ./w.sh, budget: {cost_usd: 1.5, tokens: 2000}}
""")
    result = orch("validate", "--dag", dag, cwd=tmp_path)
    assert result.rc == 1
    text = result.out + result.err
    assert "dag.yaml:2: budget.cost_usd: must be a number above 0, got 0" in text
    assert "dag.yaml:2: budget.tokns: unknown key `tokns` (did you mean `tokens`?)" in text
    assert "dag.yaml:4: nodes.A.budget.tokens: must be a positive number" in text
    assert "dag.yaml:5: nodes.B.budget: give `cost_usd`, `tokens` or both" in text
    assert "dag.yaml:6: nodes.C.budget: expected {cost_usd: X, tokens: N}, got a number" in text
    assert "nodes.D" not in text
    ok = tmp_path / "ok.yaml"
    ok.write_text("topic: v\nbudget: {cost_usd: 2}\nnodes:\n"
                  "  - {id: D, file_surface: [d.txt], worker: ./w.sh, budget: {cost_usd: 1.5, tokens: 2000}}\n")
    loaded = load_dag(ok)
    assert loaded.budget == {"cost_usd": 2} and loaded.by_id["D"].budget == {"cost_usd": 1.5, "tokens": 2000}



def test_an_answers_file_raises_the_campaign_budget_with_the_limit_in_its_note(tmp_path, orch, monkeypatch):
    monkeypatch.setenv("N1_PASSES", "1")
    repo = campaign_repo(tmp_path, CAMPAIGN_DAG.format(topic="ansbud"), WORKER)
    answers = tmp_path / "answers.yaml"
    answers.write_text('budget: {choice: raise, note: "tokens=5000 cost_usd=1.5 for the tests"}\n')
    result = orch("run", "--answers", answers, cwd=repo)
    assert result.rc == 75 and "final-acceptance" in result.out, result.out + result.err
    assert "campaign budget raised to $1.5000 and 5000 tokens" in result.out
    decision = next(e["context"] for e in journal(repo, "ansbud") if e["kind"] == "decision")
    assert decision["limit"] == {"tokens": 5000, "cost_usd": 1.5}


def test_spend_is_folded_once_per_entry_as_the_journal_grows(tmp_path):
    """The engine works out the spend at every dispatch from the entries new since the last time (engine/
    budget.py's Spending): each reported usage counts once, held entries count until written and then once,
    and a raise recorded later changes the limit."""
    from types import SimpleNamespace

    from orchestrate.engine import budget
    from orchestrate.recorder.journal import Recorder
    repo = campaign_repo(tmp_path, CAMPAIGN_DAG.format(topic="fold"), WORKER)
    rec = Recorder(repo / ".ledger", "fold").pin()
    ctx = SimpleNamespace(dag=load_dag(repo / ".ledger" / "state" / "dag.yaml"), recorder=rec, spending=None)

    def used(node: str, tokens: int, hold: bool = False) -> None:
        rec.event("result", {"effect": "worker-start", "node": node, "attempt": 1,
                             "usage": {"input_tokens": tokens, "output_tokens": 0, "cost_usd": 0.0}}, hold=hold)
    used("N1", 100)
    assert budget.worker_env(ctx, "N2") == {"ORCH_BUDGET_TOKENS": "400"}
    used("N1", 50, hold=True)
    assert budget.worker_env(ctx, "N2") == {"ORCH_BUDGET_TOKENS": "350"}  # held: counted, not kept
    assert budget.worker_env(ctx, "N2") == {"ORCH_BUDGET_TOKENS": "350"}
    rec.flush()
    used("N2", 25)
    assert budget.worker_env(ctx, "N2") == {"ORCH_BUDGET_TOKENS": "325"}
    rec.event("decision", {"seam": "budget", "choice": "raise", "limit": {"tokens": 1000}})
    assert budget.worker_env(ctx, "N2") == {"ORCH_BUDGET_TOKENS": "825"}
    fresh = SimpleNamespace(dag=ctx.dag, recorder=Recorder(repo / ".ledger", "fold"), spending=None)
    assert budget.worker_env(fresh, "N2") == {"ORCH_BUDGET_TOKENS": "825"}  # as read back from the file


def test_a_worker_is_told_the_smaller_of_what_its_node_and_the_campaign_leave_in_dollars_and_tokens(tmp_path):
    from types import SimpleNamespace

    from orchestrate.engine import budget
    from orchestrate.recorder.journal import Recorder
    dag = CAMPAIGN_DAG.format(topic="both").replace("budget: {tokens: 500}", "budget: {tokens: 500, cost_usd: 2.0}")
    dag = dag.replace("  - {id: N2, depends_on: [N1], file_surface: [N2.txt], discipline: sh}",
                      "  - {id: N2, depends_on: [N1], file_surface: [N2.txt], discipline: sh, budget: {cost_usd: 0.5}}")
    repo = campaign_repo(tmp_path, dag, WORKER)
    rec = Recorder(repo / ".ledger", "both").pin()
    ctx = SimpleNamespace(dag=load_dag(repo / ".ledger" / "state" / "dag.yaml"), recorder=rec, spending=None)
    rec.event("result", {"effect": "worker-start", "node": "N1", "attempt": 1,
                         "usage": {"input_tokens": 100, "output_tokens": 0, "cost_usd": 1.8}})
    # the campaign leaves $0.20 and 400 tokens; N2's own budget leaves $0.50: the smaller of each is given
    assert budget.worker_env(ctx, "N2") == {"ORCH_BUDGET_COST_USD": "0.200000", "ORCH_BUDGET_TOKENS": "400"}
    rec.event("result", {"effect": "worker-start", "node": "N2", "attempt": 1,
                         "usage": {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.1}})
    assert budget.worker_env(ctx, "N2")["ORCH_BUDGET_COST_USD"] == "0.100000"  # both budgets spent $0.10 more


def test_decide_budget_raise_takes_a_dollar_limit_from_the_command_line(tmp_path, orch):
    dag = CAMPAIGN_DAG.format(topic="usd").replace("budget: {tokens: 500}", "budget: {cost_usd: 0.01}")
    worker = ('#!/bin/sh\necho "$ORCH_NODE" > "$ORCH_NODE.txt"\n'
              'printf \'{"usage": {"input_tokens": 1, "output_tokens": 1, "cost_usd": 0.02}}\' > "$ORCH_USAGE"\n')
    repo = campaign_repo(tmp_path, dag, worker)
    first = orch("run", "--no-interactive", cwd=repo)
    assert first.rc == 75 and "budget" in first.out, first.out + first.err
    # a decision recorded with no limit would only reopen the seam on resume; each is refused in one line
    # (rv69: -1 and 0 got click's usage block)
    for no_limit in ("nan", "inf", "-1", "0"):
        refused = cli(repo, "decide", "budget", "raise", "--limit-usd", no_limit, "--topic", "usd", "--as", "t@x")
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert refused.stderr.strip().splitlines() == [f"orchestrate: error: --limit-usd must be a finite number "
                                                       f"above 0, got {no_limit} (give the new limit in US dollars, "
                                                       "as in --limit-usd 5)"], refused.stderr
    assert not [e for e in journal(repo, "usd") if e["kind"] == "decision"]
    raised = orch("decide", "budget", "raise", "--limit-usd", "1", "--topic", "usd", "--as", "t@x", cwd=repo)
    assert raised.rc == 0, raised.out + raised.err
    done = orch("resume", "--no-interactive", cwd=repo)
    assert done.rc == 75 and "final-acceptance" in done.out, done.out + done.err
    decision = next(e["context"] for e in journal(repo, "usd") if e["kind"] == "decision" and e["context"]["seam"] == "budget")
    assert decision["limit"] == {"cost_usd": 1.0}
