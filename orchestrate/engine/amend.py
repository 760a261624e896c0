"""Amendments of the campaign's DAG in the recorder (WIDEN, SERIALIZE), each re-validated and journalled."""
from __future__ import annotations

from pathlib import Path

import yaml

from orchestrate.atomic import write_atomic
from orchestrate.dag import yamlfile
from orchestrate.errors import DagInvalid, Halted
from orchestrate.recorder.approved import file_hash, recorded_text


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def amend_node(ctx, node_id: str, reason: str, *, add_surface: list[str] | None = None,
               serialize: bool | None = None, expect: dict[int, int] | None = None) -> None:
    """Rewrite one node of the campaign DAG, re-validate, and record the new schedule.

    An amendment that would make the DAG invalid is not written; DagInvalid says why. A person's edit of the
    file not yet approved (made while the run went on past a seam) is set aside first, not amended over.
    """
    path = ctx.dag_file

    def change(text: str) -> str:
        return _changed(text, str(path), node_id, add_surface, serialize, expect)
    if ctx.campaign.dag_hash and file_hash(path) != ctx.campaign.dag_hash:
        _set_aside(ctx, path, node_id, change)
    old_text = path.read_text()
    new_text = change(old_text)
    write_atomic(path, new_text)
    try:
        dag = ctx.reload_dag(edited=True)
    except DagInvalid:
        write_atomic(path, old_text)
        ctx.reload_dag(edited=True)
        raise
    _rewatch(ctx, path)
    ctx.emit("dag", {"node": node_id, "reason": reason, "add_surface": add_surface or [],
                     "serialize": serialize, "expect": {str(k): v for k, v in (expect or {}).items()}})
    past = ctx.campaign.layers[: ctx.campaign.k]
    layers = past + remaining_layers(dag, past)
    ctx.emit("schedule", {"layers": layers, "dag_hash": file_hash(path), "reason": reason})


def _changed(text: str, where: str, node_id: str, add_surface, serialize, expect) -> str:
    data, _ = yamlfile.load(text, where)
    data = _plain(data)
    for raw in data["nodes"]:
        if raw.get("id") == node_id:
            if add_surface:
                raw["file_surface"] = list(dict.fromkeys(list(raw.get("file_surface") or []) + add_surface))
            if serialize is not None:
                raw["serialize"] = serialize
            for index, rc in (expect or {}).items():
                raw["tripwires"][index]["expect"] = rc
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def _set_aside(ctx, path: Path, node_id: str, change) -> None:
    """The DAG copy holds an edit the dag-amendment seam has not approved: a person's, made while the eager run
    went on past a node's seam (an edit that could be a worker's was put back by the watch). The engine
    amends the approved version; the edit, with the same amendment, is kept for the person to copy back,
    and the seam then asks about it (rv75: this halted the run, and every resume halted again)."""
    recorded = recorded_text(ctx.layout.ledger, path, ctx.campaign.dag_hash)
    if recorded is None:
        raise Halted(f"{path} changed outside the engine while the campaign ran, and the version last approved "
                     "is not in the recorder, so it cannot be amended now",
                     hint="restore it from the recorder (`git -C .ledger diff HEAD` shows the edit), then "
                          "`orchestrate resume`")
    edit = path.read_text()
    try:
        kept_text = change(edit)
    except Exception:  # noqa: BLE001 - an edit that does not parse, or lost the node: kept as it is
        kept_text = edit
    kept = ctx.layout.scratch / "rejected" / ctx.topic / path.name
    kept.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(kept, kept_text)
    write_atomic(path, recorded.decode())
    ctx.out.always(f"{path} holds an edit not yet approved: set aside, with {node_id}'s amendment, in {kept}, "
                   f"while the engine amends {node_id}; copy it back (cp {kept} {path}) and the dag-amendment "
                   "seam asks about it")


def _rewatch(ctx, path) -> None:
    """The engine's own amendment is not a worker's edit: the watch over the recorder's files (taken
    before the layer's workers started) learns the new content, so it is not put back as foreign."""
    watched = getattr(ctx.watch, "recorder", None)
    if not watched:
        return
    for known in list(watched):
        if Path(known).resolve() == Path(path).resolve():
            from orchestrate.workers import fingerprint
            watched[known] = fingerprint.read_watched(Path(path))


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
    from orchestrate.workers import containment
    integ = worktrees.integration(ctx)
    with containment.judging(ctx, integ):
        verdict = premise.check(node_id, node.tripwires, integ)
    actual = {i: r["rc"] for i, r in enumerate(verdict.data.get("results", []))
              if r["rc"] != r["expect"] and not r.get("timed_out") and r["rc"] is not None}  # a hang proves nothing
    if actual:
        amend_node(ctx, node_id, reason, expect=actual)


# Where nothing runs and nothing half-done waits on the plan: a person's edit is settled here, first.
# (AWAIT and SURFACE_EXCEED have workers out or frozen, REALIGN a freeze to settle, SEAM an answer due.)
UNGUARDED = ("DERIVE", "AWAIT", "SURFACE_EXCEED", "REALIGN", "SEAM")


