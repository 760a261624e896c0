"""Amendments of the campaign's DAG in the recorder (WIDEN, SERIALIZE), each re-validated and journalled."""
from __future__ import annotations

import yaml

from orchestrate.atomic import write_atomic
from orchestrate.dag import yamlfile
from orchestrate.engine.context import file_hash
from orchestrate.errors import DagInvalid, Halted


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def amend_node(ctx, node_id: str, reason: str, *, add_surface: list[str] | None = None,
               serialize: bool | None = None, expect: dict[int, int] | None = None) -> None:
    """Rewrite one node of the campaign DAG, re-validate, and record the new schedule.

    An amendment that would make the DAG invalid is not written; DagInvalid says why.
    """
    path = ctx.dag_file
    if ctx.campaign.dag_hash and file_hash(path) != ctx.campaign.dag_hash:
        raise Halted(f"{path} changed outside the engine while the campaign ran, so it cannot be amended now",
                     hint="restore it from the recorder (`git -C .ledger diff` shows the edit); a person's "
                          "edit of the plan is settled by the dag-amendment seam at the next layer boundary")
    data, _ = yamlfile.load(path.read_text(), str(path))
    data = _plain(data)
    for raw in data["nodes"]:
        if raw.get("id") == node_id:
            if add_surface:
                raw["file_surface"] = list(dict.fromkeys(list(raw.get("file_surface") or []) + add_surface))
            if serialize is not None:
                raw["serialize"] = serialize
            for index, rc in (expect or {}).items():
                raw["tripwires"][index]["expect"] = rc
    new_text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    old_text = path.read_text()
    write_atomic(path, new_text)
    try:
        dag = ctx.reload_dag(edited=True)
    except DagInvalid:
        write_atomic(path, old_text)
        ctx.reload_dag(edited=True)
        raise
    ctx.emit("dag", {"node": node_id, "reason": reason, "add_surface": add_surface or [],
                     "serialize": serialize, "expect": {str(k): v for k, v in (expect or {}).items()}})
    past = ctx.campaign.layers[: ctx.campaign.k]
    layers = past + remaining_layers(dag, past)
    ctx.emit("schedule", {"layers": layers, "dag_hash": file_hash(path), "reason": reason})


def remaining_layers(dag, past: list[list[str]]) -> list[list[str]]:
    """Layers from k on, re-derived; the nodes of past layers are settled."""
    from orchestrate.dag import graph
    settled = {n for layer in past for n in layer} | {n.id for n in dag.nodes if n.complete}
    return graph.kahn_layers(dag.layer_deps(), settled=settled)


def update_premises(ctx, node_id: str, reason: str) -> None:
    """A premise update: each stale tripwire now expects what holds on the current tip."""
    from gates import premise
    from orchestrate.workers import worktrees
    node = ctx.dag.by_id[node_id]
    verdict = premise.check(node_id, node.tripwires, worktrees.integration(ctx))
    actual = {i: r["rc"] for i, r in enumerate(verdict.data.get("results", []))
              if r["rc"] != r["expect"] and not r.get("timed_out") and r["rc"] is not None}  # a hang proves nothing
    if actual:
        amend_node(ctx, node_id, reason, expect=actual)
