"""The transition table, as data: (state, outcome) -> next state, with a note for each row.

Handlers return an Outcome and never name their successor; the engine looks the next state up here.
Rows marked "(+)" are transitions DESIGN §5 implies but does not list; `orchestrate table` prints them.
"""
from __future__ import annotations

from typing import NamedTuple

from orchestrate.engine.states import Outcome as O
from orchestrate.engine.states import State as S


class Transition(NamedTuple):
    state: S
    outcome: O
    next: S
    note: str


TRANSITIONS: tuple[Transition, ...] = (
    Transition(S.DERIVE, O.VALID, S.RUN_LAYER, "DAG valid: campaign branch at the baseline, active-dag written, k := 0"),
    Transition(S.DERIVE, O.INVALID, S.HALT, "DAG invalid: problems listed, nothing written"),
    Transition(S.RUN_LAYER, O.READY, S.DISPATCH, "layer k split into its parallel set and serial rest"),
    Transition(S.RUN_LAYER, O.FAILED, S.HALT, "(+) an edge condition cannot be evaluated, a guardrail gate crashed, or no worker matches: halt naming the edge, nothing dispatched"),
    Transition(S.RUN_LAYER, O.NEEDS_HUMAN, S.SEAM, "(+) a `block` guardrail was violated: seam guardrail, nothing dispatched"),
    Transition(S.DISPATCH, O.DISPATCHED, S.AWAIT, "worktrees created, briefs written, workers started"),
    Transition(S.DISPATCH, O.RUNNING, S.AWAIT, "(+) eager: nothing more can start now and workers are running: "
               "wait for the next to return"),
    Transition(S.DISPATCH, O.FAILED, S.HALT, "(+) eager: an edge condition into a node whose inputs settled cannot "
               "be evaluated, a guardrail gate crashed, or no worker matches: halt naming the edge"),
    Transition(S.DISPATCH, O.LAYER_DONE, S.CHECKPOINT, "(+) nothing to start now: landed nodes wait, or the layer is settled"),
    Transition(S.DISPATCH, O.NEEDS_HUMAN, S.SEAM, "(+) a node worked by a person: worktree and brief ready, seam handwork; or a budget is spent: seam budget (the campaign's), seam realignment (a node's), nothing dispatched"),
    Transition(S.DISPATCH, O.REFUTED_PREMISE, S.REALIGN, "(+) a node's tripwire is stale against the tip it would branch from"),
    Transition(S.DISPATCH, O.ABANDONED, S.CHECKPOINT, "(+) a node's attempts spent its `budget:` and it opted into `on_exhausted: continue`: ABANDONED"),
    Transition(S.AWAIT, O.RETURNED, S.RECONCILE, "every worker returned (eager: at least one); their nodes are LANDED"),
    Transition(S.AWAIT, O.NEXT, S.DISPATCH, "(+) the returned nodes wait for a LOOPS_WITH peer that has yet to start, "
               "or (layered) the layer's next worker without the sandbox starts, alone, or (resumed in AWAIT) "
               "nodes that wait for a --jobs slot start"),
    Transition(S.AWAIT, O.SURFACE_EXCEED, S.SURFACE_EXCEED, "a worker froze asking for paths outside its surface"),
    Transition(S.AWAIT, O.REFUTED_PREMISE, S.REALIGN, "a worker froze reporting a refuted premise"),
    Transition(S.AWAIT, O.RESERVED_HALT, S.SEAM, "a worker froze on a reserved halt: seam reserved-halt"),
    Transition(S.SURFACE_EXCEED, O.WIDEN, S.AWAIT, "collision-check 0: surface widened in the DAG, worker resumed"),
    Transition(S.SURFACE_EXCEED, O.SERIALIZE, S.RUN_LAYER, "collision-check 3: node marked serialize, rescheduled"),
    Transition(S.SURFACE_EXCEED, O.REFUSED, S.AWAIT, "(+) the request names only paths the surface covers, or the "
               "node's widenings are spent: not granted, a failed attempt, judged as one"),
    Transition(S.RECONCILE, O.ACCEPT, S.MERGE, "evaluators, surface honesty and coherence all pass"),
    Transition(S.RECONCILE, O.RUNNING, S.AWAIT, "(+) eager: every landed node's evaluators still run ahead (started "
               "as a resume came back here, or again after an amendment): wait for them and for the workers"),
    Transition(S.RECONCILE, O.REWORK, S.DISPATCH, "a gate failed: new attempt from the current tip, failure in the brief"),
    Transition(S.RECONCILE, O.ESCALATE, S.REALIGN, "attempts spent: realign or ask"),
    Transition(S.RECONCILE, O.ABANDONED, S.CHECKPOINT, "(+) attempts spent on an `on_exhausted: continue` node: ABANDONED, the campaign goes on"),
    Transition(S.RECONCILE, O.ADHERENCE_FAILED, S.HALT, "the campaign branch holds a commit that is not a node merge"),
    Transition(S.MERGE, O.MERGED, S.CHECKPOINT, "two-parent --no-ff merge commit of the judged head (merge-tree without campaign checks, else in the integration worktree); ACCEPTED"),
    Transition(S.MERGE, O.REWORK, S.DISPATCH, "conflict or red checks on the merged tree: merge aborted, node reworked"),
    Transition(S.MERGE, O.ESCALATE, S.REALIGN, "(+) merge failed and attempts are spent"),
    Transition(S.MERGE, O.ABANDONED, S.CHECKPOINT, "(+) merge failed, attempts spent, `on_exhausted: continue`: ABANDONED"),
    Transition(S.CHECKPOINT, O.LANDED, S.RECONCILE, "more landed nodes to judge in this layer"),
    Transition(S.CHECKPOINT, O.NEXT, S.DISPATCH, "(+) next in the serial rest, or a rework, to dispatch"),
    Transition(S.CHECKPOINT, O.LAYER_DONE, S.BOUNDARY, "every node of the layer merged"),
    Transition(S.BOUNDARY, O.NEXT_LAYER, S.RUN_LAYER, "coherent: tip := campaign head, k += 1"),
    Transition(S.BOUNDARY, O.LAST_LAYER, S.CLOSE, "coherent and no layer left"),
    Transition(S.BOUNDARY, O.INCOHERENT, S.HALT, "coherence failed over the layer's diff: orphans listed"),
    Transition(S.BOUNDARY, O.AMENDED, S.SEAM, "the DAG was edited since DERIVE: seam dag-amendment"),
    Transition(S.REALIGN, O.REDISPATCH, S.DISPATCH, "premises or surface rewritten; node PENDING again"),
    Transition(S.REALIGN, O.RESCHEDULED, S.RUN_LAYER, "the schedule changed: layers re-derived"),
    Transition(S.REALIGN, O.NEEDS_HUMAN, S.SEAM, "outside policy: seam realignment; or every node that needs one is "
               "asked about already (the environment stopped it while an environment seam was open or its answer "
               "waited): that seam settles it"),
    Transition(S.CHECKPOINT, O.ESCALATE, S.REALIGN, "(+) eager: a node needs realigning and no seam asks about it yet"),
    Transition(S.CHECKPOINT, O.NEEDS_HUMAN, S.SEAM, "(+) eager: an answer to the open seam was left by `decide`, "
               "or nothing else can progress: it is applied, asked, or the run pauses; layered: a seam that "
               "waited behind the one just answered is asked"),
    Transition(S.AWAIT, O.NEEDS_HUMAN, S.SEAM, "(+) eager: an answer to the open seam was left by `decide` "
               "while workers ran"),
    Transition(S.CLOSE, O.CLOSED, S.SEAM, "retrospective recorded, close-check passed: seam final-acceptance"),
    Transition(S.CLOSE, O.FAILED, S.HALT, "(+) adherence or close-check failed"),
    Transition(S.RECONCILE, O.NEEDS_HUMAN, S.SEAM, "(+) reviewer evaluators disagree: seam review-divergence"),
    Transition(S.SEAM, O.PAUSED, S.PAUSE, "(+) nobody can answer now: seam recorded, decide commands printed, exit 75"),
    Transition(S.SEAM, O.DEFERRED, S.CHECKPOINT, "(+) eager: a seam about one node, and other nodes can progress: "
               "the person is told now, the run goes on, the answer is applied when `decide` leaves it"),
    Transition(S.SEAM, O.REWORK, S.DISPATCH, "(+) answer rework: a new attempt with the answer's note in its brief; or budget raise: dispatching resumes under the new limit"),
    Transition(S.SEAM, O.SKIP, S.CHECKPOINT, "(+) answer skip: the node and its dependents are SKIPPED"),
    Transition(S.SEAM, O.AMENDED, S.BOUNDARY, "(+) amended DAG accepted: re-validated, layers re-derived"),
    Transition(S.SEAM, O.REVIEWED, S.MERGE, "(+) review divergence settled as accept: the node merges"),
    Transition(S.SEAM, O.ACCEPTED, S.DONE, "(+) final acceptance recorded, bound to the campaign tip"),
    Transition(S.SEAM, O.REJECTED, S.HALT, "(+) final acceptance refused"),
    Transition(S.SEAM, O.HALTED, S.HALT, "(+) answer halt"),
    Transition(S.SEAM, O.RETURNED, S.AWAIT, "(+) handwork done: what the person committed is the attempt's result"),
    *(Transition(state, O.AMENDED, S.SEAM, "(+) a person edited the DAG since it was approved: seam dag-amendment "
                 "before the state runs (engine.amend.edited)")
      for state in (S.RUN_LAYER, S.DISPATCH, S.RECONCILE, S.MERGE, S.CHECKPOINT, S.CLOSE)),
    Transition(S.SEAM, O.CROSSING, S.RUN_LAYER, "(+) guardrail approved (the edge is crossed) or skipped (not taken): the layer is decided again"),
)


def next_state(state: S, outcome: O) -> S:
    for row in TRANSITIONS:
        if row.state is state and row.outcome is outcome:
            return row.next
    raise KeyError(f"no transition from {state.value} on {outcome.value}")


def render() -> str:
    """The table as Markdown, one row per state like DESIGN §5."""
    lines = ["| state | outcome | next | note |", "|---|---|---|---|"]
    for row in TRANSITIONS:
        lines.append(f"| {row.state.value} | {row.outcome.value} | {row.next.value} | {row.note} |")
    lines.append(f"| {S.PAUSE.value} | (end) | | paused at a seam: exit 75; `orchestrate decide` answers it |")
    lines.append(f"| {S.HALT.value} | (end) | | stop with the state recorded; the message says what to fix |")
    lines.append(f"| {S.DONE.value} | (end) | | the campaign is accepted |")
    return "\n".join(lines)
