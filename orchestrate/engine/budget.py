"""Budgets (DESIGN §14.6): what a node's attempts, and the whole campaign's, may spend.

Spend is what attempts reported to `$ORCH_USAGE`, as journalled with each attempt's result
(`provenance.usage_rows`); tokens count input plus output. A worker learns what it may still spend from
ORCH_BUDGET_* when it starts; what it spent is known when it returns:

- an attempt that brings its node's spend to the node's `budget:` ends there: RECONCILE fails it without
  running its gates (nothing of it is merged) and the node gets no further attempt: the realignment seam
  opens (case attempts-spent, so `policy:` applies), or, with `on_exhausted: continue`, it is ABANDONED;
  before dispatch, a node already over its budget (a person answered rework) is not started either;
- a campaign whose attempts reached the DAG's top-level `budget:` dispatches nothing new and opens the
  `budget` seam: `raise` with a new limit (recorded in the decision, honoured from then on) or `halt`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gates.shared.verdict import Verdict
from orchestrate.engine import judge
from orchestrate.engine.states import Outcome
from orchestrate.recorder.provenance import usage_rows, usage_total
from orchestrate.seams.choices import CHOICES, LIMIT_KEYS

RAISE = "orchestrate decide budget raise --limit-usd X [--limit-tokens N]"


def spent(rows: list[dict]) -> dict:
    total = usage_total(rows)
    return {"cost_usd": total["cost_usd"], "tokens": total["input_tokens"] + total["output_tokens"]}


def reached(limit: dict, spend: dict) -> list[str]:
    """The keys of `limit` that `spend` has reached."""
    return [k for k in LIMIT_KEYS if k in limit and spend[k] >= limit[k]]


def text(amounts: dict, keys=LIMIT_KEYS) -> str:
    said = {"cost_usd": lambda v: f"${v:.4f}", "tokens": lambda v: f"{v} tokens"}
    return " and ".join(said[k](amounts[k]) for k in keys if k in amounts)


@dataclass
class Spending:
    """The journal's usage rows and budget raises, each entry folded once: a campaign with a budget reads
    what it spent at every dispatch, and the journal grows with every node."""
    recorder: object  # the Recorder whose entries these are
    folded: int = 0  # how many of its written entries are folded in
    rows: list = field(default_factory=list)
    raises: list = field(default_factory=list)  # the `limit` of each recorded `budget raise`, in order


def _known(ctx) -> tuple[list[dict], list[dict]]:
    """(usage rows, budget raises) of the journal as the engine knows it: what is written, and what this state
    holds until its commit."""
    if ctx.spending is None or ctx.spending.recorder is not ctx.recorder:
        ctx.spending = Spending(ctx.recorder)
    state, written = ctx.spending, ctx.recorder.written()
    new = written[state.folded:]
    state.rows += usage_rows(new)
    state.raises += _raises(new)
    state.folded = len(written)
    held = list(ctx.recorder.held)
    return state.rows + usage_rows(held), state.raises + _raises(held)


def _raises(entries: list[dict]) -> list[dict]:
    return [e["context"].get("limit") or {} for e in entries if e["kind"] == "decision"
            and e["context"].get("seam") == "budget" and e["context"].get("choice") == "raise"]


def _of(rows: list[dict], node_id: str) -> list[dict]:
    return [r for r in rows if r["node"] == node_id]


def campaign_limit(dag, raises: list[dict]) -> dict:
    """The DAG's campaign budget, as every recorded `budget raise` since changed it (the latest wins, per key)."""
    limit = dict(dag.budget)
    for raised_to in raises:
        limit.update(raised_to)
    return limit


def before_dispatch(ctx, nodes: list[str]) -> Outcome | None:
    """None when `nodes` may start; otherwise the outcome of the budget that stops them (the seam is open)."""
    budgeted = [n for n in nodes if ctx.dag.by_id[n].budget and ctx.campaign.nodes[n].attempt]
    if not ctx.dag.budget and not budgeted:
        return None  # no budget anywhere: the journal is not read
    rows, raises = _known(ctx)
    limit = campaign_limit(ctx.dag, raises)
    if limit:
        spend = spent(rows)
        if over := reached(limit, spend):
            _open_campaign_seam(ctx, limit, spend, over, rows)
            return Outcome.NEEDS_HUMAN
    for node_id in budgeted:
        node = ctx.dag.by_id[node_id]
        spend = spent(_of(rows, node_id))
        if over := reached(node.budget, spend):
            return _node_spent(ctx, node, spend, over)
    return None