def edited(ctx) -> bool:
    """Is the campaign's DAG copy not the one last approved (a person edited it), with no amendment seam
    open or answered yet? Then nothing may use it before the dag-amendment seam settles it."""
    c = ctx.campaign
    if ctx.recorder is None or not c.dag_hash or c.state in UNGUARDED or c.decision is not None:
        return False
    if c.seam is not None:
        return False
    try:
        return file_hash(ctx.dag_file) != c.dag_hash
    except OSError:
        return True  # deleted: that too is an edit a person answers for


def open_seam(ctx, derived_from=()) -> None:
    """The dag-amendment seam, showing the nodes and fields the edit changed (before -> after)."""
    from orchestrate.seams.choices import CHOICES
    c = ctx.campaign
    try:
        current = file_hash(ctx.dag_file)
    except OSError:
        current = ""
    ctx.emit("seam", {"seam": "dag-amendment", "node": None, "choices": list(CHOICES["dag-amendment"]),
                      "bound_to": c.tip, "reason": f"{ctx.dag_file} was edited since it was last approved; "
                      "nothing uses the edit until it is accepted here", "show": dag_changes(ctx),
                      "dag_hash": current, "return_to": c.state}, derived_from=list(derived_from))
    ctx.out.line(f"the campaign's DAG was edited: seam dag-amendment before {c.state} runs")


def dag_changes(ctx) -> list[str]:
    """What the edit added, removed or changed: nodes, each changed field before -> after, edges, checks.
    Line numbers are where a thing is written, not what it is: a shifted node is not a changed one."""
    from orchestrate.dag.load import check_dag
    old = approved(ctx) or ctx.dag
    if not ctx.dag_file.exists():
        return [f"{ctx.dag_file} was deleted"]
    new, problems = check_dag(ctx.dag_file, topic=ctx.topic, brief_dir=ctx.brief_dir)
    if new is None:
        return ["the edited DAG is invalid:"] + [f"  {p}" for p in problems[:20]]
    lines = [f"added node {n}" for n in new.by_id if n not in old.by_id]
    lines += [f"removed node {n}" for n in old.by_id if n not in new.by_id]
    for n in old.by_id:
        if n in new.by_id:
            lines += [f"node {n}: {field} {before} -> {after}"
                      for field, before, after in _field_changes(old.by_id[n], new.by_id[n])]
    old_edges, new_edges = {_edge_key(e): e for e in old.edges}, {_edge_key(e): e for e in new.edges}
    lines += [f"added edge {k}" for k in new_edges if k not in old_edges]
    lines += [f"removed edge {k}" for k in old_edges if k not in new_edges]
    for k in old_edges:
        if k in new_edges:
            lines += [f"edge {k}: {f} {b} -> {a}" for f, b, a in _field_changes(old_edges[k], new_edges[k])]
    for name in ("checks", "workers", "mode", "base", "params"):
        before, after = _shown(getattr(old, name)), _shown(getattr(new, name))
        if before != after:
            lines.append(f"{name}: {before} -> {after}")
    if _shown(old.policy) != _shown(new.policy):
        lines.append(f"policy: {_shown(old.policy)} -> {_shown(new.policy)}")
    return lines or ["only formatting or comments changed"]


IGNORED = ("line", "lines", "index", "id")  # where it is written, and the key it is matched by


def _field_changes(old, new) -> list[tuple[str, str, str]]:
    import dataclasses
    found = []
    for f in dataclasses.fields(old):
        if f.name in IGNORED:
            continue
        before, after = _shown(getattr(old, f.name)), _shown(getattr(new, f.name))
        if before != after:
            found.append((f.name, before, after))
    return found


def _edge_key(edge) -> str:
    return f"{edge.src} -{edge.predicate}-> {edge.dst}"


def _shown(value) -> str:
    """A value as a person reads it in YAML-ish flow style, with line numbers left out."""
    import dataclasses
    import json

    def plain(v):
        if dataclasses.is_dataclass(v):
            return {f.name: plain(getattr(v, f.name)) for f in dataclasses.fields(v)
                    if f.name not in ("line", "lines", "index") and getattr(v, f.name) != f.default}
        if isinstance(v, dict):
            return {str(k): plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        return v
    return json.dumps(plain(value), sort_keys=True, default=str)


def approved(ctx):
    """The DAG as last approved: the recorder's version whose hash the journal holds (None: none has it, or
    it no longer validates)."""
    from orchestrate.dag.validate import validate
    text = recorded_text(ctx.layout.ledger, ctx.dag_file, ctx.campaign.dag_hash)
    if text is None:
        return None
    data, _ = yamlfile.load(text.decode(), str(ctx.dag_file))
    dag, _ = validate(data, str(ctx.dag_file), topic=ctx.topic, brief_dir=ctx.brief_dir)
    return dag
