"""A campaign's state, rebuilt by folding journal events: the engine and resume share `apply`.

Every change of state is an event; the engine records it and applies it through the same function,
so what resume reconstructs is exactly what the engine had.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PENDING, DISPATCHED, LANDED, ACCEPTED, REWORK, INVALIDATED, SKIPPED, ABANDONED = (
    "PENDING", "DISPATCHED", "LANDED", "ACCEPTED", "REWORK", "INVALIDATED", "SKIPPED", "ABANDONED")


@dataclass
class NodeState:
    id: str
    status: str = PENDING
    attempt: int = 0  # dispatches so far (names the branch and the log)
    failures: int = 0  # failed attempts; at max_attempts the node escalates
    branch: str = ""
    worktree: str = ""
    base: str = ""
    head: str = ""
    merge: str = ""
    freeze: dict | None = None
    feedback: str = ""  # why the last attempt failed, for the next brief
    verdict: str = ""
    seconds: float = 0.0
    rc: int | None = None  # the worker's exit code for its last attempt (124: timed out)
    log: str = ""
    widened: list[str] = field(default_factory=list)
    widens: int = 0  # surface-exceed requests granted (engine/handlers/surface_exceed.py bounds them)
    outputs: dict = field(default_factory=dict)  # what the accepted attempt reported (outputs-present)
    gate_rcs: dict = field(default_factory=dict)  # gate name -> exit code of its latest run
    accept_entry: str = ""  # the accept verdict its merge cites
    accepted_at: str = ""  # the head that verdict judged: MERGE merges only a head the gates accepted
    settled_entry: str = ""  # the entry that made it ACCEPTED or ABANDONED, which edge decisions cite
    objects: str = ""  # a sandboxed attempt's private object store (empty: not sandboxed)
    spawned: int = 0  # the attempt whose process last started; below `attempt`, that attempt is only queued
    judging: int = 0  # the attempt whose evaluators last started ahead of its judging (status says so)
    prior: dict = field(default_factory=dict)  # the node as it was before this attempt, to go back to if it never ran
    env_error: str = ""  # why the environment stopped its last attempt (not counted as one); a person decides


@dataclass
class Campaign:
    topic: str = ""
    dag_path: str = ""
    brief_dir: str = ""
    dag_hash: str = ""
    mode: str = "interactive"
    jobs: int | None = None  # the run's --jobs, when given: `resume` keeps it unless it is given one
    baseline: str = ""
    branch: str = ""
    layers: list[list[str]] = field(default_factory=list)
    k: int = 0
    tip: str = ""
    layer_base: str = ""
    state: str = "DERIVE"
    nodes: dict[str, NodeState] = field(default_factory=dict)
    serial: list[str] = field(default_factory=list)  # nodes rescheduled into the serial rest
    merged: list[str] = field(default_factory=list)
    seam: dict | None = None  # the open seam, with the id of the entry that opened it
    # seams opened while another was open (the eager schedule goes on past a node's seam): each is asked
    # once those before it are answered; a seam that stops the whole run goes first
    queued: list[dict] = field(default_factory=list)
    decision: dict | None = None  # an answer recorded but not yet applied
    policy_log: list[str] = field(default_factory=list)  # nodes realigned by policy, once per decision
    # why the campaign rests in HALT; only while it does (`apply` clears it on the next transition out): the
    # journal keeps every halt, and status and the report show this one as what a person must fix now
    halt: str = ""
    closed: bool = False
    accepted_by: dict | None = None
    abandoned: dict | None = None  # {who, note, at}: a person ended the campaign (`orchestrate abandon`)
    round: int = 0
    edges: dict = field(default_factory=dict)  # edge id -> its recorded decision (never re-evaluated)
    guardrails: dict = field(default_factory=dict)  # edge id -> its guardrails' recorded result (and answer)
    flags: list = field(default_factory=list)  # warnings from `warn` guardrails, for status and the close report
    enabled: dict = field(default_factory=dict)  # on-demand node -> why a reroute or a fallback enabled it
    workers: dict = field(default_factory=dict)  # node -> the worker plugin discovery assigned it
    schedule: str = "layered"  # eager | layered, fixed when the campaign opens (journals before it: layered)
    probed: str = ""  # the campaign head the latest conflict probe ran against (engine/probes.py)
    # node -> its latest probe {head, onto, clean, conflicts, merged, entry}, kept while the judged head
    # it probed is in play: dropped when the node is dispatched again, merged, skipped or abandoned
    probes: dict = field(default_factory=dict)

    def node(self, node_id: str) -> NodeState:
        if node_id not in self.nodes:
            self.nodes[node_id] = NodeState(node_id)
        return self.nodes[node_id]

    def layer(self) -> list[str]:
        return self.layers[self.k] if self.k < len(self.layers) else []

    def window(self) -> list[str]:
        """The nodes the engine may be working on: layer k, or under the eager schedule every layer from k
        on (a node starts when its own inputs merged, whatever the rest of its layer does)."""
        if self.schedule != "eager":
            return self.layer()
        return [n for layer in self.layers[self.k:] for n in layer]

    def with_status(self, *statuses: str, layer_only: bool = True) -> list[str]:
        pool = self.window() if layer_only else list(self.nodes)
        return [n for n in pool if self.nodes[n].status in statuses]

    @property
    def conflicts(self) -> dict[str, dict]:
        """The pending conflicts: node -> the probe that found its judged head conflicting."""
        return {n: p for n, p in self.probes.items() if not p["clean"]}

    def to_dict(self) -> dict[str, Any]:
        """The state as plain data, to be written out at once (a checkpoint): it shares the campaign's own
        lists and dicts. (`dataclasses.asdict` copied them all: 1,150 calls a node at 256 nodes, the largest
        cost of a 256-node campaign that grew with its size.)"""
        data = dict(vars(self))
        data["nodes"] = {node_id: dict(vars(ns)) for node_id, ns in self.nodes.items()}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Campaign":
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        c = cls(**fields)
        if c.state != "HALT":  # a checkpoint written before `apply` cleared a repaired halt still carries it
            c.halt = ""
        c.nodes = {k: NodeState(**v) for k, v in data.get("nodes", {}).items()}
        return c


def apply(c: Campaign, event: dict[str, Any]) -> None:
    """Fold one journal event into the campaign state (pure bookkeeping, no effects)."""
    kind = event["kind"]
    ctx = event.get("context", {})
    if kind == "open":
        for key in ("topic", "dag_path", "brief_dir", "dag_hash", "mode", "baseline", "branch", "layers", "tip"):
            setattr(c, key, ctx[key])
        c.layer_base = ctx["tip"]
        c.schedule = ctx.get("schedule", "layered")
        # only a --jobs the person gave: one the machine chose (its CPUs) is chosen anew where it resumes (rv80)
        given = ctx.get("jobs_given", True) and type(ctx.get("jobs")) is int and ctx["jobs"] > 0
        c.jobs = ctx["jobs"] if given else None
        for layer in ctx["layers"]:
            for n in layer:
                c.node(n)
    elif kind == "transition":
        c.state = ctx["to"]
        if c.state != "HALT":
            # a halt is recorded just before its transition into HALT; a later transition anywhere else is a
            # resume that ran the halted state again after a fix (or an answer): the halt is history then
            c.halt = ""
    elif kind == "node":
        ns = c.node(ctx["node"])
        for key, value in ctx.items():
            if key != "node":
                setattr(ns, key, value)
        if ctx.get("status") == ABANDONED:
            ns.settled_entry = event["id"]
        if ctx.get("status") in (DISPATCHED, SKIPPED, ABANDONED):  # the probed head is out of play
            c.probes.pop(ctx["node"], None)
        if ctx.get("status") in (ACCEPTED, SKIPPED, ABANDONED):  # a seam about a settled node asks nothing
            _settle_seams(c, ctx["node"])
    elif kind == "layer":
        c.k, c.tip, c.layer_base = ctx["k"], ctx["tip"], ctx["tip"]
    elif kind == "tip":
        c.tip = ctx["tip"]
    elif kind == "schedule":
        c.layers = ctx["layers"]
        c.serial = ctx.get("serial", c.serial)
        c.dag_hash = ctx.get("dag_hash", c.dag_hash)
        for layer in c.layers:
            for n in layer:
                c.node(n)
    elif kind == "merge":
        ns = c.node(ctx["node"])
        ns.merge, ns.status, ns.settled_entry = ctx["sha"], ACCEPTED, event["id"]
        c.merged.append(ctx["node"])
        c.tip = ctx["sha"]
        c.probes.pop(ctx["node"], None)
        _settle_seams(c, ctx["node"])
    elif kind == "probe":
        c.probed = ctx["onto"]
        c.probes[ctx["node"]] = {k: ctx[k] for k in ("head", "onto", "clean", "conflicts", "merged")} | {
            "entry": event["id"]}
    elif kind == "round":
        c.round = ctx["round"]
    elif kind == "seam":
        _open_seam(c, {**ctx, "id": event["id"]})
    elif kind == "decision":
        c.decision = {**ctx, "id": event["id"], "source_type": event.get("source_type"),
                      "case": (c.seam or {}).get("case"), "shown": (c.seam or {}).get("dag_hash")}
        c.seam = None
        if event.get("source_type") == "policy":
            c.policy_log.append(ctx.get("node"))
        if ctx.get("seam") == "final-acceptance" and ctx.get("choice") == "accept":
            c.accepted_by = ctx
    elif kind == "applied":
        c.decision = None
        _next_seam(c)
    elif kind == "halt":
        c.halt = ctx["reason"]
    elif kind == "close":
        c.closed = True
    elif kind == "abandon":
        c.abandoned = {"who": ctx["who"], "note": ctx["note"], "at": event["created_at"]}
    elif kind == "edge_eval":
        c.edges[ctx["edge"]] = {"taken": ctx["taken"], "when": ctx.get("when"), "entry": event["id"]}
    elif kind == "guardrail" and not ctx.get("crashed"):  # a crash decided nothing: it runs again
        c.guardrails[ctx["edge"]] = {"violated": ctx["violated"], "message": ctx["message"], "entry": event["id"],
                                     "head": ctx.get("head")}
    elif kind == "crossing":
        c.guardrails[ctx["edge"]]["answer"] = ctx["answer"]
    elif kind == "flag":
        c.flags.append(ctx)
    elif kind == "enable":
        c.enabled[ctx["node"]] = ctx["reason"]
    elif kind == "discovery" and ctx.get("chosen"):
        c.workers[ctx["node"]] = ctx["chosen"]
    elif kind == "verdict" and ctx.get("verdict") == "accept":
        ns = c.node(ctx["node"])
        ns.accept_entry, ns.accepted_at = event["id"], ctx.get("at", "")
    elif kind == "rediscover":
        c.workers.pop(ctx["node"], None)
    elif kind == "result" and ctx.get("effect") == "worker-spawn":
        # written ahead while the node's own DISPATCHED entry is still held: keyed by attempt, so order is moot
        ns = c.node(ctx["node"])
        ns.spawned = max(ns.spawned, ctx["attempt"])
    elif kind == "result" and ctx.get("effect") == "evaluators-start":  # run ahead (engine/evaluations.py)
        c.node(ctx["node"]).judging = ctx["attempt"]
    elif kind == "gate" and ctx.get("node"):
        ns = c.node(ctx["node"])
        ns.gate_rcs[ctx["gate"]] = ctx["code"]
        ns.gate_rcs.update(ctx.get("rcs") or {})  # the evaluators' own, recorded in one entry
        if "outputs" in ctx:
            ns.outputs = ctx["outputs"]
    # other verdicts, intents and results are provenance: they change no state here


# seams about one node, which the eager schedule lets the rest of the campaign run past (DESIGN §14)
NODE_SEAMS = ("realignment", "review-divergence", "reserved-halt")


def _open_seam(c: Campaign, seam: dict) -> None:
    waiting = c.decision
    if waiting is not None and waiting.get("seam") in NODE_SEAMS and seam["seam"] in NODE_SEAMS \
            and seam.get("node") and seam.get("node") == waiting.get("node"):
        # asked again while its answer waited to be applied (a resume before the fix that applies it first
        # wrote such journals): that answer settles it, else the node would wait for a second one forever
        return
    if c.seam is None and c.decision is None:
        c.seam = seam
    elif seam["seam"] not in NODE_SEAMS and c.seam is not None and c.seam["seam"] in NODE_SEAMS:
        c.queued.insert(0, c.seam)  # a seam that stops the whole run is asked first
        c.seam = seam
    else:
        c.queued.append(seam)


def _next_seam(c: Campaign) -> None:
    if c.seam is None and c.decision is None and c.queued:
        c.seam = c.queued.pop(0)


def _settle_seams(c: Campaign, node: str) -> None:
    c.queued = [s for s in c.queued if s.get("node") != node]
    if c.seam is not None and c.seam.get("node") == node and c.seam["seam"] in NODE_SEAMS:
        c.seam = None
        _next_seam(c)