def crossed(ctx, node_id: str):
    """A failing verdict when the node's attempts, this one included, reached its budget; else None. The
    attempt that crosses the budget ends there: it is not merged, whatever its gates would say."""
    node = ctx.dag.by_id[node_id]
    if not node.budget:
        return None
    spend = spent(_of(_known(ctx)[0], node_id))
    over = reached(node.budget, spend)
    if not over:
        return None
    ns = ctx.campaign.nodes[node_id]
    return Verdict("budget", 1, f"FAIL: node {node_id} spent {text(spend, over)} over {ns.attempt} attempt(s), "
                                f"reaching its budget of {text(node.budget, over)} (nodes.{node_id}.budget); "
                                "this attempt is not merged and no further attempt is started")


def _node_spent(ctx, node, spend: dict, over: list[str]) -> Outcome:
    ns = ctx.campaign.nodes[node.id]
    why = (f"node {node.id} spent {text(spend, over)} over {ns.attempt} attempt(s), reaching its budget of "
           f"{text(node.budget, over)} (nodes.{node.id}.budget); no further attempt is started")
    verdict = "abandon" if node.on_exhausted == "continue" else "escalate"
    entry = ctx.emit("verdict", {"node": node.id, "verdict": verdict, "at": ns.head, "reasons": why,
                                 "budget": node.budget, "spent": spend})
    ctx.out.line(why)
    ctx.subject = node.id
    if verdict == "abandon":
        judge.abandon(ctx, node.id, ns.failures, why, derived_from=[entry["id"]])
        return Outcome.ABANDONED
    ctx.emit("node", {"node": node.id, "verdict": verdict, "feedback": why}, derived_from=[entry["id"]])
    ctx.emit("seam", {"seam": "realignment", "case": "attempts-spent", "node": node.id, "reason": why,
                      "show": ([f"last failure: {ns.feedback}"] if ns.feedback else [])
                      + ["rework starts one more attempt only once the budget in the DAG is raised "
                         "(an amendment); skip or halt otherwise"],
                      "choices": list(CHOICES["realignment"]), "bound_to": ns.head or ctx.campaign.tip},
             derived_from=[entry["id"]])
    return Outcome.NEEDS_HUMAN


def _open_campaign_seam(ctx, limit: dict, spend: dict, over: list[str], rows: list[dict]) -> None:
    per_node: dict[str, list[dict]] = {}
    for row in rows:
        per_node.setdefault(row["node"], []).append(row)
    reason = (f"the campaign spent {text(spend, over)}, reaching its budget of {text(limit, over)}; "
              "nothing new is dispatched")
    ctx.out.line(reason)
    ctx.emit("seam", {"seam": "budget", "node": None, "reason": reason, "limit": limit, "spent": spend,
                      "show": [f"{n}: {text(spent(r))}" for n, r in sorted(per_node.items())]
                      + [f"raise: `{RAISE}`; halt: `orchestrate decide budget halt`"],
                      "choices": list(CHOICES["budget"]), "bound_to": ctx.campaign.tip})
    ctx.subject = "budget"


def raised(ctx, d: dict) -> Outcome:
    """Apply a recorded `budget raise`: dispatching resumes under the new limit, or the seam opens again
    (paused) when the answer named no limit above what was spent."""
    rows, raises = _known(ctx)
    limit = campaign_limit(ctx.dag, raises)
    spend = spent(rows)
    if d.get("limit") and not reached(limit, spend):
        ctx.out.line(f"campaign budget raised to {text(limit)} by {d['who']}; dispatching resumes")
        return Outcome.REWORK
    reason = (f"the raise by {d['who']} named no limit above what was spent "
              f"({text(spend, [k for k in LIMIT_KEYS if k in limit])}); "
              f"answer with `{RAISE}`")
    ctx.emit("seam", {"seam": "budget", "node": None, "reason": reason, "limit": limit, "spent": spend,
                      "show": [], "choices": list(CHOICES["budget"]), "bound_to": ctx.campaign.tip},
             derived_from=[d["id"]])
    return Outcome.PAUSED


def worker_env(ctx, node_id: str) -> dict[str, str]:
    """ORCH_BUDGET_COST_USD / ORCH_BUDGET_TOKENS: what the node may still spend (the smaller of what its own
    budget and the campaign's leave); nothing when neither is set. For a worker that can stop its agent early."""
    node = ctx.dag.by_id[node_id]
    if not node.budget and not ctx.dag.budget:
        return {}
    rows, raises = _known(ctx)
    left: dict = {}
    for limit, theirs in ((node.budget or {}, _of(rows, node_id)), (campaign_limit(ctx.dag, raises), rows)):
        spend = spent(theirs)
        for k in LIMIT_KEYS:
            if k in limit:
                left[k] = min(left.get(k, limit[k]), max(limit[k] - spend[k], 0))
    names = {"cost_usd": "ORCH_BUDGET_COST_USD", "tokens": "ORCH_BUDGET_TOKENS"}
    return {names[k]: (f"{v:.6f}" if k == "cost_usd" else str(int(v))) for k, v in left.items()}
